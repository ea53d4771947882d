"""Export a run's requests as batch lines, answer them elsewhere, import, complete from the store."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from robusteval.engine.store import Store
from robusteval.testing.openai_stub import StubServer
from robusteval.testing.stores import served
from robusteval.types import Completion

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ray_batch.py"


def _example():
    spec = importlib.util.spec_from_file_location("ray_batch", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answer_file(requests: Path, answers: Path, base_url: str) -> list[dict]:
    """The engine's part, done line by line without Ray (the Ray test below does it through Ray Data)."""
    lines = [_example().answer_line(text, base_url) for text in requests.read_text().splitlines()]
    answers.write_text("".join(line + "\n" for line in lines))
    return [json.loads(line) for line in lines]


def _metrics(run) -> dict:
    results = run.results()
    (model,) = results["metrics"]
    return results["metrics"][model]


def _close(a, b, path=""):
    """Every number equal within a relative 1e-9, every other value equal."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b)), path
    else:
        assert a == b, path


def _usage(run) -> dict:
    (usage,) = [m["usage"] for m in run.results()["models"].values()]
    return usage


@pytest.mark.parametrize("scoring", ["generate", "loglik"])
def test_export_answer_import_completes_with_the_direct_runs_metrics(cli_run, tmp_path, mcq_file, scoring):
    flags = ["--data", str(mcq_file), "--families", "order", "--quiet", "--scoring", scoring]
    requests, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    with StubServer() as stub:
        direct = cli_run("run", "mcq", *flags, "--model", stub.model(),
                         "--run-id", "direct", "--cache-dir", str(tmp_path / "direct-cache"))
        assert direct.code == 0
        exported = cli_run("run", "mcq", *flags, "--model", "batchfile:stub", "--export-requests", str(requests))
        assert exported.code == 0 and exported.folder is None  # nothing run, no run folder
        lines = [json.loads(x) for x in requests.read_text().splitlines()]
        assert len(lines) == _usage(direct)["new"] > 0
        assert {line["url"] for line in lines} == {"/v1/chat/completions" if scoring == "generate"
                                                   else "/v1/completions"}
        assert len({line["custom_id"] for line in lines}) == len(lines)
        assert f"wrote {len(lines)} requests" in exported.out and "import-results" in exported.out
        # the next step names the model the lines ask for, as the engine must serve it
        assert {line["body"]["model"] for line in lines} == {"stub"} and "--model stub`" in exported.out
        _answer_file(requests, answers, stub.base_url)
        asked = stub.counters()["total"]
    imported = cli_run("import-results", str(answers), "--cache-dir", str(tmp_path / "cache"))
    assert imported.code == 0, imported.err
    assert f"stored {len(lines)} answers" in imported.out
    final = cli_run("run", "mcq", *flags, "--model", "batchfile:stub", "--run-id", "final")
    assert final.code == 0, final.err
    usage = _usage(final)
    assert usage["new"] == 0 and usage["failed"] == 0 and usage["cached"] == usage["requests"] > 0
    _close(_metrics(final), _metrics(direct))
    assert asked == stub.counters()["total"]  # the final run asked the server nothing
    again = cli_run("run", "mcq", *flags, "--model", "batchfile:stub", "--export-requests", str(requests))
    assert again.code == 0 and "nothing to export" in again.out


def test_bad_lines_are_counted_and_the_rest_stored(cli_run, tmp_path, mcq_file):
    flags = ["--data", str(mcq_file), "--families", "order", "--limit", "3", "--quiet"]
    requests, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    assert cli_run("run", "mcq", *flags, "--model", "batchfile:m", "--export-requests", str(requests)).code == 0
    with StubServer() as stub:
        good = _answer_file(requests, answers, stub.base_url)
    n = len(good)
    assert n > 6
    broken = [dict(good[1], response={"status_code": 500, "body": {"error": {"message": "overloaded"}}}),
              dict(good[2], custom_id="f" * 64),  # never exported
              json.loads(json.dumps(good[3]))]
    broken[2]["response"]["body"]["choices"][0]["message"]["content"] = None  # not an answer
    text = [json.dumps(good[0]), "{not json", json.dumps(broken[0]), json.dumps(broken[1]), json.dumps(broken[2]),
            json.dumps({"response": {}}), *[json.dumps(g) for g in good[4:]]]
    answers.write_text("\n".join(text) + "\n")  # a partial file: good[1:4] never answered well
    imported = cli_run("import-results", str(answers), "--cache-dir", str(tmp_path / "cache"))
    assert imported.code == 3
    assert f"stored {n - 3} answers" in imported.out  # good[0] and good[4:]
    assert "5 lines were not stored" in imported.err and "(1 with a custom_id no export recorded)" in imported.err
    assert "answers.jsonl:2: not JSON" in imported.err and "HTTP 500: overloaded" in imported.err
    assert "message.content is null" in imported.err
    assert "still waiting: 3 exported requests" in imported.out
    # what was not stored is exported again, and only that
    assert cli_run("run", "mcq", *flags, "--model", "batchfile:m", "--export-requests", str(requests)).code == 0
    assert {json.loads(x)["custom_id"] for x in requests.read_text().splitlines()} == {
        g["custom_id"] for g in good[1:4]}
    # importing the same file again stores nothing twice
    again = cli_run("import-results", str(answers), "--cache-dir", str(tmp_path / "cache"))
    assert "stored" not in again.out.replace("stored nothing", "")
    assert f"{n - 3} lines answered requests the store already held" in again.out


def test_a_batchfile_model_without_answers_says_what_to_do(cli_run, mcq_file):
    run = cli_run("run", "mcq", "--data", str(mcq_file), "--families", "order", "--limit", "1", "--quiet",
                  "--model", "batchfile:m")
    assert run.code == 3
    assert "--export-requests" in json.dumps(run.results()["failures"] if "failures" in run.results() else
                                             run.results())


def test_import_refuses_what_it_cannot_read(cli_run, tmp_path):
    assert cli_run("import-results", str(tmp_path / "none.jsonl"), "--cache-dir", str(tmp_path / "c")).code == 2
    (tmp_path / "c").mkdir()
    from robusteval.engine.store import STORE_FILE, Store

    Store(tmp_path / "c" / STORE_FILE).close()
    missing = cli_run("import-results", str(tmp_path / "none.jsonl"), "--cache-dir", str(tmp_path / "c"))
    assert missing.code == 2 and "cannot read" in missing.err
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"custom_id": "é"}\n'.encode("latin-1"))
    bad = cli_run("import-results", str(latin), "--cache-dir", str(tmp_path / "c"))
    assert bad.code == 2 and "not UTF-8" in bad.err
    import gzip

    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"custom_id": "x"}\n' * 50)[:-12])  # a gzip stream broken off
    broken = cli_run("import-results", str(cut), "--cache-dir", str(tmp_path / "c"))
    assert broken.code == 2 and "cut.jsonl.gz" in broken.err and "stored" in broken.err


@pytest.mark.slow
def test_ray_data_answers_the_exported_file(cli_run, tmp_path, mcq_file):
    """The exported file through Ray Data on a local cluster, the map step posting to the stub."""
    import ray  # installed by `make setup` (the ray extra): this test never skips
    flags = ["--data", str(mcq_file), "--families", "order", "--limit", "4", "--quiet"]
    requests, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    with StubServer() as stub:
        direct = cli_run("run", "mcq", *flags, "--model", stub.model(),
                         "--run-id", "direct", "--cache-dir", str(tmp_path / "direct-cache"))
        assert cli_run("run", "mcq", *flags, "--model", "batchfile:stub", "--export-requests", str(requests)).code == 0
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            written = _example().run(str(requests), str(answers), stub.base_url, concurrency=2)
        finally:
            ray.shutdown()
    assert written == len(requests.read_text().splitlines()) > 0
    assert cli_run("import-results", str(answers), "--cache-dir", str(tmp_path / "cache")).code == 0
    final = cli_run("run", "mcq", *flags, "--model", "batchfile:stub", "--run-id", "final")
    assert final.code == 0 and _usage(final)["new"] == 0
    _close(_metrics(final), _metrics(direct))


def test_a_staged_suite_exports_what_real_answers_can_reach_then_the_next_stage(cli_run, tmp_path):
    """consistency asks its answers first, then the oracle rates them: the first export holds the
    answers only (never a request built on an estimate's stand-in reply), the second the ratings."""
    flags = ["--judge", "oracle", "--oracle", "batchfile:judge", "--model", "batchfile:m", "--limit", "2", "--quiet"]
    requests, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    assert cli_run("run", "consistency", *flags, "--export-requests", str(requests)).code == 0
    first = [json.loads(x) for x in requests.read_text().splitlines()]
    assert first and {line["body"]["model"] for line in first} == {"m"}
    assert "stand-in" not in requests.read_text()
    with StubServer() as stub:
        _answer_file(requests, answers, stub.base_url)
        assert cli_run("import-results", str(answers), "--cache-dir", str(tmp_path / "cache")).code == 0
        exported = cli_run("run", "consistency", *flags, "--export-requests", str(requests))
        assert exported.code == 0 and "asks in stages" in exported.out
        second = [json.loads(x) for x in requests.read_text().splitlines()]
        assert second and {line["body"]["model"] for line in second} == {"judge"}
        assert "stand-in" not in requests.read_text()


# --- an answers file gives each request once, for the model it was exported for ---------------------

def _export(cli_run, tmp_path, mcq_file, name: str = "requests.jsonl", families: str = "order",
            model: str = "batchfile:m") -> list[dict]:
    requests = tmp_path / name
    done = cli_run("run", "mcq", "--data", str(mcq_file), "--families", families, "--limit", "2", "--quiet",
                   "--model", model, "--export-requests", str(requests))
    assert done.code == 0, done.err
    return [json.loads(x) for x in requests.read_text().splitlines()]


def _answer(custom_id: str, text: str, model: str | None = "m") -> dict:
    body = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 5}}
    if model is not None:
        body["model"] = model
    return {"custom_id": custom_id, "response": {"status_code": 200, "body": body}}


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _stored(tmp_path, custom_ids) -> list[str | None]:
    return served(tmp_path / "cache" / "responses.sqlite", custom_ids)


def test_a_custom_id_answered_twice_is_stored_once_and_the_second_line_refused(cli_run, tmp_path, mcq_file):
    """N3: the first line of a custom_id is its answer; a second one (other text or the same) is refused
    and counted, never stored over it nor counted twice."""
    ids = [line["custom_id"] for line in _export(cli_run, tmp_path, mcq_file)]
    lines = [answer for c in ids for answer in (_answer(c, "The best answer is A."),
                                                _answer(c, "The best answer is B."))]
    lines.append(_answer(ids[0], "The best answer is A."))  # the same text again: refused all the same
    imported = cli_run("import-results", str(_write(tmp_path / "dup.jsonl", lines)), "--cache-dir",
                       str(tmp_path / "cache"))
    assert imported.code == 3
    assert f"stored {len(ids)} answers for" in imported.out and "still waiting" not in imported.out
    assert f"{len(ids) + 1} lines were not stored" in imported.err
    assert "dup.jsonl:2: custom_id" in imported.err and "answered again (first by" in imported.err
    assert _stored(tmp_path, ids) == ["The best answer is A."] * len(ids)


def test_an_answer_by_another_model_is_refused(cli_run, tmp_path, mcq_file):
    """N7: a body whose `model` is not the exported name (nor a dated snapshot of it) is refused."""
    ids = [line["custom_id"] for line in _export(cli_run, tmp_path, mcq_file, model="batchfile:Qwen2.5-7B")]
    lines = [_answer(ids[0], "A.", "Qwen2.5-7B"), _answer(ids[1], "A.", "Qwen2.5-7B-2024-07-18"),
             _answer(ids[2], "A.", None), *[_answer(c, "A.", "other-model-70B") for c in ids[3:]]]
    imported = cli_run("import-results", str(_write(tmp_path / "other.jsonl", lines)), "--cache-dir",
                       str(tmp_path / "cache"))
    assert imported.code == 3 and "stored 3 answers" in imported.out
    assert f"{len(ids) - 3} lines were not stored" in imported.err
    assert "answered by model 'other-model-70B', not by 'Qwen2.5-7B' it was exported for" in imported.err
    assert _stored(tmp_path, ids) == ["A."] * 3 + [None] * (len(ids) - 3)
    assert f"still waiting: {len(ids) - 3} exported requests" in imported.out


def test_a_request_line_fed_back_is_named_as_such(cli_run, tmp_path, mcq_file):
    """N14: the export file imported by mistake: each line says it is a request, not "HTTP None"."""
    _export(cli_run, tmp_path, mcq_file)
    imported = cli_run("import-results", str(tmp_path / "requests.jsonl"), "--cache-dir", str(tmp_path / "cache"))
    assert imported.code == 3 and "a request line (as --export-requests writes), not an answer" in imported.err
    assert "HTTP None" not in imported.err


def test_an_answer_is_credited_to_every_export_that_asked_it(cli_run, tmp_path, mcq_file):
    """N14: two exports share requests; answering the first export's file credits all its answers to it,
    and the shared ones to the second too, whose other requests still wait."""
    order = [line["custom_id"] for line in _export(cli_run, tmp_path, mcq_file, "order.jsonl", "order")]
    fmt = [line["custom_id"] for line in _export(cli_run, tmp_path, mcq_file, "format.jsonl", "format")]
    shared = set(order) & set(fmt)
    assert shared and set(fmt) - shared
    imported = cli_run("import-results", str(_write(tmp_path / "answers.jsonl", [_answer(c, "A.") for c in order])),
                       "--cache-dir", str(tmp_path / "cache"))
    assert imported.code == 0, imported.err
    assert f"stored {len(order)} answers: {len(order)} to requests of `" in imported.out
    assert f"{len(shared)} to requests of `" in imported.out and "--families format" in imported.out
    assert f"still waiting: {len(set(fmt) - shared)} exported requests of `" in imported.out


def test_the_ledger_forgets_requests_answered_another_way(cli_run, tmp_path, mcq_file):
    """N11: requests a live run answered after the export leave the ledger: at the next export, and
    at an import whose lines the store already held; "still waiting" reaches 0."""
    with StubServer() as stub:
        flags = ["--data", str(mcq_file), "--families", "order", "--limit", "2", "--quiet", "--model", stub.model()]
        requests, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
        assert cli_run("run", "mcq", *flags, "--export-requests", str(requests)).code == 0
        n = len(requests.read_text().splitlines())
        _answer_file(requests, answers, stub.base_url)
        assert cli_run("run", "mcq", *flags).code == 0  # the live run answers them all
        imported = cli_run("import-results", str(answers), "--cache-dir", str(tmp_path / "cache"))
        assert imported.code == 0, imported.err
        assert f"{n} lines answered requests the store already held" in imported.out
        assert "still waiting" not in imported.out
        # answered live with nothing imported: the export that finds nothing to ask forgets them
        assert cli_run("run", "mcq", *flags, "--families", "format", "--export-requests", str(requests)).code == 0
        assert cli_run("run", "mcq", *flags, "--families", "format").code == 0
        assert "nothing to export" in cli_run("run", "mcq", *flags, "--families", "format",
                                              "--export-requests", str(requests)).out
    from robusteval.engine.exchange import ExportLedger

    ledger = ExportLedger(tmp_path / "cache" / "responses.exports.sqlite")
    assert ledger.pending() == {}
    ledger.close()


def test_an_import_racing_a_live_run_never_replaces_what_the_run_stored(cli_run, tmp_path, mcq_file):
    """N4 without timing: the live run stores key 0 after the import read the ledger and before its
    write; the run's answer stays, the import reports that line and counts only what it kept."""
    from robusteval.engine.exchange import import_results
    from robusteval.engine.store import StoreRow

    ids = [line["custom_id"] for line in _export(cli_run, tmp_path, mcq_file)]
    answers = _write(tmp_path / "answers.jsonl", [_answer(c, "imported") for c in ids])
    path = tmp_path / "cache" / "responses.sqlite"

    class RacedStore(Store):
        def put_many(self, rows, **options):
            live = Store(path)
            live.put_many([StoreRow(rows[0].key, rows[0].fingerprint, rows[0].request, Completion("live"), 0.1)])
            live.close()
            return super().put_many(rows, **options)

    store = RacedStore(path)
    try:
        report = import_results([answers], store)
    finally:
        store.close()
    assert _stored(tmp_path, ids) == ["live"] + ["imported"] * (len(ids) - 1)
    assert sum(report.stored.values()) == len(ids) - 1 and report.answers == len(ids) - 1
    assert len(report.bad) == 1 and "answers.jsonl:1: the store holds another answer" in report.bad[0]
    assert report.waiting == {}


def test_an_export_never_replaces_a_store_a_ledger_or_a_file_it_did_not_write(cli_run, tmp_path, mcq_file):
    """N1: the store, its -wal, the ledgers, another store and an answers file are refused (rc 2, one line,
    the file unchanged); an existing answers file only with --overwrite; an earlier export is replaced."""
    first = _export(cli_run, tmp_path, mcq_file)  # the ledger exists now
    cache = tmp_path / "cache"
    answers = _write(tmp_path / "answers.jsonl", [_answer(line["custom_id"], "A.") for line in first])
    assert cli_run("import-results", str(answers), "--cache-dir", str(cache)).code == 0
    other = tmp_path / "other" / "responses.sqlite"
    Store(other).close()
    flags = ["--data", str(mcq_file), "--families", "format", "--limit", "2", "--quiet", "--model", "batchfile:m"]
    for target in (cache / "responses.sqlite", cache / "responses.sqlite-wal", cache / "responses.exports.sqlite",
                   cache / "responses.batches.sqlite", other, answers):
        before = target.read_bytes() if target.exists() else None
        refused = cli_run("run", "mcq", *flags, "--export-requests", str(target),
                          *(["--overwrite"] if target == other else []))
        assert refused.code == 2 and len(refused.err.strip().splitlines()) == 1, (target, refused.err)
        assert f"--export-requests {target}:" in refused.err and "Traceback" not in refused.err
        assert (target.read_bytes() if target.exists() else None) == before
    assert "add --overwrite" in refused.err
    assert _stored(tmp_path, [line["custom_id"] for line in first]) == ["A."] * len(first)
    assert cli_run("run", "mcq", *flags, "--export-requests", str(tmp_path / "requests.jsonl")).code == 0  # its own
    assert cli_run("run", "mcq", *flags, "--export-requests", str(answers), "--overwrite").code == 0
    assert "response" not in json.loads(answers.read_text().splitlines()[0])
