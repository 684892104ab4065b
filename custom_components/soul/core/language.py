"""Which language a text is in, and Chinese folded to one script (HA-free).

Shared by the intent filter, the emotion recognizer and the chat's replies:
``detect_locale`` guesses a text's locale from its script, ``normalize_locale``
names a supported locale, and ``to_simplified`` converts Traditional Chinese to
Simplified with ``zhconv-rs`` (OpenCC/MediaWiki tables), one character per
character, so spans stay valid.
"""

from __future__ import annotations

import functools
import re

from zhconv_rs import zhconv

SUPPORTED_LOCALES = ("zh-CN", "zh-TW", "en-US", "ja-JP", "ko-KR")

_LOCALE_ALIASES = {
    "zh": "zh-CN", "zh-cn": "zh-CN", "zh-hans": "zh-CN", "zh-sg": "zh-CN",
    "zh-hans-cn": "zh-CN", "zh-tw": "zh-TW", "zh-hant": "zh-TW", "zh-hk": "zh-TW",
    "zh-mo": "zh-TW", "zh-hant-tw": "zh-TW", "en": "en-US", "ja": "ja-JP",
    "ko": "ko-KR",
}  # fmt: skip

_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")


def normalize_locale(value: str) -> str | None:
    """Return the supported locale ``value`` names ("zh_TW" → "zh-TW"), or None."""
    key = value.strip().replace("_", "-").lower()
    for locale in SUPPORTED_LOCALES:
        if key == locale.lower():
            return locale
    if key in _LOCALE_ALIASES:
        return _LOCALE_ALIASES[key]
    return _LOCALE_ALIASES.get(key.split("-", 1)[0])


_SURROGATE = re.compile(r"([\ud800-\udfff])")


@functools.lru_cache(maxsize=8192)
def to_simplified(text: str) -> str:
    """Convert Traditional Chinese to Simplified, keeping one character per character.

    A lone surrogate (which ``zhconv`` cannot take) stays as it is; the text
    around it is converted. ASCII, which no table converts, is not handed to
    ``zhconv`` at all: it lets go of the GIL, and on the event loop any busy
    thread may then keep it for up to the switch interval.
    """
    if text.isascii():
        return text
    try:
        converted = zhconv(text, "zh-Hans")
    except UnicodeEncodeError:
        return "".join(
            part if _SURROGATE.fullmatch(part) else to_simplified(part)
            for part in _SURROGATE.split(text)
            if part
        )
    if len(converted) == len(text):
        return converted
    return "".join(zhconv(char, "zh-Hans") or char for char in text)


def detect_locale(text: str) -> str:
    """Guess the locale of ``text`` from its script."""
    if _HANGUL.search(text):
        return "ko-KR"
    if _KANA.search(text):
        return "ja-JP"
    if _HAN.search(text):
        return "zh-TW" if to_simplified(text) != text else "zh-CN"
    return "en-US"
