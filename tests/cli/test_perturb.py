"""``robusteval perturb``: a dataset's copies as a run would send them, and its perturbation list."""

from __future__ import annotations

import asyncio
import json

import pytest

from robusteval.cli import main
from robusteval.probes.apply import perturb_text
from robusteval.probes.registry import REGISTRY

MCQ = [{"id": "q1", "question": "Which planet is closest to the Sun?", "choices": ["Mercury", "Venus"], "answer": 0},
       {"id": "q2", "question": "What do bees make from nectar?", "choices": ["Wax", "Honey"], "answer": 1}]


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "mcq.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in MCQ))
    return path


def test_the_copies_are_a_runs_copies(data, capsys):
    assert main(["perturb", "-p", "helm:typos,invisible", "--data", str(data), "--copies", "2",
                 "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 * 2 * 2 and {r["id"] for r in rows} == {"q1", "q2"}
    for r in rows:  # mcq's write_copies: seed "{seed}:{id}:{family}#{j}", instance (id, seed + j - 1)
        again = asyncio.run(perturb_text(r["perturbation"], r["original"],
                                         seed=f"0:{r['id']}:{r['perturbation']}#{r['copy']}",
                                         instance=(r["id"], r["copy"] - 1)))
        assert r["text"] == again.text != r["original"]


def test_text_output_shows_invisible_characters(capsys):
    assert main(["perturb", "-p", "invisible@1.0", "--text", "abc"]) == 0
    out = capsys.readouterr().out
    assert "original          abc" in out and "<U+20" in out and "\u200b" not in out


def test_list_and_help_name_every_perturbation(capsys):
    assert main(["perturb", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [*REGISTRY, "language:CODE"]
    with pytest.raises(SystemExit):
        main(["perturb", "--help"])
    assert "helm:dialect" in capsys.readouterr().out


def test_requests_are_a_consistency_runs_variants(tmp_path, capsys):
    import random

    from robusteval.probes import helm

    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps({"id": "p1", "prompt": "What does a plant have for lunch?"}) + "\n")
    assert main(["perturb", "-p", "helm:typos,invisible", "--requests", str(path), "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["perturbation"] for r in rows] == ["helm:typos", "invisible"]
    # consistency's seeding (tests/suites/test_helm_families.py runs the same through a run)
    assert rows[0]["text"] == helm.typos("What does a plant have for lunch?", random.Random("p1"), 0.1)
    again = asyncio.run(perturb_text("invisible", rows[1]["original"], seed="0:p1:invisible", instance=("p1", 0)))
    assert rows[1]["text"] == again.text


@pytest.mark.parametrize("argv, message", [
    (["perturb", "--text", "x"], "give --perturbations"),
    (["perturb", "-p", "paraphrase", "--text", "x"], "written by a model"),
    (["perturb", "-p", "tyop", "--text", "x"], "unknown perturbation 'tyop'"),
    (["perturb", "-p", "shuffle_words@0.3", "--text", "x"], "has no rate"),
    (["perturb", "-p", "typo", "--text", "x", "--requests", "r.jsonl"], "give one of --data, --requests and --text"),
    (["perturb", "-p", "typo", "--requests", "missing.jsonl"], "--requests missing.jsonl: no such file"),
])
def test_user_errors_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--text", "x", "--seed", "-1"], "--seed -1: out of range; it must be in [0, 4294967295]"),
    (["--text", "x", "--options"], "--options perturbs an mcq dataset's options; --text has none"),
])
def test_what_a_run_would_refuse_or_ignore_is_one_message(capsys, argv, message):
    assert main(["perturb", "-p", "typo", *argv]) == 2
    out, err = capsys.readouterr()
    assert message in err and len(err.strip().splitlines()) == 1 and out == ""


def test_options_given_with_requests_are_refused_too(tmp_path, capsys):
    requests = tmp_path / "r.txt"
    requests.write_text("Tell me about bees.\n")
    assert main(["perturb", "-p", "typo", "--requests", str(requests), "--options"]) == 2
    assert "--requests has none" in capsys.readouterr().err
