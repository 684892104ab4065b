"""``StarHub`` routing with fake send/close callbacks and a fake clock (no sockets)."""

from __future__ import annotations

from dataclasses import dataclass, field
import json
from typing import Any

import pytest

from custom_components.soul.core import untrusted
from custom_components.soul.core.access import Principal
from custom_components.soul.core.star.hub import (
    CLOSE_GOING_AWAY,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    CLOSE_TRY_LATER,
    DEFAULT_BURST,
    INVALID_CLIENT_TYPE,
    MAX_BATCH,
    MAX_CONNECTIONS,
    MESSAGE_TOO_LARGE,
    PERMISSION_DENIED,
    RATE_LIMITED,
    RECIPIENT_NOT_FOUND,
    USER_BURST_FACTOR,
    USER_RATE_FACTOR,
    VALIDATION_ERROR,
    Connection,
    HubFullError,
    Identity,
    StarHub,
    decode_frame,
    valid_id,
)
from custom_components.soul.core.untrusted import UntrustedInputError


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Peer:
    """The transport side of one connection: what the hub sent and closed."""

    texts: list[str] = field(default_factory=list)
    closes: list[tuple[int, str]] = field(default_factory=list)
    accept: bool = True  # False: the send queue is full

    def send(self, text: str) -> bool:
        if not self.accept:
            return False
        self.texts.append(text)
        return True

    def close(self, code: int, reason: str) -> None:
        self.closes.append((code, reason))

    @property
    def received(self) -> list[dict[str, Any]]:
        return [json.loads(text) for text in self.texts]

    def of_type(self, envelope_type: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["type"] == envelope_type]

    def clear(self) -> None:
        self.texts.clear()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hub(clock: Clock) -> StarHub:
    return StarHub(clock=clock)


def join(
    hub: StarHub, client_type: str, client_id: str, env_id: str | None = "world_1"
) -> tuple[Connection, Peer]:
    """Connect a client the way a transport does; drop the greeting heartbeat."""
    peer = Peer()
    if client_type == "environment":
        env_id = client_id
    connection = hub.connect(
        Identity(client_type, client_id, env_id), peer.send, peer.close
    )
    peer.clear()
    return connection, peer


def envelope(
    sender: Connection | dict[str, str],
    recipient: tuple[str, str],
    payload: Any = None,
    **extra: Any,
) -> str:
    """Return a ``message`` envelope from ``sender`` to (type, id)."""
    party = sender.identity.as_party() if isinstance(sender, Connection) else sender
    return json.dumps(
        {
            "type": "message",
            "sender": party,
            "recipient": {"type": recipient[0], "id": recipient[1]},
            "payload": {"type": "event", "event": "x"} if payload is None else payload,
            **extra,
        },
        ensure_ascii=False,
    )


def assert_error(
    message: dict[str, Any],
    code: str,
    recipient: Connection,
    original_message_id: str | None = None,
) -> dict[str, Any]:
    """Check the spec's error envelope; return its details."""
    assert message["type"] == "error"
    assert message["sender"] == {"id": "hub", "type": "hub"}
    assert message["recipient"] == recipient.identity.as_party()
    payload = message["payload"]
    assert payload["error_code"] == code
    assert isinstance(payload["message"], str)
    assert payload["message"]
    assert payload["details"]["original_message_id"] == original_message_id
    return payload["details"]


def test_valid_id() -> None:
    assert valid_id("agent_001")
    assert valid_id("a.b-c")
    assert not valid_id("ab")
    assert not valid_id("x" * 51)
    assert not valid_id("_leading")
    assert not valid_id("has space")
    assert not valid_id("*")
    assert not valid_id(None)


def test_connect_greets_with_a_heartbeat(hub: StarHub) -> None:
    peer = Peer()
    hub.connect(Identity("agent", "agent_1", "world_1"), peer.send, peer.close)
    [greeting] = peer.received
    assert greeting["type"] == "heartbeat"
    assert greeting["sender"] == {"id": "hub", "type": "hub"}
    assert greeting["recipient"] == {"id": "agent_1", "type": "agent"}
    assert greeting["payload"]["server_status"] == "running"
    assert hub.counts() == {"agent": 1, "environment": 0, "human": 0}


def test_routes_agent_to_environment_and_back(hub: StarHub) -> None:
    env, env_peer = join(hub, "environment", "world_1")
    agent, agent_peer = join(hub, "agent", "agent_1")
    action = {"type": "action", "action": "move", "id": "action_1", "extra": [1, 2]}
    text = envelope(agent, ("environment", "world_1"), action, message_id="m1")
    hub.receive(agent, text)
    assert env_peer.texts == [text]  # forwarded as is, payload untouched
    outcome = {"type": "outcome", "id": "action_1", "outcome": {"status": "success"}}
    hub.receive(env, envelope(env, ("agent", "agent_1"), outcome))
    assert agent_peer.received[0]["payload"] == outcome
    assert hub.stats.routed == 2
    assert len(hub.stats.latencies) == 2


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{not json", "malformed JSON"),
        ('"just text"', "the message must be a JSON object"),
        (
            '{"type": "shout", "sender": {"id": "agent_1", "type": "agent"},'
            ' "recipient": {"id": "world_1", "type": "environment"}, "payload": {},'
            ' "message_id": "m1"}',
            "type must be one of",
        ),
        (
            '{"type": "message", "recipient": {"id": "world_1", "type":'
            ' "environment"}, "payload": {}, "message_id": "m1"}',
            "sender must be an object",
        ),
        (
            '{"type": "message", "sender": {"id": "agent_1", "type": "agent"},'
            ' "recipient": {"id": "w", "type": "environment"}, "payload": {},'
            ' "message_id": "m1"}',
            "recipient.id must be",
        ),
        (
            '{"type": "message", "sender": {"id": "agent_1", "type": "agent"},'
            ' "recipient": {"id": "world_1"}, "payload": {}, "message_id": "m1"}',
            "recipient.type is required",
        ),
        (
            '{"type": "message", "sender": {"id": "agent_1", "type": "agent"},'
            ' "recipient": {"id": "world_1", "type": "environment"},'
            ' "message_id": "m1"}',
            "payload is required",
        ),
        (
            '{"type": "message", "sender": {"id": "agent_1", "type": "agent"},'
            ' "recipient": {"id": "world_1", "type": "environment"}, "payload": {},'
            ' "timestamp": 5, "id": "m1"}',
            "timestamp must be a string",
        ),
    ],
)
def test_validation_errors(hub: StarHub, raw: str, problem: str) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    agent, agent_peer = join(hub, "agent", "agent_1")
    hub.receive(agent, raw)
    [error] = agent_peer.received
    has_id = '"m1"' in raw
    details = assert_error(error, VALIDATION_ERROR, agent, "m1" if has_id else None)
    reported = [error["payload"]["message"], *details["validation_errors"]]
    assert any(problem in e for e in reported), reported
    assert env_peer.texts == []
    assert not agent.closed  # a bad message is answered, not punished


def test_several_problems_are_reported_together(hub: StarHub) -> None:
    agent, peer = join(hub, "agent", "agent_1")
    hub.receive(agent, json.dumps({"type": "nope", "message_id": "m9"}))
    details = assert_error(peer.received[0], VALIDATION_ERROR, agent, "m9")
    assert len(details["validation_errors"]) == 4  # type, sender, recipient, payload


def test_spoofed_sender_is_denied(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    agent, agent_peer = join(hub, "agent", "agent_1")
    join(hub, "agent", "agent_2")
    for spoof in (
        {"id": "agent_2", "type": "agent"},  # another agent
        {"id": "world_1", "type": "environment"},  # its environment
        {"id": "hub", "type": "hub"},  # the hub itself
        {"id": "agent_1", "type": "human"},  # its own id, another type
    ):
        hub.receive(
            agent, envelope(spoof, ("environment", "world_1"), message_id="m-spoof")
        )
    assert len(agent_peer.received) == 4
    for error in agent_peer.received:
        details = assert_error(error, PERMISSION_DENIED, agent, "m-spoof")
        assert "suggested_action" in details
    assert env_peer.texts == []


def test_unknown_recipient(hub: StarHub) -> None:
    join(hub, "environment", "world_1")
    join(hub, "environment", "world_2")
    join(hub, "agent", "agent_9", "world_2")
    agent, peer = join(hub, "agent", "agent_1")
    for recipient in (
        ("environment", "nowhere"),
        ("environment", "world_2"),  # exists, but in another environment
        ("agent", "agent_9"),  # exists, but in another environment
        ("agent", "ghost"),
        ("human", "nobody"),
    ):
        hub.receive(agent, envelope(agent, recipient, message_id=f"m-{recipient[1]}"))
        assert_error(peer.received[-1], RECIPIENT_NOT_FOUND, agent, f"m-{recipient[1]}")
    assert len(peer.received) == 5


def test_broadcast_stays_inside_the_environment(hub: StarHub) -> None:
    env, env_peer = join(hub, "environment", "world_1")
    _a1, p1 = join(hub, "agent", "agent_1")
    a2, p2 = join(hub, "agent", "agent_2")
    _other, p_other = join(hub, "agent", "agent_3", "world_2")
    _env2, p_env2 = join(hub, "environment", "world_2")
    _human, p_human = join(hub, "human", "human_1", None)
    hub.receive(env, envelope(env, ("agent", "*")))
    assert len(p1.texts) == len(p2.texts) == 1
    assert p_other.texts == p_env2.texts == p_human.texts == env_peer.texts == []
    # An agent's broadcast to its peers skips itself and other environments.
    hub.receive(a2, envelope(a2, ("agent", "*")))
    assert len(p1.texts) == 2
    assert len(p2.texts) == 1
    assert p_other.texts == []
    hub.receive(env, envelope(env, ("human", "*"), message_id="m-h"))
    assert p_human.texts  # humans are reachable from any environment
    # A broadcast nobody hears is not an error (periodic world_status would flood).
    before = len(env_peer.received)
    hub.receive(env, envelope(env, ("environment", "*"), message_id="m-e"))
    assert len(env_peer.received) == before
    assert p_env2.texts == []


def test_humans_address_any_environment(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_2")
    _agent, agent_peer = join(hub, "agent", "agent_7", "world_2")
    human, human_peer = join(hub, "human", "human_1", None)
    hub.receive(human, envelope(human, ("environment", "world_2")))
    hub.receive(human, envelope(human, ("agent", "agent_7")))
    assert len(env_peer.texts) == len(agent_peer.texts) == 1
    assert human_peer.texts == []


def test_a_human_reaches_its_users_agent_of_an_id_in_several_environments(
    hub: StarHub,
) -> None:
    """Another user's agent of the same id took a message meant for the user's own.

    A black-box run (2026-11-29): the first connected of the id got it, and
    answered as the agent the human meant.
    """
    dad, kid, mum = Principal("dad"), Principal("kid"), Principal("mum")

    def connect(identity: Identity, principal: Principal) -> tuple[Connection, Peer]:
        peer = Peer()
        connection = hub.connect(identity, peer.send, peer.close, principal=principal)
        peer.clear()
        return connection, peer

    _evil, evil_peer = connect(Identity("agent", "helper", "evil_env"), kid)
    _own, own_peer = connect(Identity("agent", "helper", "home_2"), dad)
    human, human_peer = connect(Identity("human", "dad01", None), dad)
    hub.receive(human, envelope(human, ("agent", "helper"), message_id="m-1"))
    assert len(own_peer.texts) == 1
    assert evil_peer.texts == []
    # Of other users' agents of one id, none is the one meant.
    other, other_peer = connect(Identity("human", "mum01", None), mum)
    hub.receive(other, envelope(other, ("agent", "helper"), message_id="m-2"))
    assert evil_peer.texts == [] and len(own_peer.texts) == 1
    (error,) = other_peer.of_type("error")
    assert error["payload"]["error_code"] == "RECIPIENT_NOT_FOUND"
    assert "several environments" in error["payload"]["message"]
    # One user's agent in several environments is that user's: the first.
    _twin, twin_peer = connect(Identity("agent", "solo", "w_a"), kid)
    connect(Identity("agent", "solo", "w_b"), kid)
    hub.receive(other, envelope(other, ("agent", "solo")))
    assert len(twin_peer.texts) == 1
    assert human_peer.of_type("error") == []


def test_takeover_closes_the_old_connection(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    old, old_peer = join(hub, "agent", "agent_1")
    changes: list[int] = []
    hub.subscribe(lambda: changes.append(len(hub.connections())))
    new, new_peer = join(hub, "agent", "agent_1")
    assert old.closed
    assert old_peer.closes == [(CLOSE_GOING_AWAY, "replaced by a new connection")]
    assert new in hub.connections()
    assert old not in hub.connections()
    # The old socket's late frames are ignored; its disconnect keeps the new one.
    hub.receive(old, envelope(old, ("environment", "world_1")))
    assert env_peer.texts == []
    hub.disconnect(old)
    assert new in hub.connections()
    hub.receive(new, envelope(new, ("environment", "world_1")))
    assert len(env_peer.texts) == 1
    assert changes == [2]  # the takeover; the stale disconnect changed nothing
    assert new_peer.closes == []


def test_slow_consumer_is_cut_off_without_hurting_others(hub: StarHub) -> None:
    env, env_peer = join(hub, "environment", "world_1")
    slow, slow_peer = join(hub, "agent", "agent_slow")
    _fast, fast_peer = join(hub, "agent", "agent_fast")
    slow_peer.accept = False  # its send queue is full
    hub.receive(env, envelope(env, ("agent", "*")))
    assert slow.closed
    assert slow_peer.closes == [(CLOSE_TRY_LATER, "send queue full (slow consumer)")]
    assert slow not in hub.connections()
    assert hub.stats.dropped_slow == 1
    assert len(fast_peer.texts) == 1
    assert env_peer.texts == []  # the sender is not blamed
    hub.receive(env, envelope(env, ("agent", "*")))
    assert len(fast_peer.texts) == 2
    hub.receive(env, envelope(env, ("agent", "agent_slow"), message_id="m-s"))
    assert_error(env_peer.received[-1], RECIPIENT_NOT_FOUND, env, "m-s")


def test_rate_limit(clock: Clock) -> None:
    hub = StarHub(clock=clock, rate=10.0, burst=5)
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    for _ in range(5):
        hub.receive(agent, envelope(agent, ("environment", "world_1")))
    assert len(env_peer.texts) == 5
    hub.receive(agent, envelope(agent, ("environment", "world_1")))
    [error] = peer.received
    details = assert_error(error, RATE_LIMITED, agent)
    assert details["suggested_action"]
    assert len(env_peer.texts) == 5
    assert not agent.closed
    clock.advance(0.35)  # three and a half tokens back
    for _ in range(4):
        hub.receive(agent, envelope(agent, ("environment", "world_1")))
    assert len(env_peer.texts) == 8
    assert [e["payload"]["error_code"] for e in peer.received] == [RATE_LIMITED] * 2
    clock.advance(100)  # refills to the burst, not beyond
    for _ in range(6):
        hub.receive(agent, envelope(agent, ("environment", "world_1")))
    assert len(env_peer.texts) == 13


def test_rate_limit_is_per_client(clock: Clock) -> None:
    hub = StarHub(clock=clock, rate=1.0, burst=2)
    _env, env_peer = join(hub, "environment", "world_1")
    a1, _p1 = join(hub, "agent", "agent_1")
    a2, p2 = join(hub, "agent", "agent_2")
    for _ in range(3):
        hub.receive(a1, envelope(a1, ("environment", "world_1")))
    hub.receive(a2, envelope(a2, ("environment", "world_1")))
    assert len(env_peer.texts) == 3
    assert p2.texts == []


def _users_agents(
    hub: StarHub, principal: Principal | None, count: int, prefix: str
) -> list[tuple[Connection, Peer]]:
    out = []
    for n in range(count):
        peer = Peer()
        identity = Identity("agent", f"{prefix}{n:02d}", "world_1")
        out.append(
            (hub.connect(identity, peer.send, peer.close, principal=principal), peer)
        )
        peer.clear()
    return out


def test_a_users_clients_share_one_budget(clock: Clock) -> None:
    """One user's 128 places let 128 clients' rates through (a black-box run)."""
    hub = StarHub(clock=clock, rate=10.0, burst=5)
    _env, env_peer = join(hub, "environment", "world_1")
    flooders = _users_agents(hub, Principal("kid"), 20, "kid")
    for agent, _peer in flooders:  # each within its own burst: 100 in all
        for _ in range(5):
            hub.receive(agent, envelope(agent, ("environment", "world_1")))
    shared = hub.burst * USER_BURST_FACTOR
    assert shared == 50
    assert len(env_peer.texts) == shared
    told = [(a, p.received) for a, p in flooders if p.texts]
    assert len(told) == 10  # the ten clients that found the budget spent
    for agent, [error] in told:
        assert_error(error, RATE_LIMITED, agent)
        assert "this user's clients together" in error["payload"]["message"]
    # Another user's client is not held back by them.
    [(mum, mum_peer)] = _users_agents(hub, Principal("mum"), 1, "mum")
    hub.receive(mum, envelope(mum, ("environment", "world_1")))
    assert len(env_peer.texts) == shared + 1
    assert mum_peer.texts == []
    # The user's budget comes back at twenty clients' rate.
    clock.advance(0.1)
    env_peer.clear()
    for agent, _peer in flooders:
        hub.receive(agent, envelope(agent, ("environment", "world_1")))
    assert len(env_peer.texts) == 0.1 * hub.rate * USER_RATE_FACTOR == 20


def test_leaving_and_coming_back_keeps_the_users_budget(clock: Clock) -> None:
    hub = StarHub(clock=clock, rate=10.0, burst=5)
    _env, env_peer = join(hub, "environment", "world_1")
    kid = Principal("kid")
    for round_ in range(3):
        agents = _users_agents(hub, kid, 10, f"r{round_}k")
        for agent, _peer in agents:
            for _ in range(5):
                hub.receive(agent, envelope(agent, ("environment", "world_1")))
        for agent, _peer in agents:
            hub.disconnect(agent)
    assert len(env_peer.texts) == hub.burst * USER_BURST_FACTOR


def test_clients_without_a_user_have_only_their_own_budget(clock: Clock) -> None:
    """The standalone hub has no users: each client is limited alone."""
    hub = StarHub(clock=clock, rate=10.0, burst=5)
    _env, env_peer = join(hub, "environment", "world_1")
    for agent, _peer in _users_agents(hub, None, 20, "anon"):
        for _ in range(5):
            hub.receive(agent, envelope(agent, ("environment", "world_1")))
    assert len(env_peer.texts) == 100


def test_size_limit(clock: Clock) -> None:
    hub = StarHub(clock=clock, max_message_bytes=1000)
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    fits = envelope(agent, ("environment", "world_1"), "x" * 800)
    hub.receive(agent, fits)
    assert env_peer.texts == [fits]
    hub.receive(agent, envelope(agent, ("environment", "world_1"), "x" * 1000))
    [error] = peer.received
    assert_error(error, MESSAGE_TOO_LARGE, agent)
    assert peer.closes == [(CLOSE_TOO_BIG, "message too large")]
    assert agent.closed
    assert agent not in hub.connections()
    assert len(env_peer.texts) == 1


def test_default_size_limit_is_the_spec_megabyte(hub: StarHub) -> None:
    assert hub.max_message_bytes == 1024 * 1024


def test_heartbeat_and_idle_timeout(hub: StarHub, clock: Clock) -> None:
    env, env_peer = join(hub, "environment", "world_1")
    lively, lively_peer = join(hub, "agent", "agent_1")
    silent, silent_peer = join(hub, "agent", "agent_2")
    clock.advance(30)
    hub.tick()
    for connection, peer in (
        (lively, lively_peer),
        (silent, silent_peer),
    ):
        [beat] = peer.of_type("heartbeat")
        assert beat["recipient"] == connection.identity.as_party()
        assert beat["payload"]["server_status"] == "running"
    # The lively agent answers; a client's heartbeat is not routed anywhere.
    pong = {
        "type": "heartbeat",
        "sender": lively.identity.as_party(),
        "recipient": {"id": "hub", "type": "hub"},
        "payload": {"status": "alive"},
    }
    hub.receive(lively, json.dumps(pong))
    assert lively_peer.of_type("error") == []
    assert len(env_peer.of_type("heartbeat")) == 1
    clock.advance(31)  # 61 s after connecting
    hub.tick()
    assert silent.closed
    assert silent_peer.closes == [(CLOSE_POLICY, "no traffic or pong for too long")]
    assert silent not in hub.connections()
    assert not lively.closed
    assert len(lively_peer.of_type("heartbeat")) == 2
    # The environment said nothing either.
    assert env.closed
    assert hub.counts() == {"agent": 1, "environment": 0, "human": 0}


def test_any_frame_counts_as_traffic(hub: StarHub, clock: Clock) -> None:
    agent, peer = join(hub, "agent", "agent_1")
    clock.advance(59)
    hub.receive(agent, "{broken")  # even an invalid frame shows the client is alive
    clock.advance(59)
    hub.tick()
    assert not agent.closed
    clock.advance(2)
    hub.tick()
    assert agent.closed
    assert peer.closes[-1][0] == CLOSE_POLICY


def test_listeners_hear_connects_and_disconnects(hub: StarHub) -> None:
    seen: list[dict[str, int]] = []
    unsubscribe = hub.subscribe(lambda: seen.append(hub.counts()))
    agent, _peer = join(hub, "agent", "agent_1")
    hub.disconnect(agent)
    unsubscribe()
    join(hub, "agent", "agent_2")
    assert [s["agent"] for s in seen] == [1, 0]


# -- defects found while writing the transports (fixed in hub.py) --


def test_deeply_nested_json_is_a_validation_error(hub: StarHub) -> None:
    agent, peer = join(hub, "agent", "agent_1")
    hub.receive(agent, "[" * 100_000)  # 100 kB: well under the size limit
    assert_error(peer.received[0], VALIDATION_ERROR, agent)


def test_utf16_binary_frame_does_not_crash_receive(hub: StarHub) -> None:
    join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    hub.receive(agent, envelope(agent, ("environment", "world_1")).encode("utf-16"))
    assert peer.received  # answered (error) or routed, but no exception


def test_binary_frames_are_forwarded_as_valid_json(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    agent, _peer = join(hub, "agent", "agent_1")
    hub.receive(agent, envelope(agent, ("environment", "world_1")).encode("utf-16-le"))
    for text in env_peer.texts:
        json.loads(text)


def test_size_limit_counts_bytes(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    text = envelope(agent, ("environment", "world_1"), "字" * 400_000)
    assert len(text.encode()) > hub.max_message_bytes
    hub.receive(agent, text)
    assert env_peer.texts == []
    assert_error(peer.received[0], MESSAGE_TOO_LARGE, agent)


def test_a_flooder_gets_one_rate_limited_per_stretch(clock: Clock) -> None:
    """Issue 13: a flooder's own error queue filled and it got 1013 instead."""
    hub = StarHub(clock=clock)
    _env, env_peer = join(hub, "environment", "world_1")
    flooder, peer = join(hub, "agent", "agent_f")
    for _ in range(10_000):
        hub.receive(flooder, envelope(flooder, ("environment", "world_1")))
    assert len(env_peer.texts) == hub.burst  # the burst went through
    assert [e["payload"]["error_code"] for e in peer.received] == [RATE_LIMITED]
    assert not flooder.closed and peer.closes == []
    assert flooder.dropped == 10_000 - hub.burst
    clock.advance(1.0)  # tokens back: the next stretch is told once more
    for _ in range(1000):
        hub.receive(flooder, envelope(flooder, ("environment", "world_1")))
    assert [e["payload"]["error_code"] for e in peer.received] == [RATE_LIMITED] * 2


def test_a_burst_fits_every_receivers_queue() -> None:
    """Within the limit, a burst never cuts an actively reading receiver off."""
    from custom_components.soul.core.star.transport import SEND_QUEUE

    hub = StarHub()
    assert hub.burst * 2 <= SEND_QUEUE  # environments burst twice as much


def test_reserved_identities_and_owners(clock: Clock) -> None:
    from custom_components.soul.core.star.hub import IdentityError

    owners_changed: list[bool] = []
    hub = StarHub(
        clock=clock,
        reserved=lambda identity: identity.client_id.startswith("soul_"),
        on_owners_changed=lambda: owners_changed.append(True),
    )
    dad, kid = Principal("dad"), Principal("kid")
    peer = Peer()
    with pytest.raises(IdentityError, match="reserved"):
        hub.connect(Identity("agent", "soul_1", "home"), peer.send, peer.close)
    human = hub.connect(Identity("human", "dad01", None), peer.send, peer.close,
                        principal=dad)  # fmt: skip
    assert hub.human_owners == {"dad01": "dad"} and owners_changed
    with pytest.raises(IdentityError, match="another user"):
        hub.connect(Identity("human", "dad01", None), peer.send, peer.close,
                    principal=kid)  # fmt: skip
    hub.disconnect(human)
    with pytest.raises(IdentityError, match="belongs to another user"):
        hub.connect(Identity("human", "dad01", None), peer.send, peer.close,
                    principal=kid)  # fmt: skip
    agent = hub.connect(Identity("agent", "bot_1", "w1"), peer.send, peer.close,
                        principal=kid)  # fmt: skip
    with pytest.raises(IdentityError, match="another user"):
        hub.connect(Identity("agent", "bot_1", "w1"), peer.send, peer.close,
                    principal=dad)  # fmt: skip
    again = hub.connect(Identity("agent", "bot_1", "w1"), peer.send, peer.close,
                        principal=kid)  # fmt: skip
    assert agent.closed and not again.closed


def test_local_agents_never_time_out(hub: StarHub, clock: Clock) -> None:
    got: list[tuple[dict[str, Any], Connection]] = []
    local = hub.connect_local(
        Identity("agent", "soul_1", "world_1"), lambda e, s: got.append((e, s))
    )
    sender, peer = join(hub, "agent", "agent_1")
    clock.advance(hub.idle_timeout * 3)
    hub.tick()  # the remote agent times out, the local one does not
    assert sender.closed and not local.closed
    sender, peer = join(hub, "agent", "agent_2")
    hub.receive(sender, envelope(sender, ("agent", "soul_1"), {"type": "action"}))
    assert got[0][0]["payload"] == {"type": "action"} and got[0][1] is sender
    hub.send_local(local, {"type": "message", "recipient": sender.identity.as_party(),
                           "payload": {"type": "outcome"}})  # fmt: skip
    assert peer.received[-1]["sender"] == {"id": "soul_1", "type": "agent"}


# -- interop (issue 15): INVALID_CLIENT_TYPE, batch frames, the connection cap --


def message(
    sender: Connection | dict[str, str],
    recipient: tuple[str, str],
    payload: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return a ``message`` envelope as a dict (see ``envelope``)."""
    decoded: dict[str, Any] = json.loads(envelope(sender, recipient, payload, **extra))
    return decoded


@pytest.mark.parametrize(
    ("sender_type", "recipient_type", "wrong"),
    [
        ("agent", "robot", ["recipient.type"]),
        ("monitor", "environment", ["sender.type"]),  # a role outside the spec
        ("agent", "Environment", ["recipient.type"]),  # types are lower case
        ("agent", 5, ["recipient.type"]),
        ("agent", ["environment"], ["recipient.type"]),
        ("robot", "robot", ["sender.type", "recipient.type"]),
    ],
)
def test_a_type_outside_the_spec_is_invalid_client_type(
    hub: StarHub, sender_type: Any, recipient_type: Any, wrong: list[str]
) -> None:
    """Spec, 错误处理 → 验证错误: INVALID_CLIENT_TYPE, 无效的客户端类型."""
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    hub.receive(
        agent,
        json.dumps(
            {
                "type": "message",
                "sender": {"id": "agent_1", "type": sender_type},
                "recipient": {"id": "world_1", "type": recipient_type},
                "payload": {},
                "message_id": "m-type",
            }
        ),
    )
    [error] = peer.received
    details = assert_error(error, INVALID_CLIENT_TYPE, agent, "m-type")
    assert [e.split(" ")[0] for e in details["validation_errors"]] == wrong
    assert "agent, environment, human" in details["suggested_action"]
    assert env_peer.texts == []
    assert not agent.closed


def test_invalid_client_type_lists_the_other_problems_too(hub: StarHub) -> None:
    agent, peer = join(hub, "agent", "agent_1")
    hub.receive(
        agent,
        json.dumps(
            {
                "type": "message",
                "sender": {"id": "agent_1", "type": "agent"},
                "recipient": {"id": "w", "type": "robot"},
                "message_id": "m1",
            }
        ),
    )
    details = assert_error(peer.received[0], INVALID_CLIENT_TYPE, agent, "m1")
    assert len(details["validation_errors"]) == 3  # type, id, payload


def test_the_spec_types_are_not_invalid(hub: StarHub) -> None:
    """agent, environment, human and hub are the spec's types: no INVALID_CLIENT_TYPE."""
    agent, peer = join(hub, "agent", "agent_1")
    for party_type in ("agent", "environment", "human", "hub"):
        hub.receive(agent, envelope(agent, (party_type, "nobody_1"), message_id="m"))
    codes = [e["payload"]["error_code"] for e in peer.received]
    assert codes == [RECIPIENT_NOT_FOUND] * 4


def test_a_batch_is_routed_as_if_each_envelope_were_sent_alone(hub: StarHub) -> None:
    """Spec, 性能考虑: 批量消息 — an array of envelopes in one frame."""
    _env, env_peer = join(hub, "environment", "world_1")
    agent, agent_peer = join(hub, "agent", "agent_1")
    _other, other_peer = join(hub, "agent", "agent_2")
    _human, human_peer = join(hub, "human", "human_1", None)
    batch = [
        message(agent, ("environment", "world_1"), {"type": "action", "id": "a1"}),
        message(agent, ("agent", "agent_2"), {"type": "event", "id": "e1"}),
        message(agent, ("agent", "*"), {"type": "event", "id": "e2"}, message_id="b"),
        message(agent, ("human", "human_1"), {"type": "stream", "data": "字"}),
        message(agent, ("environment", "world_1"), {"type": "action", "id": "a2"}),
    ]
    hub.receive(agent, json.dumps(batch, ensure_ascii=False))
    assert env_peer.received == [batch[0], batch[4]]  # one frame each, in order
    assert other_peer.received == [batch[1], batch[2]]
    assert human_peer.received == [batch[3]]
    assert agent_peer.texts == []  # no errors, and its own broadcast skips it
    assert hub.stats.routed == 5
    assert agent.received == 5


def test_batch_errors_name_their_envelope(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    spoofed = {"id": "world_1", "type": "environment"}
    batch = [
        message(agent, ("environment", "world_1"), message_id="m0"),
        message(spoofed, ("agent", "agent_1"), message_id="m1"),
        {**message(agent, ("robot", "r2d2")), "message_id": "m2"},
        message(agent, ("agent", "ghost"), message_id="m3"),
        "not an envelope",
        [message(agent, ("environment", "world_1"), message_id="nested")],
        {**message(agent, ("environment", "world_1")), "id": "m6"},
        {
            "type": "heartbeat",
            "sender": agent.identity.as_party(),
            "recipient": {"id": "hub", "type": "hub"},
            "payload": {},
        },
        message(agent, ("environment", "world_1"), message_id="m8"),
    ]
    hub.receive(agent, json.dumps(batch))
    expected = [
        (PERMISSION_DENIED, "m1", 1),
        (INVALID_CLIENT_TYPE, "m2", 2),
        (RECIPIENT_NOT_FOUND, "m3", 3),
        (VALIDATION_ERROR, None, 4),
        (VALIDATION_ERROR, None, 5),  # a batch does not nest
    ]
    assert len(peer.received) == len(expected)
    for error, (code, message_id, index) in zip(peer.received, expected, strict=True):
        details = assert_error(error, code, agent, message_id)
        assert details["batch_index"] == index
    routed = [e.get("message_id", e.get("id")) for e in env_peer.received]
    assert routed == ["m0", "m6", "m8"]  # the spec's example names it "id"
    assert env_peer.received == [batch[0], batch[6], batch[8]]
    assert not agent.closed


def test_batch_size_is_bounded(clock: Clock) -> None:
    hub = StarHub(clock=clock, rate=1e9, burst=10**6)
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    one = message(agent, ("environment", "world_1"))
    for size in (0, MAX_BATCH + 1):
        hub.receive(agent, json.dumps([one] * size))
        details = assert_error(peer.received[-1], VALIDATION_ERROR, agent)
        assert "batch_index" not in details
        assert f"holds {size}" in details["validation_errors"][0]
    assert env_peer.texts == []
    hub.receive(agent, json.dumps([one] * MAX_BATCH))
    assert len(env_peer.texts) == MAX_BATCH
    assert len(peer.received) == 2
    assert DEFAULT_BURST >= MAX_BATCH  # a whole batch fits an agent's burst


def test_batch_envelopes_are_rate_limited_one_by_one(clock: Clock) -> None:
    hub = StarHub(clock=clock, rate=10.0, burst=5)
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    batch = [
        message(agent, ("environment", "world_1"), message_id=f"m{n}") for n in range(8)
    ]
    hub.receive(agent, json.dumps(batch))
    assert [e["message_id"] for e in env_peer.received] == [f"m{n}" for n in range(5)]
    [error] = peer.received  # one per stretch of refused envelopes, as for frames
    details = assert_error(error, RATE_LIMITED, agent, "m5")
    assert details["batch_index"] == 5
    assert agent.dropped == 3
    hub.receive(agent, json.dumps(batch))  # no token left: refused as a frame
    assert len(env_peer.received) == 5
    assert len(peer.received) == 1
    clock.advance(0.2)  # two tokens back
    hub.receive(agent, json.dumps(batch[:3]))
    assert len(env_peer.received) == 7
    assert [e["payload"]["error_code"] for e in peer.received] == [RATE_LIMITED] * 2
    assert peer.received[1]["payload"]["details"]["original_message_id"] == "m2"


def test_batch_steps_let_the_loop_run_between_envelopes(hub: StarHub) -> None:
    """The transport resumes the steps after yielding; a closed sender stops them."""
    _env, env_peer = join(hub, "environment", "world_1")
    agent, _peer = join(hub, "agent", "agent_1")
    batch = json.dumps(
        [
            message(agent, ("environment", "world_1"), message_id=f"m{n}")
            for n in range(4)
        ]
    )
    steps = hub.receive_steps(agent, batch)
    next(steps)
    assert len(env_peer.texts) == 1
    next(steps)
    assert len(env_peer.texts) == 2
    hub.disconnect(agent)  # e.g. taken over while the loop ran
    assert list(steps) == []
    assert len(env_peer.texts) == 2
    # A single envelope is handled by the first step, which is the last.
    agent, _peer = join(hub, "agent", "agent_1")
    assert (
        list(hub.receive_steps(agent, envelope(agent, ("environment", "world_1"))))
        == []
    )
    assert len(env_peer.texts) == 3


def test_batch_decoded_off_the_loop_is_serialized_there(hub: StarHub) -> None:
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    batch = [
        message(agent, ("environment", "world_1"), {"blob": "字" * 10}, message_id="a"),
        7,
        message(agent, ("environment", "world_1"), message_id="b"),
    ]
    raw = json.dumps(batch).encode()
    frame = decode_frame(raw, hub.max_message_bytes)
    assert frame.parts == (
        json.dumps(batch[0], ensure_ascii=False),
        "",
        json.dumps(batch[2], ensure_ascii=False),
    )
    assert hub.admit(agent, raw)
    hub.receive(agent, raw, decoded=frame, admitted=True)
    assert env_peer.texts == [frame.parts[0], frame.parts[2]]
    assert_error(peer.received[0], VALIDATION_ERROR, agent)
    single = decode_frame(envelope(agent, ("environment", "world_1")), 1000)
    assert single.parts == ()
    assert isinstance(decode_frame("[" * 100, 1000).value, UntrustedInputError)


def test_a_frame_of_too_many_values_is_refused_before_decoding(hub: StarHub) -> None:
    """A 1 MiB array of integers would hold the GIL (and the loop) ~25 ms."""
    _env, env_peer = join(hub, "environment", "world_1")
    agent, peer = join(hub, "agent", "agent_1")
    count = untrusted.MAX_JSON_VALUES - 8
    fits = envelope(agent, ("environment", "world_1"), {"samples": [1] * count})
    assert isinstance(decode_frame(fits, hub.max_message_bytes).value, dict)
    raw = envelope(agent, ("environment", "world_1"), {"samples": [1] * 300_000})
    frame = decode_frame(raw, hub.max_message_bytes)
    assert isinstance(frame.value, UntrustedInputError)
    assert "more than 65536 values" in str(frame.value)
    assert hub.admit(agent, raw)
    hub.receive(agent, raw, decoded=frame, admitted=True)
    assert env_peer.texts == []
    assert_error(peer.received[-1], VALIDATION_ERROR, agent)


def test_connection_cap(clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    """Spec, 连接管理: 最大连接数 — 可配置."""
    hub = StarHub(clock=clock, max_connections=2)
    env, _ = join(hub, "environment", "world_1")
    join(hub, "agent", "agent_1")
    hub.connect_local(Identity("agent", "soul_1", "home"), lambda _e, _s: None)
    peer = Peer()
    for _ in range(2):
        with pytest.raises(HubFullError, match=r"full \(2 clients"):
            hub.connect(Identity("agent", "agent_2", "world_1"), peer.send, peer.close)
    assert peer.texts == []  # refused before any frame
    assert hub.stats.refused_full == 2
    assert caplog.text.count("Star hub is full") == 1  # once per stretch
    assert hub.counts() == {"agent": 2, "environment": 1, "human": 0}
    # A client taking over its own identity keeps its place.
    again, _ = join(hub, "agent", "agent_1")
    assert not again.closed
    hub.disconnect(env)
    join(hub, "agent", "agent_2")  # room again
    with pytest.raises(HubFullError):
        hub.connect(Identity("human", "human_1", None), peer.send, peer.close)
    assert caplog.text.count("Star hub is full") == 2
    assert StarHub().max_connections == MAX_CONNECTIONS
    with pytest.raises(ValueError, match="at least 1"):
        StarHub(max_connections=0)


def test_one_user_holds_at_most_half_the_hub(clock: Clock) -> None:
    """A read-only user held all 256 places in a black-box run; no one else got in."""
    hub = StarHub(clock=clock, max_connections=4)
    assert (hub.max_per_user, StarHub().max_per_user) == (2, MAX_CONNECTIONS // 2)
    reader, kid = Principal("reader", may_control=False), Principal("kid")
    peer = Peer()

    def connect(client_id: str, principal: Principal | None) -> Connection:
        identity = Identity("agent", client_id, "world_1")
        return hub.connect(identity, peer.send, peer.close, principal=principal)

    connect("r1", reader)
    connect("r2", reader)
    with pytest.raises(HubFullError, match="this user already has 2 connections"):
        connect("r3", reader)
    connect("r2", reader)  # taking over its own identity is not a new place
    connect("k1", kid)
    connect("k2", kid)  # the other half
    with pytest.raises(HubFullError, match=r"the hub is full \(4 clients"):
        connect("x1", None)
    assert hub.stats.refused_full == 2
    # Clients without a Home Assistant user (the standalone hub) have no share.
    lone = StarHub(clock=clock, max_connections=4)
    for n in range(4):
        lone.connect(Identity("agent", f"a{n}", "w"), peer.send, peer.close)


def test_a_full_hub_makes_room_for_a_user_holding_fewer(clock: Clock) -> None:
    """Two users, each within half the hub, filled it for everyone else (black box).

    A user holding at least two fewer than the user holding the most takes
    the place of that user's oldest client; shares settle within one of
    each other, and no client displaces another back and forth.
    """
    hub = StarHub(clock=clock, max_connections=4)
    reader, kid = Principal("reader", may_control=False), Principal("kid")
    owner = Principal("owner", is_admin=True)
    peers: dict[str, Peer] = {}

    def connect(client_id: str, principal: Principal) -> Connection:
        clock.advance(1)
        peers[client_id] = Peer()
        identity = Identity("agent", client_id, "world_1")
        return hub.connect(
            identity, peers[client_id].send, peers[client_id].close, principal=principal
        )

    r1 = connect("r1", reader)
    connect("k1", kid)
    connect("r2", reader)
    connect("k2", kid)  # full: two users, two places each
    connect("o1", owner)  # the reader's oldest goes
    assert r1.closed
    assert peers["r1"].closes == [
        (1013, "the hub is full; its place went to another user")
    ]
    assert sorted(c.identity.client_id for c in hub.connections()) == [
        "k1",
        "k2",
        "o1",
        "r2",
    ]
    for client_id, principal in (("o2", owner), ("r3", reader), ("k3", kid)):
        with pytest.raises(HubFullError):  # the hub, or the kid's share
            connect(client_id, principal)  # 2-1-1 or 1-2-1 would only swap
    assert hub.stats.refused_full == 3
    hub.disconnect(r1)  # the transport's own close: nothing more changes
    assert len(hub.connections()) == 4


def test_making_room_spares_administrators_and_is_rare(clock: Clock) -> None:
    """A read-only user closed an administrator's clients, once a reconnect each."""
    hub = StarHub(clock=clock, max_connections=6)
    owner, kid = Principal("owner", is_admin=True), Principal("kid")
    reader, guest = Principal("reader", may_control=False), Principal("guest")
    peer = Peer()
    clients: dict[str, Connection] = {}

    def connect(client_id: str, principal: Principal) -> Connection:
        clock.advance(1)
        identity = Identity("agent", client_id, "world_1")
        clients[client_id] = hub.connect(
            identity, peer.send, peer.close, principal=principal
        )
        return clients[client_id]

    for n in range(3):
        connect(f"a{n}", owner)
        connect(f"k{n}", kid)
    with pytest.raises(HubFullError):
        connect("r0", reader)  # a read-only user displaces no one
    connect("g0", guest)  # the kid's oldest goes, never the owner's
    assert clients["k0"].closed and not clients["a0"].closed
    hub.disconnect(clients["g0"])
    connect("k0", kid)  # the displaced client comes back
    with pytest.raises(HubFullError):
        connect("g0", guest)  # leaving and coming back: not again within a minute
    assert not clients["k1"].closed
    clock.advance(60)
    connect("g0", guest)
    assert clients["k1"].closed


def test_human_ids_kept_for_users_are_bounded(clock: Clock) -> None:
    """A read-only user claimed 50 human ids in a black-box run, kept for good."""
    from custom_components.soul.core.star.connections import MAX_HUMANS_PER_USER

    hub = StarHub(clock=clock)
    peer = Peer()

    def visit(human_id: str, principal: Principal) -> None:
        identity = Identity("human", human_id, None)
        hub.disconnect(
            hub.connect(identity, peer.send, peer.close, principal=principal)
        )

    for n in range(3):
        visit(f"look{n:02d}", Principal("reader", may_control=False))
    assert hub.human_owners == {}
    kid = Principal("kid")
    for n in range(MAX_HUMANS_PER_USER):
        visit(f"kid{n:03d}", kid)
    assert list(hub.human_owners) == [f"kid{n:03d}" for n in range(32)]
    # Reconnecting makes an id the newest; a new one drops the least recent.
    visit("kid000", kid)
    visit("kid999", kid)
    assert "kid001" not in hub.human_owners
    assert list(hub.human_owners)[-2:] == ["kid000", "kid999"]
    assert len(hub.human_owners) == MAX_HUMANS_PER_USER
    # Another user's ids are not theirs to drop.
    visit("mum01", Principal("mum"))
    assert hub.human_owners["mum01"] == "mum"
    assert len(hub.human_owners) == MAX_HUMANS_PER_USER + 1
