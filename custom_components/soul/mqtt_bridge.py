"""The bridge between Home Assistant's MQTT integration and the core.

Soul opens no MQTT connection of its own: it subscribes and publishes through
``homeassistant.components.mqtt``. Incoming messages go to the terminal
registry or the invoker; every callback swallows bad input (the core logs it).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING

from homeassistant.components import mqtt
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_track_time_interval

from .const import LOGGER
from .core.ingest import KINDS as SNAPSHOT_KINDS, SnapshotIngest
from .core.topics import Kind, Topics
from .core.untrusted import decodes_on_loop

if TYPE_CHECKING:
    from .core.invoker import Invoker
    from .core.registry import TerminalRegistry

EXPIRE_INTERVAL = timedelta(seconds=5)
EXPIRE_CHUNK = 4  # terminals marked stale in one step of the event loop


class MqttBridge:
    """Feeds the registry from MQTT and publishes for the core."""

    def __init__(
        self, hass: HomeAssistant, topics: Topics, registry: TerminalRegistry
    ) -> None:
        """Bridge ``registry`` to the MQTT topics under ``topics.prefix``."""
        self.hass = hass
        self.topics = topics
        self.registry = registry
        self.invoker: Invoker | None = None
        self._unsubscribes: list[CALLBACK_TYPE] = []
        # Set by the runtime: skills and catalogs are parsed in the executor.
        self.ingest: SnapshotIngest | None = None
        self._expiring: asyncio.Task[None] | None = None

    async def async_start(self) -> None:
        """Subscribe to what bodies publish and start the TTL check."""
        for topic_filter, qos in self.topics.subscriptions():
            self._unsubscribes.append(
                await mqtt.async_subscribe(
                    self.hass, topic_filter, self._async_message, qos, encoding=None
                )
            )
        self._unsubscribes.append(
            async_track_time_interval(
                self.hass, self._async_expire, EXPIRE_INTERVAL, cancel_on_shutdown=True
            )
        )

    @callback
    def async_stop(self) -> None:
        """Unsubscribe everything and stop parsing snapshots."""
        while self._unsubscribes:
            self._unsubscribes.pop()()
        if self._expiring is not None:
            self._expiring.cancel()
        if self.ingest is not None:
            self.ingest.stop()

    @callback
    def _async_expire(self, _now: object) -> None:
        if self._expiring is None or self._expiring.done():
            self._expiring = self.hass.async_create_background_task(
                self._async_expire_all(), "soul expire terminals", eager_start=True
            )

    async def _async_expire_all(self) -> None:
        """Mark silent terminals stale and tell held online changes, a few at a time.

        The loop runs between the steps.

        Each one's entities are written at once: 40 made-up bodies going
        silent together held the loop 561 ms in a black-box run.
        """
        while True:
            # Online changes a flapping body's entities were not told at once.
            released = self.registry.release_held(limit=EXPIRE_CHUNK)
            expired = self.registry.expire(limit=EXPIRE_CHUNK)
            if len(released) < EXPIRE_CHUNK and len(expired) < EXPIRE_CHUNK:
                return
            await asyncio.sleep(0)

    @callback
    def _async_message(self, message: mqtt.ReceiveMessage) -> None:
        parsed = self.topics.parse(message.topic)
        if parsed is None:
            LOGGER.debug("Ignored message on %r", message.topic)  # any bytes: escaped
            return
        payload = message.payload
        # With encoding=None payloads are bytes; the type also admits a bytearray,
        # which the core does not take.
        if isinstance(payload, bytearray):
            payload = bytes(payload)
        if parsed.kind is Kind.RESULT:
            invoker = self.invoker
            if invoker is None or parsed.request_id is None:
                return
            if decodes_on_loop(payload) or not invoker.awaits(
                parsed.terminal_id, parsed.request_id
            ):
                invoker.handle_result(parsed.terminal_id, parsed.request_id, payload)
                return
            # A large result is decoded in the executor, then resolves the call.
            self.hass.async_create_task(
                invoker.async_handle_result(
                    parsed.terminal_id,
                    parsed.request_id,
                    payload,
                    self.hass.async_add_executor_job,
                ),
                "soul large result",
            )
            return
        if parsed.kind in SNAPSHOT_KINDS and self.ingest is not None:
            self.ingest.submit(parsed.kind, parsed.terminal_id, payload)
            return
        self.registry.handle_message(parsed.kind, parsed.terminal_id, payload)

    async def async_publish(
        self, topic: str, payload: str, qos: int, retain: bool
    ) -> None:
        """Publish through Home Assistant's MQTT client, not waiting for the ack.

        Home Assistant raises only before the message reaches its MQTT client
        (MQTT disabled, not connected, refused); after that it waits for the
        broker's PUBACK, which never fails (a missing ack is logged after
        10 s). That wait goes on in the background: a chat turn's
        ``emotion_update`` does not hold its ``intent_action`` back by a broker
        round trip, nor does a tick's publish the next. Messages leave in order.
        """
        task = self.hass.async_create_background_task(
            mqtt.async_publish(self.hass, topic, payload, qos, retain),
            "soul mqtt publish",
            eager_start=True,
        )
        if task.done():
            task.result()  # what Home Assistant raised, raised here

    async def async_flush(self) -> None:
        """Return once Home Assistant's MQTT client has written what was published.

        The client writes when the event loop next finds its socket writable
        (``add_writer``, registered by the publish). A coroutine that yields
        once is woken before that write, in the same loop turn; after a
        second yield the write has run. A chat turn awaits this after its
        ``emotion_update`` and its ``intent_action`` (``ChatPipeline``): the
        body gets them before the turn's bookkeeping, and the
        ``intent_action`` is not held back by Nagle's algorithm until the
        broker acknowledges the ``emotion_update`` (the client's socket has
        no ``TCP_NODELAY``). docs/performance.md, "Chat path".
        """
        await asyncio.sleep(0)
        await asyncio.sleep(0)
