"""Benchmarks: each prints its figures against a baseline measured in the same run."""
