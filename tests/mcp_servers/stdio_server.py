"""An MCP server over stdio, with the test tools (``tools.py``) and ``crash``.

Run it as a script, from any working directory::

    python /abs/path/tests/mcp_servers/stdio_server.py [--name NAME]
        [--never-answer | --exit-at-start]

- ``crash()``, a tool, ends the process at once (exit status 3), answering nothing.
- ``--never-answer``: read stdin and never write anything, not even after end of
  input (a server that hangs in initialize; the client has to kill it).
- ``--exit-at-start``: exit with status 1 before serving (a server that cannot
  start).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import sys
import time

EXIT_AT_START_STATUS = 1
CRASH_STATUS = 3


def _never_answer() -> None:
    """Swallow stdin, then hang until killed."""
    for _line in sys.stdin.buffer:
        pass
    while True:
        time.sleep(3600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", default="soul-test-stdio")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--never-answer", action="store_true")
    mode.add_argument("--exit-at-start", action="store_true")
    args = parser.parse_args(argv)

    if args.exit_at_start:
        sys.stderr.write("stdio_server: exiting at start, as asked\n")
        return EXIT_AT_START_STATUS
    if args.never_answer:
        _never_answer()

    # Run as a script, sys.path[0] is this folder: make the repository importable.
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.mcp_servers.tools import build_server

    server = build_server(args.name)

    @server.tool()
    def crash() -> str:
        """End the server process at once (exit status 3)."""
        os._exit(CRASH_STATUS)

    server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
