"""MMLU-Pro's released answers in the other shapes a user downloads, made here from the real releases in
../shared/realdata/mmlu-pro/outputs (a slice of each, so that every test stays fast): the reply under
``model_outputs`` (the field the authors' compute_accuracy.py reads) instead of ``generated_text``, in
the zip or its JSON member unzipped; both fields, differing; non-object values among the rows (a
summary appended to the list); and replies blanked, which end in one message and exit 2, for every
kind of file ``score`` reads. The whole releases' figures under ``generated_text`` are pinned by
test_score_mmlu_pro_realdata.py; here each shape is checked reply for reply against that reading.
Six rows kept in tests/fixtures check every shape without ../shared."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from robusteval.scoring.replies import NO_MMLU_PRO_REPLY, REPLIES_DIFFER, not_a_row

MODELS = ("Meta-Llama-3_1-8B-Instruct", "Mistral-7B-Instruct-v0.2", "gemma-7b")
# six rows of the gemma-7b release, kept as published (tests/fixtures/mmlu_pro_released/README.md): read
# without ../shared, and their verdicts under the authors' chain (without its random guess), pinned
KEPT = Path(__file__).parents[1] / "fixtures" / "mmlu_pro_released" / "model_outputs_gemma-7b_5shots.json"
KEPT_VERDICTS = [("70", "ok", "I", True), ("71", "ok", "I", False), ("72", "ok", "D", False), ("75", "ok", "A", True),
                 ("87", "invalid", None, False), ("107", "invalid", None, False)]
STEP = 40  # every 40th row: 301 of 12,032, all 14 categories


@pytest.fixture(scope="module")
def releases(realdata) -> dict[str, list[dict]]:
    """Each model's released rows, every `STEP`th, as the authors wrote them (``generated_text``)."""
    out = {}
    for model in MODELS:
        with zipfile.ZipFile(realdata / "mmlu-pro" / "outputs" / f"model_outputs_{model}_5shots.zip") as z:
            out[model] = json.loads(z.read(z.namelist()[0]))[::STEP]
    return out


def renamed(rows: list[dict], old: str = "generated_text", new: str = "model_outputs") -> list[dict]:
    return [{(new if k == old else k): v for k, v in row.items()} for row in rows]


def released(folder: Path, model: str, values: list, *, zipped: bool = True) -> Path:
    """``values`` as the authors publish them: ``model_outputs_<model>_5shots.zip`` holding one JSON list
    (json.dumps' own spacing, as theirs), or that member unzipped (``zipped`` False)."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"model_outputs_{model}_5shots"
    if not zipped:
        path = folder / f"{name}.json"
        path.write_text(json.dumps(values), encoding="utf-8")
        return path
    path = folder / f"{name}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name}.json", json.dumps(values))
    return path


def scored(cli_run, path: Path, run_id: str) -> tuple[dict, list[dict]]:
    """results.json and samples.jsonl of ``score PATH --reader mmlu-pro`` (asserted: exit 0)."""
    return cli_run("score", path, "--reader", "mmlu-pro", "--quiet", "--out", path.parents[1] / "runs",
                   "--run-id", run_id).written()


def verdicts(samples: list[dict]) -> list[tuple]:
    return [(s["item_id"], s["status"], s["answer_label"], s["correct"]) for s in samples]


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "json member"])
@pytest.mark.parametrize("model", MODELS)
def test_a_release_keeping_replies_under_model_outputs_scores_as_under_generated_text(releases, tmp_path, cli_run,
                                                                                       model, zipped):
    rows = releases[model]
    base, base_samples = scored(cli_run, released(tmp_path / "g", model, rows), "g")
    got, samples = scored(cli_run, released(tmp_path / "m", model, renamed(rows), zipped=zipped), "m")
    assert verdicts(samples) == verdicts(base_samples) and len(samples) == len(rows)
    want, fm = base["metrics"][model]["released"], got["metrics"][model]["released"]
    assert fm["failed"] == 0 and fm["invalid"] == want["invalid"] < len(rows) // 5
    assert fm["accuracy"]["value"] == pytest.approx(want["accuracy"]["value"], abs=1e-12)
    assert fm["accuracy"]["value"] > 0.2
    audit = got["data"]["sources"][0]
    assert audit["assumed"]["reply field"] == f"'model_outputs' ({len(rows)} rows)"
    assert base["data"]["sources"][0]["assumed"]["reply field"] == f"'generated_text' ({len(rows)} rows)"
    assert got["scored"]["kind"] == "mmlu-pro"


def test_where_both_fields_differ_model_outputs_is_scored_and_the_rows_counted(releases, tmp_path, cli_run):
    """The authors' compute_accuracy.py reads ``model_outputs``: so does `score`, and each row whose
    ``generated_text`` says otherwise is counted in the audit with its position."""
    rows = releases["gemma-7b"]
    changed = {3, 50, 51, 200}  # a reply that says another letter, under generated_text only
    both = [{**row, "model_outputs": row["generated_text"],
             **({"generated_text": "The answer is (J)."} if i in changed else {})} for i, row in enumerate(rows)]
    want, want_samples = scored(cli_run, released(tmp_path / "g", "gemma-7b", rows), "g")
    got, samples = scored(cli_run, released(tmp_path / "b", "gemma-7b", both), "b")
    assert verdicts(samples) == verdicts(want_samples)
    assert got["metrics"]["gemma-7b"]["released"]["accuracy"] == want["metrics"]["gemma-7b"]["released"]["accuracy"]
    audit = got["data"]["sources"][0]
    assert audit["anomalies"][REPLIES_DIFFER] == len(changed)
    assert audit["examples"][REPLIES_DIFFER] == [f"row {i + 1}" for i in sorted(changed)]
    assert audit["assumed"]["reply field"] == f"'model_outputs' ({len(rows)} rows)"


def test_non_object_values_among_the_rows_are_counted_with_their_positions(releases, tmp_path, cli_run):
    """43 strings appended to the list (a summary), and a null, a number and a list among the rows: the
    object rows are scored as without them, the others counted by kind with their positions."""
    rows = releases["Mistral-7B-Instruct-v0.2"]
    mixed: list = [*rows[:10], None, *rows[10:20], 7, ["x"], *rows[20:], *(f"summary {k}" for k in range(43))]
    want, want_samples = scored(cli_run, released(tmp_path / "g", "Mistral-7B-Instruct-v0.2", rows), "g")
    got, samples = scored(cli_run, released(tmp_path / "x", "Mistral-7B-Instruct-v0.2", mixed), "x")
    assert verdicts(samples) == verdicts(want_samples)
    model = "Mistral-7B-Instruct-v0.2"
    assert got["metrics"][model]["released"]["accuracy"] == want["metrics"][model]["released"]["accuracy"]
    audit = got["data"]["sources"][0]
    assert (audit["rows_read"], audit["rows_used"]) == (len(mixed), len(rows))
    n = len(rows) + 3
    assert audit["left_out"] == {not_a_row("s"): 43, not_a_row(None): 1, not_a_row(7): 1, not_a_row(["x"]): 1}
    assert audit["examples"][not_a_row(None)] == ["row 11"] and audit["examples"][not_a_row(["x"])] == ["row 23"]
    assert audit["examples"][not_a_row("s")] == [f"row {n + k}" for k in range(1, 6)]
    assert audit["notes"] == [f"46 of {len(mixed)} values in the list are not rows (left out), at rows 11, 22-23, "
                              f"{n + 1}-{n + 43}"]
    report = (tmp_path / "runs" / "x" / "report.md").read_text()
    assert not_a_row("s") in report and f"at rows 11, 22-23, {n + 1}-{n + 43}" in report


@pytest.mark.parametrize("blank", [None, "", "  \n", "drop"], ids=["null", "empty", "blank", "absent"])
@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "json member"])
def test_a_release_without_a_single_reply_is_one_message_and_exit_2(releases, tmp_path, cli_run, blank, zipped):
    rows = [{k: v for k, v in row.items() if k != "generated_text"} | ({} if blank == "drop" else
            {"model_outputs": blank}) for row in releases["gemma-7b"][:30]]
    path = released(tmp_path, "gemma-7b", rows, zipped=zipped)
    line = cli_run("score", path, "--reader", "mmlu-pro", "--out", tmp_path / "runs").refusal()
    assert line == (f"error: {path}: none of its 30 rows gives a reply ('model_outputs' or 'generated_text' missing, "
                    "null or blank in every row): nothing to score; give the replies under one of those fields")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_one_empty_release_among_others_stops_the_call_and_one_reply_is_enough(releases, tmp_path, cli_run):
    good = released(tmp_path / "a", "gemma-7b", releases["gemma-7b"][:20])
    empty = released(tmp_path / "b", "m", [{**row, "generated_text": None} for row in releases["gemma-7b"][:20]])
    line = cli_run("score", good, empty, "--reader", "mmlu-pro", "--out", tmp_path / "runs").refusal()
    assert f"{empty}: none of its 20 rows gives a reply" in line
    # one reply given: the others are failed requests, counted failed (never wrong), as a run counts them
    one = released(tmp_path / "c", "m", [{**row, "generated_text": None if i else row["generated_text"]}
                                         for i, row in enumerate(releases["gemma-7b"][:20])])
    results, _ = scored(cli_run, one, "one")
    fm = results["metrics"]["m"]["released"]
    assert (fm["samples"], fm["failed"]) == (20, 19)
    no_field = [{k: v for k, v in row.items() if k != "generated_text"} for row in releases["gemma-7b"][1:20]]
    results, _ = scored(cli_run, released(tmp_path / "d", "m", [releases["gemma-7b"][0], *no_field]), "d")
    assert results["data"]["sources"][0]["anomalies"][NO_MMLU_PRO_REPLY] == 19
    assert results["metrics"]["m"]["released"]["failed"] == 19


@pytest.mark.parametrize("field", ["generated_text", "model_outputs", "both"])
@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "json member"])
def test_kept_release_rows_read_the_same_in_every_shape(tmp_path, cli_run, field, zipped):
    """Without ../shared: the six kept rows, under either field or both, zipped or not, with strings
    appended, give the verdicts pinned; blanked, one line and exit 2."""
    rows = json.loads(KEPT.read_text(encoding="utf-8"))
    shaped = renamed(rows) if field == "model_outputs" else rows if field == "generated_text" else [
        {**row, "model_outputs": row["generated_text"]} for row in rows]
    results, samples = scored(cli_run, released(tmp_path / "a", "gemma-7b", [*shaped, "summary", "x"], zipped=zipped),
                              "a")
    assert verdicts(samples) == KEPT_VERDICTS
    audit = results["data"]["sources"][0]
    assert audit["left_out"] == {not_a_row("summary"): 2} and audit["notes"][0].endswith("at rows 7-8")
    read_from = "generated_text" if field == "generated_text" else "model_outputs"
    assert audit["assumed"]["reply field"] == f"'{read_from}' (6 rows)"
    assert REPLIES_DIFFER not in audit["anomalies"]
    blank = [{**row, **({"model_outputs": ""} if field != "generated_text" else {}),
              **({"generated_text": None} if field != "model_outputs" else {})} for row in shaped]
    path = released(tmp_path / "b", "gemma-7b", blank, zipped=zipped)
    assert f"{path}: none of its 6 rows gives a reply" in cli_run("score", path, "--out", tmp_path / "runs").refusal()
