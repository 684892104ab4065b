"""Home Assistant users as the core's ``Principal`` (docs/security.md)."""

from __future__ import annotations

from aiohttp import web
from homeassistant.auth.models import User
from homeassistant.auth.permissions.const import POLICY_CONTROL
from homeassistant.components.http import KEY_HASS_USER
from homeassistant.core import HomeAssistant, ServiceCall
from homeassistant.exceptions import Unauthorized

from .core.access import SYSTEM, AccessError, Principal


def principal_of(user: User) -> Principal:
    """Return the principal of an authenticated Home Assistant user."""
    return Principal(
        user.id,
        is_admin=user.is_admin,
        may_control=user.is_admin
        or user.permissions.access_all_entities(POLICY_CONTROL),
    )


def principal_of_request(request: web.Request) -> Principal:
    """Return the principal of an authenticated HTTP request."""
    user: User | None = request.get(KEY_HASS_USER)
    if user is None:  # views require authentication; this is a safety net
        raise AccessError("authentication required")
    return principal_of(user)


async def async_principal_of_call(hass: HomeAssistant, call: ServiceCall) -> Principal:
    """Return the principal of an action call; no user (automations) is ``SYSTEM``."""
    if call.context.user_id is None:
        return SYSTEM
    user = await hass.auth.async_get_user(call.context.user_id)
    if user is None:
        raise Unauthorized(context=call.context)
    return principal_of(user)


def unauthorized(call: ServiceCall, err: AccessError) -> Unauthorized:
    """Return Home Assistant's error for an action the caller may not run."""
    return Unauthorized(context=call.context, permission=POLICY_CONTROL)
