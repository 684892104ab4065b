"""Chinese folded to one script: what ``to_simplified`` hands to zhconv."""

from __future__ import annotations

import itertools
import string

import pytest
from zhconv_rs import zhconv

from custom_components.soul.core import language
from custom_components.soul.core.language import to_simplified


def test_ascii_is_never_converted() -> None:
    # The premise of the ASCII shortcut: zhconv leaves every ASCII text alone.
    printable = string.printable
    texts = [*printable, *map("".join, itertools.product(printable, repeat=2))]
    texts += ["turn off the lights please", "Set the LAMP to 50%!", "\x00\x7f"]
    assert [zhconv(text, "zh-Hans") for text in texts] == texts


def test_ascii_is_not_handed_to_zhconv(monkeypatch: pytest.MonkeyPatch) -> None:
    # zhconv lets go of the GIL: on the loop, a busy thread may keep it 5 ms.
    def refuse(text: str, target: str) -> str:
        raise AssertionError(f"zhconv called with {text!r}")

    to_simplified.cache_clear()
    monkeypatch.setattr(language, "zhconv", refuse)
    try:
        assert to_simplified("Turn OFF the lights, please!") == (
            "Turn OFF the lights, please!"
        )
        with pytest.raises(AssertionError):
            to_simplified("開燈")
    finally:
        to_simplified.cache_clear()


def test_chinese_is_still_converted() -> None:
    to_simplified.cache_clear()
    assert to_simplified("把燈調成綠色 ok") == "把灯调成绿色 ok"
