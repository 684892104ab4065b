"""XingChen-V cognition (docs/cognition.md).

The event journal; later the dual brain, the psyche and the profile store.
HA-free, like the rest of the core.
"""
