"""Soul in a real browser: Chromium against a running Home Assistant."""
