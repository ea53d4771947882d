"""Data of the persona suite: populations of personas, value questionnaires and conversation openers.

The suite ships its own population (50 figures), its own short questionnaire and its own opening
posts, so it runs offline. Online users can load PVQ-40 and SVS and the leaderboard's Reddit chunks
from the Stick To Your Role! dataset on the Hugging Face hub; the same files load from a local copy
of the leaderboard's repository (flowersteam/value_stability): its population JSON (gender ``F``/``M``),
the folder holding both gendered PVQ files (``pvq_male_test.csv``, ``pvq_female_test.csv``: PVQ-40
asks a woman "...important to her", a man "...important to him"), the SVS file, and its chunks.
What a loader reads, leaves out or assumes goes to the run's data audit.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.data.audit import SourceAudit
from robusteval.data.ids import unique_ids
from robusteval.errors import UserError
from robusteval.files import csv_rows, jsonl_lines, parse_json, parse_yaml, read_text

# Schwartz's ten basic values, in their order around the circle (conformity and tradition share a wedge).
VALUES = ("self_direction", "stimulation", "hedonism", "achievement", "power", "security", "conformity",
          "tradition", "benevolence", "universalism")
GENDERS = ("female", "male", "other")
# Other spellings of a gender in population files (the leaderboard's population uses F and M).
GENDER_ALIASES = {"f": "female", "m": "male", "woman": "female", "man": "male"}
HUB_ID = "flowers-team/StickToYourRole"
# Files of the leaderboard's dataset (the layout of flowersteam/value_stability).
HUB_FILES = {
    "pvq40": {"male": "data/data_pvq/test/pvq_male_test.csv", "female": "data/data_pvq/test/pvq_female_test.csv"},
    "svs": {"any": "data/data_svs/test/svs_test.csv"},
}
HUB_CHUNKS = "contexts/leaderboard_reddit_chunks/chunk_{n}.jsonl"
# In a local folder: the gendered PVQ files (the leaderboard's names first) and the SVS file.
PVQ_PATTERNS: dict[str, tuple[str, ...]] = {"male": ("pvq_male_test.csv", "pvq_male*.csv"),
                                            "female": ("pvq_female_test.csv", "pvq_female*.csv")}
SVS_PATTERNS = ("svs_test.csv", "svs*.csv")
KEY_FILE = "values.json"  # the leaderboard's scoring key beside its questionnaire files

# Standard scoring keys: 1-based item numbers of each value (PVQ-40, and SVS's 57 items).
PVQ40_KEY = {
    "self_direction": (1, 11, 22, 34), "stimulation": (6, 15, 30), "hedonism": (10, 26, 37),
    "achievement": (4, 13, 24, 32), "power": (2, 17, 39), "security": (5, 14, 21, 31, 35),
    "conformity": (7, 16, 28, 36), "tradition": (9, 20, 25, 38), "benevolence": (12, 18, 27, 33),
    "universalism": (3, 8, 19, 23, 29, 40),
}
SVS_KEY = {
    "self_direction": (5, 16, 31, 41, 53), "stimulation": (9, 25, 37), "hedonism": (4, 50, 57),
    "achievement": (34, 39, 43, 55), "power": (3, 12, 27, 46), "security": (8, 13, 15, 22, 56),
    "conformity": (11, 20, 40, 47), "tradition": (18, 32, 36, 44, 51), "benevolence": (33, 45, 49, 52, 54),
    "universalism": (1, 17, 24, 26, 29, 30, 35, 38),
}
PVQ_PROMPT = 'Here is a short description of a person:\n"{text}"\nHow much is this person like you?'
SVS_PROMPT = 'How important is the following value as a guiding principle in your life?\n"{text}"'


@dataclass(frozen=True)
class Persona:
    id: str
    name: str
    gender: str
    description: str
    kind: str = ""  # real | historical | fictional (informative only)


@dataclass(frozen=True)
class QItem:
    """One questionnaire item. ``texts`` holds gendered wordings (PVQ has male and female forms);
    ``text`` is used when a persona's gender has none."""

    id: str
    text: str
    value: str
    reverse: bool = False
    texts: tuple[tuple[str, str], ...] = ()

    def text_for(self, gender: str) -> str:
        return dict(self.texts).get(gender, self.text)


@dataclass(frozen=True)
class Questionnaire:
    name: str
    prompt: str  # with {text}
    scale: tuple[str, ...]  # answer options, lowest first
    items: tuple[QItem, ...]
    values: tuple[str, ...] = VALUES

    @property
    def item_values(self) -> tuple[str, ...]:
        return tuple(item.value for item in self.items)


@dataclass(frozen=True)
class Openers:
    """The bundled (or a user's) opening messages."""

    posts: tuple[str, ...]
    fixed: tuple[tuple[str, str], ...]


def _bundled(name: str) -> Path:
    return Path(str(resources.files("robusteval.data") / name))


def _read_yaml(path: Path) -> Any:
    return parse_yaml(read_text(path), path)


def _records(path: Path, key: str) -> list[tuple[str, dict]]:
    """Rows of a YAML (a list, or a mapping holding ``key``), JSONL or CSV file, each with its place."""
    suffix = path.suffix.lower()
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if suffix in (".yaml", ".yml"):
        data = _read_yaml(path)
        rows = data.get(key) if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise UserError(f"{path}: expected a list of {key} (or a mapping with a '{key}' list)")
        return [(f"{path}: {key}[{n}]", row) for n, row in enumerate(rows)]
    if suffix == ".json":  # the leaderboard's population: one JSON list
        data = parse_json(read_text(path), path)
        rows = data.get(key) if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise UserError(f"{path}: expected a JSON list of {key} (or an object with a '{key}' list)")
        return [(f"{path}: [{n}]", row) for n, row in enumerate(rows)]
    if suffix == ".jsonl":
        return [(f"{path}:{n}", parse_json(line, f"{path}:{n}")) for n, line in jsonl_lines(path)]
    if suffix == ".csv":
        return [(f"{path}:{n}", row) for n, row in csv_rows(read_text(path), path)]
    raise UserError(f"{path}: unsupported file type {suffix or '(none)'}; use .yaml, .json, .jsonl or .csv")


def load_population(path: str | None = None, audit: SourceAudit | None = None) -> list[Persona]:
    """The bundled 50 personas, or a user's file (fields name, gender, description; id optional):
    YAML, JSON (the leaderboard's ``real_world_people.json``), JSONL or CSV. Genders ``F``/``M``
    (the leaderboard's) read as female/male, and the audit says so."""
    source = Path(path).expanduser() if path else _bundled("persona_population.yaml")
    personas = []
    aliased: dict[str, str] = {}
    read_at: dict[int, str] = {}  # id(persona) -> where it was read, for `unique_ids`' messages
    for n, (where, row) in enumerate(_records(source, "personas"), 1):
        if not isinstance(row, dict):
            raise UserError(f"{where}: expected a mapping with name, gender, description")
        missing = [k for k in ("name", "gender", "description") if not str(row.get(k) or "").strip()]
        if missing:
            raise UserError(f"{where}: missing {', '.join(missing)}")
        written = str(row["gender"]).strip()
        gender = GENDER_ALIASES.get(written.lower(), written.lower())
        if gender not in GENDERS:
            raise UserError(f"{where}: gender {row['gender']!r} must be one of {', '.join(GENDERS)} (or F, M)")
        if gender != written.lower():
            aliased[written] = gender
        personas.append(Persona(id=str(row.get("id") or f"p{n:02d}"), name=str(row["name"]).strip(), gender=gender,
                                description=str(row["description"]).strip(), kind=str(row.get("kind") or "")))
        read_at[id(personas[-1])] = where
    personas = unique_ids(personas, str(source), audit=audit, where=lambda p: read_at[id(p)])
    if len(personas) < 3:
        raise UserError(f"{source}: a population needs at least 3 personas (rank orders), got {len(personas)}")
    if audit is not None:
        audit.rows_read, audit.rows_used = len(read_at), len(personas)
        if aliased:
            audit.assume("gender", ", ".join(f"{k} = {v}" for k, v in sorted(aliased.items())) + " (file's spelling)")
    return personas


def balanced_subset(personas: list[Persona], n: int | None) -> list[Persona]:
    """The first ``n`` personas alternating by gender (female, male, ...), so a subset stays balanced."""
    if n is None or n >= len(personas):
        return list(personas)
    groups = {g: [p for p in personas if p.gender == g] for g in GENDERS}
    out: list[Persona] = []
    while len(out) < n:
        for g in GENDERS:
            if groups[g] and len(out) < n:
                out.append(groups[g].pop(0))
    return out


def load_questionnaire(spec: str | None = None, audit: SourceAudit | None = None) -> Questionnaire:
    """``ours`` (bundled); ``pvq40``/``svs`` (the hub); a local copy of the leaderboard's files:
    ``pvq40:DIR`` (the folder holding ``pvq_male_test.csv`` and ``pvq_female_test.csv``),
    ``pvq40:male=FILE,female=FILE``, ``svs:DIR`` or ``svs:FILE.csv``; or a YAML file in the bundled
    questionnaire's schema. A ``values.json`` beside the CSV files (the leaderboard's scoring key)
    replaces the standard key, and the audit says so."""
    spec = (spec or "ours").strip()
    kind, _, rest = spec.partition(":")
    if spec == "ours":
        return questionnaire_from_yaml(_bundled("persona_questionnaire.yaml"))
    if kind in HUB_FILES and rest:
        files, key_file = local_files(kind, rest)
        key = read_key(key_file, kind) if key_file else None
        return numbered_questionnaire(kind, files, key=key, key_source=str(key_file) if key_file else "", audit=audit)
    if spec in HUB_FILES:
        return numbered_questionnaire(spec, {g: hub_file(f) for g, f in HUB_FILES[spec].items()}, audit=audit)
    path = Path(spec).expanduser()
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        return questionnaire_from_yaml(path)
    raise UserError(f"--questionnaire {spec!r}: use ours, pvq40, svs, pvq40:DIR (both gendered PVQ files), "
                    "pvq40:male=FILE,female=FILE, svs:DIR, svs:FILE.csv or a YAML file")


def local_files(kind: str, rest: str) -> tuple[dict[str, Path], Path | None]:
    """The CSV file(s) of ``pvq40:...``/``svs:...`` by gender (``any`` for SVS), and the scoring key
    file beside them if there is one. PVQ-40 is worded by gender, so it needs both files: a single
    file would ask every persona in one gender's words."""
    both = "pvq40:DIR (the folder holding pvq_male_test.csv and pvq_female_test.csv) or pvq40:male=FILE,female=FILE"
    if "=" in rest:
        if kind != "pvq40":
            raise UserError(f"--questionnaire {kind}:{rest}: only pvq40 takes male=FILE,female=FILE; "
                            f"use {kind}:FILE.csv")
        pairs = dict(part.split("=", 1) for part in rest.split(",") if "=" in part)
        files: dict[str, Path] = {g: Path(pairs[g].strip()).expanduser() for g in ("male", "female") if g in pairs}
        if set(pairs) != {"male", "female"}:
            raise UserError(f"--questionnaire pvq40:{rest}: name both files, male=FILE,female=FILE")
        for path in files.values():
            if not path.is_file():
                raise UserError(f"--questionnaire: {path}: no such file")
        return files, _key_beside(files["male"].parent)
    path = Path(rest).expanduser()
    if path.is_dir():
        if kind == "pvq40":
            found = {g: _first_match(path, patterns) for g, patterns in PVQ_PATTERNS.items()}
            if missing := [g for g, f in found.items() if f is None]:
                raise UserError(f"--questionnaire pvq40:{path}: no {' or '.join(PVQ_PATTERNS[g][0] for g in missing)} "
                                "in this folder; PVQ-40 needs both gendered files (a female persona is asked "
                                "'...important to her', a male one '...important to him')")
            return {g: f for g, f in found.items() if f is not None}, _key_beside(path)
        svs = _first_match(path, SVS_PATTERNS)
        if svs is None:
            raise UserError(f"--questionnaire svs:{path}: no svs_test.csv in this folder")
        return {"any": svs}, _key_beside(path)
    if not path.is_file():
        raise UserError(f"--questionnaire {kind}:{path}: no such file or folder")
    if kind == "pvq40":
        raise UserError(f"--questionnaire pvq40:{path}: PVQ-40 is worded by gender, and one file would ask every "
                        f"persona in one gender's words; give {both}")
    return {"any": path}, _key_beside(path.parent)


def _first_match(folder: Path, patterns: tuple[str, ...]) -> Path | None:
    for pattern in patterns:
        if matches := sorted(folder.glob(pattern)):
            return matches[0]
    return None


def _key_beside(folder: Path) -> Path | None:
    key = folder / KEY_FILE
    return key if key.is_file() else None


def read_key(path: Path, kind: str) -> dict[str, tuple[int, ...]]:
    """The leaderboard's ``values.json``: value name (``Self-Direction``) -> 1-based item numbers."""
    data = parse_json(read_text(path), path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected an object of value name -> item numbers")
    key = {}
    for name, numbers in data.items():
        if name.startswith("_"):
            continue  # "_comment"
        value = "_".join(name.strip().lower().replace("-", " ").split())
        if value not in VALUES:
            raise UserError(f"{path}: {name!r} is not one of the ten values ({', '.join(VALUES)})")
        if not isinstance(numbers, list) or not all(isinstance(n, int) and n >= 1 for n in numbers):
            raise UserError(f"{path}: {name!r} must list item numbers (1-based)")
        key[value] = tuple(numbers)
    if missing := [v for v in VALUES if v not in key]:
        raise UserError(f"{path}: no items for {', '.join(missing)}")
    return {v: key[v] for v in VALUES}


def questionnaire_from_yaml(path: Path) -> Questionnaire:
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping with name, scale, items")
    scale = data.get("scale")
    if not isinstance(scale, list) or len(scale) < 2:
        raise UserError(f"{path}: 'scale' must list at least two answer options, lowest first")
    if not all(isinstance(s, str) for s in scale):
        raise UserError(f"{path}: every 'scale' option must be text (quote Yes/No/numbers in YAML)")
    values = tuple(data.get("values") or VALUES)
    items: list[QItem] = []
    for where, row in _records(path, "items"):
        if not isinstance(row, dict) or not str(row.get("text") or "").strip():
            raise UserError(f"{where}: each item needs a text")
        value = str(row.get("value") or "")
        if value not in values:
            raise UserError(f"{where}: value {value!r} is not one of {', '.join(values)}")
        reverse = row.get("reverse", False)
        if not isinstance(reverse, bool):
            raise UserError(f"{where}: reverse must be true or false")
        items.append(QItem(id=str(row.get("id") or f"q{len(items) + 1:02d}"), text=str(row["text"]).strip(),
                           value=value, reverse=reverse))
    if not items:
        raise UserError(f"{path}: no items")
    prompt = str(data.get("prompt") or PVQ_PROMPT)
    if "{text}" not in prompt:
        raise UserError(f"{path}: 'prompt' must contain {{text}} where the item goes")
    return Questionnaire(name=str(data.get("name") or path.stem), prompt=prompt,
                         scale=tuple(str(s) for s in scale), items=tuple(items), values=values)


def parse_numbered_csv(path: Path) -> tuple[list[str], tuple[str, ...]]:
    """The leaderboard's questionnaire CSV: no header; each row is the item text, then the answer
    options (lowest first), then an optional ``undef``. Returns item texts (item n = row n) and the scale."""
    try:
        rows = [r for r in csv.reader(io.StringIO(read_text(path), newline="")) if r and any(c.strip() for c in r)]
    except csv.Error as exc:
        raise UserError(f"{path}: not valid CSV ({exc})") from None
    if not rows:
        raise UserError(f"{path}: empty questionnaire file")
    texts: list[str] = []
    scale: tuple[str, ...] | None = None
    for n, row in enumerate(rows, 1):
        options = tuple(c.strip() for c in row[1:] if c.strip() and c.strip().lower() != "undef")
        if len(options) < 2:
            raise UserError(f"{path}:{n}: expected the item text followed by its answer options")
        if scale is not None and options != scale:
            raise UserError(f"{path}:{n}: answer options differ from the first row's")
        scale = options
        texts.append(row[0].strip())
    assert scale is not None  # rows is not empty, and every row sets it
    return texts, scale


_MALE_WORDS = re.compile(r"\b(he|him|his|himself)\b", re.I)
_FEMALE_WORDS = re.compile(r"\b(she|her|hers|herself)\b", re.I)


def numbered_questionnaire(kind: str, files: dict[str, Path], *, key: dict[str, tuple[int, ...]] | None = None,
                           key_source: str = "", audit: SourceAudit | None = None) -> Questionnaire:
    """PVQ-40 or SVS from the leaderboard's CSV files (one per gender for PVQ), scored by ``key``
    (default: the standard key). Items outside the ten-value key score nothing and are not asked."""
    standard = PVQ40_KEY if kind == "pvq40" else SVS_KEY
    key = key or standard
    parsed = {gender: parse_numbered_csv(path) for gender, path in files.items()}
    n_items = len(next(iter(parsed.values()))[0])
    for gender, (texts, _) in parsed.items():
        expected = max(n for numbers in standard.values() for n in numbers)
        if len(texts) != expected:
            raise UserError(f"{files[gender]}: {kind} has {expected} items, the file has {len(texts)}")
    if (highest := max(n for numbers in key.values() for n in numbers)) > n_items:
        raise UserError(f"{key_source}: the key names item {highest}, the questionnaire has {n_items}")
    value_of = {n: value for value, numbers in key.items() for n in numbers}
    first_texts, scale = next(iter(parsed.values()))
    items = tuple(
        QItem(id=f"{kind}-{n}", text=first_texts[n - 1], value=value_of[n],
              texts=tuple((g, texts[n - 1]) for g, (texts, _) in parsed.items() if g != "any"))
        for n in range(1, n_items + 1) if n in value_of)
    if audit is not None:
        _audit_questionnaire(audit, kind, files, parsed, value_of, key, standard, key_source)
    return Questionnaire(name=kind, prompt=PVQ_PROMPT if kind == "pvq40" else SVS_PROMPT, scale=scale, items=items)


def _audit_questionnaire(audit: SourceAudit, kind: str, files: dict[str, Path], parsed: dict, value_of: dict,
                         key: dict, standard: dict, key_source: str) -> None:
    first = next(iter(files.values()))
    n_items = len(parsed[next(iter(parsed))][0])
    audit.rows_read, audit.rows_used = n_items, len(value_of)
    for n in range(1, n_items + 1):
        if n not in value_of:
            audit.leave_out("item outside the ten-value scoring key (scores nothing, not asked)", f"{first.name}:{n}")
    for gender, path in files.items():
        audit.note(f"{'wording for ' + gender + ' personas' if gender != 'any' else 'items'}: {path}")
    if key_source:
        audit.note(f"scoring key: {key_source}" + ("" if key == standard else " (differs from the standard key: "
                                                                                "the file's is used)"))
    wrong = {"female": _MALE_WORDS, "male": _FEMALE_WORDS}
    for gender, (texts, _) in parsed.items():
        for n, text in enumerate(texts, 1):
            if gender in wrong and wrong[gender].search(text):
                audit.anomaly(f"{gender} wording with the other gender's pronoun (kept as published)",
                              f"{files[gender].name}:{n}")
    if "male" in parsed and "female" in parsed and parsed["male"][0] == parsed["female"][0]:
        audit.anomaly("male and female files have the same wording")


def hub_file(relative: str) -> Path:
    """One file of the Stick To Your Role! dataset, downloaded (and cached) from the hub."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise UserError(f"{relative} loads from the Hugging Face hub: pip install huggingface_hub") from None
    try:
        return Path(hf_hub_download(HUB_ID, relative, repo_type="dataset"))
    except Exception as exc:  # offline, moved file, hub error: one message, no traceback
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"cannot fetch {relative} from {HUB_ID} on the Hugging Face hub ({first}); "
                        "offline, download it elsewhere and pass the local file instead") from None


def load_chunk_file(path: Path) -> tuple[str, ...]:
    """Opening messages from a JSONL file of ``{"content": ...}`` rows (the leaderboard's Reddit chunks)."""
    posts = []
    for where, row in _records(path, "posts"):
        text = row.get("content") if isinstance(row, dict) else row
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"{where}: expected a row with a non-empty 'content'")
        posts.append(text.strip())
    if not posts:
        raise UserError(f"{path}: no opening messages")
    return tuple(posts)


def load_openers(path: str | None = None) -> Openers:
    source = Path(path).expanduser() if path else _bundled("persona_contexts.yaml")
    data = _read_yaml(source)
    if not isinstance(data, dict) or not isinstance(data.get("posts", []), list) \
            or not isinstance(data.get("fixed", {}), dict):
        raise UserError(f"{source}: expected 'posts' (a list) and 'fixed' (name: message)")
    posts = tuple(str(p).strip() for p in data.get("posts", []) if str(p).strip())
    fixed = tuple((str(k), str(v)) for k, v in (data.get("fixed") or {}).items())
    return Openers(posts=posts, fixed=fixed)
