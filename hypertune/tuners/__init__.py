"""Tuners: MERT, MIRA and friends, built on the engine and the metrics."""
