"""Tests of the Star Protocol hub, client SDK, test server and SimpleWorld demo."""
