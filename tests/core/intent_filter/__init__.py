"""Tests of the intent filter."""
