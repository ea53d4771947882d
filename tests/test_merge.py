"""--shard I/N runs and `robusteval merge`: the merged run equals the unsharded run."""

from __future__ import annotations

import json

import pytest

from robusteval.cli import main
from robusteval.testing.openai_stub import StubConfig, StubServer


def _mcq(stub, mcq_file, run_id: str) -> tuple:
    """``run mcq`` of 5 questions in two families against the stub, as ``run_id``."""
    return ("run", "mcq", "--quiet", "--data", mcq_file, "--families", "order,format", "--limit", "5",
            "--model", stub.model(), "--run-id", run_id)


def _results(tmp_path, run_id):
    return json.loads((tmp_path / "runs" / run_id / "results.json").read_text())


def _samples(tmp_path, run_id):
    rows = [json.loads(line) for line in (tmp_path / "runs" / run_id / "samples.jsonl").read_text().splitlines()]
    return sorted((r["item_id"], r["family"], r["variant"], r["response"], r["correct"]) for r in rows)


def test_three_shards_merge_into_the_unsharded_run(tmp_path, cli_run, mcq_file):
    with StubServer() as stub:
        for i in (1, 2, 3):
            assert cli_run(*_mcq(stub, mcq_file, f"s{i}"), "--shard", f"{i}/3").code == 0
        hits_before_merge = stub.counters()["total"]
        assert main(["merge", *(str(tmp_path / "runs" / f"s{i}") for i in (3, 1, 2)), "--out",
                     str(tmp_path / "runs"), "--run-id", "merged", "--quiet"]) == 0
        assert stub.counters()["total"] == hits_before_merge  # the merge asked nothing
        assert cli_run(*_mcq(stub, mcq_file, "whole"), "--cache-dir", str(tmp_path / "other-cache")).code == 0
    shard_items = [{s["item_id"] for s in map(json.loads, (tmp_path / "runs" / f"s{i}" / "samples.jsonl")
                                              .read_text().splitlines())} for i in (1, 2, 3)]
    assert sum(map(len, shard_items)) == 5 and len(set().union(*shard_items)) == 5  # a partition
    assert _results(tmp_path, "merged")["metrics"] == _results(tmp_path, "whole")["metrics"]
    assert _samples(tmp_path, "merged") == _samples(tmp_path, "whole")
    assert (tmp_path / "runs" / "merged" / "report.md").is_file()
    assert _results(tmp_path, "merged")["config"]["shard"] is None


def test_a_merge_reads_the_stores_combined_elsewhere_with_cache_dir(tmp_path, cli_run, mcq_file, capsys):
    """Shards on other machines write their own stores; `cache merge` combines them anywhere and
    `merge --cache-dir` reads them there, asking nothing."""
    with StubServer() as stub:
        for i in (1, 2):
            assert cli_run(*_mcq(stub, mcq_file, f"s{i}"), "--shard", f"{i}/2",
                           "--cache-dir", str(tmp_path / f"cache{i}")).code == 0
        assert main(["cache", "merge", str(tmp_path / "cache1"), str(tmp_path / "cache2"),
                     "--into", str(tmp_path / "combined")]) == 0
        hits = stub.counters()["total"]
        shards = [str(tmp_path / "runs" / f"s{i}") for i in (1, 2)]
        capsys.readouterr()
        assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet"]) == 2
        err = capsys.readouterr().err  # each shard's own store: refused, saying what to do
        assert "differs in cache_dir" in err and "`merge --cache-dir`" in err
        assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet",
                     "--cache-dir", str(tmp_path / "nothing-here")]) == 2  # no store: refused, none created
        assert "no store there" in capsys.readouterr().err and not (tmp_path / "nothing-here").exists()
        assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet",
                     "--cache-dir", str(tmp_path / "cache1")]) == 2  # shard 2's answers are not there: refused
        err = capsys.readouterr().err
        assert "the store given lacks answers the shards had" in err and "cache merge" in err
        assert not (tmp_path / "runs" / "m").exists()  # nothing written
        assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet",
                     "--overwrite", "--cache-dir", str(tmp_path / "combined")]) == 0
        assert stub.counters()["total"] == hits
        assert cli_run(*_mcq(stub, mcq_file, "whole"), "--cache-dir", str(tmp_path / "other")).code == 0
    assert _results(tmp_path, "m")["metrics"] == _results(tmp_path, "whole")["metrics"]


def test_requests_that_failed_in_their_shard_fail_in_the_merge_too(tmp_path, cli_run, mcq_file, capsys):
    """A shard's failed requests are in no store; the merge fails them again, as the shards did, and
    is not refused for them (only answers beyond the shards' failures count as missing)."""
    with StubServer(StubConfig(p_500=0.3, seed=3)) as stub:
        codes = [cli_run(*_mcq(stub, mcq_file, f"s{i}"), "--shard", f"{i}/2", "--max-retries", "0").code
                 for i in (1, 2)]
        failed = sum(_results(tmp_path, f"s{i}")["models"]["openai:stub"]["usage"]["failed"] for i in (1, 2))
        assert failed > 0 and 3 in codes
        hits = stub.counters()["total"]
        capsys.readouterr()
        assert main(["merge", *(str(tmp_path / "runs" / f"s{i}") for i in (1, 2)), "--out", str(tmp_path / "runs"),
                     "--run-id", "m", "--quiet"]) == 3
        assert stub.counters()["total"] == hits
    assert "a merge asks no model" in capsys.readouterr().err
    assert _results(tmp_path, "m")["models"]["openai:stub"]["usage"]["failed"] == failed


@pytest.mark.parametrize("shards, message", [((1, 2), "shard 3/3 missing"), ((1, 1, 2, 3), "shard 1/3 is given twice")])
def test_missing_or_repeated_shards_are_refused(tmp_path, cli_run, mcq_file, capsys, shards, message):
    with StubServer() as stub:
        for i in sorted(set(shards)):
            assert cli_run(*_mcq(stub, mcq_file, f"s{i}"), "--shard", f"{i}/3").code == 0
    capsys.readouterr()
    assert main(["merge", *(str(tmp_path / "runs" / f"s{i}") for i in shards), "--out", str(tmp_path / "m")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


def test_shards_of_other_settings_are_refused(tmp_path, cli_run, mcq_file, capsys):
    with StubServer() as stub:
        assert cli_run(*_mcq(stub, mcq_file, "s1"), "--shard", "1/2").code == 0
        assert cli_run(*_mcq(stub, mcq_file, "s2"), "--shard", "2/2", "--seed", "1").code == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "runs" / "s1"), str(tmp_path / "runs" / "s2")]) == 2
    assert "differs in seed" in capsys.readouterr().err


def _gold_file(path, gold: str) -> None:
    """The reliability README's B4 data: 30 questions, every gold ``gold`` (A and B differ in content only)."""
    path.write_text("".join(json.dumps({"id": f"x{i}", "question": f"Question number {i}: which option is correct?",
                                        "choices": [f"opt{i}{c}" for c in "abcd"], "answer": gold}) + "\n"
                            for i in range(30)))


def _gold_shards(tmp_path, cli_run, golds: str) -> tuple:
    """Shards f1..fN of ``run mcq`` on data.jsonl, shard k reading it with every gold ``golds[k-1]``;
    (the data file, the shards' folders)."""
    data = tmp_path / "data.jsonl"
    with StubServer() as stub:
        for k, gold in enumerate(golds, 1):
            _gold_file(data, gold)
            assert cli_run("run", "mcq", "--quiet", "--data", data, "--families", "format", "--model", stub.model(),
                           "--shard", f"{k}/{len(golds)}", "--run-id", f"f{k}").code == 0
    return data, [str(tmp_path / "runs" / f"f{k}") for k in range(1, len(golds) + 1)]


def test_shards_that_read_different_contents_of_one_file_are_refused(tmp_path, cli_run, capsys):
    data, shards = _gold_shards(tmp_path, cli_run, "AAB")
    sources = _results(tmp_path, "f1")["data"]["sources"]
    assert sources[0]["file"] == str(data) and len(sources[0]["sha256"]) == 64  # results.json records the hash
    for gold in "BA":  # whichever copy is there when merging
        _gold_file(data, gold)
        capsys.readouterr()
        assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", f"m{gold}", "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"the shards read different contents of {data}" in err
        assert "shard 1/3 (f1), 2/3 (f2)" in err and "shard 3/3 (f3)" in err
        assert not (tmp_path / "runs" / f"m{gold}").exists()


def test_a_data_file_changed_since_the_shards_read_it_is_refused(tmp_path, cli_run, capsys):
    data, shards = _gold_shards(tmp_path, cli_run, "AA")
    _gold_file(data, "B")
    capsys.readouterr()
    assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet"]) == 2
    assert f"merge: {data} has changed since the shards read it" in capsys.readouterr().err
    _gold_file(data, "A")  # the file they read, back: merged
    assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet"]) == 0


def test_shards_recorded_without_hashes_merge_with_a_warning(tmp_path, cli_run, capsys):
    _, shards = _gold_shards(tmp_path, cli_run, "AA")
    for shard in shards:  # as results.json was written before hashes were recorded
        path = tmp_path / shard / "results.json"
        results = json.loads(path.read_text())
        for source in results["data"]["sources"]:
            del source["sha256"], source["file"]
        path.write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["merge", *shards, "--out", str(tmp_path / "runs"), "--run-id", "m", "--quiet"]) == 0
    assert "shard runs f1, f2 recorded no content hash of their data" in capsys.readouterr().err


def test_the_shard_is_a_note_of_the_audit_not_a_data_source(tmp_path, cli_run, mcq_file):
    with StubServer() as stub:
        run = cli_run(*_mcq(stub, mcq_file, "s1"), "--shard", "1/3")
    data = run.results()["data"]
    assert [s["source"] for s in data["sources"]] == [str(mcq_file)]  # no "shard 1/3" source of 0 rows
    kept = len({s["item_id"] for s in run.samples()})
    assert data["notes"] == [f"{kept} of 5 items are in shard 1/3"]


def test_a_merged_runs_cost_is_its_shards_summed(tmp_path, cli_run, mcq_file, capsys):
    with StubServer() as stub:
        for k in (1, 2):
            assert cli_run(*_mcq(stub, mcq_file, f"s{k}"), "--shard", f"{k}/2", "--price-in", "1",
                           "--price-out", "2").code == 0
    capsys.readouterr()
    assert main(["merge", *(str(tmp_path / "runs" / f"s{k}") for k in (1, 2)), "--out", str(tmp_path / "runs"),
                 "--run-id", "m", "--quiet"]) == 0
    # the summed usage is the shards' requests: the line says so, never that the merge asked them
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("openai:stub: ")]
    assert "asked by its shards (this merge asked nothing)" in line, line
    shards = [_results(tmp_path, f"s{k}")["models"]["openai:stub"]["usage"] for k in (1, 2)]
    merged = _results(tmp_path, "m")["models"]["openai:stub"]["usage"]
    assert shards[0]["cost"] > 0 and shards[1]["cost"] > 0
    assert merged["cost"] == pytest.approx(shards[0]["cost"] + shards[1]["cost"], abs=1e-6)  # not 0
    for key in ("requests", "new", "cached", "prompt_tokens", "completion_tokens"):
        assert merged[key] == shards[0][key] + shards[1][key], key
    assert merged["price_in_per_mtok"] == 1
