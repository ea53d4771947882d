"""Perturbations: each turns an item into variants. Option labels and orders (`choices`), prompt
templates (`templates`), worked examples (`fewshot`), and the design that combines them (`design`).

Nothing is imported here: importing one probe (e.g. the `registry`) runs this file first, and a
re-export of `design` would pull in templates and readers, an import cycle (tests/test_imports.py)."""
