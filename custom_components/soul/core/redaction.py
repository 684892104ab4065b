"""Secrets hidden where Soul shows a configuration: diagnostics, logs, entities."""

from __future__ import annotations

from urllib.parse import urlsplit

REDACTED = "**REDACTED**"


def redact_url(url: str) -> str:
    """Hide a URL's user, password and query (tokens often travel there).

    ``http://bob:secret@host:8000/v1?key=k`` is ``http://**REDACTED**@host:8000/v1?**REDACTED**``.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a URL Soul could have used: show nothing of it
        return REDACTED
    netloc = parts.hostname or ""
    if ":" in netloc:  # an IPv6 address keeps its brackets
        netloc = f"[{netloc}]"
    if port:
        netloc += f":{port}"
    if parts.username or parts.password:
        netloc = f"{REDACTED}@{netloc}"
    return parts._replace(netloc=netloc, query=REDACTED if parts.query else "").geturl()
