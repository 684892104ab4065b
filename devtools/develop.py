"""Run Home Assistant on http://localhost:8123 with Soul and an embedded MQTT broker.

Called by ``scripts/develop`` (after ``scripts/setup``); extra arguments go to
Home Assistant. It also starts the reference body ``body-sim`` (terminal
``terminal-001``) against the broker, so a terminal device appears once Soul is
added. Environment: ``SOUL_MQTT_PORT`` (default 1883; a broker already
listening there is used as it is, and left running), ``SOUL_HTTP_PORT``
(default 8123; ``config/configuration.yaml`` reads it), ``SOUL_CONFIG_DIR``
(default ``config/``; a new one gets a copy of ``config/configuration.yaml``),
``SOUL_BODY_SIM=0`` (no simulated body).

This process only supervises: Home Assistant, the body and the broker are its
children, each in its own process group and, on Linux, stopped if this process
dies. Ctrl-C (SIGINT), SIGTERM or SIGHUP stop Home Assistant, then the body,
then the broker, and the exit status is Home Assistant's (0); a second signal
stops them at once. A restart asked from Home Assistant starts it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes.util
import gc
import json
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import Any
import uuid

from devtools.broker import MqttBroker, port_open, supervised_child
from devtools.ha_requirements import develop_domains, requirements_for

ROOT = Path(__file__).resolve().parent.parent
# The top-level integrations of config/configuration.yaml (tests check), and
# ai_task: the frontend's service list imports it (and through it camera).
CONFIGURED = ("default_config", "assist_pipeline", "http", "logger", "ai_task")
DEFAULT_HTTP_PORT = 8123
RESTART_EXIT_CODE = 100  # homeassistant.const.RESTART_EXIT_CODE
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Seconds Home Assistant gets to stop (its own shutdown stages time out before).
HASS_STOP_TIMEOUT = 180.0
BODY_STOP_TIMEOUT = 10.0
# Seconds a stop asked for during Home Assistant's start waits for it to finish.
SETTLE_TIMEOUT = 60.0

# What Home Assistant's container ships and the integrations above use, as
# (Debian package, how to tell it is there, what needs it). Without them Home
# Assistant logs errors with tracebacks on every start.
SYSTEM_PACKAGES = (
    ("ffmpeg", lambda: shutil.which("ffmpeg"), "ffmpeg (tts, stream)"),
    (
        "libturbojpeg0",
        lambda: ctypes.util.find_library("turbojpeg"),
        "camera snapshots (camera)",
    ),
    ("libpcap0.8", lambda: ctypes.util.find_library("pcap"), "DHCP discovery (dhcp)"),
)

# Run in the Home Assistant child: see hass_main.
_HASS_CHILD = (
    "import sys; from devtools.develop import hass_main; sys.exit(hass_main())"
)


def say(message: str) -> None:
    """Print a develop: line at once."""
    print(f"develop: {message}", flush=True)


def install_runtime_requirements() -> None:
    """Install what Home Assistant would install on first start, if missing.

    Home Assistant installs with uv, which honours ``Requires-Python``; on
    Python 3.13.0/3.13.1 that refuses packages asking for 3.13.2, so pip does it
    here with ``--ignore-requires-python``.
    """
    import homeassistant  # noqa: PLC0415
    from homeassistant.util.package import is_installed  # noqa: PLC0415

    missing = [
        r for r in requirements_for(develop_domains(CONFIGURED)) if not is_installed(r)
    ]
    if not missing:
        return
    say(f"installing {' '.join(missing)}")
    constraints = Path(homeassistant.__file__).parent / "package_constraints.txt"
    command = [sys.executable, "-m", "pip", "install", "-q", "-c", str(constraints)]
    if sys.version_info < (3, 13, 2):
        command.append("--ignore-requires-python")
    subprocess.run([*command, *missing], check=True)  # noqa: S603


def install_system_packages() -> None:
    """Install the system libraries of SYSTEM_PACKAGES with apt-get, as root.

    Elsewhere (no apt-get, not root) say what is missing and go on: Home
    Assistant runs without them, logging errors.
    """
    missing = [(package, use) for package, found, use in SYSTEM_PACKAGES if not found()]
    if not missing:
        return
    packages = [package for package, _use in missing]
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        for package, use in missing:
            say(f"{package} is missing: Home Assistant's {use} will log errors")
        say(f"install with your package manager: apt-get install {' '.join(packages)}")
        return
    say(f"installing {' '.join(packages)} (apt-get)")
    # In its own process group: a Ctrl-C must not leave dpkg half done.
    options: dict[str, Any] = {
        "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        "capture_output": True,
        "process_group": 0,
    }
    install = [apt, "install", "-y", "-qq", "--no-install-recommends", *packages]
    for command in ([], [apt, "update", "-qq"]):  # update only if install fails
        if command:
            subprocess.run(command, check=False, **options)  # noqa: S603
        done = subprocess.run(install, check=False, **options)  # noqa: S603
        if done.returncode == 0:
            return
    say(f"apt-get could not install them:\n{done.stderr.decode(errors='replace')}")


def explain_go2rtc() -> None:
    """Say why default_config's go2rtc fails in a container without its binary."""
    from homeassistant.util.package import is_docker_env  # noqa: PLC0415

    if is_docker_env() and shutil.which("go2rtc") is None:
        say(
            "no go2rtc binary (it is on neither PyPI nor Debian): in a container "
            "Home Assistant's go2rtc (camera streaming, part of default_config) "
            "fails to set up and reports default_config as failed; the rest works"
        )


def seed_configuration(config_dir: Path) -> None:
    """Give a new configuration directory a copy of config/configuration.yaml."""
    target = config_dir / "configuration.yaml"
    if target.exists():
        return
    config_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "config" / "configuration.yaml", target)
    say(f"copied config/configuration.yaml to {config_dir}")


def http_port(config_dir: Path) -> int:
    """Return Home Assistant's port; warn when SOUL_HTTP_PORT would be ignored."""
    port = int(os.environ.get("SOUL_HTTP_PORT", str(DEFAULT_HTTP_PORT)))
    configuration = (config_dir / "configuration.yaml").read_text(encoding="utf-8")
    if "SOUL_HTTP_PORT" not in os.environ or "SOUL_HTTP_PORT" in configuration:
        return port
    say(
        f"SOUL_HTTP_PORT is ignored: {config_dir}/configuration.yaml lacks "
        "'http: server_port: !env_var SOUL_HTTP_PORT 8123'"
    )
    return DEFAULT_HTTP_PORT


def seed_mqtt_entry(config_dir: Path, port: int) -> None:
    """Create an MQTT config entry for the embedded broker on first start."""
    storage = config_dir / ".storage" / "core.config_entries"
    if storage.exists():
        return
    from homeassistant.components.mqtt import const as mqtt_const  # noqa: PLC0415
    from homeassistant.config_entries import STORAGE_VERSION, STORAGE_VERSION_MINOR  # noqa: PLC0415
    from homeassistant.util import dt as dt_util  # noqa: PLC0415

    now = dt_util.utcnow().isoformat()
    entry = {
        "entry_id": uuid.uuid4().hex,
        "version": mqtt_const.CONFIG_ENTRY_VERSION,
        "minor_version": mqtt_const.CONFIG_ENTRY_MINOR_VERSION,
        "domain": "mqtt",
        "title": "Embedded broker (scripts/develop)",
        "data": {"broker": "127.0.0.1", "port": port},
        "options": {},
        "pref_disable_new_entities": False,
        "pref_disable_polling": False,
        "source": "user",
        "unique_id": None,
        "disabled_by": None,
        "discovery_keys": {},
        "subentries": [],
        "created_at": now,
        "modified_at": now,
    }
    storage.parent.mkdir(parents=True, exist_ok=True)
    storage.write_text(
        json.dumps(
            {
                "version": STORAGE_VERSION,
                "minor_version": STORAGE_VERSION_MINOR,
                "key": "core.config_entries",
                "data": {"entries": [entry]},
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    say(f"added an MQTT entry for 127.0.0.1:{port}")


def _child_env() -> dict[str, str]:
    """Return the environment of the children: this repository on PYTHONPATH."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def start_body_sim(config_dir: Path, port: int) -> subprocess.Popen[bytes] | None:
    """Start the reference body (terminal-001) unless SOUL_BODY_SIM=0."""
    if os.environ.get("SOUL_BODY_SIM", "1") == "0":
        return None
    log = config_dir / "body-sim.log"
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "devtools.body_sim", "--port", str(port)],
            cwd=ROOT,
            env=_child_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            **supervised_child(),
        )
    say(f"body-sim terminal-001 running (log: {log})")
    return process


def stop_process(process: subprocess.Popen[Any], timeout: float) -> int:
    """Send SIGTERM, wait up to ``timeout`` seconds, then kill; return the status."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def hass_main() -> int:
    """Run Home Assistant in this (child) process, allowing Python 3.13.0/3.13.1.

    ``sys.argv[1:]`` are Home Assistant's arguments. Home Assistant handles
    SIGINT and SIGTERM once it has started; here it does so only once its
    startup work is done too (at most SETTLE_TIMEOUT seconds), and a signal
    that comes earlier is held until then: stopping halfway through the
    start cancels integrations' setups, which log errors.
    """
    import homeassistant.__main__ as ha_main  # noqa: PLC0415
    from homeassistant.helpers import signal as ha_signal  # noqa: PLC0415

    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, hold)
    register = ha_signal.async_register_signal_handling

    async def register_when_settled(hass: Any) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_TIMEOUT):
                await hass.async_block_till_done()
        register(hass)
        if held:
            os.kill(os.getpid(), signal.SIGTERM)

    def register_later(hass: Any) -> None:
        hass.async_create_background_task(
            register_when_settled(hass), "develop: signal handling once started"
        )

    ha_signal.async_register_signal_handling = register_later
    ha_main.validate_python = lambda: None
    # Home Assistant finds custom_components/soul through the repository root.
    sys.path.insert(0, str(ROOT))
    sys.argv = ["hass", *sys.argv[1:]]
    try:
        return ha_main.main()
    finally:
        close_leftover_loops()


def close_leftover_loops() -> int:
    """Close the event loops that libraries opened and left open; return how many.

    Home Assistant's dhcp discovery (``aiodiscover``) makes a pyroute2
    ``IPRoute`` in an executor thread, which opens an event loop of its own
    and never closes it. At interpreter exit that loop's self-pipe socket may
    be finalised before the loop, whose ``__del__`` then prints "Exception
    ignored in BaseEventLoop.__del__ … Invalid file descriptor: -1" on a
    clean stop. Closed here, while everything it holds is still open.

    Objects are told apart by ``type()``, not ``isinstance``: that would ask
    lazy proxies (``openai.resources``) for their ``__class__``, which imports
    their module, and Home Assistant reports an import on its loop's thread
    as a blocking call even after the loop has stopped.
    """
    closed = 0
    for obj in gc.get_objects():
        if (
            issubclass(type(obj), asyncio.BaseEventLoop)
            and not obj.is_closed()
            and not obj.is_running()
        ):
            obj.close()
            closed += 1
    return closed


class Develop:
    """The supervisor: starts the children, stops them in order on a signal."""

    def __init__(self, config_dir: Path, mqtt_port: int, args: list[str]) -> None:
        """Prepare; nothing starts before :meth:`run`."""
        self.config_dir = config_dir
        self.mqtt_port = mqtt_port
        self.args = args
        self.signals = 0
        self.hass: subprocess.Popen[bytes] | None = None
        self.stop_deadline: float | None = None
        self.forwarded = False

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Only flags, signals and os.write here: print() is not reentrant.
        self.signals += 1
        hass = self.hass
        running = hass is not None and hass.poll() is None
        name = signal.Signals(signum).name
        if self.signals == 1:
            message = f"develop: {name}: stopping (again to stop at once)\n"
            os.write(2, message.encode())
            self.stop_deadline = time.monotonic() + HASS_STOP_TIMEOUT
            if running:
                hass.send_signal(signal.SIGTERM)
                self.forwarded = True
        else:
            os.write(2, f"develop: {name}: stopping at once\n".encode())
            self.stop_deadline = time.monotonic()
            if running:
                hass.kill()

    def run(self) -> int:
        """Run until Home Assistant stops; return the exit status."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        broker: MqttBroker | None = None
        body: subprocess.Popen[bytes] | None = None
        try:
            try:
                install_runtime_requirements()
                install_system_packages()
            except subprocess.CalledProcessError:
                if self.signals:  # Ctrl-C reached pip too
                    return 0
                raise
            explain_go2rtc()
            seed_configuration(self.config_dir)
            port = http_port(self.config_dir)
            seed_mqtt_entry(self.config_dir, self.mqtt_port)
            if self.signals:
                return 0
            if port_open("127.0.0.1", self.mqtt_port):
                say(f"using the MQTT broker already on port {self.mqtt_port}")
            else:
                broker = MqttBroker(
                    self.mqtt_port,
                    prefer="amqtt",
                    supervised=True,
                    log=self.config_dir / "broker.log",
                ).start()
                say(f"embedded MQTT broker (amqtt) on 127.0.0.1:{self.mqtt_port}")
            if self.signals:
                return 0
            body = start_body_sim(self.config_dir, self.mqtt_port)
            say(f"Home Assistant on http://localhost:{port} (Ctrl-C stops everything)")
            return self._run_hass()
        finally:
            if body is not None:
                stop_process(body, BODY_STOP_TIMEOUT)
            if broker is not None:
                broker.stop()
            if self.signals:
                say("stopped")

    def _run_hass(self) -> int:
        """Run Home Assistant, again while it asks for a restart."""
        while not self.signals:
            self.hass = subprocess.Popen(  # noqa: S603
                [
                    sys.executable,
                    "-c",
                    _HASS_CHILD,
                    "--config",
                    self.config_dir,
                    *self.args,
                ],
                cwd=ROOT,
                env=_child_env(),
                **supervised_child(),
            )
            if self.signals and not self.forwarded:  # came before self.hass was set
                self.hass.terminate()
            status = self._wait_hass(self.hass)
            if status != RESTART_EXIT_CODE or self.signals:
                return status
            say("Home Assistant asked for a restart")
        return 0

    def _wait_hass(self, hass: subprocess.Popen[bytes]) -> int:
        """Wait for Home Assistant; kill it when it outlives the stop deadline."""
        while True:
            try:
                status = hass.wait(1.0)
            except subprocess.TimeoutExpired:
                if self.stop_deadline and time.monotonic() > self.stop_deadline:
                    say("Home Assistant did not stop in time: killing it")
                    hass.kill()
                continue
            return status if status >= 0 else 128 - status


def main() -> int:
    """Start the broker, prepare the configuration and run Home Assistant."""
    config_dir = Path(os.environ.get("SOUL_CONFIG_DIR", ROOT / "config")).resolve()
    mqtt_port = int(os.environ.get("SOUL_MQTT_PORT", "1883"))
    return Develop(config_dir, mqtt_port, sys.argv[1:]).run()


if __name__ == "__main__":
    sys.exit(main())
