"""``robusteval score``: replies (or a correctness grid) produced elsewhere, through the same reading,
metrics, data audit and report as a run, with no model call.

A run's flow is dataset -> variants -> engine -> responses -> reader -> metrics -> results. Here
the responses come from files (`scoring.replies`), or the verdicts themselves (`scoring.grid`), and
everything after that is the run's own code: `suites.mcq`'s sample (the reader and the scoring of
a reply against its variant), `metrics.mcq.McqTally`, the results writer and the report. The
folder written is an ordinary mcq run folder (results.json with ``"scored"`` saying where the
replies came from, samples.jsonl), so ``robusteval report``, ``compare`` and the leaderboard read it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

from robusteval.config import SEED, RunConfig, decode_settings
from robusteval.data.audit import DataAudit
from robusteval.data.mcq import load_items
from robusteval.errors import UserError
from robusteval.metrics.budget import check_grid
from robusteval.metrics.budget_covariates import DEFAULT_COVARIATES, Covariates, check_covariates, family_covariates
from robusteval.metrics.mcq import McqTally
from robusteval.probes.design import FAMILIES, expand, is_family
from robusteval.readers import Reader, get_reader
from robusteval.results import reserve_run_folder, write_run
from robusteval.results.budget import BudgetEstimates
from robusteval.results.lm_eval import LmEvalFigures
from robusteval.results.mcq import McqExtra
from robusteval.scoring.grid import GridCell, load_grid, load_variant_texts
from robusteval.scoring.inspect_log import READER as INSPECT_READER, is_inspect_log, read_inspect_log
from robusteval.scoring.lm_eval import compare, is_results_file, output_files, read_results
from robusteval.scoring.replies import (
    NO_REPLY_FIELD,
    REPLY_FIELDS_OF,
    Placed,
    generic_families,
    is_json_list,
    is_lm_eval_log,
    log_datasets,
    read_generic,
    read_lm_eval,
    read_mmlu_pro,
)
from robusteval.scoring.search import check_search, search_check, search_design
from robusteval.suites.base import SampleBase, SuiteResult
from robusteval.suites.mcq import Options, Sample
from robusteval.suites.mcq.ask import make_sample
from robusteval.suites.mcq.options import BUDGET, build_design
from robusteval.types import Item, Response

KINDS = ("replies", "mmlu-pro", "lm-eval", "inspect", "grid")
REPEATED_REPLY = "a second reply to the same (model, family, item, variant, sample): the first kept"
NO_REPLY = "items have no reply in the files: left out of every metric"


@dataclass(frozen=True)
class ScoreRequest:
    """What ``robusteval score`` was given (its flags); `score_request` builds one, checked."""

    paths: tuple[str, ...]
    data: str | None = None
    families: tuple[str, ...] = ()
    cross: tuple[str, ...] = ()
    templates: str | None = None
    reader: str | None = None
    model: str | None = None
    kind: str | None = None  # None: told from each file
    seed: Annotated[int, SEED] = 0
    out_dir: str = "runs"
    run_id: str | None = None
    overwrite: bool = False
    extra_options: dict[str, Any] = field(default_factory=dict)
    # a grid only: estimate from this share of its cells, beside the full grid
    budget: Annotated[float, BUDGET] | None = None
    covariates: tuple[str, ...] = DEFAULT_COVARIATES  # what --budget's estimate is told of each variant
    variant_texts: str | None = None  # --covariates text: a file of each variant's text
    # a grid only: replay the budgeted best/worst search (`scoring.search`)
    search: str | None = None
    calls: Annotated[float, BUDGET] | None = None
    method: str | None = None


SCORE_FLAGS = {"kind": "--as", "out_dir": "--out"}  # the flags whose names differ from the request's fields


def score_request(values: dict[str, Any]) -> ScoreRequest:
    """The command's flags or `robusteval.score`'s arguments (field name -> value; None: the default)
    as a `ScoreRequest`, decoded as a run's settings are (`config.decode_settings`): a name list may be
    one string (``families="order"``, ``covariates="names,length"``), each number is checked against
    its declared range (``--seed -1`` is one message), a value of the wrong type names its setting."""
    request = decode_settings(ScoreRequest, {k: v for k, v in values.items() if v is not None}, SCORE_FLAGS)
    if request.kind is not None and request.kind not in KINDS:
        raise UserError(f"score: --as {request.kind!r}: the files are one of {', '.join(KINDS)} "
                        "(or leave it out: told from each file)")
    return request


def kind_of(path: Path) -> str:
    """What a file is: MMLU-Pro's released zip, an lm-eval sample log, an inspect_ai log, a grid (a
    ``correct`` column and no reply), or generic replies."""
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if is_results_file(path):  # lm-eval's figures, read beside its logs
        return "lm-eval"
    if is_inspect_log(path):
        return "inspect"
    if path.suffix.lower() == ".zip" or is_json_list(path):  # a released zip, or its JSON list unzipped
        return "mmlu-pro"
    if path.suffix.lower() in (".csv", ".tsv"):
        return "grid"
    if is_lm_eval_log(path):
        return "lm-eval"
    from robusteval.scoring.replies import REPLY_FIELDS, generic_rows

    for _, row in generic_rows(path):
        return "grid" if "correct" in row and not any(k in row for k in REPLY_FIELDS) else "replies"
    raise UserError(f"{path}: empty file")


@dataclass(frozen=True, kw_only=True)
class GridSample(SampleBase):
    """A correctness grid's cell as a sample: no reply, no labels; ``answer_option`` numbers the
    answer the source names (per item, in order of appearance), and is unknown (``answer_known``
    False) where the grid gives none, so that no measure compares answers it does not have."""

    LABEL = ("model", "family", "variant")

    category: str | None
    family: str
    base_family: str = ""
    sample: int = 0
    labels: tuple[str, ...] = ()
    order: tuple[int, ...] = ()
    answer_label: str | None = None
    answer_option: int | None = None
    answer_text: str | None = None
    answer_known: bool = False
    gold_label: str = ""
    correct: bool | None = None


def grid_samples(cells: Iterable[GridCell]) -> Iterable[GridSample]:
    """The cells as samples. The reference: the ``reference`` column where given (order () marks it,
    (1, 0) marks a variant that is not), else the variant's name (`metrics.mcq_sensitivity`: base
    style, template, original; an option order is never taken as the reference without the column)."""
    numbers: dict[str, dict[str, int]] = {}
    for c in cells:
        option = None
        if c.answer is not None:
            seen = numbers.setdefault(c.item_id, {})
            option = seen.setdefault(c.answer, len(seen))
        if c.reference is None:
            order: tuple[int, ...] = (1, 0) if "gold@" in c.variant else ()
        else:
            order = () if c.reference else (1, 0)
        yield GridSample(model=c.model, item_id=c.item_id, variant=c.variant, status="ok" if c.valid else "invalid",
                         category=c.category, family=c.family, base_family=c.family, order=order,
                         answer_option=option, answer_text=c.answer, answer_known=c.answer_known,
                         correct=c.correct)


def _reply_sample(p: Placed, reader: Reader) -> Sample:
    response = Response(key="", text=p.text, error=None if p.text is not None else "no reply in the file")
    return make_sample(p.model, p.item, p.variant, p.sample, response, reader)


def scored_paths(given: Iterable[str], audit: DataAudit) -> list[Path]:
    """The files to score: each given file, and for a folder the tool output under it
    (`lm_eval.output_files`: lm-eval's logs and results, else MMLU-Pro's zips), the logs left out
    noted in the audit; a file reached twice (``OUT`` and ``OUT/model/results_*.json``) once."""
    out: dict[Path, Path] = {}  # resolved -> as given
    for path in (Path(p).expanduser() for p in given):
        if not path.is_dir():
            out.setdefault(path.resolve(), path)
            continue
        files, older = output_files(path)
        for file in files:
            out.setdefault(file.resolve(), file)
        for note in older:
            audit.note(note)
    return list(out.values())


def placed_replies(request: ScoreRequest, kind: str, audit: DataAudit,
                   paths: list[Path] | None = None) -> tuple[list[Placed], dict[str, Any]]:
    """Every reply of ``paths`` (default ``request.paths``; all of ``kind``) on its item and variant,
    and the design's description for results.json (for lm-eval, ``lm_eval_results``: each results
    file's figures, `lm_eval.read_results`)."""
    paths = paths if paths is not None else [Path(p).expanduser() for p in request.paths]
    out: list[Placed] = []
    if kind == "mmlu-pro":
        for path in paths:
            out += read_mmlu_pro(path, audit, request.model if len(paths) == 1 else None)
        return out, {"answers": "MMLU-Pro released outputs (the authors' 5-shot chain-of-thought prompt)"}
    if kind == "lm-eval":
        logs = [p for p in paths if not is_results_file(p)]
        if not logs:
            raise UserError("score: lm-eval's results_*.json holds its figures, not the replies: give the "
                            "samples_*.jsonl it writes with --log_samples beside it (or the whole output folder)")
        shared: dict[str, Item] = {}  # one item per (dataset,) question id across the files
        qualify = len(log_datasets(logs)) > 1  # several datasets' ids collide (AGIEval's are row indices)
        for path in logs:
            out += read_lm_eval(path, audit, request.model, shared, qualify=qualify)
        figures = {p: read_results(p) for p in paths if is_results_file(p)}
        return out, {"answers": "lm-evaluation-harness --log_samples",
                     **({"item_ids": "<dataset>/<question_id>"} if qualify else {}),
                     **({"lm_eval_results": figures} if figures else {})}
    if kind == "inspect":
        for path in paths:
            out += read_inspect_log(path, audit, request.model)
        return out, {"answers": "inspect_ai logs (one variant per task; an epoch is a sample)"}
    if request.data is None:
        raise UserError("score: replies in a generic JSONL need --data, the dataset they answer "
                        "(a name such as mmlu, or a file)")
    named = tuple(dict.fromkeys(f for path in paths for f in generic_families(path)))
    families = request.families or tuple(f for f in named if "×" not in f) or ("order", "format")
    cross = request.cross or next((tuple(f.split("×")) for f in named if "×" in f), ())
    if unknown := [f for f in (*families, *cross) if not is_family(f)]:
        raise UserError(f"score: families {', '.join(unknown)} cannot be rebuilt without a model (their copies are "
                        f"written by one); give the replies' correctness as a grid instead, or families of "
                        f"{', '.join(FAMILIES)}")
    options = replace(Options(), families=families, cross=cross, templates=request.templates,
                      **request.extra_options)
    config = RunConfig(suite="mcq", data=request.data, limit=None, seed=request.seed, options=options)
    items = load_items(request.data, audit=audit)
    design, info = build_design(config, options, request.data, audit, max((len(i.options) for i in items), default=4))
    by_id = {item.id: item for item in items}
    variants = {item.id: {(v.family, v.name): v for v in expand(item, families, design, cross)} for item in items}
    for path in paths:
        source = audit.source(str(path))
        out += read_generic(path, variants, by_id, source, request.model)
        if source.rows_read and source.left_out[NO_REPLY_FIELD] == source.rows_read:
            raise UserError(no_reply_message(str(path), kind, source.rows_read))
    answered = {p.item.id for p in out}
    if unanswered := [item.id for item in items if item.id not in answered]:
        audit.source(request.data).note(f"{len(unanswered)} of {len(items)} {NO_REPLY} (e.g. "
                                        f"{', '.join(unanswered[:5])})")
    info |= {"families": list(families)}
    return out, info


def score_files(request: ScoreRequest) -> tuple[Path, SuiteResult]:
    """Score ``request`` into a new run folder; returns it and the result (its ``written`` files)."""
    started = time.time()
    audit = DataAudit()
    paths = scored_paths(request.paths, audit)
    if not paths:
        raise UserError("score: give one or more files of replies, released answers or a grid")
    kinds = {kind_of(p) for p in paths} if request.kind is None else {request.kind}
    if len(kinds) > 1:
        raise UserError(f"score: the files are of different kinds ({', '.join(sorted(kinds))}); score each kind "
                        "on its own")
    kind = kinds.pop()
    if request.budget is not None and kind != "grid":
        raise UserError("score: --budget applies to a correctness grid (every cell known), not to replies")
    check_search(request.search, request.calls, request.method, kind)
    texts = _check_covariates(request)
    samples: list[Any]
    lm_eval: LmEvalFigures = {}
    if kind == "grid":
        if request.reader:
            raise UserError("score: a grid holds verdicts, not replies: --reader does not apply")
        cells = [c for p in paths for c in load_grid(p, audit.source(str(p)), model=request.model)]
        samples = list(grid_samples(cells))
        model_files: dict[str, list[str]] = {}
        design: dict[str, Any] = {"answers": "a correctness grid"}
        if request.budget is not None:
            design |= {"budget": request.budget, "budget_design": "stratified",
                       "budget_covariates": list(request.covariates),
                       **({"variant_texts": request.variant_texts} if request.variant_texts else {})}
        if request.search is not None:
            design |= search_design(request.search, request.calls, request.method)
    else:
        # an unknown name stops before any file is read; an inspect log is read as its scorer read it
        reader = get_reader(request.reader or (INSPECT_READER if kind == "inspect" else None))
        placed, design = placed_replies(request, kind, audit, paths)
        require_replies(placed, kind, audit)
        samples = _unique([_reply_sample(p, reader) for p in placed], audit)
        if figures := design.pop("lm_eval_results", None):
            lm_eval = compare(figures, placed, samples, reader.name, request.seed)
        files: dict[str, dict[str, None]] = {}
        for p in placed:
            files.setdefault(p.model, {})[p.file] = None
        model_files = {m: list(f) for m, f in files.items()}
        design["reader"] = reader.name
    if not samples:
        raise UserError("score: no reply could be placed on an item and variant; the data audit: "
                        + "; ".join(line.strip() for line in audit.lines()))
    return _write(request, kind, samples, audit, design, started, model_files, texts, lm_eval)


def require_replies(placed: list[Placed], kind: str, audit: DataAudit) -> None:
    """Stop with one message on a file none of whose replies is given (each one failed, null, blank
    or missing), naming the fields looked for: scored, it would be a run of n/a that exits 0, as if
    the file had been read. One given reply is enough: failed requests among real ones are counted
    failed, as a run counts them."""
    given: dict[str, bool] = {}
    for p in placed:
        given[p.file] = given.get(p.file, False) or bool(p.text and p.text.strip())
    if empty := next((file for file, any_given in given.items() if not any_given), None):
        rows = sum(p.file == empty for p in placed) + audit.source(empty).left_out[NO_REPLY_FIELD]
        raise UserError(no_reply_message(empty, kind, rows))


def no_reply_message(file: str, kind: str, rows: int) -> str:
    """One line: ``file``'s ``rows`` rows give no reply, and the fields of ``kind`` looked for."""
    fields = " or ".join(repr(f) for f in REPLY_FIELDS_OF.get(kind, ()))
    return (f"{file}: none of its {rows} rows gives a reply ({fields or 'the reply field'} missing, null or "
            f"blank in every row): nothing to score; give the replies under one of those fields")


def _check_covariates(request: ScoreRequest) -> dict[str, str] | None:
    """``--covariates`` and ``--variant-texts`` checked before any file is scored; the variant texts."""
    kinds = check_covariates("score: --covariates", request.covariates)
    if (request.budget is None and kinds != DEFAULT_COVARIATES) or \
            (request.budget is None and request.search is None and request.variant_texts):
        raise UserError("score: --covariates and --variant-texts apply with --budget")
    # --variant-texts without the text covariate: --search's texts to show, else a forgotten flag
    if ("text" in kinds and request.variant_texts is None) or \
            ("text" not in kinds and request.variant_texts is not None and request.search is None):
        raise UserError("score: --covariates text embeds each variant's text, read from --variant-texts FILE "
                        "(CSV/JSONL of variant, text): give both or neither")
    return load_variant_texts(request.variant_texts) if request.variant_texts else None


def _unique(samples: list[Any], audit: DataAudit) -> list[Any]:
    """The samples with a repeated (model, family, item, variant, sample) left out and counted."""
    seen: set[tuple] = set()
    out = []
    repeats = audit.source("replies")
    for s in samples:
        key = (s.model, s.family, s.item_id, str(s.variant), s.sample)
        if key in seen:
            repeats.leave_out(REPEATED_REPLY, f"{s.model} {s.item_id} {s.variant}")
            continue
        seen.add(key)
        out.append(s)
    if not repeats.left_out:
        audit.sources.remove(repeats)
    return out


def _write(request: ScoreRequest, kind: str, samples: list[Any], audit: DataAudit, design: dict[str, Any],
           started: float, model_files: dict[str, list[str]],
           texts: dict[str, str] | None = None, lm_eval: LmEvalFigures | None = None) -> tuple[Path, SuiteResult]:
    models = list(dict.fromkeys(s.model for s in samples))
    item_ids = list(dict.fromkeys(s.item_id for s in samples))
    metrics, invalid = {}, {}
    for model in models:
        tally = McqTally(item_ids)
        for s in samples:
            if s.model == model:
                tally.add(s)
        metrics[model] = tally.metrics(None, seed=request.seed)
        counts = tally.invalid_replies()
        if kind != "grid" and counts.invalid:  # a grid holds no replies to quote
            invalid[model] = counts
    config = RunConfig(suite="mcq", models=tuple(models), data=request.data, limit=None, seed=request.seed,
                       out_dir=request.out_dir, run_id=request.run_id, overwrite=request.overwrite,
                       options=Options(families=tuple(dict.fromkeys(s.base_family for s in samples))))
    folder = reserve_run_folder(request.out_dir, "score", request.run_id, overwrite=request.overwrite)
    per_model = Counter(s.model for s in samples)
    model_info = {m: {"spec": f"scored from {', '.join(model_files.get(m) or request.paths)}", "fingerprint": None,
                      "role": "under test",
                      "usage": {"requests": per_model[m], "cached": 0, "new": 0, "failed": sum(
                          1 for s in samples if s.model == m and s.status == "failed"), "prompt_tokens": 0,
                                "completion_tokens": 0, "cost": 0.0}} for m in models}
    scored = {"kind": kind, "files": list(request.paths), "reader": design.get("reader")}
    budget, truth = (budget_check(samples, request.budget, request.seed, request.covariates, texts)
                     if request.budget is not None else (None, None))
    found, found_truth = (search_check(samples, request.calls, request.seed, request.method, texts)
                          if request.search is not None and request.calls is not None else (None, None))
    extra = McqExtra(design=design, scored=scored, invalid_replies=invalid or None, lm_eval=lm_eval or None,
                     budget=budget, budget_truth=truth, search=found, search_truth=found_truth)
    result = SuiteResult(metrics=metrics, samples=[], extra=extra, data=audit.as_dict())
    try:
        folder.prepare_for_files()
        write_run(folder.path, config=config, models=model_info, metrics=result.metrics, samples=samples,
                  started=started, finished=time.time(), extra=extra, data=result.data)
    except BaseException:
        folder.release()
        raise
    result.written += [folder.path / "results.json", folder.path / "samples.jsonl"]
    folder.finish()
    return folder.path, result


def budget_check(samples: list[Any], budget: float, seed: int, kinds: tuple[str, ...] = DEFAULT_COVARIATES,
                 texts: dict[str, str] | None = None) -> tuple[BudgetEstimates, BudgetEstimates]:
    """``score GRID --budget F``: per model and family, what ``run --budget F --seed S`` would have
    estimated from the grid's cells (`metrics.budget.check_grid`), told the covariates ``kinds``
    (``text``: of ``texts``, variant -> text), as a budgeted run writes it (`McqExtra.budget`), and
    the full grid's own figures (`McqExtra.budget_truth`)."""

    def covariates(family: str, variants: tuple[str, ...]) -> Covariates:
        return family_covariates(variants, kinds, _family_texts(family, variants, texts))

    estimates: BudgetEstimates = {}
    truths: BudgetEstimates = {}
    for model in dict.fromkeys(s.model for s in samples):
        cells = [(s.item_id, s.family, str(s.variant), float(s.correct)) for s in samples
                 if s.model == model and s.correct is not None]
        checked = check_grid(cells, budget, seed=seed, covariates=covariates)
        estimates[model] = {family: est for family, (est, _) in checked.items()}
        truths[model] = {family: truth for family, (_, truth) in checked.items()}
    return estimates, truths


def _family_texts(family: str, variants: tuple[str, ...], texts: dict[str, str] | None) -> list[str | None] | None:
    """The texts of a family's variants: None where the file names none of them (a family without
    text, as a run's ``order``), and a message naming the ones it lacks where it names some."""
    if texts is None or not any(v in texts for v in variants):
        return None
    if missing := [v for v in variants if v not in texts]:
        raise UserError(f"score: --variant-texts has no text for {len(missing)} of family {family!r}'s "
                        f"{len(variants)} variants ({', '.join(missing[:5])}); give every one, or none")
    return [texts[v] for v in variants]


__all__ = ["KINDS", "GridSample", "ScoreRequest", "budget_check", "grid_samples", "kind_of", "score_files"]
