"""Tools for developing and testing Soul; not shipped with the integration.

``broker`` starts a real MQTT broker, ``fake_llm`` serves a scripted
OpenAI-compatible API. The tests and ``scripts/develop`` share them.
"""
