"""Declared ranges (`robusteval.ranges`) and the settings decoder that checks them."""

from __future__ import annotations

import math
import typing

import pytest

from robusteval.config import RunConfig, decode_settings
from robusteval.errors import UserError
from robusteval.ranges import FINITE, Range, check, declared_range


@pytest.mark.parametrize(("declared", "shown"), [
    (Range(0, 10), "[0, 10]"),
    (Range(0, 1, low_open=True), "(0, 1]"),
    (Range(-1, 1, high_open=True), "[-1, 1)"),
    (Range(3), ">= 3"),
    (Range(0, low_open=True), "> 0"),
    (Range(high=5), "<= 5"),
    (Range(0, 0.5), "[0, 0.5]"),
])
def test_a_range_prints_as_people_write_intervals(declared, shown):
    assert str(declared) == shown


@pytest.mark.parametrize(("declared", "inside", "outside"), [
    (Range(0, 10), [0, 10, 5.5, 0.0], [-1, 10.000001, math.inf, -math.inf, math.nan]),
    (Range(0, 1, low_open=True), [1, 1e-9], [0, 0.0, -0.0, 1.5]),
    (Range(1, 10**7), [1, 10**7], [0, 10**7 + 1, 10**20]),
    (FINITE, [-1e308, 0, 1e308], [math.inf, math.nan]),
])
def test_contains(declared, inside, outside):
    assert all(declared.contains(v) for v in inside)
    assert not any(declared.contains(v) for v in outside)


def test_check_names_the_flag_the_value_and_the_range():
    with pytest.raises(UserError, match=r"^--temperature inf: not a finite number; it must be in \[0, 10\]$"):
        check("--temperature", math.inf, Range(0, 10))
    with pytest.raises(UserError, match=r"^--limit 99999999999999999999: out of range; it must be in "
                                        r"\[1, 10000000\]; use --all for every item$"):
        check("--limit", 99999999999999999999, Range(1, 10**7, hint="use --all for every item"))
    with pytest.raises(UserError, match=r"^--x nan: not a finite number; it must be any finite number$"):
        check("--x", math.nan, FINITE)
    check("--x", None, Range(0, 1))  # not given
    check("--x", 0.5, Range(0, 1))


def _numbers(cls) -> dict[str, typing.Any]:
    """The settings of ``cls`` that are numbers (``int``, ``float``, optional or not), by their hints."""
    from robusteval.config import _inner

    hints = typing.get_type_hints(cls, include_extras=True)
    return {name: hint for name, hint in hints.items() if _inner(hint) in (int, float) and name != "options"}


def test_every_number_of_the_run_configuration_declares_a_range():
    numbers = _numbers(RunConfig)
    assert {"limit", "seed", "temperature", "timeout", "price_in"} <= set(numbers)
    assert [n for n, hint in numbers.items() if declared_range(hint) is None] == []


@pytest.mark.parametrize("suite", ["mcq", "consistency", "hallucination", "persona", "tree"])
def test_every_number_of_every_suite_declares_a_range(suite):
    from robusteval.suites import get_suite

    numbers = _numbers(get_suite(suite).Options)
    assert numbers, f"{suite} has numeric settings"
    assert [n for n, hint in numbers.items() if declared_range(hint) is None] == []


@pytest.mark.parametrize(("values", "message"), [
    ({"temperature": math.inf}, r"--temperature inf: not a finite number; it must be in \[0, 10\]"),
    ({"temperature": 1e308}, r"--temperature 1e\+308: out of range"),
    ({"price_in": -1.0}, r"--price-in -1: out of range; it must be in \[0, 1000000\]"),
    ({"price_out": math.nan}, r"--price-out nan: not a finite number"),
    ({"seed": -1}, r"--seed -1: out of range; it must be in \[0, 4294967295\]"),
    ({"limit": 10**20}, r"use --all for every item"),
    ({"timeout": 0.0}, r"--timeout 0: out of range; it must be in \(0, 604800\]"),
    ({"top_p": 0}, r"--top-p 0: out of range; it must be in \(0, 1\]"),
])
def test_the_decoder_refuses_numbers_outside_their_range(values, message):
    with pytest.raises(UserError, match=message):
        decode_settings(RunConfig, values)


def test_the_decoder_names_a_suite_flag_that_differs_from_its_yaml_key():
    from robusteval.suites.mcq import Options

    with pytest.raises(UserError, match=r"--shots-per-question \(YAML n_shots\) 0: out of range; "
                                        r"it must be in \[1, 100\]"):
        decode_settings(Options, {"n_shots": 0}, {"n_shots": "--shots-per-question"})


def test_values_inside_their_ranges_decode():
    config = decode_settings(RunConfig, {"temperature": 10, "seed": 2**32 - 1, "limit": "5", "top_p": 1})
    assert config.temperature == pytest.approx(10.0) and config.seed == 2**32 - 1 and config.limit == 5
