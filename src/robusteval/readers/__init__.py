"""Readers turn a response's text into an answer (a label, a score, or invalid).

The mcq option readers are named parts chosen with ``--reader`` (`registry`: `get_reader`, `READERS`)."""

from robusteval.readers.registry import DEFAULT_READER, READERS, Reader, get_reader
from robusteval.readers.robusteval import read_label

__all__ = ["DEFAULT_READER", "READERS", "Reader", "get_reader", "read_label"]
