"""`robusteval cache merge SRC... --into DST` (`engine.store_merge`): answers copied with valid
checksums, nothing overwritten, conflicts and damaged answers reported, clear errors for bad paths."""

from __future__ import annotations

import sqlite3

import pytest

from robusteval.cli import main
from robusteval.engine.store import Store, cache_key
from robusteval.engine.store_check import check_store
from robusteval.engine.store_merge import merge_stores, store_path
from robusteval.errors import UserError
from robusteval.testing.readonly import read_only
from robusteval.testing.stores import served
from robusteval.types import Completion, GenParams, Message, Request, TokenLogprob

FP = "openai:http://127.0.0.1:1/v1:m:m"


def _request(i: int) -> Request:
    return Request((Message("user", f"question {i}"),), GenParams(max_tokens=8))


def _fill(path, answers: dict[int, str], *, loglik: bool = False) -> None:
    store = Store(path)
    for i, text in answers.items():
        completion = Completion(text, 3, 2, "stop", logprobs=(TokenLogprob("A", -0.5, (("B", -1.0),)),),
                                loglik=-1.5 if loglik else None, greedy=True if loglik else None)
        store.put(cache_key(FP, _request(i)), FP, _request(i), completion, 0.1)
    store.close()


def _served(path, i: int) -> str | None:
    return served(path, [cache_key(FP, _request(i))])[0]


def test_merge_copies_what_dst_lacks_with_valid_checksums(tmp_path):
    a, b, c = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "c.sqlite"
    dst = tmp_path / "dst" / "responses.sqlite"
    _fill(a, {0: "A0", 1: "A1", 2: "A2"})
    _fill(b, {2: "A2", 3: "B3"})  # 2: the same answer as a's
    _fill(c, {4: ""}, loglik=True)  # a log-likelihood score: its extra column travels too
    merged = merge_stores([a, b, c], dst)
    assert [(m.answers, m.added, m.same, m.conflicts, m.damaged) for m in merged] == [
        (3, 3, 0, 0, 0), (2, 1, 1, 0, 0), (1, 1, 0, 0, 0)]
    assert [_served(dst, i) for i in range(5)] == ["A0", "A1", "A2", "B3", ""]
    store = Store(dst)
    assert store.get(cache_key(FP, _request(4))).completion.loglik == -1.5
    store.close()
    check = check_store(dst)
    assert check.ok and check.answers == 5 and check.unsealed == 0
    again = merge_stores([a, b, c], dst)  # merging twice changes nothing
    assert [(m.added, m.same) for m in again] == [(0, 3), (0, 2), (0, 1)]


def test_a_conflicting_answer_is_reported_and_never_overwrites(tmp_path, capsys):
    a, b = tmp_path / "a" / "responses.sqlite", tmp_path / "b" / "responses.sqlite"
    _fill(a, {0: "first", 1: "same"})
    _fill(b, {0: "second", 1: "same", 2: "new"})
    code = main(["cache", "merge", str(a.parent), str(b.parent), "--into", str(tmp_path / "dst")])
    out = capsys.readouterr().out
    dst = tmp_path / "dst" / "responses.sqlite"
    assert code == 1  # conflicts: exit 1, as `cache check` does for changed answers
    assert [_served(dst, i) for i in range(3)] == ["first", "same", "new"]
    assert "1 added, 1 already there, 1 conflicting" in out
    assert f"conflict: {cache_key(FP, _request(0))} ({FP})" in out


def test_a_damaged_source_answer_is_not_copied(tmp_path):
    a, dst = tmp_path / "a.sqlite", tmp_path / "dst.sqlite"
    _fill(a, {0: "intact", 1: "tampered"})
    con = sqlite3.connect(a)
    con.execute("UPDATE responses SET text = 'changed' WHERE key = ?", (cache_key(FP, _request(1)),))
    con.commit()
    con.close()
    (merged,) = merge_stores([a], dst)
    assert (merged.added, merged.damaged) == (1, 1)
    assert merged.examples == (("damaged", cache_key(FP, _request(1)), FP),)
    assert (_served(dst, 0), _served(dst, 1)) == ("intact", None)


def test_an_answer_whose_checksum_was_removed_is_damaged_not_sealed_again(tmp_path):
    """B1: a tampered answer with its checksum set to NULL is not laundered with a fresh one."""
    a, dst = tmp_path / "a.sqlite", tmp_path / "dst.sqlite"
    _fill(a, {0: "intact", 1: "honest"})
    con = sqlite3.connect(a)
    con.execute("UPDATE responses SET text = 'The best answer is D.', checksum = NULL WHERE key = ?",
                (cache_key(FP, _request(1)),))
    con.commit()
    con.close()
    assert check_store(a).changed == (cache_key(FP, _request(1)),)
    (merged,) = merge_stores([a], dst)
    assert (merged.added, merged.damaged) == (1, 1)
    assert (_served(dst, 0), _served(dst, 1)) == ("intact", None) and check_store(dst).ok


def test_a_source_on_a_read_only_file_system_is_merged(tmp_path):
    """B14: a WAL store in a folder nothing may be created in (no -shm): read as an immutable file."""
    folder = tmp_path / "ro"
    folder.mkdir()
    _fill(folder / "responses.sqlite", {0: "x", 1: "y"})
    assert not list(folder.glob("responses.sqlite-*"))
    with read_only([folder]) as locked:
        if not locked:
            pytest.skip("cannot make a folder read-only here (root without chattr)")
        (merged,) = merge_stores([folder / "responses.sqlite"], tmp_path / "dst.sqlite")
    assert (merged.answers, merged.added) == (2, 2) and _served(tmp_path / "dst.sqlite", 1) == "y"


def test_a_store_from_before_checksums_is_sealed_as_it_is(tmp_path):
    old, dst = tmp_path / "old.sqlite", tmp_path / "dst.sqlite"
    con = sqlite3.connect(old)
    con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, request TEXT NOT NULL, "
                "text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
                "finish_reason TEXT, logprobs TEXT, latency_s REAL NOT NULL, created_at REAL NOT NULL)")
    con.execute("INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?)",
                (cache_key(FP, _request(0)), FP, "{}", "old answer", 3, 2, "stop", None, 0.1, 0.0))
    con.commit()
    con.close()
    (merged,) = merge_stores([old], dst)
    assert merged.added == 1 and _served(dst, 0) == "old answer" and check_store(dst).ok


def test_bad_paths_are_one_clear_error(tmp_path, capsys):
    a = tmp_path / "a.sqlite"
    _fill(a, {0: "x"})
    with pytest.raises(UserError, match="no store at"):
        merge_stores([tmp_path / "missing.sqlite"], tmp_path / "dst.sqlite")
    with pytest.raises(UserError, match="also the store merged into"):
        merge_stores([a], a)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(UserError, match="not a response store"):
        merge_stores([other], tmp_path / "dst.sqlite")
    assert not (tmp_path / "dst.sqlite").exists()  # sources are checked before DST is written
    assert main(["cache", "merge", str(a)]) == 2
    assert "needs --into DST" in capsys.readouterr().err
    assert main(["cache", "stats", str(a)]) == 2
    assert store_path(tmp_path) == tmp_path / "responses.sqlite" and store_path(a) == a
