"""Home Assistant's own cost of a body's entities: the same entities, bare.

The baseline of ``benchmarks.startup``'s memory per body. A body's entities
(their platforms, entity categories and which are disabled by default) are
read from the entity registry; a mock integration then adds, for each of
``count`` devices, bare entities of the same shapes — a fixed state, no
attributes beyond what the platform itself writes, no subscriptions — in the
same Home Assistant. What those cost is Home Assistant's floor for that many
entities (registry entries, devices, entity objects, states, event tracking);
the rest of a body's cost is Soul's own.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

from homeassistant.components.binary_sensor import BinarySensorEntity
from homeassistant.components.button import ButtonEntity
from homeassistant.components.event import EventEntity
from homeassistant.components.light import ColorMode, LightEntity
from homeassistant.components.select import SelectEntity
from homeassistant.components.sensor import SensorEntity
from homeassistant.config_entries import ConfigEntry, ConfigFlow
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddEntitiesCallback
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    MockModule,
    MockPlatform,
    mock_config_flow,
    mock_integration,
    mock_platform,
)

FLOOR = "soul_floor"


class _FloorFlow(ConfigFlow):
    """The mock integration's flow (an entry needs one; never started)."""


class Shape(NamedTuple):
    """One entity of a body: its platform, category and whether it is enabled."""

    domain: str
    category: EntityCategory | None
    enabled: bool


def body_shapes(hass: HomeAssistant, platform: str, prefix: str) -> list[Shape]:
    """Return the shapes of ``platform``'s entities whose unique id has ``prefix``."""
    shapes = [
        Shape(entry.domain, entry.entity_category, entry.disabled_by is None)
        for entry in er.async_get(hass).entities.values()
        if entry.platform == platform and entry.unique_id.startswith(prefix)
    ]
    if not shapes:
        raise LookupError(f"no entity of {platform} with a unique id {prefix}…")
    return shapes


class _Bare:
    """What every bare entity has: a name, a unique id and a device."""

    _attr_has_entity_name = True
    _attr_should_poll = False

    def __init__(self, device: str, index: int, shape: Shape) -> None:
        self._attr_name = f"{shape.domain} {index}"
        self._attr_unique_id = f"{device}-{index}"
        self._attr_device_info = DeviceInfo(identifiers={(FLOOR, device)})
        self._attr_entity_category = shape.category
        self._attr_entity_registry_enabled_default = shape.enabled


class _BinarySensor(_Bare, BinarySensorEntity):
    _attr_is_on = True


class _Button(_Bare, ButtonEntity):
    async def async_press(self) -> None:
        """Do nothing."""


class _Event(_Bare, EventEntity):
    _attr_event_types = ["happened"]  # noqa: RUF012  # Home Assistant's attribute


class _Light(_Bare, LightEntity):
    _attr_color_mode = ColorMode.ONOFF
    _attr_supported_color_modes = {ColorMode.ONOFF}  # noqa: RUF012
    _attr_is_on = False


class _Select(_Bare, SelectEntity):
    _attr_options = ["a", "b"]  # noqa: RUF012
    _attr_current_option = "a"


class _Sensor(_Bare, SensorEntity):
    _attr_native_value = 1


_CLASSES: dict[str, type[_Bare]] = {
    "binary_sensor": _BinarySensor,
    "button": _Button,
    "event": _Event,
    "light": _Light,
    "select": _Select,
    "sensor": _Sensor,
}


class BareBodies:
    """A mock integration whose devices have bare entities of a body's shapes.

    ``start`` sets it up with one device, so that what loading the integration
    and its platforms costs once is paid before anything is measured; ``add``
    adds more devices.
    """

    def __init__(self, hass: HomeAssistant, shapes: list[Shape]) -> None:
        """Describe the devices' entities; nothing is set up yet."""
        self.hass = hass
        self.shapes = shapes
        self._adders: dict[str, AddEntitiesCallback] = {}

    async def start(self) -> None:
        """Set the integration up, its platforms adding one device's entities."""
        domains = sorted({shape.domain for shape in self.shapes})

        async def setup_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
            await hass.config_entries.async_forward_entry_setups(entry, domains)
            return True

        mock_integration(self.hass, MockModule(FLOOR, async_setup_entry=setup_entry))
        mock_platform(self.hass, f"{FLOOR}.config_flow", None)
        for domain in domains:

            async def setup_platform(
                _hass: HomeAssistant,
                _entry: ConfigEntry,
                add: AddEntitiesCallback,
                domain: str = domain,
            ) -> None:
                self._adders[domain] = add

            mock_platform(
                self.hass,
                f"{FLOOR}.{domain}",
                MockPlatform(async_setup_entry=setup_platform),
            )
        entry: Any = MockConfigEntry(domain=FLOOR)
        entry.add_to_hass(self.hass)
        with mock_config_flow(FLOOR, _FloorFlow):
            assert await self.hass.config_entries.async_setup(entry.entry_id)
            await self.hass.async_block_till_done()
        await self.add(["floor-first"])

    async def add(self, devices: list[str]) -> None:
        """Add ``devices``, each with bare entities of the shapes."""
        by_domain: dict[str, list[Entity]] = defaultdict(list)
        for device in devices:
            for index, shape in enumerate(self.shapes):
                entity = _CLASSES[shape.domain](device, index, shape)
                by_domain[shape.domain].append(entity)  # type: ignore[arg-type]
        for domain, entities in by_domain.items():
            self._adders[domain](entities)
        await self.hass.async_block_till_done()
