"""The words of a chat turn, in Chinese or English as the user speaks.

In-character replies, the §3.7 memory status texts, the user's confirming
yes, and the ``NO_REPLY`` forms of §4.2.2 (a reply that says nothing).
"""

from __future__ import annotations

import re

from .language import detect_locale
from .markdown import markdown_inert

_NO_REPLY = re.compile(r"^\s*(?:<NO_REPLY>|\[NO_REPLY\]|NO_REPLY)\s*$")
STATUS_TEXT = {
    "zh": {
        "mem0_searching": "正在回顾历史记忆，请稍候。",
        "mem0_search_done": "记忆查询完成。",
        "mem0_search_failed": "记忆查询失败，直接回答。",
    },
    "en": {
        "mem0_searching": "Looking through memories, one moment.",
        "mem0_search_done": "Memory search done.",
        "mem0_search_failed": "Memory search failed; answering without it.",
    },
}
CONFIRM_YES = re.compile(
    r"^\s*(?:好的?|好啊|可以|行|是的?|对|确认|执行吧?|嗯|yes|yeah|yep|sure|ok(?:ay)?|"
    r"go ahead|do it|confirm)\s*[。.!！]*\s*$",
    re.IGNORECASE,
)
_PHRASES = {
    "zh": {
        "done": "好的。",
        "confirm": "要我现在执行{what}吗？",
        "blocked": "我现在心情不好，先不做{what}了。",
        "clarify": "请告诉我{what}。",
        "no_model": "没有语言模型，我没法思考这个问题。",
        "model_failed": "我刚才走神了，没能想好，请再说一次。",
        "invalid": "我听懂了，但这个指令的参数不对，没法执行。",
        "unreachable": "我现在联系不上身体，没能执行。",
        "failed": "我试了，但{what}没有成功。",
        "undone": "不过“{what}”我没听懂，没有做。",
        "read_only": "只读用户不能让身体执行动作。",
    },
    "en": {
        "done": "Okay.",
        "confirm": "Shall I {what} now?",
        "blocked": "I'm not in the mood to {what} right now.",
        "clarify": "Please tell me {what}.",
        "no_model": "I can't think about that without a language model.",
        "model_failed": "My mind wandered and I couldn't think that through; please say it again.",
        "invalid": "I understood, but the command's arguments are not valid, so I can't run it.",
        "unreachable": "I can't reach my body right now, so I couldn't do that.",
        "failed": "I tried, but {what} didn't work.",
        "undone": " But I didn't understand “{what}”, so I didn't do that.",
        "read_only": "A read-only user may not make a body act.",
    },
}


def reply_language(text: str) -> str:
    """Return the language Soul answers ``text`` in: ``zh`` or ``en``."""
    return "zh" if detect_locale(text).startswith("zh") else "en"


def phrase(text: str, key: str, what: str = "") -> str:
    """Return the reply ``key`` in the language of ``text``, naming ``what``.

    ``what`` is a body's words (an intent's or a slot's name) or the user's:
    Assist shows replies as Markdown, so it is made inert there.
    """
    return _PHRASES[reply_language(text)][key].format(what=markdown_inert(what))


def normalize_reply(text: str | None) -> str:
    """Return the reply, with the NO_REPLY forms of §4.2.2 as ``""``."""
    if not text or _NO_REPLY.match(text):
        return ""
    return text.strip()
