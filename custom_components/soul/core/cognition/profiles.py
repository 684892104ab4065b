"""The profile store (XingChen-V §5.2): who the souls talk to, and the souls' own state.

``user_profile`` per Home Assistant user — a ``name`` and ``preferences``
(short key/value texts) — that the F-brain reads in its prompt and may
change through the ``update_user_profile`` tool when the user says something
about themselves. ``system_state`` per soul — ``version``, ``boot_count``
(one more at every Home Assistant start), first and last boot. Everything is
untrusted text, validated and bounded before it is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import stored, untrusted
from ..souls import MAX_SOULS

MAX_USERS = 256
MAX_NAME = 64
MAX_PREFERENCES = 32
MAX_KEY = 64
MAX_VALUE = 256
MAX_VERSION = 32  # Soul's version, as a system state keeps it
UPDATE_PROFILE_TOOL = "update_user_profile"
UPDATE_PROFILE_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": UPDATE_PROFILE_TOOL,
        "description": (
            "Remember something the user told you about themselves: their name, "
            "or a preference (a short key and value, e.g. drink: green tea). "
            "An empty value forgets that preference."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": MAX_NAME},
                "preferences": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": MAX_VALUE},
                    "maxProperties": 8,
                },
            },
            "additionalProperties": False,
        },
    },
}


class ProfileError(ValueError):
    """A profile change Soul refuses; ``str()`` says why."""


@dataclass
class UserProfile:
    """What a soul knows about a user (§5.2 ``user_profile``)."""

    name: str | None = None
    preferences: dict[str, str] = field(default_factory=dict)
    updated: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Return the spec's shape (plus when it last changed)."""
        return {
            "name": self.name,
            "preferences": dict(self.preferences),
            "updated": self.updated,
        }


@dataclass
class SystemState:
    """A soul's own state (§5.2 ``system_state``)."""

    version: str
    boot_count: int = 0
    first_boot: float = 0.0
    last_boot: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Return the spec's shape (plus the boots' times)."""
        return {
            "version": self.version,
            "boot_count": self.boot_count,
            "first_boot": self.first_boot,
            "last_boot": self.last_boot,
        }


class ProfileStore:
    """User profiles and the souls' system state, stored as one JSON object."""

    def __init__(
        self, *, clock: Callable[[], float], on_dirty: Callable[[], None]
    ) -> None:
        """Start empty; ``on_dirty`` asks the glue to store ``dump()`` soon."""
        self._clock = clock
        self._on_dirty = on_dirty
        self.users: dict[str, UserProfile] = {}
        self.systems: dict[str, SystemState] = {}

    # -- storage ---------------------------------------------------------------

    def load(self, data: Any) -> None:
        """Take what ``dump()`` stored; malformed parts are skipped (``core.stored``)."""
        if not isinstance(data, dict):
            return
        now = self._clock()
        users = data.get("user_profiles")
        if isinstance(users, dict):
            for user_id, raw in stored.newest(users, MAX_USERS):
                if isinstance(raw, dict) and stored.ident(user_id) is not None:
                    try:
                        profile = _profile(raw)
                    except ProfileError:
                        continue
                    profile.updated = stored.seconds(raw.get("updated"), now)
                    self.users[user_id] = profile
        systems = data.get("system_states")
        if isinstance(systems, dict):
            # One a soul (100,000 of them took half a second to read).
            for soul_id, raw in stored.newest(systems, MAX_SOULS):
                if isinstance(raw, dict) and stored.ident(soul_id) is not None:
                    self.systems[soul_id] = SystemState(
                        version=untrusted.clean(
                            raw.get("version", ""), MAX_VERSION, multiline=False
                        ),
                        boot_count=stored.count(raw.get("boot_count", 0)),
                        first_boot=stored.seconds(raw.get("first_boot"), now),
                        last_boot=stored.seconds(raw.get("last_boot"), now),
                    )

    def dump(self) -> dict[str, Any]:
        """Return everything for storage."""
        return {
            "user_profiles": {u: p.as_dict() for u, p in self.users.items()},
            "system_states": {s: st.as_dict() for s, st in self.systems.items()},
        }

    # -- system state ----------------------------------------------------------

    def boot(self, soul_ids: list[str], version: str) -> None:
        """Count one start of Home Assistant for every soul."""
        now = self._clock()
        for soul_id in soul_ids:
            state = self.systems.setdefault(
                soul_id, SystemState(version=version, first_boot=now)
            )
            state.version = version
            state.boot_count += 1
            state.last_boot = now
        self._on_dirty()

    def forget_souls_except(self, soul_ids: set[str]) -> None:
        """Drop the system state of souls that no longer exist."""
        for soul_id in set(self.systems) - soul_ids:
            del self.systems[soul_id]
            self._on_dirty()

    # -- user profiles ---------------------------------------------------------

    def profile(self, user_id: str | None) -> UserProfile | None:
        """Return a user's profile, if there is one."""
        return self.users.get(user_id) if user_id else None

    def update(
        self,
        user_id: str,
        *,
        name: Any = None,
        preferences: Any = None,
    ) -> UserProfile:
        """Change a user's profile; an empty preference value forgets it.

        Raises ``ProfileError`` for an invalid name, key or value, or when
        the user would have more than ``MAX_PREFERENCES`` preferences.
        """
        profile = self.users.get(user_id) or UserProfile()
        changed = _profile(
            {"name": profile.name, "preferences": dict(profile.preferences)}
        )
        if name is not None:
            changed.name = _text(name, "name", MAX_NAME) or None
        if preferences is not None:
            if not isinstance(preferences, Mapping):
                raise ProfileError("preferences must be an object of texts")
            for raw_key, value in preferences.items():
                key = _text(raw_key, "a preference's key", MAX_KEY)
                if not key:
                    raise ProfileError("a preference's key must not be empty")
                text = _text(value, f"preference {key!r}", MAX_VALUE)
                if text:
                    changed.preferences[key] = text
                else:
                    changed.preferences.pop(key, None)
            if len(changed.preferences) > MAX_PREFERENCES:
                raise ProfileError(f"at most {MAX_PREFERENCES} preferences")
        changed.updated = self._clock()
        self.users.pop(user_id, None)
        self.users[user_id] = changed
        while len(self.users) > MAX_USERS:
            del self.users[next(iter(self.users))]
        self._on_dirty()
        return changed

    def remove(self, user_id: str) -> bool:
        """Forget a user's profile; return whether there was one."""
        if self.users.pop(user_id, None) is None:
            return False
        self._on_dirty()
        return True

    def prompt_line(self, user_id: str | None) -> str | None:
        """Return what the F-brain is told about the user, if anything."""
        profile = self.profile(user_id)
        if profile is None or not (profile.name or profile.preferences):
            return None
        parts = []
        if profile.name:
            parts.append(f"their name is {profile.name}")
        if profile.preferences:
            liked = "; ".join(f"{k}: {v}" for k, v in profile.preferences.items())
            parts.append(f"preferences: {liked}")
        return "About the user: " + "; ".join(parts) + "."


def _text(value: Any, what: str, max_length: int) -> str:
    """Return a stripped one-line text (empty allowed); raise ``ProfileError``."""
    if value is None:
        return ""
    try:
        return untrusted.text(
            value, what, max_length=max_length, required=False
        ).strip()
    except untrusted.UntrustedInputError as err:
        raise ProfileError(str(err)) from None


def _profile(raw: Mapping[str, Any]) -> UserProfile:
    """Return a stored profile, checked; raise ``ProfileError``."""
    name = _text(raw.get("name"), "name", MAX_NAME) or None
    preferences: dict[str, str] = {}
    stored = raw.get("preferences") or {}
    if not isinstance(stored, Mapping):
        raise ProfileError("preferences must be an object of texts")
    for raw_key, value in list(stored.items())[:MAX_PREFERENCES]:
        key = _text(raw_key, "a preference's key", MAX_KEY)
        if key and (text := _text(value, f"preference {key!r}", MAX_VALUE)):
            preferences[key] = text
    return UserProfile(name, preferences)
