"""Soul's built-in vocabulary: entity types and the markers of §4.4.3 decisions.

Entity types (usable in ``entity_types_any`` / ``entity_types_all`` /
``from_entity_types``): ``action``, ``device``, ``room``, ``color``, ``motion``,
plus ``number``, ``duration`` and ``time_point`` from the number and time
parsers. Each entity has a canonical value (``"on"``, ``"light"``,
``"living_room"``, ``"red"``, ``"nod"``) and the surface forms that name it in
Chinese, English, Japanese and Korean. Surfaces mapped to ``None`` block a
shorter surface inside them ("开心" is not "开", "白天" is not "白").

Markers classify commands that match no catalog intent: negation, questions,
polite requests, requests for conversation, greetings, exclamations and
feelings.
"""

from __future__ import annotations

from collections.abc import Iterable, Set as AbstractSet
from dataclasses import dataclass
import functools
import re
from typing import NamedTuple

from ..trie_regex import alternation

ENTITY_TYPES = frozenset(
    {"action", "device", "room", "color", "motion", "number", "duration", "time_point"}
)

_ACTIONS = {
    "on": "开 打开 开启 开开 开一下 点亮 亮起 turn_on switch_on power_on light_up "
    "つけて つける 点けて 付けて オンに 켜 켜줘 켜_줘 켜주세요 켜라",
    "off": "关 关闭 关掉 关上 关了 熄灭 灭掉 turn_off switch_off power_off shut_off "
    "消して 消す けして オフに 꺼 꺼줘 꺼_줘 꺼주세요 끄다 꺼라",
    "open": "拉开 open 開けて 開ける 열어 열어줘",
    "close": "拉上 合上 close shut 閉めて 閉める 닫아 닫아줘",
    "increase": "调亮 调高 调大 亮一点 大一点 高一点 brighter turn_up increase "
    "明るく 上げて 밝게 올려",
    "decrease": "调暗 调低 调小 暗一点 小一点 低一点 dimmer dim turn_down decrease "
    "暗く 下げて 어둡게 내려",
    "start": "开始 启动 start 始めて 시작",
    "stop": "停止 停下 停掉 stop 止めて やめて 멈춰 정지",
    "pause": "暂停 pause 一時停止 일시정지",
}
_DEVICES = {
    "light": "灯 台灯 电灯 灯光 吊灯 light lights lamp lamps 電気 ライト 照明 明かり 불 조명 전등",
    "curtain": "窗帘 curtain curtains blinds カーテン 커튼",
    "fan": "风扇 电扇 fan 扇風機 선풍기",
    "air_conditioner": "空调 冷气 air_conditioner a/c エアコン 에어컨",
    "tv": "电视 tv television テレビ 티비 텔레비전",
    "music": "音乐 歌 music song 音楽 曲 음악 노래",
    "alarm": "闹钟 alarm reminder アラーム 目覚まし 알람",
    "timer": "计时器 定时器 timer タイマー 타이머",
}
_ROOMS = {
    "living_room": "客厅 living_room lounge リビング 居間 거실",
    "bedroom": "卧室 主卧 次卧 睡房 bedroom 寝室 침실 안방",
    "kitchen": "厨房 kitchen キッチン 台所 주방 부엌",
    "bathroom": "浴室 卫生间 洗手间 厕所 bathroom restroom toilet トイレ 風呂 욕실 화장실",
    "study": "书房 study 書斎 서재",
    "dining_room": "餐厅 饭厅 dining_room ダイニング 식당",
    "balcony": "阳台 balcony ベランダ 발코니 베란다",
    "hallway": "走廊 玄关 过道 hallway corridor 廊下 玄関 복도 현관",
    "office": "办公室 office オフィス 사무실",
    "kids_room": "儿童房 kids_room nursery 子供部屋 아이방",
}
_COLORS = {
    "red": "红 红色 red 赤 赤い 赤色 レッド 빨간 빨강 빨간색",
    "green": "绿 绿色 green 緑 緑色 グリーン 초록 초록색 녹색",
    "blue": "蓝 蓝色 blue ブルー 青い 파란 파랑 파란색",
    "cyan": "青 青色 cyan teal シアン 청록",
    "white": "白 白色 白光 white 白い ホワイト 하얀 흰색 하얀색",
    "yellow": "黄 黄色 yellow 黄色い イエロー 노란 노랑 노란색",
    "orange": "橙 橙色 橘色 orange オレンジ 주황 주황색",
    "purple": "紫 紫色 purple violet 紫色 パープル 보라 보라색",
    "pink": "粉 粉色 粉红 粉红色 pink ピンク 분홍 분홍색 핑크",
    "warm_white": "暖白 暖光 暖色 warm_white warm 暖色 웜화이트",
    "cool_white": "冷白 冷光 冷色 cool_white cold_white 寒色 쿨화이트",
}
_MOTIONS = {
    "nod": "点头 点点头 nod nods nodding うなずく 頷く うなずいて 끄덕",
    "shake_head": "摇头 摇摇头 shake_your_head shake_head shake_its_head 首を振る 首を振って 고개를_저어",
    "wave": "挥手 招手 wave waves 手を振る 손을_흔들어",
    "dance": "跳舞 dance dancing 踊って 踊る 춤",
}
# Longer words that contain a surface above but mean something else.
_BLOCKERS = (
    "开心 开始 开玩笑 开会 开车 离开 公开 开学 开门见山 关心 关系 关于 相关 关注 机关 "
    "漂亮 月亮 亮度 白天 明白 坦白 空白 白白 红包 红绿灯 红酒 红茶 绿茶 白酒 白菜 蓝牙 黄金 "
    "青春 年青 青年 粉丝 面粉 歌手 alarming 关门 开门 불편 불안 불만 불가"
)
# "关门"/"开门" are doors, not on/off: blocked so the door keyword decides.
_JA_OVERRIDES = {"青": ("color", "blue"), "青色": ("color", "blue")}


class Entity(NamedTuple):
    """A built-in entity found in a clause (span in that clause's variant text).

    A named tuple: as immutable as a frozen dataclass, and made in a third of
    the time (a command makes a few of each clause's).
    """

    type: str
    value: str | float
    text: str
    start: int
    end: int


def _surfaces(spec: str) -> list[str]:
    """Split a surface list; "_" stands for a space inside a phrase."""
    return [s.replace("_", " ") for s in spec.split()]


@dataclass(frozen=True, slots=True)
class Lexicon:
    """One locale's compiled vocabulary."""

    table: dict[str, tuple[str, str] | None]
    synonyms: dict[tuple[str, str], tuple[str, ...]]
    pattern: re.Pattern[str]


_EN_PHRASAL = re.compile(
    r"\b(?:turn|switch|power)\s+(?:(?:the|my|all|your|that|this|those|these|[a-z]+)\s+){1,3}?(on|off)\b"
    r"|\b(?:lights?|lamps?|fans?|tv|music|heater|everything|all)\s+(on|off)\b"
)


@functools.lru_cache(maxsize=8)
def lexicon(locale: str) -> Lexicon:
    """Return the compiled vocabulary for ``locale``."""
    table: dict[str, tuple[str, str] | None] = {}
    synonyms: dict[tuple[str, str], list[str]] = {}
    for kind, entries in (
        ("action", _ACTIONS),
        ("device", _DEVICES),
        ("room", _ROOMS),
        ("color", _COLORS),
        ("motion", _MOTIONS),
    ):
        for value, spec in entries.items():
            for surface in _surfaces(spec):
                key = surface.lower()
                table.setdefault(key, (kind, value))
                synonyms.setdefault((kind, value), []).append(key)
    if locale == "ja-JP":
        table.update(_JA_OVERRIDES)
    for blocker in _BLOCKERS.split():
        table[blocker.lower()] = None
    # A text is read in 1.3-1.7 µs, not the 3-10 µs of the longest-first
    # alternation this replaced (the tests compare the two).
    pattern = _words_pattern(
        [s for s in table if not s.isascii()],
        [s for s in table if s.isascii()],
        latin_end=r"(?:s|es)?\b",  # a plural, then the word's end
    )
    return Lexicon(
        table,
        {key: tuple(forms) for key, forms in synonyms.items()},
        pattern,
    )


def _words_pattern(
    other: list[str], latin: list[str], *, latin_end: str
) -> re.Pattern[str]:
    """Compile words case-blind, the longest word at a position first.

    As character tries (``trie_regex``): the longest word at a position wins,
    as it would in a longest-first alternation, at a third of the cost or
    less. A Latin word begins at a word boundary and ends with ``latin_end``;
    a space in it is any white space. One bucket: lookaheads cost more than
    they save on a case-blind pattern.
    """
    parts = []
    if other:
        parts.append(alternation(other, buckets=1))
    if latin:
        body = alternation(latin, end=lambda _last: latin_end, buckets=1)
        parts.append(r"\b(?:" + body.replace(r"\ ", r"\s+") + ")")
    return re.compile("|".join(parts), re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def find_entities(text: str, locale: str) -> tuple[Entity, ...]:
    """Return the built-in action/device/room/colour/motion entities in ``text``."""
    lex = lexicon(locale)
    found: list[Entity] = []
    for match in lex.pattern.finditer(text):
        surface = match.group().lower()
        entry = lex.table.get(surface)
        if entry is None:
            entry = lex.table.get(" ".join(surface.split()))
        if entry is None and surface.endswith("s"):
            entry = lex.table.get(surface.removesuffix("es")) or lex.table.get(
                surface[:-1]
            )
        if entry is not None:
            found.append(Entity(entry[0], entry[1], match.group(), *match.span()))
    if " on" in text or " off" in text:
        for match in _EN_PHRASAL.finditer(text):
            group = 1 if match.group(1) else 2
            if not any(e.start <= match.start(group) < e.end for e in found):
                found.append(
                    Entity(
                        "action",
                        match.group(group),
                        match.group(group),
                        *match.span(group),
                    )
                )
        found.sort(key=lambda e: e.start)
    return tuple(found)


def surfaces_of(locale: str, kind: str, value: str) -> tuple[str, ...]:
    """Every surface form naming the entity ``(kind, value)``."""
    return lexicon(locale).synonyms.get((kind, value), ())


# --- decision markers -------------------------------------------------------

_LATIN_WORD = re.compile(r"^[A-Za-z_'/]+$")
# Characters other than a letter's two cases that ``re`` reads as that letter
# when it ignores case (the tests find them among every code point).
_ODD_CASES = {"i": "\u0130\u0131", "s": "\u017f", "k": "\u212a"}
# A marker pattern's id → every character a match of it can begin with. By
# id: a pattern hashes its whole text (0.3–1 µs for these), more than the
# search it lets a clause skip; the patterns are this module's constants.
_FIRSTS: dict[int, frozenset[str]] = {}


def case_blind(chars: Iterable[str]) -> frozenset[str]:
    """Return ``chars`` with every character ``re`` reads as one of them ignoring case."""
    found = set(chars)
    for char in list(found):
        lower = char.lower()
        found.update((lower, char.upper()), _ODD_CASES.get(lower, ""))
    return frozenset(char for char in found if len(char) == 1)


def marker_firsts(pattern: re.Pattern[str]) -> frozenset[str]:
    """Return the characters a match of a marker pattern (``_alternation``) begins with.

    A text holding none of them holds no marker: its search is skipped.
    """
    return _FIRSTS[id(pattern)]


def has_marker(
    pattern: re.Pattern[str], text: str, chars: AbstractSet[str] | str
) -> bool:
    """Whether ``text`` holds a marker of ``pattern`` (a marker list).

    ``chars`` is the set of the text's characters, read once for a clause (or
    the text itself): a text holding none of the characters a marker begins
    with is not searched.
    """
    return (
        not _FIRSTS[id(pattern)].isdisjoint(chars) and pattern.search(text) is not None
    )


def _alternation(words: str) -> re.Pattern[str]:
    """Compile a marker list: "_" joins words, Latin words match whole words only."""
    latin = [w.replace("_", " ") for w in words.split() if _LATIN_WORD.match(w)]
    other = [w.replace("_", " ") for w in words.split() if not _LATIN_WORD.match(w)]
    compiled = _words_pattern(other, latin, latin_end=r"\b")
    # Every match is one of the words (a space in one is white space, never
    # its first character): it begins with a word's first character.
    _FIRSTS[id(compiled)] = case_blind(word[0] for word in (*latin, *other))
    return compiled


# Phrases that look negative but are not ("别忘了", "能不能", "不好意思").
POSITIVE_NEGATIONS = _alternation(
    "别忘了 别忘记 不要忘了 不要忘记 别忘 能不能 可不可以 要不要 是不是 会不会 行不行 好不好 "
    "不错 不好意思 不客气 不然 要不 不如 特别 别人 别的 区别 分别 告别 级别 类别 性别 识别 个别 差别 "
    "don't_forget do_not_forget 忘れないで 잊지_마"
)
NEGATION = _alternation(
    "不要 不用 不必 不准 不许 不想 别 甭 勿 千万别 没必要 不需要 don't dont do_not never "
    "no_need not ないで しないで 지_마 하지_마 말아"
)
# Polite requests end like questions but ask for an action.
POLITE_REQUEST = _alternation(
    "能不能 可不可以 可以 能否 能 麻烦 请 帮我 帮忙 给我 can_you could_you would_you "
    "will_you can_u please pls くれ ください もらえ ませんか 주세요 줄래 줘 줄_수"
)
QUESTION = _alternation(
    "为什么 为何 怎么 怎样 如何 什么 干嘛 哪里 哪儿 哪个 谁 多少 是不是 有没有 吗 呢 ？ ? "
    "why what how when where who which whose なぜ どうして 何 なに どう いつ どこ 誰 "
    "왜 뭐 무엇 어떻게 언제 어디 누구"
)
_EN_AUX_QUESTION = re.compile(
    r"^\s*(?:(?:is|are|was|were|does|did|has|have|should|shall|am)\b|do\s+(?:you|i|we|they)\b)",
    re.IGNORECASE,
)
_JA_QUESTION_END = re.compile(r"(?:か|の)[?？]?\s*$")
_HIRAGANA = re.compile(r"[\u3040-\u309f]")
_WH_WORD = re.compile(
    "为什么|为何|怎么|什么|why|what|how|なぜ|どうして|왜", re.IGNORECASE
)
# Asking for conversation rather than a device action.
CONVERSATION = _alternation(
    "讲 说说 告诉 聊天 聊聊 聊一聊 陪我 推荐 介绍 解释 分析 翻译 写 唱 猜 你觉得 你认为 怎么看 想法 看法 意见 "
    "tell talk chat explain recommend translate write sing think opinion "
    "教えて 話して 説明 歌って 말해 얘기 설명 추천"
)
OPINION = _alternation(
    "喜欢 讨厌 觉得 认为 爱 羡慕 like love hate think feel 好き 嫌い 좋아해 싫어"
)
# Degree words that make a remark of a clause without an action ("灯太亮了").
DEGREE = _alternation(
    "太 真 很 挺 有点 有些 非常 特别 超 too so very really quite pretty"
)
GREETING = _alternation(
    "你好 您好 早上好 早安 晚上好 晚安 嗨 哈喽 在吗 hi hello hey good_morning good_evening "
    "good_night こんにちは おはよう こんばんは おやすみ 안녕 안녕하세요"
)
# Interjections and remarks that are not emotions. Emotions themselves ("开心",
# "气死", "scared") are recognised by ``core.emotion`` (one lexicon for both).
EXCLAMATION = _alternation(
    # interjections
    "哇 哇塞 唉 哎 哎呀 哎哟 哟 啊 哈哈 嘿嘿 呜呜 天哪 天啊 我的天 卧槽 靠 呵呵 嗯 哦 噢 喔 耶 "
    "wow oh ah ugh yay oops omg phew haha lol ouch yikes damn whoa "
    "わあ うわ えー あー やった すごい 와 헐 대박 아이고 휴 "
    # bodily states and appraisals
    "累 困 饿 好冷 好热 牛 好看 漂亮 可爱 尴尬 惊 极了 死了 "
    "tired exhausted sleepy hungry "
    # Japanese and Korean feelings (core.emotion covers Chinese and English)
    "疲れた 眠い 嬉しい 悲しい 怖い びっくり ありがとう 피곤해 졸려 슬퍼 무서워 깜짝 고마워 "
    "! ！"
)


# What a question begins with: a question word's first character, an English
# auxiliary's ("is", "do", …) or a Japanese question ending's.
QUESTION_FIRSTS = marker_firsts(QUESTION) | case_blind("iawdhs") | frozenset("かの")


def is_question(text: str) -> bool:
    """Whether ``text`` asks for information (not a polite request for an action)."""
    if (
        QUESTION.search(text) is None
        and not _EN_AUX_QUESTION.match(text)
        and not (_JA_QUESTION_END.search(text) and _HIRAGANA.search(text))
    ):
        return False
    # "能帮我开灯吗" asks for an action; "为什么灯是红的" still asks a question.
    return not POLITE_REQUEST.search(text) or bool(_WH_WORD.search(text))


def negation(text: str) -> str | None:
    """Return the word by which ``text`` says not to do something ("不要开灯": 不要)."""
    if NEGATION.search(text) is None:
        return None
    found = NEGATION.search(POSITIVE_NEGATIONS.sub(" ", text))
    return found.group() if found else None


def is_negated(text: str) -> bool:
    """Whether ``text`` tells Soul not to do something ("不要开灯", "don't")."""
    return negation(text) is not None


# --- requests that concern the user ------------------------------------------
# An imperative whose object is the user ("提醒我", "叫醒我们", "remind me",
# "wake us up", "知らせて", "알려줘") asks Soul to act on the user. A clause
# with another subject states something instead ("我10分钟后到家", "他说一小时后
# 来找我", "I'll be back in 10 minutes").
_ZH_USER_OBJECT = re.compile(
    # 我 after a verb; not after a particle, copula or preposition ("的我",
    # "是我", "和我", "让我", "把我"), nor after a benefactive ("帮我订外卖",
    # "给我打电话": the action is on something else), and not a possessive.
    r"(?<=[\u4e00-\u9fff])(?<![的是和跟与同被让说对像比连了在从向把将帮给替为])"
    r"(?:我们|咱们|我)(?!们?的)"
)
_ZH_SUBJECT = re.compile(r"^(?:我|咱|他|她|它|大家|别人|有人|谁)")
# "来接我", "过去找我": the addressee is to come or go, which no body does.
_ZH_MOTION = re.compile(r"[来去]\S{0,2}?(?:我们|咱们|我)")
_EN_LEAD = re.compile(
    r"^(?:(?:please|pls|kindly|just|also|then|and|so|ok|okay|hey|"
    r"can\s+you|could\s+you|would\s+you|will\s+you)\b[\s,]*)*",
    re.IGNORECASE,
)
_EN_SUBJECT = re.compile(
    r"^(?:i|i'm|i'll|i'd|i've|im|we|we're|we'll|he|she|they|it|it's|there|that|"
    r"this|these|those|the|my|our|his|her|their|someone|somebody|everyone|"
    # advice or a prediction, not a request: "you should call me"
    r"you(?:'ll|\s+(?:should|must|might|may|need|have|will|can|could|would|are)))\b",
    re.IGNORECASE,
)
# The user as the object, not a beneficiary ("order me a pizza", "get us the bill").
_EN_USER_OBJECT = re.compile(
    r"\b(?:me|us)\b(?!\s+(?:a|an|the|some|my|our|this|that|your|one)\b)",
    re.IGNORECASE,
)
_JA_REQUEST = re.compile(r"(?:て|で)(?:ください|下さい|くれ|くれる|ね|よ|ほしい)?$")
_JA_OTHER_OBJECT = re.compile(r"(?<!私)(?<!僕)(?<!俺)を")
_KO_REQUEST = re.compile(r"(?:줘|주세요|줘요|줄래|주라)$")
_KO_OTHER_OBJECT = re.compile(r"(?<!나)(?<!저)(?<!날)(?<!우리)[을를]")
_TRAILING = re.compile(r"[\s.。!！~～,，、]+$")


def asks_for_user(pieces: list[str]) -> bool:
    """Whether a clause, its time expressions taken out, asks Soul to act on the user.

    ``pieces`` are the clause's folded text between its time expressions, in
    order ("10分钟后提醒我" → ``["", "提醒我"]``).
    """
    words = [p.strip(" ,，、。") for p in pieces]
    words = [w for w in words if w]
    if not words:
        return False
    text = _TRAILING.sub("", " ".join(words))
    # Chinese: a verb with the user as its object, and no other subject first.
    if not _ZH_SUBJECT.match(words[0]) and any(
        _ZH_USER_OBJECT.search(w) and not _ZH_MOTION.search(w) for w in words
    ):
        return True
    # English: an imperative ("remind me", "wake us up").
    lead = _EN_LEAD.sub("", text)
    if _EN_USER_OBJECT.search(lead) and not _EN_SUBJECT.match(lead):
        return True
    # Japanese: a request form (…て, …てください) acting on no other object.
    if _JA_REQUEST.search(text) and not _JA_OTHER_OBJECT.search(text):
        return True
    # Korean: a request form (…줘, …주세요) acting on no other object.
    return bool(_KO_REQUEST.search(text) and not _KO_OTHER_OBJECT.search(text))
