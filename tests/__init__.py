"""Tests of the Soul integration."""
