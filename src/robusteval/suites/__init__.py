"""Suites: one file each, composing data, probes, the engine, readers, judges and metrics."""
