"""Prompt sets for the `consistency` suite: one request written in several styles or languages.

Formats read:
- the ELOQUENT 2024 robustness format, ``{id, variation, variants: [{language, prompt}]}`` items,
  as a JSON list, under an ``items`` key, or under a one-key wrapper (``{"eloquent-robustness-test":
  {"items": [...]}}``). That file in the wild has missing commas, so JSON is read leniently: each
  missing comma is put back, each trailing comma dropped, and every fix is reported with its line;
- our own JSONL (one item per line) or YAML (``items:``) with the same fields plus an optional
  per-item ``hint`` for the judge ("ignore whether the message is addressed to a mom or a dad")
  and an optional per-variant ``name`` (the perturbation that wrote it, in generated sets:
  `prompt_sets_jsonl` writes this format).

Names: ``robusteval-en`` (bundled, 16 variation types), ``robusteval-multi`` (bundled, the same
requests in en/de/fr/es/sv), ``eloquent-2024`` or ``hub:ORG/NAME[:SPLIT]`` (the Hugging Face hub;
needs internet and ``pip install 'robusteval[hub]'``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from robusteval import files
from robusteval.data.audit import SourceAudit
from robusteval.data.ids import unique_ids
from robusteval.errors import UserError

BUNDLED = {"robusteval-en": "consistency_en.yaml", "robusteval-multi": "consistency_multi.yaml"}
HUB_NAMES = {"eloquent-2024": "Eloquent/Robustness"}
DEFAULT = "robusteval-en"


@dataclass(frozen=True)
class PromptVariant:
    language: str
    prompt: str
    name: str = ""  # the perturbation that made it ("original", "typo", "language:de"), when generated


@dataclass(frozen=True)
class PromptSet:
    """One item: the same request in several variants."""

    id: str
    variation: str
    variants: tuple[PromptVariant, ...]
    hint: str | None = None
    source: str = ""

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.language for v in self.variants))


@dataclass(frozen=True)
class LoadReport:
    """What the lenient loader repaired or left out, each with its line."""

    source: str
    fixes: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        return [f"{self.source}: fixed: {f}" for f in self.fixes] + \
               [f"{self.source}: skipped: {s}" for s in self.skipped]


@dataclass
class _Collected:
    items: list[PromptSet] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def load_prompt_sets(name: str | None = None, *, limit: int | None = None, seed: int = 0,
                     audit: SourceAudit | None = None) -> tuple[list[PromptSet], LoadReport]:
    """Items of a named or file prompt set; ``limit`` takes a seeded random sample, in file order.
    ``audit``: prompt sets read and used, each repair and each set left out."""
    name = name or DEFAULT
    if name in BUNDLED:
        text = resources.files("robusteval.data").joinpath(BUNDLED[name]).read_text(encoding="utf-8")
        items, report = parse_yaml(text, name)
    elif name in HUB_NAMES or name.startswith("hub:"):
        items, report = load_hub(HUB_NAMES.get(name) or name[len("hub:"):])
    else:
        path = Path(name)
        if not path.exists():
            raise UserError(f"--data {name}: no such file or prompt set; bundled: {', '.join(BUNDLED)}, "
                            f"hub: {', '.join(HUB_NAMES)} or hub:ORG/NAME")
        text = files.read_text(path, f"--data {name}")
        suffix = path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            items, report = parse_yaml(text, str(path))
        elif suffix == ".jsonl":
            items, report = parse_jsonl(text, str(path))
        else:
            items, report = parse_json(text, str(path))
    if not items:
        raise UserError(f"{report.source}: no usable prompt sets (" + "; ".join(report.skipped[:3]) + ")")
    read = len(items)
    items = unique_ids(items, report.source, audit=audit)
    usable = len(items)
    if limit is not None and limit < len(items):
        keep = set(random.Random(seed).sample(range(len(items)), limit))
        items = [item for i, item in enumerate(items) if i in keep]
    if audit is not None:
        audit.rows_read, audit.rows_used = read + len(report.skipped), len(items)
        for fix in report.fixes:
            audit.anomaly(f"repaired: {fix}")
        for skipped in report.skipped:
            audit.leave_out(f"left out: {skipped}")
        if len(items) < usable:
            audit.note(f"a seeded sample (--limit {limit}, seed {seed}) of the {usable} usable prompt sets")
    return items, report


def parse_json(text: str, source: str) -> tuple[list[PromptSet], LoadReport]:
    data, fixes = repair_json(text, source)
    out = _Collected()
    for raw in _item_list(data, source):
        _add_item(out, raw, source, _line_of(text, raw))
    return out.items, LoadReport(source, tuple(fixes), tuple(out.skipped))


def parse_jsonl(text: str, source: str) -> tuple[list[PromptSet], LoadReport]:
    out = _Collected()
    fixes: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            raw, line_fixes = repair_json(line, f"{source}:{number}")
        except UserError as exc:
            out.skipped.append(f"line {number}: {exc}")
            continue
        fixes += [f.replace("line 1", f"line {number}") for f in line_fixes]
        _add_item(out, raw, source, number)
    return out.items, LoadReport(source, tuple(fixes), tuple(out.skipped))


def parse_yaml(text: str, source: str) -> tuple[list[PromptSet], LoadReport]:
    data = files.parse_yaml(text, source)
    out = _Collected()
    for index, raw in enumerate(_item_list(data, source)):
        _add_item(out, raw, source, f"item {index + 1}")
    return out.items, LoadReport(source, (), tuple(out.skipped))


def load_hub(repo: str) -> tuple[list[PromptSet], LoadReport]:
    """Items from a Hugging Face dataset (``ORG/NAME`` or ``ORG/NAME:SPLIT``, default split test)."""
    name, _, split = repo.partition(":")
    try:
        import datasets
    except ImportError:
        raise UserError("loading from the hub needs datasets: pip install 'robusteval[hub]'") from None
    try:
        rows = datasets.load_dataset(name, split=split or "test")
    except Exception as exc:  # network, auth or unknown dataset: one clear line
        raise UserError(f"cannot load {name!r} from the Hugging Face hub: {exc}") from None
    out = _Collected()
    for index, raw in enumerate(rows):
        _add_item(out, dict(raw), f"hub:{name}", f"row {index}")
    return out.items, LoadReport(f"hub:{name}", (), tuple(out.skipped))


def repair_json(text: str, source: str, *, max_fixes: int = 1000) -> tuple[object, list[str]]:
    """Parse JSON, putting back missing commas and dropping trailing ones; returns the value and
    one line per fix. Anything else wrong is a UserError naming the line and column."""
    fixes: list[str] = []
    if (depth := files.json_depth(text)) > files.MAX_JSON_DEPTH:
        raise UserError(f"{source}: JSON nested {depth} deep; at most {files.MAX_JSON_DEPTH} levels are read")
    for _ in range(max_fixes):
        try:
            return json.loads(text), fixes
        except json.JSONDecodeError as exc:
            before = len(text[:exc.pos].rstrip())  # index just after the last non-blank character
            line = text.count("\n", 0, before) + 1
            if exc.msg.startswith("Expecting ',' delimiter"):
                text = text[:before] + "," + text[before:]
                fixes.append(f"line {line}: inserted a missing comma")
            elif exc.msg.startswith(("Expecting property name", "Expecting value")) and before \
                    and text[before - 1] == "," and text[exc.pos:exc.pos + 1] in ("}", "]"):
                text = text[:before - 1] + text[before:]
                fixes.append(f"line {line}: removed a trailing comma")
            else:
                raise UserError(f"{source}:{exc.lineno}:{exc.colno}: {exc.msg} (could not repair)") from None
    raise UserError(f"{source}: more than {max_fixes} syntax errors; is this JSON?")


def _item_list(data: object, source: str) -> list:
    if isinstance(data, dict) and "items" not in data and len(data) == 1:
        data = next(iter(data.values()))  # {"eloquent-robustness-test": {...}}
    if isinstance(data, dict):
        data = data.get("items")
    if not isinstance(data, list):
        raise UserError(f"{source}: expected a list of items (or an object with an 'items' list)")
    return data


def _add_item(out: _Collected, raw: object, source: str, where: object) -> None:
    where = f"line {where}" if isinstance(where, int) else str(where)
    if not isinstance(raw, dict):
        out.skipped.append(f"{where}: not an object")
        return
    item_id = raw.get("id")
    variants_raw = raw.get("variants")
    if item_id in (None, ""):
        out.skipped.append(f"{where}: no 'id'")
        return
    if not isinstance(variants_raw, list):
        out.skipped.append(f"{where}: item {item_id}: no 'variants' list")
        return
    variants = []
    for v in variants_raw:
        prompt = (v.get("prompt") or v.get("text")) if isinstance(v, dict) else v if isinstance(v, str) else None
        if isinstance(prompt, str) and prompt.strip():
            language = str(v.get("language") or v.get("lang") or "en") if isinstance(v, dict) else "en"
            name = str(v.get("name") or "") if isinstance(v, dict) else ""
            variants.append(PromptVariant(language, prompt.strip(), name))
    if len(variants) < 2:
        out.skipped.append(f"{where}: item {item_id}: fewer than two variants with a prompt")
        return
    variation = str(raw.get("variation") or raw.get("variation_type") or raw.get("type") or "unspecified")
    hint = raw.get("hint") or raw.get("judge_hint")
    out.items.append(PromptSet(str(item_id), variation, tuple(variants), str(hint) if hint else None,
                               f"{source} {where}"))


def prompt_sets_jsonl(items: list[PromptSet]) -> str:
    """``items`` as our JSONL (one prompt set a line), the format ``--data`` reads back."""
    lines = []
    for item in items:
        row: dict = {"id": item.id, "variation": item.variation,
                     "variants": [{"language": v.language, "prompt": v.prompt, **({"name": v.name} if v.name else {})}
                                  for v in item.variants]}
        if item.hint:
            row["hint"] = item.hint
        lines.append(json.dumps(row, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def _line_of(text: str, raw: object) -> int | str:
    """The line where an item's id appears in the original text (for messages)."""
    if isinstance(raw, dict) and raw.get("id") is not None:
        at = text.find(json.dumps(str(raw["id"])))
        if at < 0:
            at = text.find(str(raw["id"]))
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return "unknown line"
