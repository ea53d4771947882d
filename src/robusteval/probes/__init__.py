"""Perturbations: each turns an item into a family of variants. One function per perturbation."""

from robusteval.probes.choices import FAMILIES, LABEL_STYLES, expand

__all__ = ["FAMILIES", "LABEL_STYLES", "expand"]
