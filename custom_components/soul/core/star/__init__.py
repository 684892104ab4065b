"""The Star Protocol (``star-protocol.md``) hub side: routing core and transport, HA-free.

The client SDK is not part of the integration: it is the distribution
``soul-star-client`` (package ``soul_star``) in ``sdk/star-client/`` of the
repository, installable with pip (docs/star.md).
"""
