"""Tests of XingChen-V cognition: the event journal."""
