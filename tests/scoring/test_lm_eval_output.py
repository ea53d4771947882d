"""``robusteval score`` on lm-evaluation-harness's own output (tests/fixtures/lm_eval: SCORE's tasks on
MMLU-Pro and its AGIEval umbrella on four subsets, written by lm-eval 0.4.13 against the stub; README there
says how):
every subset in one call keyed by its dataset, a whole output folder read with its results_*.json,
lm-eval's figures beside ours with each difference's reason, and the loader's anomalies in the audit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from robusteval.cli import main
from robusteval.data.mcq import REPEATED_GOLD_TEXT
from robusteval.results.lm_eval import LmEvalFigure
from robusteval.results.records import decode_extra
from robusteval.scoring.flow import REPEATED_REPLY
from robusteval.scoring.lm_eval import HALF_SWAP, NO_REASON, OLDER_LOG, OLDER_RESULTS
from robusteval.scoring.replies import PAST_OPTIONS, SHOWN_ORDER, task_dataset

OUT = Path(__file__).parents[1] / "fixtures" / "lm_eval" / "score"  # lm-eval's --output_path
LOGS = sorted((OUT / "stub").glob("samples_*.jsonl"))
RESULTS = next((OUT / "stub").glob("results_*.json"))
ROWS = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in LOGS)


def score(tmp_path: Path, *paths: Path | str, capsys=None, quiet: bool = True) -> dict:
    code = main(["score", *map(str, paths), "--out", str(tmp_path / "runs"), "--run-id", "r",
                 *(["--quiet"] if quiet else [])])
    assert code == 0, capsys.readouterr().err if capsys else code
    return json.loads((tmp_path / "runs" / "r" / "results.json").read_text(encoding="utf-8"))


def figures(results: dict) -> dict[tuple[str, str], LmEvalFigure]:
    return {(f.task, f.metric): f for f in decode_extra("mcq", results).lm_eval["stub"]}


@pytest.mark.parametrize("given", ["folder", "model folder", "files", "folder and a file in it"])
def test_every_subset_in_one_call_keeps_every_reply(tmp_path, capsys, given):
    """Before: the folder was "no such file", results_*.json "not valid JSON", and the logs alone left
    out every reply whose question id another subset also has as "a second reply to the same ..."."""
    paths = {"folder": [OUT], "model folder": [OUT / "stub"], "files": [*LOGS, RESULTS],
             "folder and a file in it": [OUT, LOGS[0]]}[given]
    results = score(tmp_path, *paths, capsys=capsys)
    sources = {s["source"]: s for s in results["data"]["sources"]}
    assert "replies" not in sources  # no reply left out as a repeat
    assert all(not s["left_out"] for s in sources.values())
    assert sum(s["rows_used"] for s in sources.values()) == ROWS
    assert results["models"]["stub"]["usage"]["requests"] == ROWS
    items = {json.loads(line)["item_id"] for line in (tmp_path / "runs" / "r" / "samples.jsonl").open()}
    # question 100 of MMLU-Pro and of sat-math, question 0 of each AGIEval subset: distinct items
    assert {"mmlu_pro/100", "agieval_sat_math/100", "agieval_sat_math/0", "agieval_aqua_rat/0",
            "agieval_lsat_lr/0", "agieval_logiqa_en/108"} <= items
    assert results["design"]["item_ids"] == "<dataset>/<question_id>"
    assert REPEATED_REPLY not in json.dumps(results["data"])


def test_lm_evals_figures_stand_beside_ours_with_each_differences_reason(tmp_path, capsys):
    results = score(tmp_path, OUT, capsys=capsys)
    by = figures(results)
    tasks = {t for t, _ in by}
    groups = {"score_option_order_robustness_agieval", "score_prompt_robustness_agieval"}  # one family each
    assert tasks == {p.name.removeprefix("samples_").rsplit("_", 1)[0] for p in LOGS} | groups
    for f in by.values():  # every figure equal (lm-eval rounds to 4 decimals), or its reason stated
        assert f.agrees or (f.reasons and NO_REASON not in f.reasons), f
    # MMLU-Pro: every per-variant macro accuracy equal (the gold@E..J docs past a question's options included)
    mmlu = [f for (t, _), f in by.items() if t == "score_option_order_robustness_mmlu_pro" and f.variant]
    assert len(mmlu) == 10 and all(f.agrees and f.measure == "macro_accuracy" for f in mmlu)
    order = by[("score_option_order_robustness_mmlu_pro", "options_consistency_rate")]
    assert order.measure == "consistency_rate_pooled" and order.lm_eval == pytest.approx(0.43333333, abs=1e-6)
    assert order.robusteval == pytest.approx(0.42222222, abs=1e-6) and order.reasons[0] == HALF_SWAP
    # aqua-rat's question 117 repeats the gold's text: a reply of the other copy is right here only
    aqua = by[("option_order_robustness_agieval_aqua_rat", "per_option_accuracy_D")]
    assert (aqua.lm_eval, aqua.robusteval) == (pytest.approx(0.5), pytest.approx(1.0))
    assert aqua.reasons == ("1 replies chose a repeated copy of the gold's text: right here (one answer), "
                            "another label in lm-eval",)
    # logiqa-en's question 108 prints its options out of order: SCORE's gold is the letter's position
    logiqa = by[("prompt_robustness_agieval_logiqa_en", "5_accuracy")]
    assert (logiqa.lm_eval, logiqa.robusteval) == (pytest.approx(1.0), pytest.approx(0.0))
    assert logiqa.reasons[0].startswith("1 replies scored against another gold")
    sat = [f for (t, _), f in by.items() if "sat_math" in t or "lsat_lr" in t]
    assert sat and all(f.agrees for f in sat)
    # a group's size-weighted mean is the figure over all its subsets' questions: 3 of 7 right at gold@D
    group = by[("score_option_order_robustness_agieval", "per_option_accuracy_D")]
    assert (group.lm_eval, group.robusteval) == (pytest.approx(1 / 7), pytest.approx(3 / 7))
    assert [r.split(":")[0] for r in group.reasons] == ["1 replies scored against another gold",
                                                         "1 replies chose a repeated copy of the gold's text"]
    assert by[("score_prompt_robustness_agieval", "consistency_rate")].agrees


def test_the_terminal_and_the_report_print_lm_evals_figures_beside_ours(tmp_path, capsys):
    score(tmp_path, OUT, capsys=capsys, quiet=False)
    out = capsys.readouterr().out
    report = (tmp_path / "runs" / "r" / "report.md").read_text(encoding="utf-8")
    for text in (out, report):
        assert "stub · lm-eval's figures beside robusteval's: 81 of 102 equal" in text
        assert "per_option_macro_accuracy_J" in text and "SCORE undoes the option swap only" in text


def test_the_audit_of_a_log_lists_the_loaders_anomalies(tmp_path, capsys):
    """Before: only "the same question id with other options ..." was kept from the loader's findings."""
    results = score(tmp_path, OUT, capsys=capsys)
    anomalies = {Path(s["source"]).name.split("_2026")[0]: s["anomalies"] for s in results["data"]["sources"]}
    assert anomalies["samples_option_order_robustness_agieval_aqua_rat"] == {REPEATED_GOLD_TEXT: 1}
    assert anomalies["samples_option_order_robustness_agieval_logiqa_en"] == {SHOWN_ORDER: 1}
    assert anomalies["samples_score_option_order_robustness_mmlu_pro"] == {PAST_OPTIONS: 6}
    assert not anomalies["samples_prompt_robustness_agieval_aqua_rat"]  # once per item, as a run counts


def test_an_older_log_of_a_task_in_the_folder_is_left_out_and_said(tmp_path, capsys):
    folder = shutil.copytree(OUT / "stub", tmp_path / "out" / "stub")
    newest = folder / LOGS[0].name
    older = folder / LOGS[0].name.replace("2026-11-28T", "2026-11-27T")
    shutil.copy(newest, older)
    older_results = folder / RESULTS.name.replace("2026-11-28T", "2026-11-27T")
    run = json.loads(RESULTS.read_text(encoding="utf-8"))
    for metrics in run["results"].values():  # another run's figures
        metrics.update({k: 1.0 for k, v in metrics.items() if isinstance(v, float)})
    older_results.write_text(json.dumps(run), encoding="utf-8")
    results = score(tmp_path, tmp_path / "out", capsys=capsys)
    assert results["data"]["notes"] == [f"{older}: {OLDER_LOG} ({newest.name})", f"{older_results}: {OLDER_RESULTS}"]
    assert str(older) not in {s["source"] for s in results["data"]["sources"]}
    assert figures(results) == figures(score(tmp_path / "again", OUT, capsys=capsys))  # the latest run's only


@pytest.mark.parametrize(("paths", "says"), [
    (lambda t: [RESULTS], "lm-eval's results_*.json holds its figures, not the replies"),
    (lambda t: [t], "a folder with no lm-eval output (samples_*.jsonl written with --log_samples"),
])
def test_nothing_to_score_is_one_message(tmp_path, capsys, paths, says):
    capsys.readouterr()
    assert main(["score", *map(str, paths(tmp_path)), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(("task", "dataset"), [
    ("score_option_order_robustness_mmlu_pro", "mmlu_pro"), ("prompt_robustness_agieval_aqua_rat", "agieval_aqua_rat"),
    ("score_non_greedy_robustness_mmlu_pro", "mmlu_pro"), ("hellaswag", "hellaswag")])
def test_a_tasks_dataset_is_named_after_its_family(task, dataset):
    assert task_dataset(task) == dataset


def test_the_items_of_a_log_are_the_real_files_questions_with_the_authors_gold(realdata):
    """Every question of the logs, placed on its dataset, has the options and gold of the real file's row
    (AGIEval: the option printed with the gold's letter, though SCORE showed logiqa-en's 108 out of order
    and scored it by the letter's position)."""
    from robusteval.data.audit import DataAudit
    from robusteval.data.mcq import load_items
    from robusteval.scoring.replies import read_lm_eval

    real = {f"mmlu_pro/{item.id}": item for item in load_items(str(realdata / "mmlu-pro" / "test-sample-400.jsonl"))}
    for subset in ("aqua-rat", "logiqa-en", "lsat-lr", "sat-math"):
        for item in load_items(str(realdata / "agieval" / f"{subset}.jsonl")):
            real[f"agieval_{subset.replace('-', '_')}/{item.id.removeprefix(subset + '-')}"] = item
    items: dict = {}
    placed = [p for log in LOGS for p in read_lm_eval(log, DataAudit(), None, items, qualify=True)]
    assert len(placed) == ROWS and len(items) == 9
    for item in items.values():
        truth = real[item.id]
        assert sorted(item.options) == sorted(truth.options), item.id
        assert item.options[item.answer] == truth.options[truth.answer], item.id
    shown = items["agieval_logiqa_en/108"]
    assert shown.options != real["agieval_logiqa_en/108"].options  # as SCORE showed them, not re-sorted


def test_a_second_question_under_one_id_is_left_out_not_scored_against_the_first(tmp_path, capsys):
    """Before: the reply to the 5-option question was scored against the first (3-option) question of that
    id, only an anomaly said so; where the option counts differed in an option-order log, a traceback."""
    from robusteval.scoring.replies import ITEM_DIFFERS

    def doc(question: str, options: list[str], gold: int, prompt_id: int) -> dict:
        return {"question_id": 1, "question": question, "options": options, "answer": "ABCDE"[gold],
                "answer_index": gold, "prompt_id": prompt_id, "options_format": "\n{letter}: {option}"}

    rows = [{"doc_id": 0, "doc": doc("Q one", ["a", "b", "c"], 1, 0), "resps": [["The best answer is B"]]},
            {"doc_id": 1, "doc": doc("Q two", ["x", "y", "z", "w", "v"], 4, 1), "resps": [["The best answer is E"]]}]
    log = tmp_path / "samples_prompt_robustness_agieval_x_2026-01-01T00-00-00.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    results = score(tmp_path, log, capsys=capsys)
    assert results["data"]["sources"][0]["left_out"] == {ITEM_DIFFERS: 1}
    assert results["models"][log.parent.name]["usage"]["requests"] == 1


def test_a_chat_models_prompt_is_the_messages_text_not_their_json(tmp_path, capsys):
    """lm-eval logs a chat model's prompt as the messages' JSON; before, samples.jsonl's ``prompt`` held it."""
    score(tmp_path, OUT / "stub" / LOGS[0].name, capsys=capsys)
    first = json.loads((tmp_path / "runs" / "r" / "samples.jsonl").open(encoding="utf-8").readline())
    asked = json.loads(json.loads(LOGS[0].open(encoding="utf-8").readline())["arguments"]["gen_args_0"]["arg_0"][0])
    assert first["prompt"] == asked[-1]["content"] and first["prompt"].startswith("For the multiple-choice question")


def test_non_greedy_runs_one_folder_per_seed_are_draws_beside_lm_evals_figures(tmp_path, capsys):
    """SCORE's non-greedy instructions run each seed into OUT/seed_N (tests/fixtures/lm_eval/non_greedy: lm-eval
    0.4.13, `--seed 1` and `--seed 2`, 5 docs of sat-math and of MMLU-Pro each; README there)."""
    from robusteval.data.audit import DataAudit
    from robusteval.scoring.replies import read_lm_eval

    folder = OUT.parent / "non_greedy"
    results = score(tmp_path, folder, capsys=capsys)
    by = {(f.task, f.variant): f for f in decode_extra("mcq", results).lm_eval["stub"]}
    tasks = ("non_greedy_robustness_agieval_sat_math", "score_non_greedy_robustness_mmlu_pro")
    assert set(by) == {(t, s) for t in tasks for s in ("seed1", "seed2")}
    assert all(f.agrees for f in by.values())
    log = next(folder.glob("seed_1/stub/samples_non_greedy_robustness_agieval_sat_math_*.jsonl"))
    row = json.loads(log.open(encoding="utf-8").readline())
    placed = next(iter(read_lm_eval(log, DataAudit(), None, {})))
    assert placed.variant.name == "seed1" and placed.theirs == tuple(row["non_greedy_accuracy"][1:3])


def test_a_reply_read_otherwise_is_counted_as_such():
    """Our reader against SCORE's extraction, row by row: a reply unreadable here that lm-eval read as the gold,
    and one read here as the gold's label that SCORE read otherwise; SCORE keeps an unreadable reply's text."""
    from types import SimpleNamespace

    from robusteval.scoring.lm_eval import _reasons, _unreadable

    def row(item: str, status: str, label: str | None, correct: bool) -> SimpleNamespace:
        return SimpleNamespace(model="m", family="prompt", item_id=item, variant="score-prompt-0", sample=0,
                               labels=("A", "B", "C", "D"), gold_label="B", answer_label=label, status=status,
                               correct=correct)

    cells = [row("q1", "invalid", None, False), row("q2", "ok", "B", True), row("q3", "ok", "C", False)]
    key = ("m", "prompt", "{}", "score-prompt-0", 0)
    theirs = {tuple(k if k != "{}" else item for k in key): t for item, t in (
        ("q1", ("B", "B")), ("q2", ("I THINK B", "B")), ("q3", ("C", "B")))}
    assert _reasons(cells, theirs, "robusteval") == [
        "2 replies read otherwise by reader 'robusteval' than by SCORE's extraction (1 unreadable here)"]
    assert _unreadable(cells, theirs)[0].startswith("2 replies unreadable here or to SCORE's extraction")


def test_a_folder_of_inspect_logs_is_read_as_its_logs(tmp_path, capsys):
    """A user's folder of other tools' output: inspect_ai's log folder (tests/fixtures/inspect's logs)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(OUT.parents[1] / "inspect" / "mcq_small.eval", folder)
    results = score(tmp_path, folder, capsys=capsys)
    assert results["scored"]["kind"] == "inspect" and results["models"]
