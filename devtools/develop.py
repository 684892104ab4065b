"""Run Home Assistant on http://localhost:8123 with Soul and an embedded MQTT broker.

Called by ``scripts/develop`` (after ``scripts/setup``); extra arguments go to
Home Assistant. It also starts the reference body ``body-sim`` (terminal
``terminal-001``) against the broker, so a terminal device appears once Soul is
added. Environment: ``SOUL_MQTT_PORT`` (default 1883; a broker already
listening there is used as it is), ``SOUL_CONFIG_DIR`` (default ``config/``),
``SOUL_BODY_SIM=0`` (no simulated body).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys
import uuid

from devtools.broker import MqttBroker, port_open
from devtools.ha_requirements import develop_domains, requirements_for

ROOT = Path(__file__).resolve().parent.parent
# Integrations named in config/configuration.yaml, and ai_task: the frontend's
# service list imports it (and through it camera, which needs PyTurboJPEG).
CONFIGURED = ("assist_pipeline", "logger", "ai_task")


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
    print(f"develop: installing {' '.join(missing)}", flush=True)
    constraints = Path(homeassistant.__file__).parent / "package_constraints.txt"
    command = [sys.executable, "-m", "pip", "install", "-q", "-c", str(constraints)]
    if sys.version_info < (3, 13, 2):
        command.append("--ignore-requires-python")
    subprocess.run([*command, *missing], check=True)  # noqa: S603


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
    print(f"develop: added an MQTT entry for 127.0.0.1:{port}", flush=True)


def start_body_sim(config_dir: Path, port: int) -> subprocess.Popen[bytes] | None:
    """Start the reference body (terminal-001) unless SOUL_BODY_SIM=0."""
    if os.environ.get("SOUL_BODY_SIM", "1") == "0":
        return None
    log = config_dir / "body-sim.log"
    config_dir.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "devtools.body_sim", "--port", str(port)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    print(f"develop: body-sim terminal-001 running (log: {log})", flush=True)
    return process


def run_home_assistant(config_dir: Path, args: list[str]) -> int:
    """Run Home Assistant in this process, allowing Python 3.13.0/3.13.1."""
    import homeassistant.__main__ as ha_main  # noqa: PLC0415

    ha_main.validate_python = lambda: None
    # Home Assistant finds custom_components/soul through the repository root.
    sys.path.insert(0, str(ROOT))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    sys.argv = ["hass", "--config", str(config_dir), *args]
    return ha_main.main()


def main() -> int:
    """Start the broker, prepare the configuration and run Home Assistant."""
    config_dir = Path(os.environ.get("SOUL_CONFIG_DIR", ROOT / "config")).resolve()
    port = int(os.environ.get("SOUL_MQTT_PORT", "1883"))
    install_runtime_requirements()
    seed_mqtt_entry(config_dir, port)
    broker = None
    if port_open("127.0.0.1", port):
        print(f"develop: using the MQTT broker already on port {port}", flush=True)
    else:
        broker = MqttBroker(port, prefer="amqtt").start()
        print(f"develop: embedded MQTT broker (amqtt) on 127.0.0.1:{port}", flush=True)
    body = start_body_sim(config_dir, port)
    print("develop: Home Assistant on http://localhost:8123", flush=True)
    try:
        return run_home_assistant(config_dir, sys.argv[1:])
    finally:
        if body is not None:
            body.terminate()
            body.wait(10)
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
