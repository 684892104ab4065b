"""Tests of the user-emotion recognizer."""
