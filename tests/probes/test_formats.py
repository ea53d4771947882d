"""The `formats` family against FormatSpread's own grammar (../shared/references/formatspread): the
same choices render byte for byte as grammar_definition.py renders them, and its sanity checks
accept exactly the formats `is_valid` accepts."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

import pytest

from robusteval.errors import UserError
from robusteval.probes.formats import (
    CASINGS,
    NUMBERINGS,
    WRAPPERS,
    GrammarFormat,
    draw,
    example,
    formats_count,
    is_valid,
    sample_formats,
)

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "references" / "formatspread"
QUESTION = "Which planet is closest to the Sun?"
OPTIONS = ("Venus", "Mercury", "Earth", "Mars")


@pytest.fixture(scope="module")
def grammar():
    """FormatSpread's grammar_definition module (it seeds the global `random` on import: restored)."""
    if not (REFERENCE / "grammar_definition.py").is_file():
        pytest.skip(f"{REFERENCE} not found (FormatSpread's reference files)")
    state = random.getstate()
    sys.path.insert(0, str(REFERENCE))
    try:
        return importlib.import_module("grammar_definition")
    finally:
        sys.path.remove(str(REFERENCE))
        random.setstate(state)


def reference_format(g, f: GrammarFormat, n: int):
    """FormatSpread's structure for a multiple-choice task (its task1431/task309 shape: Question,
    "Options" then the enumeration, Answer) with ``f``'s choices."""
    casing = g.TEXT_DESCRIPTOR_FN_LIST[list(CASINGS).index(f.casing)][0]
    wrapper = g.ITEM_WRAPPER_LIST[WRAPPERS.index(f.wrapper)][0]
    numbering = g.NUMBER_FORMAT_LIST[list(NUMBERINGS).index(f.numbering)][0]
    separator = g.SharedPropertyAmongPrompts({"chosen_separator": f.separator}, None)
    fn = g.SharedPropertyAmongPrompts({"text_descriptor_fn": casing}, None)
    root = g.SpacingBetweenPromptComponents([
        g.SimplePromptFormat("Question", None, chosen_separator_owner=separator, text_descriptor_fn_owner=fn),
        g.SpacingBetweenPromptComponents([
            g.SimplePromptFormat("Options", None, chosen_separator_owner=separator, text_descriptor_fn_owner=fn,
                                 prompt_without_text=True),
            g.NewEnumerationPromptFormat("", n, chosen_space=f.option_space, chosen_separator=f.option_separator,
                                         chosen_item_wrapper=wrapper, chosen_number_format=numbering,
                                         object_name="enum1"),
        ], chosen_space=f.options_space, allow_only_non_char_spaces=True),
        g.SimplePromptFormat("Answer", None, chosen_separator_owner=separator, text_descriptor_fn_owner=fn,
                             is_output_field=True),
    ], chosen_space=f.field_space)
    return root


def reference_render(g, f: GrammarFormat, question: str, options: tuple[str, ...]) -> str:
    """As FormatSpread renders an input to be answered (utils._apply_prompt_format_to_extracted_fields)."""
    root = reference_format(g, f, len(options))
    text = g.flatten(root.solve({"enumeration_length": len(options), "print_output_fields": True,
                                 "exclude_text_field_for_output_fields": True})).replace("<|text|>", "{}")
    return text.format(question, *options)


def test_sampled_formats_render_as_formatspread_renders_them(grammar):
    formats = sample_formats(20, seed=0)
    same = [f.name for f in formats if example(f, QUESTION, OPTIONS) == reference_render(grammar, f, QUESTION, OPTIONS)]
    assert len(same) == 20, [f for f in formats if f.name not in same]


def test_every_numbering_and_wrapper_renders_as_formatspread(grammar):
    rng = random.Random(3)
    checked = 0
    for numbering in NUMBERINGS:
        for wrapper in WRAPPERS:
            while True:
                f = draw(rng, "x")
                if is_valid(f):
                    break
            f = GrammarFormat(**{**f.__dict__, "numbering": numbering, "wrapper": wrapper})
            options = tuple(f"option {k}" for k in range(10))
            assert example(f, QUESTION, options) == reference_render(grammar, f, QUESTION, options)
            checked += 1
    assert checked == 36


def test_validity_is_formatspread_sanity_check(grammar):
    """Random choices, valid or not: `is_valid` agrees with holistic_node_format_sanity_checks on each."""
    rng = random.Random(11)
    verdicts = []
    for _ in range(3000):
        f = draw(rng, "x")
        theirs = grammar.holistic_node_format_sanity_checks(reference_format(grammar, f, 4))
        assert is_valid(f) == theirs, f
        verdicts.append(theirs)
    assert 0 < sum(verdicts) < len(verdicts)  # both verdicts were met


def test_sampling_is_seeded_distinct_and_extends():
    twenty = sample_formats(20, seed=5)
    assert twenty == sample_formats(20, seed=5)
    assert twenty != sample_formats(20, seed=6)
    assert len({f.layout() for f in twenty}) == 20
    assert all(is_valid(f) for f in twenty)
    assert sample_formats(30, seed=5)[:20] == twenty  # asking for more keeps the first ones
    assert [f.name for f in twenty[:3]] == ["f01", "f02", "f03"]
    assert all(f.casing != "title" for f in twenty)  # title-cased "Question" is "Question": recorded as as-is


def test_sampling_respects_the_numbering_capacity():
    wide = sample_formats(40, seed=0, max_options=13)
    assert all(f.numbering != "Ⅰ" for f in wide)  # twelve Unicode numerals label at most 12 options


def test_formats_count():
    assert formats_count("formats") == 20
    assert formats_count("formats:7") == 7
    assert formats_count("format") is None
    with pytest.raises(UserError, match="formats:N"):
        formats_count("formats:x")
