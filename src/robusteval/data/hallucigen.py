"""HalluciGen items: a source sentence with two hypotheses, one of them hallucinated.

Two schemas, as on the Hugging Face hub (NLP-RISE/HalluciGen, the gold-labelled release of the
CLEF 2024 ELOQUENT task):

- paraphrase: ``id, source, hyp1, hyp2, type, label`` (the language is the config: en or sv);
- translation: ``id, langpair, source, hyp1, hyp2, type, label`` (langpair like ``en-de``).

A row with a ``langpair`` is a translation row, any other a paraphrase row (an optional ``lang``
column names its language). ``label`` is ``hyp1`` or ``hyp2``: the hallucinated one. For the
generation step only ``source`` is needed, so hypotheses and label may be missing there. The task's
test files carry no labels (``test_detection_sv.csv``: id, source, hyp1, hyp2; ``test_generation_en.csv``:
id, source), as participants received them: detection runs on such a file and writes its predictions
(what participants submitted), with its scores n/a for want of gold. A file with labels on some rows
only is refused: scores over the labelled part would pass for scores of the whole file.

The task's files name their language only in the file name (``trial_sv.csv``, ``test_detection_sv.csv``;
translation files a pair, ``trial_de_en.csv``). A file without a language column gets the language
of its name, else the one its text is identified as (data/language.py), else en; ``--lang``
overrides all of these. The data audit says which, and why.

``--data`` takes ``trial`` (our own small set, bundled, offline), a local ``.jsonl``/``.csv`` file,
or a hub set: ``hallucigen`` (all six configurations) or ``hallucigen-<lang>`` (en, sv, de-en,
en-de, fr-en, en-fr), with ``:trial`` or ``:test`` (default) for the split.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.data.audit import SourceAudit
from robusteval.data.ids import unique_ids
from robusteval.data.language import identify, lang_from_name, language_problem
from robusteval.data.mcq import file_rows  # the same JSONL/CSV reading, errors naming file:line
from robusteval.errors import UserError

HALLUCINATION_TYPES = ("addition", "named-entity", "number", "conversion", "date", "gender", "pronoun",
                       "antonym", "tense", "negation", "natural")
LABELS = ("hyp1", "hyp2")
LANGUAGE_NAMES = {"en": "English", "sv": "Swedish", "de": "German", "fr": "French"}
HUB_ID = "NLP-RISE/HalluciGen"
# our short name -> hub configuration
HUB_CONFIGS = {"en": "en_paraphrase", "sv": "sv_paraphrase", "de-en": "de_en_translation",
               "en-de": "en_de_translation", "fr-en": "fr_en_translation", "en-fr": "en_fr_translation"}
TRIAL = "trial"


@dataclass(frozen=True)
class HalluItem:
    """One source with its two hypotheses; ``label`` names the hallucinated one (None: unlabelled)."""

    id: str
    scenario: str  # paraphrase | translation
    lang: str  # en, sv (paraphrase) or a pair like en-de (translation)
    source: str
    hyp1: str | None = None
    hyp2: str | None = None
    type: str | None = None
    label: str | None = None
    origin: str = ""  # file:line, for error messages

    @property
    def source_lang(self) -> str:
        return self.lang.split("-")[0]

    @property
    def target_lang(self) -> str:
        return self.lang.split("-")[-1]

    @property
    def labelled(self) -> bool:
        return self.hyp1 is not None and self.hyp2 is not None and self.label in LABELS


def normalise_type(text: Any) -> str | None:
    """``Named Entity`` / ``named_entity`` -> ``named-entity``; blank -> None."""
    if text is None or not str(text).strip():
        return None
    return re.sub(r"[\s_]+", "-", str(text).strip().lower())


def normalise_label(text: Any) -> str | None:
    """``hyp1``, ``Hyp 1``, ``1`` -> ``hyp1``; anything else None (the caller decides if it is an error)."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(?:hyp(?:othesis)?[\s_]*)?([12])\s*", str(text), re.IGNORECASE)
    return f"hyp{match.group(1)}" if match else None


LANG_FORMAT = re.compile(r"[a-z]{2}(-[a-z]{2})?")


def parse_row(row: dict[str, Any], origin: str, *, default_lang: str = "en",
              force_lang: str | None = None) -> HalluItem:
    """One row in either schema; errors name ``origin`` (file:line) and what is wrong.

    ``default_lang`` is the language of a row that names none (a pair such as ``de-en`` makes it a
    translation row); ``force_lang`` (``--lang``) replaces whatever the row says."""
    def text(key: str) -> str | None:
        value = row.get(key)
        return None if value is None or str(value).strip() == "" else str(value).strip()

    source = text("source")
    if source is None:
        raise UserError(f"{origin}: missing 'source'")
    langpair = text("langpair")
    if langpair is not None and not re.fullmatch(r"[a-z]{2}-[a-z]{2}", langpair.lower().replace("_", "-")):
        raise UserError(f"{origin}: langpair {langpair!r} is not like en-de")
    lang = force_lang or (langpair.lower().replace("_", "-") if langpair else (text("lang") or default_lang).lower())
    scenario = "translation" if "-" in lang else "paraphrase"
    label = None
    if text("label") is not None:
        label = normalise_label(row["label"])
        if label is None:
            raise UserError(f"{origin}: label {row['label']!r} is not hyp1 or hyp2")
    hyp1, hyp2 = text("hyp1"), text("hyp2")
    if label is not None and (hyp1 is None or hyp2 is None):
        raise UserError(f"{origin}: a labelled row needs both hyp1 and hyp2")
    item_id = text("id") or origin
    return HalluItem(id=item_id, scenario=scenario, lang=lang, source=source, hyp1=hyp1, hyp2=hyp2,
                     type=normalise_type(row.get("type")), label=label, origin=origin)


def file_language(path: Path, rows: list[tuple[str, dict[str, Any]]], audit: SourceAudit | None = None) -> str:
    """The language of a file's rows that name none: the file name's, else the text's, else en;
    the audit says which and how, and notes a text that reads as another language than the name says."""
    bare = [row for _, row in rows
            if not str(row.get("lang") or "").strip() and not str(row.get("langpair") or "").strip()]
    if not bare:
        return "en"  # every row names its language
    named = lang_from_name(path)
    found = identify([str(row.get("source") or "") for row in bare])
    seen = f"{found[0]} (py3langid, p={found[1]:.2f})" if found else None
    if named:
        lang, how = named, f"from the file name {path.name}"
        if found and found[0] != named.split("-")[0]:
            _record(audit, "anomaly", f"sources read as {seen}, the file name says {named}: the file name is used "
                                      "(--lang overrides)")
    elif found:
        lang, how = found[0], f"identified from the sources by py3langid, p={found[1]:.2f}"
    else:
        lang, how = "en", "default: neither the file name nor the text tells; give --lang"
    _record(audit, "assume", f"{lang} ({how})")
    return lang


def _record(audit: SourceAudit | None, what: str, text: str) -> None:
    if audit is None:
        return
    if what == "assume":
        audit.assume("language", text)
    else:
        audit.anomaly(text)


def read_file(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(origin, row) pairs of a JSONL, CSV or TSV file."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"--data {path}: no such file")
    if path.suffix.lower() not in (".jsonl", ".csv", ".tsv"):
        raise UserError(f"--data {path}: expected a .jsonl, .csv or .tsv file")
    return file_rows(path)


def hub_rows(name: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(default language, origin, row) for ``hallucigen[-lang][:split]`` from the hub."""
    base, _, split = name.partition(":")
    split = split or "test"
    lang = base.removeprefix("hallucigen").removeprefix("-")
    langs = [lang] if lang else list(HUB_CONFIGS)
    if any(x not in HUB_CONFIGS for x in langs) or split not in ("trial", "test"):
        raise UserError(f"unknown dataset {name!r}; hub sets are hallucigen or hallucigen-LANG with LANG in "
                        f"{', '.join(HUB_CONFIGS)}, optionally :trial or :test")
    try:
        import datasets
    except ImportError:
        raise UserError(f"dataset {name!r} loads from the Hugging Face hub: pip install 'robusteval[hub]'") from None
    for lang in langs:
        config = HUB_CONFIGS[lang]
        try:
            data = datasets.load_dataset(HUB_ID, config, split=split)
        except Exception as exc:  # offline, hub error: one message, no traceback
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UserError(f"cannot load {HUB_ID} ({config}, split {split}) from the Hugging Face hub: {first}; "
                            "offline, use --data trial or a local file") from None
        for n, row in enumerate(data, 1):
            yield lang, f"{HUB_ID}:{config}:{split}:{n}", dict(row)  # the configuration names the language


def bundled_rows() -> Iterator[tuple[str, dict[str, Any]]]:
    path = resources.files("robusteval.data") / "hallucigen_trial.jsonl"
    with resources.as_file(path) as real:
        yield from read_file(real)


def load_items(data: str | None, *, limit: int | None = None, seed: int = 0, need_pairs: bool = True,
               lang: str | None = None, audit: SourceAudit | None = None) -> list[HalluItem]:
    """The items of ``data`` (see the module doc), a seeded random sample of ``limit`` of them.

    ``need_pairs``: every item must carry hyp1 and hyp2 (detection), and either every item a label
    or none (an unlabelled test file: predictions without scores); generation needs sources only.
    ``lang`` (``--lang``): the language of every row, whatever the row, the file name or the text says.
    ``audit``: rows read and used, the language assumed and how, a file without labels.
    """
    data = data or TRIAL
    if lang is not None and (problem := language_problem(lang, pair=True)):
        raise UserError(f"--lang {lang!r}: {problem}")
    rows: Iterable[tuple[str, str, dict[str, Any]]]
    if data == TRIAL:
        rows = (("en", origin, row) for origin, row in bundled_rows())
    elif Path(data).suffix.lower() in (".jsonl", ".csv", ".tsv") or not data.startswith("hallucigen"):
        path = Path(data).expanduser()
        raw = list(read_file(path))
        default = "en" if lang else file_language(path, raw, audit)
        rows = ((default, origin, row) for origin, row in raw)
    else:
        rows = hub_rows(data)
    items = [parse_row(row, origin, default_lang=default_lang, force_lang=lang) for default_lang, origin, row in rows]
    if not items:
        raise UserError(f"--data {data}: no items")
    read = len(items)
    items = unique_ids(items, data, audit=audit, where="origin")
    for item in items:
        if need_pairs and (item.hyp1 is None or item.hyp2 is None):
            raise UserError(f"{item.origin}: detection needs both hypotheses, hyp1 and hyp2 "
                            "(a file of sources only is for --step generation)")
    if need_pairs and any(i.labelled for i in items) and (bare := next((i for i in items if not i.labelled), None)):
        raise UserError(f"{bare.origin}: no label (hyp1 or hyp2), while other rows have one; label every row, "
                        "or none (an unlabelled test file: detection writes predictions, unscored)")
    if limit is not None and limit < len(items):
        chosen = sorted(random.Random(seed).sample(range(len(items)), limit))
        items = [items[i] for i in chosen]
    if audit is not None:
        audit.rows_read, audit.rows_used = read, len(items)
        if lang:
            audit.assume("language", f"{lang} (--lang)")
        if not any(i.labelled for i in items):
            audit.note("no labels (as the task's test files): generation uses the sources; detection writes its "
                       "predictions (detection-*.csv), its scores n/a for want of gold")
    return items


__all__ = [
    "HALLUCINATION_TYPES",
    "HUB_CONFIGS",
    "LABELS",
    "LANGUAGE_NAMES",
    "LANG_FORMAT",
    "HalluItem",
    "load_items",
    "normalise_label",
    "normalise_type",
    "parse_row",
]
