"""Every suite streams its samples: none is returned in `SuiteResult.samples` (so none is held until
the run ends), and the files a run writes are those of the code that held them all.

Each case is one small run through the deterministic stub. ``tests/fixtures/streaming/CASE.json``
holds what the code before streaming wrote for it (captured once with
``PYTHONPATH=<main>/src python tests/suites/test_streaming.py --capture``): every line of
samples.jsonl, results.json's metrics, failures and suite keys, and the suite's own files. The test
asserts the streaming code writes that: every float within `robusteval.testing.floats`' tolerance
(relative 1e-9, absolute 1e-12, float32 embedding similarities 1e-5; another CPU, or another thread
count, rounds the last digits of a bootstrap bound or an embedding similarity differently),
everything else exactly. Two more tests show the comparison is
neither too strict (a golden with every float moved one unit in its last place still passes) nor
too lax (a metric changed in its 7th digit fails).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.testing.floats import differences, perturbed
from robusteval.testing.openai_stub import StubServer

FIXTURES = Path(__file__).parent.parent / "fixtures"
REPO = FIXTURES.parent.parent  # named REPO in the captures: a checkout's own path is not what a run found
GOLDEN = FIXTURES / "streaming"
# results.json keys that name this run, its time or its machine, not what it found
VOLATILE = {"run_id", "format_version", "config", "versions", "started", "wall_time_s", "models", "data", "cost"}
SETS = [{"id": "s1", "variation": "formality", "variants": [{"language": "en", "prompt": "Name a primary colour."},
                                                          {"language": "en", "prompt": "pls name a primary color"},
                                                          {"language": "en", "prompt": "Name one primary colour!"}]},
        {"id": "s2", "variation": "language", "hint": "Compare content, not language.",
         "variants": [{"language": "en", "prompt": "What is 2 + 2?"}, {"language": "de", "prompt": "Was ist 2 + 2?"}]}]


def cases(tmp: Path, url: str) -> dict[str, list[str]]:
    """The command of each case (after ``robusteval run``)."""
    model = f"openai:stub?base_url={url}"
    sets = tmp / "sets.jsonl"
    sets.write_text("".join(json.dumps(s) + "\n" for s in SETS))
    persona = FIXTURES / "persona"
    return {
        "mcq-loglik": ["mcq", "--scoring", "loglik", "--data", str(FIXTURES / "mcq_small.jsonl"),
                       "--families", "order,format", "--model", model],
        "mcq-math": ["mcq", "--data", str(FIXTURES / "gsm8k_small.jsonl"), "--families", "prompt,seeds",
                     "--model", model, "--model", f"openai:other?base_url={url}"],
        "persona": ["persona", "--model", model, "--population", str(persona / "population.jsonl"), "--personas",
                    "4", "--questionnaire", str(persona / "questionnaire.yaml"), "--contexts",
                    "no_conv,fixed:chess,fixed:grammar", "--turns", "2", "--bootstrap", "50"],
        "tree": ["tree", "--model", model, "--modes", "closed,rag", "--retrievers", "bm25", "--corpus",
                 str(FIXTURES / "tree_corpus.jsonl"), "--max-tokens", "16", "--data",
                 str(FIXTURES / "popqa_small.jsonl"), "--limit", "2", "--depth", "1", "--paraphrases", "1",
                 "--lexical", "2", "--lexical-kinds", "ocr,visual", "--retries", "0"],
        "hallucination": ["hallucination", "--model", model, "--judge", "none", "--limit", "4", "--prompts",
                          "incorrect,support", "--orders", "both", "--bootstrap", "100"],
        "consistency": ["consistency", "--model", model, "--model", f"openai:other?base_url={url}", "--data",
                        str(sets), "--judge", "oracle", "--oracle", model, "--oracle-mode", "pairwise",
                        "--oracle-retries", "1", "--max-tokens", "24"],
    }


def timeless(value):
    """``value`` without the tree build's cost and latencies (seconds differ from run to run) and the date."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in ("build_cost", "date", "latency_s")}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def written(folder: Path, tmp: Path, url: str) -> dict:
    """What a run wrote, less what names the run or its time: its temporary folder is named TMP,
    the checkout REPO, the stub's address STUB, and the samples' store keys (hashes of the model's fingerprint, which
    holds the stub's port) are left out."""
    def read(path: Path) -> str:
        return path.read_text().replace(str(tmp), "TMP").replace(url, "STUB").replace(str(REPO), "REPO")

    def keyless(line: str) -> str:
        return json.dumps({k: v for k, v in json.loads(line).items() if k not in ("key", "keys")}, ensure_ascii=False)

    results = timeless(json.loads(read(folder / "results.json")))
    files = {p.name: timeless(json.loads(read(p))) if p.suffix == ".json" else read(p)
             for p in sorted(folder.iterdir()) if p.is_file() and p.suffix in (".md", ".csv", ".jsonl", ".json")
             and p.name not in ("results.json", "samples.jsonl", "report.md")}
    return {"samples": [keyless(line) for line in read(folder / "samples.jsonl").splitlines()],
            "results": {k: v for k, v in results.items() if k not in VOLATILE},
            "files": files}


def run_case(name: str, tmp: Path, url: str) -> dict:
    args = cases(tmp, url)[name]
    code = main(["run", *args, "--quiet", "--cache-dir", str(tmp / "cache"), "--out", str(tmp / "runs"),
                 "--run-id", name])
    assert code == 0
    return written(tmp / "runs" / name, tmp, url)


@pytest.mark.parametrize("name", ["mcq-loglik", "mcq-math", "persona", "tree", "hallucination", "consistency"])
def test_streamed_run_writes_what_the_held_run_wrote(name, tmp_path, stub, monkeypatch):
    from robusteval import run as run_module

    returned = []
    execute = run_module._execute

    async def spy(*args, **kwargs):
        result, info = await execute(*args, **kwargs)
        returned.append(len(result.samples))
        return result, info

    monkeypatch.setattr(run_module, "_execute", spy)
    got = run_case(name, tmp_path, stub.base_url)
    assert returned == [0]  # streamed: the suite handed back no sample list
    want = golden(name)
    assert len(got["samples"]) == len(want["samples"]) > 0
    assert mismatches(got, want) == []


def golden(name: str) -> dict:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def mismatches(got: dict, want: dict) -> list[str]:
    """Where a run's files differ from a golden's: samples line by line as JSON, results and files as
    JSON or text, every float within the tolerance."""
    def parsed(out: dict) -> dict:
        return {**out, "samples": [json.loads(line) for line in out["samples"]]}

    return differences(parsed(got), parsed(want))


def test_the_goldens_hold_within_the_tolerance_and_catch_a_changed_metric(tmp_path, stub):
    """A run compared with its golden whose every float is one unit off in its last place (what another
    machine's rounding does) passes; the same golden with one metric changed by 1e-7 of itself, or
    an integer count changed, fails."""
    want = golden("hallucination")
    moved = perturbed(want)
    assert moved != want and json.dumps(moved) != json.dumps(want)  # the perturbation reached the floats
    assert mismatches(moved, want) == []
    got = run_case("hallucination", tmp_path, stub.base_url)
    assert mismatches(got, moved) == []

    def changed(path: list, value) -> dict:
        out = json.loads(json.dumps(want))
        node = out
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value(node[path[-1]])
        return out

    metrics = want["results"]["metrics"]
    model = next(iter(metrics))
    floats = [(k, v) for k, v in _leaves(metrics[model], ["results", "metrics", model]) if isinstance(v, float) and v]
    assert floats, "the hallucination golden holds no non-zero float metric"
    where, _ = floats[0]
    off = mismatches(got, changed(where, lambda v: v * (1 + 1e-7)))
    assert len(off) == 1 and off[0].startswith("$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}"
                                                            for k in where) + ":"), off
    ints = [(k, v) for k, v in _leaves(metrics[model], ["results", "metrics", model])
            if isinstance(v, int) and not isinstance(v, bool) and v]
    where, _ = ints[0]
    assert len(mismatches(got, changed(where, lambda v: v + 1))) == 1


def _leaves(value, path: list):
    """(path, value) of every leaf of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, [*path, k])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, [*path, i])
    else:
        yield path, value


def capture() -> None:
    """Write the golden files with the code on ``sys.path`` (the code before streaming)."""
    import tempfile

    GOLDEN.mkdir(parents=True, exist_ok=True)
    with StubServer() as server, tempfile.TemporaryDirectory() as names:
        for name in cases(Path(names), server.base_url):
            with tempfile.TemporaryDirectory() as tmp:
                out = run_case(name, Path(tmp), server.base_url)
            (GOLDEN / f"{name}.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
            print(name, len(out["samples"]), "samples", sorted(out["files"]))


if __name__ == "__main__" and sys.argv[1:] == ["--capture"]:
    capture()


@pytest.mark.parametrize("name", ["mcq-loglik", "mcq-math", "persona", "tree", "hallucination", "consistency"])
def test_the_suite_hands_back_its_record_encoded_once_as_written(name, tmp_path, stub, monkeypatch):
    """`SuiteResult.metrics` is the suite's typed record: results.json holds it encoded (by the writer),
    and the terminal's tables printed from it equal those printed from `read_run`'s decoded record."""
    import io

    from rich.console import Console

    from robusteval import run as run_module
    from robusteval.results.records import encode_metrics, read_run
    from robusteval.suite_specs import SUITES
    from robusteval.suites import get_suite
    from robusteval.suites.base import SuiteResult

    returned = []
    execute = run_module._execute

    async def spy(*args, **kwargs):
        result, info = await execute(*args, **kwargs)
        returned.append(result)
        return result, info

    monkeypatch.setattr(run_module, "_execute", spy)
    run_case(name, tmp_path, stub.base_url)
    suite = cases(tmp_path, stub.base_url)[name][0]
    result, record = returned[0], read_run(tmp_path / "runs" / name)
    assert result.metrics and typed(result.metrics, SUITES[suite].metrics_type())
    written = json.loads((tmp_path / "runs" / name / "results.json").read_text())["metrics"]
    assert differences(encode_metrics(suite, result.metrics), written) == []

    def tables(metrics) -> str:
        buffer = io.StringIO()
        console = Console(file=buffer, width=250, markup=False, emoji=False, highlight=False)
        get_suite(suite).print_summary(console, SuiteResult(metrics=metrics, samples=[], extra=record.extra))
        return buffer.getvalue()

    assert tables(result.metrics) == tables(record.metrics) != ""


def typed(value, kind) -> bool:
    """Whether ``value`` is of the record type ``kind``, a by-model ``dict[str, ...]`` alias followed down."""
    from typing import get_args, get_origin

    if get_origin(kind) is dict:
        return isinstance(value, dict) and all(typed(v, get_args(kind)[1]) for v in value.values())
    return isinstance(value, kind)
