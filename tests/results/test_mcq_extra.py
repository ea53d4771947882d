"""The keys the formats, search and demo branches added to an mcq run's results.json, read and written
by the typed records since the merge with issue 45: ``search``/``search_truth`` and ``design.formats``
on `McqExtra`, ``read_as`` and ``circular`` on `FamilyMetrics`, each left out where a run has none (as
the runs written before the merge left them out)."""

from __future__ import annotations

import json

from robusteval.estimate import Estimate
from robusteval.results.codec import decode, encode
from robusteval.results.mcq import CircularMetrics, FamilyMetrics, FormatInfo, McqExtra, McqMetrics
from robusteval.results.records import decode_extra, encode_extra
from robusteval.results.search import SearchResult


def _found(name: str, value: float, text: str | None) -> dict:
    return {"name": name, "accuracy": {"value": value, "ci_low": 0.0, "ci_high": 0.79, "n": 1}, "text": text}


SEARCH = {"m": {"formats:5": {"method": "halving", "best": _found("f04", 1.0, "Question {question}"),
                              "worst": _found("f02", 0.0, None),
                              "spread": {"value": 1.0, "ci_low": -0.1, "ci_high": 1.0, "n": 1},
                              "calls": 6, "cells": 25, "share": 0.25, "seed": 7, "accuracies": {}}}}
FORMAT = {"separator": ": ", "casing": "as-is", "field_space": " <sep> ", "options_space": " \n ",
          "option_space": " <sep> ", "option_separator": "", "wrapper": "{})", "numbering": "I",
          "layout": "Question: {question} <sep> Options: {options}", "example": "Question: Which planet?"}
# the keys of an mcq run written with --families formats:5 --search best-worst (as integ wrote them)
WRITTEN = {"suite": "mcq", "metrics": {}, "failures": [],
           "design": {"templates": ["base"], "cross": [], "reader": "robusteval", "formats": {"f01": FORMAT}},
           "search": SEARCH, "search_truth": SEARCH}


def test_search_and_formats_read_as_typed_fields_of_mcq_extra_and_write_back_as_written():
    extra = decode_extra("mcq", json.loads(json.dumps(WRITTEN)))
    assert isinstance(extra, McqExtra)
    found = extra.search["m"]["formats:5"]
    assert isinstance(found, SearchResult) and found.best.name == "f04" and found.worst.text is None
    assert found.spread == Estimate(1.0, -0.1, 1.0, 1)
    assert extra.search_truth == extra.search
    assert extra.formats == {"f01": FormatInfo(**FORMAT)} and extra.reader == "robusteval"
    keys = encode_extra("mcq", extra)
    assert keys == {k: WRITTEN[k] for k in ("design", "search", "search_truth")}


def test_a_run_without_search_or_formats_writes_neither_key():
    extra = McqExtra(design={"templates": ["base"]})
    assert encode_extra("mcq", extra) == {"design": {"templates": ["base"]}}
    assert extra.formats == {} and extra.search is None


def test_read_as_and_circular_are_left_out_where_a_family_has_none():
    older = decode(FamilyMetrics, {"samples": 4})  # a run written before either existed
    assert older.read_as is None and older.circular is None
    assert "read_as" not in encode(older) and "circular" not in encode(older)
    circular = CircularMetrics(Estimate(0.5, 0.1, 0.9, 4), {"3/4": Estimate(0.75, 0.3, 0.95, 4)}, 4, 1)
    metrics = {"m": {"circular": FamilyMetrics(samples=16, circular=circular, read_as={"label": 15, "text": 1})}}
    written = encode(metrics, McqMetrics)
    assert written["m"]["circular"]["read_as"] == {"label": 15, "text": 1}
    assert written["m"]["circular"]["circular"]["at_least"]["3/4"]["ci_low"] == 0.3
    assert decode(McqMetrics, json.loads(json.dumps(written))) == metrics
