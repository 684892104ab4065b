"""Tests of the Home Assistant-free core package."""
