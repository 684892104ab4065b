"""Third parties' text in what Home Assistant renders as Markdown (HA-free).

``markdown_inert`` for the words Soul puts into its own replies and repair
issues (a body's names, a server's errors): no link, image or tag at all.
``markdown_tame`` for a model's reply, which stays Markdown: no image and no
HTML tag, its links kept; ``markdown_undecided`` says what a stream must hold
back. Home Assistant's frontend renders both with ``marked`` (GitHub's
flavour) and a sanitizer that keeps ``<img src>``.
"""

from __future__ import annotations

import re

# Markdown's links and images open with a square bracket, HTML's and
# autolinks with an angle one: "![m](http://…)" in a catalog's slot name
# became, in Assist, a picture fetched from the body owner's server each time
# the reply was shown (a black-box run, 2026-11-29); Home Assistant's Markdown
# keeps an <img src> too.
_INERT_IN_MARKDOWN = str.maketrans({"[": "［", "]": "］", "<": "＜", ">": "＞"})
# What GitHub's Markdown (Home Assistant's) links without brackets: an
# address after a scheme, one beginning "www." and a mail address.
_BARE_LINK = re.compile(r"://|(?i:www)\.|@")
_BARE_LINK_INERT = {"://": "：//", "@": "＠"}
# What makes an image or an HTML tag of a model's Markdown (``markdown_tame``).
# An autolink to a web or mail address (``<https://…>``, CommonMark's: no
# space, ``<`` or ``>`` inside) is a link, not a tag: its ``<`` stays.
AUTOLINK_MAX = 2048  # characters of an autolink's address after its scheme
_AUTOLINK_SCHEMES = ("http://", "https://", "mailto:")
_TAMED = re.compile(
    rf"!\[|<(?!(?ai:{'|'.join(map(re.escape, _AUTOLINK_SCHEMES))})"
    rf"[^\s<>]{{0,{AUTOLINK_MAX}}}>)(?=[A-Za-z/!?])"
)
_ADDRESS = re.compile(r"[^\s<>]*")


def markdown_inert(value: str) -> str:
    """Return ``value`` so that Markdown makes no link or image of it.

    For third parties' text that Soul puts into what Home Assistant renders as
    Markdown (its replies in Assist, repair issues): square and angle brackets
    become their full-width forms, which read the same and work in no
    Markdown or HTML. So do what makes a bare address a link (GitHub's
    Markdown links ``https://…``, ``www.…`` and ``a@b.c`` without brackets):
    the colon before ``//``, the dot after ``www`` and ``@``.
    """
    return _BARE_LINK.sub(_bare_link_inert, value.translate(_INERT_IN_MARKDOWN))


def _bare_link_inert(match: re.Match[str]) -> str:
    found = match.group()
    return _BARE_LINK_INERT.get(found) or found[:3] + "．"


def markdown_tame(value: str) -> str:
    """Return a model's Markdown without images or HTML tags; its links stay.

    Home Assistant renders a reply as Markdown with HTML, and the browser
    fetches an image as soon as it is shown: a model that read a hostile
    body's, server's or page's words could put what it knows into an image's
    address, and every reader's browser would send it there (black box,
    2026-11-29: 17 requests to evil.example for 3 replies). ``![`` becomes
    ``!［`` and a ``<`` that opens a tag becomes ``＜``; a link still needs a
    click, and an autolink (``<https://…>``) stays one. One character is
    changed for one; whether it is changed depends on what follows it, so a
    stream holds back the part ``markdown_undecided`` names.
    """
    return _TAMED.sub(_tame, value) if ("![" in value or "<" in value) else value


def _tame(match: re.Match[str]) -> str:
    return "!［" if match.group() == "![" else "＜"


def markdown_undecided(value: str) -> int:
    """Return where the part of ``value`` that ``markdown_tame`` cannot decide yet begins.

    What comes before it is tamed the same whatever follows ``value``: a
    last ``!`` may begin an image, and a last ``<`` a tag, or, with the
    address after it, an autolink (at most ``AUTOLINK_MAX`` characters of it).
    """
    end = len(value) - 1 if value.endswith("!") else len(value)
    at = value.rfind("<")
    if at < 0:
        return end
    tail = value[at + 1 :]
    for scheme in _AUTOLINK_SCHEMES:
        head = tail[: len(scheme)]  # a scheme's letters are ASCII, in any case
        if not (head.isascii() and scheme.startswith(head.lower())):
            continue
        if len(head) < len(scheme) or (
            len(tail) - len(scheme) <= AUTOLINK_MAX
            and _ADDRESS.fullmatch(tail, len(scheme)) is not None
        ):
            return min(at, end)
    return end
