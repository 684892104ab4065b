"""``scripts/develop`` (devtools/develop.py): its configuration, and a clean Ctrl-C.

The last test really runs ``python -m devtools.develop`` -- Home Assistant, the
embedded broker and body-sim -- in a fresh configuration directory on free
ports, presses Ctrl-C (SIGINT to its process group, as a terminal does) and
checks that everything stops cleanly and nothing is left behind.
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from homeassistant.util.yaml import load_yaml
import pytest

from devtools import develop
from devtools.broker import free_port, port_open
from devtools.ha_requirements import develop_domains, requirements_for

ROOT = Path(__file__).resolve().parent.parent
# Home Assistant's resolver (pycares) may answer a lookup of an outside host
# (there is no network here) after the loop closed: Python prints the ignored
# exception with a traceback. Home Assistant's own race at exit, not Soul's
# (from 2026-11-29 22:30 on, most runs here: lookups fail at once).
_DNS_AT_EXIT = re.compile(
    r"Exception ignored from cffi callback <function _query_dnsrec_cb[^\n]*\n"
    r"Traceback \(most recent call last\):\n(?:  .*\n)*"
    r"(?:RuntimeError: Event loop is closed\n)?"  # the last one may be cut off
)


def _without_dns_at_exit(text: str) -> str:
    """Return the output without the resolver's ignored exceptions at exit."""
    return _DNS_AT_EXIT.sub("", text)


CONFIGURATION = ROOT / "config" / "configuration.yaml"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 45.0


def test_configured_integrations_follow_configuration_yaml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every integration the develop configuration names has its requirements installed."""
    monkeypatch.setenv("SOUL_HTTP_PORT", "8124")
    config = load_yaml(CONFIGURATION)
    assert isinstance(config, dict)
    assert set(config) - {"homeassistant"} <= set(develop.CONFIGURED)
    assert "default_config" in config
    assert config["http"]["server_port"] == "8124"
    # develop installs what default_config pulls in: the recorder (graphs), ...
    requirements = requirements_for(develop_domains(develop.CONFIGURED))
    for package in ("sqlalchemy", "av", "hass-nabucasa", "pynacl"):
        assert any(r.lower().startswith(f"{package}==") for r in requirements)


def test_http_port_default_and_ignored(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A new directory gets the seed configuration; a foreign one keeps port 8123."""
    monkeypatch.delenv("SOUL_HTTP_PORT", raising=False)
    develop.seed_configuration(tmp_path / "new")
    assert (tmp_path / "new" / "configuration.yaml").read_text(
        encoding="utf-8"
    ) == CONFIGURATION.read_text(encoding="utf-8")
    assert develop.http_port(tmp_path / "new") == 8123
    monkeypatch.setenv("SOUL_HTTP_PORT", "18123")
    assert develop.http_port(tmp_path / "new") == 18123
    own = tmp_path / "own"
    own.mkdir()
    (own / "configuration.yaml").write_text("default_config:\n", encoding="utf-8")
    develop.seed_configuration(own)
    assert (own / "configuration.yaml").read_text(encoding="utf-8") == (
        "default_config:\n"
    )
    assert develop.http_port(own) == 8123
    assert "SOUL_HTTP_PORT is ignored" in capsys.readouterr().out


def _descendants(pid: int) -> set[int]:
    """Return the processes below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Return whether ``pid`` runs (a zombie has finished)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _http_answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@pytest.mark.timeout(180)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_stops_everything(
    tmp_path: Path, socket_enabled: None, signum: signal.Signals, group: bool
) -> None:
    """A stop signal ends Home Assistant, body-sim and the broker cleanly.

    SIGINT goes to the process group (Ctrl-C), SIGTERM to develop alone. Exit
    status 0, no traceback or blocking call, no process or port left behind.
    """
    mqtt_port, http_port = free_port(), free_port()
    env = {
        **os.environ,
        "SOUL_CONFIG_DIR": str(tmp_path / "config"),
        "SOUL_MQTT_PORT": str(mqtt_port),
        "SOUL_HTTP_PORT": str(http_port),
    }
    output = tmp_path / "develop.out"
    with output.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "devtools.develop"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    children: set[int] = set()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _http_answers(http_port):
            assert process.poll() is None, output.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "Home Assistant did not answer"
            time.sleep(0.5)
        assert port_open("127.0.0.1", mqtt_port)
        children = _descendants(process.pid)
        assert len(children) >= 3  # Home Assistant, body-sim, broker
        if group:
            os.killpg(process.pid, signum)  # what Ctrl-C in a terminal does
        else:
            process.send_signal(signum)
        status = process.wait(STOP_TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)

    text = output.read_text(errors="replace")
    assert status == 0, text[-3000:]
    assert "blocking call" not in text
    assert "Traceback" not in _without_dns_at_exit(text), text
    assert "develop: stopped" in text
    assert not [pid for pid in children if _alive(pid)], "orphan processes"
    assert not port_open("127.0.0.1", mqtt_port)
    assert not port_open("127.0.0.1", http_port)
    # body-sim said goodbye while the broker was still up.
    body_log = (tmp_path / "config" / "body-sim.log").read_text(errors="replace")
    assert "Disconnected: Normal disconnection" in body_log


_LEFTOVER_LOOP = """
import asyncio
from concurrent.futures import ThreadPoolExecutor
from pyroute2.iproute import IPRoute
from devtools.develop import close_leftover_loops

with ThreadPoolExecutor(1) as executor:
    made = executor.submit(IPRoute).result()
leftover = made.asyncore.event_loop
assert not leftover.is_closed()


class Lazy:  # as openai's LazyProxy: asking its class imports a module
    asked = False

    @property
    def __class__(self):
        Lazy.asked = True
        return object


lazy = Lazy()


async def from_a_running_loop():
    closed = close_leftover_loops()
    assert not asyncio.get_running_loop().is_closed()
    return closed


print(asyncio.run(from_a_running_loop()), leftover.is_closed(), Lazy.asked)
"""


def test_leftover_event_loops_are_closed_before_exit() -> None:
    """The loop pyroute2 opens for Home Assistant's dhcp discovery is closed.

    ``IPRoute`` made in an executor thread, as ``aiodiscover`` makes it, opens
    an event loop and never closes it; left to interpreter exit, it sometimes
    prints a traceback on a clean stop. A loop that is running is left alone.
    Nothing is asked its ``__class__`` (a lazy proxy would import its module
    on Home Assistant's thread). In a process of its own: the tests' own loop
    must stay open.
    """
    pytest.importorskip("pyroute2.iproute")
    done = subprocess.run(  # noqa: S603 - this interpreter, this script
        [sys.executable, "-c", _LEFTOVER_LOOP],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    closed, leftover_closed, proxy_asked = done.stdout.split()
    assert int(closed) >= 1
    assert leftover_closed == "True"
    assert proxy_asked == "False"
    assert "Traceback" not in done.stderr


def test_only_the_resolvers_ignored_exceptions_are_left_out() -> None:
    dns = (
        "Exception ignored from cffi callback <function _query_dnsrec_cb at 0x1>:\n"
        "Traceback (most recent call last):\n"
        '  File "pycares/__init__.py", line 156, in _query_dnsrec_cb\n'
        "RuntimeError: Event loop is closed\n"
    )
    soul = (
        "ERROR (MainThread) [custom_components.soul] Error\n"
        "Traceback (most recent call last):\n"
        '  File "custom_components/soul/x.py", line 1, in f\n'
        "ValueError: x\n"
    )
    assert "Traceback" not in _without_dns_at_exit(dns + dns)
    assert _without_dns_at_exit(dns + soul + dns) == soul
