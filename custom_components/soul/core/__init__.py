"""Soul's domain logic, free of Home Assistant.

Nothing in this package may import ``homeassistant`` (``tests/test_core_isolation.py``
enforces it). It talks to the outside world through small interfaces that the
Home Assistant glue in ``custom_components/soul`` fills in: publishing to MQTT,
an LLM endpoint, a memory backend and a clock.
"""
