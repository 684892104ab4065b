"""Who is asking, and what they may do (docs/security.md).

Identities come from Home Assistant: the glue turns the authenticated user of
a request, an action or a Star connection into a ``Principal``; the core
only ever asks it questions. Three kinds of callers:

- an administrator, who may act for any ``user_id`` and change Soul;
- a user, who acts as themselves (chat, their own memories and sessions);
- a read-only user (no control permission), who may read but not make a
  body act or move a soul.

``SYSTEM`` is Soul itself, automations and scripts (no user in the context):
configured by an administrator, so trusted as one.
"""

from __future__ import annotations

from dataclasses import dataclass


class AccessError(PermissionError):
    """The caller may not do this; ``str()`` says what."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller."""

    user_id: str | None
    is_admin: bool = False
    may_control: bool = True

    def acting_for(self, requested: str | None) -> str | None:
        """Return the user this call acts for: the caller, or (admins) ``requested``.

        Raises ``AccessError`` when a non-administrator names someone else.
        """
        if requested is None or requested == self.user_id:
            return self.user_id
        if not self.is_admin:
            raise AccessError("only an administrator may act for another user_id")
        return requested

    def sees(self, owner: str | None) -> bool:
        """Return whether the caller may see and use what ``owner`` owns (None: shared)."""
        return self.is_admin or owner is None or owner == self.user_id

    def require_admin(self, what: str) -> None:
        """Raise ``AccessError`` unless the caller is an administrator."""
        if not self.is_admin:
            raise AccessError(f"only an administrator may {what}")

    def require_control(self, what: str) -> None:
        """Raise ``AccessError`` for a read-only caller."""
        if not self.may_control:
            raise AccessError(f"a read-only user may not {what}")


SYSTEM = Principal(None, is_admin=True, may_control=True)
