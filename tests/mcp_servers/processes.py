"""Where the test servers' scripts are, and which of them this process runs."""

from __future__ import annotations

import os
from pathlib import Path

STDIO_SERVER = str(Path(__file__).resolve().with_name("stdio_server.py"))
HOSTILE_SERVER = str(Path(__file__).resolve().with_name("hostile_server.py"))
HTTP_SERVER = str(Path(__file__).resolve().with_name("http_server.py"))


def child_processes(marker: str) -> dict[int, str]:
    """List the children of this process whose command line contains ``marker``.

    Maps each pid to its state letter (``R``, ``S``, ``Z`` for an unreaped
    zombie, …), read from /proc (Linux).
    """
    me = os.getpid()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # the process ended meanwhile
        # "pid (comm) state ppid ...": comm may contain spaces and parentheses.
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == me and marker in cmdline:
            found[int(entry.name)] = state
    return found
