import asyncio
import json

import pytest

from robusteval.data.consistency import PromptSet, PromptVariant
from robusteval.metrics import similarity
from robusteval.report.consistency_files import answers_file, answers_markdown, submission
from robusteval.results.codec import encode
from robusteval.suites.consistency import AnswerSample, RatingSample, _rating_groups


def summarise(*args, **kw):
    """The typed record as results.json holds it."""
    return encode(similarity.summarise(*args, **kw))


ITEMS = [PromptSet(f"i{n}", "formality" if n < 2 else "spelling",
                   (PromptVariant("en", f"q{n}a"), PromptVariant("en", f"q{n}b"))) for n in range(3)]


def rating(model, item, score, judge="oracle", scope="variants"):
    return RatingSample(model=model, item_id=item, variation="x", judge=judge, scope=scope, score=score, raw=score,
                        detail=None, attempts=1, status="ok" if score is not None else "invalid")


def test_items_by_models_table_sums_means_and_missing():
    ratings = [rating("A", "i0", 5), rating("A", "i1", 3), rating("A", "i2", None),
               rating("B", "i0", 4), rating("B", "i1", 1), rating("B", "i2", 2)]
    m = summarise(ratings, ITEMS, ["A", "B"], ["oracle"])["judges"]["oracle"]
    assert m["table"]["i2"] == {"A": None, "B": 2.0}
    assert m["item_mean"] == {"i0": 4.5, "i1": 2.0, "i2": 2.0}  # difficulty: mean over models that were rated
    a, b = m["models"]["A"], m["models"]["B"]
    assert (a["sum"]["value"], a["mean"]["value"], a["rated"], a["missing"]) == (8.0, 4.0, 2, 1)
    assert (b["sum"]["value"], b["mean"]["value"]) == (7.0, pytest.approx(7 / 3))
    assert b["sum"]["ci_low"] <= 7.0 <= b["sum"]["ci_high"]
    assert a["by_variation"] == {"formality": {"mean": 4.0, "items": 2}, "spelling": {"mean": None, "items": 1}}
    assert "agreement" not in summarise(ratings, ITEMS, ["A", "B"], ["oracle"])


def test_sampling_baseline_and_style_effect():
    ratings = [rating("A", f"i{n}", 2.0) for n in range(3)]
    # each variant's samples agree more (4 and 5 -> 4.5 per item) than the variants do (2)
    ratings += [rating("A", f"i{n}", s, scope=f"sampling:{v}") for n in range(3) for v, s in ((0, 4.0), (1, 5.0))]
    m = summarise(ratings, ITEMS, ["A"], ["oracle"])["judges"]["oracle"]["models"]["A"]
    assert m["sampling_mean"]["value"] == pytest.approx(4.5)
    assert m["style_effect"]["value"] == pytest.approx(-2.5)


def test_two_judges_give_agreement_over_cells():
    ratings = [rating("A", "i0", 5), rating("A", "i1", 3), rating("A", "i2", 1),
               rating("A", "i0", 4.5, "embedding"), rating("A", "i1", 3.5, "embedding"),
               rating("A", "i2", 0.5, "embedding")]
    agreement = summarise(ratings, ITEMS, ["A"], ["oracle", "embedding"])["agreement"]
    assert agreement["spearman"]["oracle~embedding"] == pytest.approx(1.0)
    assert agreement["per_unit"]["i0|A"] == pytest.approx(1 - 0.5 / 5)
    assert agreement["krippendorff_alpha_interval"] > 0.8


def answer(model, item, v, k=0, text="t", status="ok"):
    return AnswerSample(model=model, item_id=item, variation="x", variant=v, language="en", sample=k, prompt="p",
                        response=text if status == "ok" else None, status=status,
                        error=None if status == "ok" else "boom", cached=False, key=f"{model}{item}{v}{k}")


def test_groups_take_sample_zero_across_variants_and_samples_within_a_variant():
    answers = [answer("A", i.id, v, k) for i in ITEMS for v in range(2) for k in range(3)]
    groups = _rating_groups(answers, ITEMS, ["A"], samples=3)
    scopes = [(g.item.id, g.scope, [(a.variant, a.sample) for a in g.answers]) for g in groups if g.item.id == "i0"]
    assert scopes == [("i0", "variants", [(0, 0), (1, 0)]),
                      ("i0", "sampling:0", [(0, 0), (0, 1), (0, 2)]),
                      ("i0", "sampling:1", [(1, 0), (1, 1), (1, 2)])]


def test_samples_of_a_variant_are_k_draws_each_with_its_own_seed(cli_run, tmp_path):
    """The sampling baseline compares a variant's K answers: one seed K times would make them one
    answer K times ("identical" whatever the model); exported without a server."""
    requests = tmp_path / "requests.jsonl"
    out = cli_run("run", "consistency", "--model", "batchfile:X", "--samples", "2", "--temperature", "0.7",
                  "--limit", "1", "--export-requests", requests, "--quiet")
    assert out.code == 0, out.err
    bodies = [json.loads(line)["body"] for line in requests.read_text(encoding="utf-8").splitlines()]
    assert len(bodies) == 6 and len({json.dumps(b, sort_keys=True) for b in bodies}) == 6
    by_prompt: dict[str, list[int]] = {}
    for body in bodies:
        by_prompt.setdefault(json.dumps(body["messages"]), []).append(body["seed"])
    assert len(by_prompt) == 3 and all(sorted(seeds) == [0, 1] for seeds in by_prompt.values())


def test_a_failed_answer_makes_the_rating_failed_not_zero():
    from robusteval.suites.consistency import _Group, _rate

    class Judge:
        name = "oracle"

        async def rate(self, answers, hint, languages):  # pragma: no cover - must not be called
            raise AssertionError("judged a group with a failed answer")

    group = _Group("A", ITEMS[0], "variants", (answer("A", "i0", 0), answer("A", "i0", 1, status="failed")))
    r = asyncio.run(_rate(Judge(), group))
    assert r.status == "failed" and r.score is None and "boom" in r.error


def test_submission_and_side_by_side_answers():
    answers = [answer("A", "i0", 0, text="yes | no\nmaybe"), answer("A", "i0", 1, text="ok")]
    payload = json.loads(submission(answers, ITEMS[:1], "A", "team-x"))["eloquent-robustness-results"]
    assert payload == {"source": "team-x", "year": "2024",
                       "items": [{"id": "i0", "responses": [{"response": "yes | no\nmaybe"}, {"response": "ok"}]}]}
    ours = json.loads(answers_file(answers, ITEMS[:1], "A", "team-x"))["robusteval-answers"]
    assert ours["team"] == "team-x" and ours["system"] == "A"
    assert ours["items"][0]["variants"][0] == {"language": "en", "prompt": "q0a", "response": "yes | no\nmaybe"}
    md = answers_markdown(answers, [rating("A", "i0", 4.0)], ITEMS[:1], ["A"])
    assert "yes \\| no<br>maybe" in md and "A oracle: 4.00" in md


@pytest.mark.slow
def test_end_to_end_with_the_embedded_model(tmp_path):
    """Two tiny prompt sets, the embedded model as model under test and oracle, plus the embedding
    judge: every file is written, ratings are in range or missing, and a rerun asks nothing new."""
    from robusteval.configure import build_config
    from robusteval.run import run_suite

    data = tmp_path / "sets.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in [
        {"id": "s1", "variation": "formality", "variants": [{"language": "en", "prompt": "Name a primary colour."},
                                                          {"language": "en", "prompt": "pls name a primary color"}]},
        {"id": "s2", "variation": "language", "hint": "Compare content, not language.",
         "variants": [{"language": "en", "prompt": "What is 2 + 2?"}, {"language": "de", "prompt": "Was ist 2 + 2?"}]},
    ]) + "\n")
    flags = {"suite": "consistency", "data": str(data), "max_tokens": 24, "oracle_max_tokens": 32,
             "oracle_retries": 1, "cache_dir": str(tmp_path / "cache"), "out_dir": str(tmp_path / "runs"),
             "run_id": "one"}
    config = build_config({}, flags)
    run_dir, result, usage = asyncio.run(run_suite(config, quiet=True))
    for name in ("results.json", "samples.jsonl", "answers.md", "robusteval.json", "answers-llamacpp.json",
                 "heatmap-oracle.png", "heatmap-embedding.png"):
        assert (run_dir / name).stat().st_size > 0, name
    assert (run_dir / "heatmap-oracle.png").read_bytes()[:4] == b"\x89PNG"
    table = encode(result.metrics)["judges"]["embedding"]["table"]
    assert set(table) == {"s1", "s2"} and all(0 <= v["llamacpp"] <= 5 for v in table.values())
    oracle = encode(result.metrics)["judges"]["oracle"]["models"]["llamacpp"]
    assert oracle["rated"] + oracle["missing"] == 2
    assert "agreement" in encode(result.metrics)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["judges"]["embedding"]["calibrations"]  # the calibration used is on record
    lines = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert sum(x["kind"] == "answer" for x in lines) == 4 and sum(x["kind"] == "rating" for x in lines) == 4
    assert usage["llamacpp"]["new"] >= 6  # 4 answers + at least 2 oracle ratings
    again = build_config({}, {**flags, "run_id": "two"})
    _, result2, usage2 = asyncio.run(run_suite(again, quiet=True))
    assert usage2["llamacpp"]["new"] == 0
    assert encode(result2.metrics)["judges"] == encode(result.metrics)["judges"]
