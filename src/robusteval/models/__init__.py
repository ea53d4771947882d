"""Backends: one file each behind the `Backend` protocol; `load_backend` builds one from a spec."""

from robusteval.models.base import Backend
from robusteval.models.spec import ModelSpec, load_backend, parse_model_spec

__all__ = ["Backend", "ModelSpec", "load_backend", "parse_model_spec"]
