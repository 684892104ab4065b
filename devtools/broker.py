"""A real MQTT broker in a child process: mosquitto when installed, else amqtt.

``python -m devtools.broker --port 1883`` runs amqtt in the foreground;
``MqttBroker`` starts either broker as a subprocess and waits until it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import logging
import os
from pathlib import Path
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(host: str, port: int) -> bool:
    """Return whether something accepts TCP connections on host:port."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), 0.2):
        return True
    return False


def supervised_child() -> dict[str, Any]:
    """Return ``subprocess.Popen`` options for a child this process stops itself.

    The child gets its own process group, so a Ctrl-C in the terminal reaches
    only its parent, which stops its children in order; and, on Linux, it is
    sent SIGTERM if the parent dies without stopping it (even by SIGKILL), so it
    is never left behind.
    """
    parent = os.getpid()
    # Looked up before the fork: the child may only make plain calls.
    prctl = (
        ctypes.CDLL(None, use_errno=True).prctl
        if sys.platform.startswith("linux")
        else None
    )

    def die_with_parent() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return {"process_group": 0, "preexec_fn": die_with_parent}


class MqttBroker:
    """A broker subprocess on 127.0.0.1:``port``; use as a context manager."""

    def __init__(
        self,
        port: int | None = None,
        *,
        prefer: str | None = None,
        supervised: bool = False,
        log: Path | None = None,
    ) -> None:
        """Choose the implementation: ``prefer`` or $SOUL_TEST_BROKER, else mosquitto if on PATH.

        ``supervised`` starts it with :func:`supervised_child`'s options: in its
        own process group, and stopped when this process dies. ``log`` receives
        its output (else it is kept in memory to explain a failed start; a
        broker meant to run for long should have one).
        """
        self.host = "127.0.0.1"
        self.port = port or free_port()
        choice = prefer or os.environ.get("SOUL_TEST_BROKER")
        if choice is None:
            choice = "mosquitto" if shutil.which("mosquitto") else "amqtt"
        self.implementation = choice
        self.supervised = supervised
        self.log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def _command(self) -> list[str]:
        if self.implementation == "mosquitto":
            self._tmp = tempfile.TemporaryDirectory(prefix="soul-mosquitto-")
            conf = Path(self._tmp.name) / "mosquitto.conf"
            conf.write_text(
                f"listener {self.port} {self.host}\nallow_anonymous true\n"
                "persistence false\n",
                encoding="utf-8",
            )
            return ["mosquitto", "-c", str(conf)]
        return [sys.executable, "-m", "devtools.broker", "--port", str(self.port)]

    def start(self, timeout: float = 20.0) -> MqttBroker:
        """Start the broker and wait until it accepts connections."""
        root = Path(__file__).resolve().parent.parent
        env = {
            **os.environ,
            "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        options = supervised_child() if self.supervised else {}
        if self.log is None:
            stderr: Any = subprocess.PIPE
        else:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            stderr = self.log.open("ab")
        try:
            self._process = subprocess.Popen(  # noqa: S603
                self._command(),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                **options,
            )
        finally:
            if self.log is not None:
                stderr.close()
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"{self.implementation} exited: {self._output()[-2000:]}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"{self.implementation} did not listen on {self.port}"
                )
            time.sleep(0.05)
        return self

    def _output(self) -> str:
        if self.log is not None:
            return self.log.read_text(encoding="utf-8", errors="replace")
        stream = self._process.stderr if self._process else None
        return stream.read().decode(errors="replace") if stream else ""

    def stop(self) -> None:
        """Stop the broker process."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stderr:
                self._process.stderr.close()
            self._process = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> MqttBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def add_broker_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options every tool needs to reach a broker and a terminal."""
    parser.add_argument("--host", default="127.0.0.1", help="broker host")
    parser.add_argument("--port", type=int, default=1883, help="broker port")
    parser.add_argument("--username", help="broker user name")
    parser.add_argument("--password", help="broker password")
    parser.add_argument("--prefix", default="soul", help="topic prefix")
    parser.add_argument("--terminal-id", default="terminal-001")


def amqtt_config(host: str, port: int) -> dict:
    """Return an amqtt configuration: one TCP listener, anonymous clients allowed."""
    return {
        "listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}"}},
        "plugins": {
            "amqtt.plugins.authentication.AnonymousAuthPlugin": {
                "allow_anonymous": True
            }
        },
    }


async def run_amqtt(host: str, port: int) -> None:
    """Run an amqtt broker until cancelled."""
    from amqtt.broker import Broker  # noqa: PLC0415

    broker = Broker(amqtt_config(host, port))
    await broker.start()
    try:
        await asyncio.Event().wait()
    finally:
        await broker.shutdown()


def main() -> None:
    """Run amqtt in the foreground."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_amqtt(args.host, args.port))


if __name__ == "__main__":
    main()
