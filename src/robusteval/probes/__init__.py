"""Perturbations: each turns an item into variants. Option labels and orders (`choices`), prompt
templates (`templates`), worked examples (`fewshot`), and the design that combines them (`design`)."""

from robusteval.probes.choices import LABEL_STYLES
from robusteval.probes.design import FAMILIES, Design, expand

__all__ = ["FAMILIES", "LABEL_STYLES", "Design", "expand"]
