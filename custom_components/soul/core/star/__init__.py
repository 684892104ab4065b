"""The Star Protocol (``star-protocol.md``): hub routing and a client SDK, HA-free."""
