"""A soul: its fields, the rules they follow, and the errors about souls (HA-free)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import untrusted
from .emotion.persona import MBTI_TYPES, Persona, is_mbti, persona_from_mbti
from .soul_names import shows

MAX_NAME_LENGTH = 64
MAX_PERSONA_LENGTH = 2000


class SoulError(ValueError):
    """A request about souls that cannot be honoured; the text says why."""


class NoSoulError(SoulError):
    """The terminal has no soul bound."""


class InvalidSoulFieldError(SoulError):
    """One field of a soul is invalid; ``field`` names it (name, mbti_type, persona)."""

    def __init__(self, field: str, message: str) -> None:
        """Name the field and say what is wrong."""
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Soul:
    """A named personality."""

    soul_id: str
    name: str
    mbti: str
    persona_text: str = ""
    user_id: str | None = None
    persona: Persona = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Derive the temperament from the MBTI type."""
        object.__setattr__(self, "persona", persona_from_mbti(self.mbti))


def validate_soul_fields(name: Any, mbti: Any, persona_text: Any = "") -> None:
    """Raise ``InvalidSoulFieldError`` for the first invalid field of a soul."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSoulFieldError("name", "name must be a non-empty string")
    try:
        untrusted.text(name.strip(), "name", max_length=MAX_NAME_LENGTH)
    except untrusted.UntrustedInputError as err:
        raise InvalidSoulFieldError("name", str(err)) from None
    if not shows(name):
        raise InvalidSoulFieldError("name", "name must have a character that shows")
    if not is_mbti(mbti):
        raise InvalidSoulFieldError(
            "mbti_type",
            f"mbti_type must be one of {', '.join(MBTI_TYPES)} "
            "(optionally with -A or -T)",
        )
    if persona_text is None or persona_text == "":
        return
    if not isinstance(persona_text, str):
        raise InvalidSoulFieldError("persona", "persona must be a string")
    try:
        untrusted.text(
            persona_text,
            "persona",
            max_length=MAX_PERSONA_LENGTH,
            multiline=True,
            required=False,
        )
    except untrusted.UntrustedInputError as err:
        raise InvalidSoulFieldError("persona", str(err)) from None
