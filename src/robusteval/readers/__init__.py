"""Readers turn a response's text into an answer (a label, a score, or invalid)."""

from robusteval.readers.labels import read_label

__all__ = ["read_label"]
