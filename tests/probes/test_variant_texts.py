"""What text each variant has before asking (`probes.variant_texts`), for ``--budget-covariates text``."""

from __future__ import annotations

from robusteval.labels import LABEL_STYLES
from robusteval.probes.design import Design
from robusteval.probes.templates import BASE, load_templates
from robusteval.probes.variant_texts import EXAMPLE, variant_texts


def test_a_prompt_template_s_text_is_its_own():
    templates = load_templates()
    design = Design(templates)
    names = [t.name for t in templates]
    assert variant_texts("prompt", names, design) == [t.text for t in templates]
    assert variant_texts("fewshot", [f"{n}+5shot" for n in names], design) == [t.text for t in templates]
    assert variant_texts("prompt", ["base", "not-a-template"], design) == [BASE.text, None]


def test_a_label_style_is_shown_on_the_fixed_example():
    texts = variant_texts("format", list(LABEL_STYLES), Design())
    assert texts is not None and len(set(texts)) == len(LABEL_STYLES)  # each style reads differently
    assert all(t is not None and EXAMPLE.question in t for t in texts)
    assert "I: Venus" in texts[list(LABEL_STYLES).index("I:")]


def test_a_crossed_design_joins_the_texts_of_its_axes_that_have_one():
    templates = load_templates()[:2]
    design = Design(templates)
    names = [f"{t.name}|gold@{g}" for t in templates for g in "AB"]
    texts = variant_texts("prompt×order", names, design)
    assert texts == [templates[0].text, templates[0].text, templates[1].text, templates[1].text]
    both = variant_texts("format×prompt", [f"1.|{templates[1].name}"], design)
    assert both is not None and both[0] is not None and both[0].endswith(templates[1].text) and "1. Venus" in both[0]


def test_families_without_text_say_so():
    for family in ("order", "seeds", "typo", "order×typo"):
        assert variant_texts(family, ["gold@A", "seed0", "typo#1"], Design()) is None
