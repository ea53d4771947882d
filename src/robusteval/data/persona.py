"""Data of the persona suite: populations of personas, value questionnaires and conversation openers.

The suite ships its own population (50 figures), its own short questionnaire and its own opening
posts, so it runs offline. Online users can load PVQ-40 and SVS and the leaderboard's Reddit chunks
from the Stick To Your Role! dataset on the Hugging Face hub; the same schemas load from local files.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from robusteval.errors import UserError

# Schwartz's ten basic values, in their order around the circle (conformity and tradition share a wedge).
VALUES = ("self_direction", "stimulation", "hedonism", "achievement", "power", "security", "conformity",
          "tradition", "benevolence", "universalism")
GENDERS = ("female", "male", "other")
HUB_ID = "flowers-team/StickToYourRole"
# Files of the leaderboard's dataset (the layout of flowersteam/value_stability).
HUB_FILES = {
    "pvq40": {"male": "data/data_pvq/test/pvq_male_test.csv", "female": "data/data_pvq/test/pvq_female_test.csv"},
    "svs": {"any": "data/data_svs/test/svs_test.csv"},
}
HUB_CHUNKS = "contexts/leaderboard_reddit_chunks/chunk_{n}.jsonl"

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
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise UserError(f"{where}: malformed YAML ({getattr(exc, 'problem', None) or exc})") from None


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
    if suffix == ".jsonl":
        out = []
        for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):  # not splitlines: U+2028 may sit in a string
            if line.strip():
                try:
                    out.append((f"{path}:{n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise UserError(f"{path}:{n}: malformed JSON ({exc.msg})") from None
        return out
    if suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            return [(f"{path}:{n}", row) for n, row in enumerate(csv.DictReader(f), 2)]
    raise UserError(f"{path}: unsupported file type {suffix or '(none)'}; use .yaml, .jsonl or .csv")


def load_population(path: str | None = None) -> list[Persona]:
    """The bundled 50 personas, or a user's file (fields name, gender, description; id optional)."""
    source = Path(path).expanduser() if path else _bundled("persona_population.yaml")
    personas = []
    for n, (where, row) in enumerate(_records(source, "personas"), 1):
        if not isinstance(row, dict):
            raise UserError(f"{where}: expected a mapping with name, gender, description")
        missing = [k for k in ("name", "gender", "description") if not str(row.get(k) or "").strip()]
        if missing:
            raise UserError(f"{where}: missing {', '.join(missing)}")
        gender = str(row["gender"]).strip().lower()
        if gender not in GENDERS:
            raise UserError(f"{where}: gender {row['gender']!r} must be one of {', '.join(GENDERS)}")
        personas.append(Persona(id=str(row.get("id") or f"p{n:02d}"), name=str(row["name"]).strip(), gender=gender,
                                description=str(row["description"]).strip(), kind=str(row.get("kind") or "")))
    ids = [p.id for p in personas]
    if dupes := sorted({i for i in ids if ids.count(i) > 1}):
        raise UserError(f"{source}: duplicate persona ids {', '.join(dupes)}")
    if len(personas) < 3:
        raise UserError(f"{source}: a population needs at least 3 personas (rank orders), got {len(personas)}")
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


def load_questionnaire(spec: str | None = None) -> Questionnaire:
    """``ours`` (bundled), ``pvq40``/``svs`` (hub), ``pvq40:FILE.csv``/``svs:FILE.csv`` (the leaderboard's
    CSV schema), or a YAML file in the bundled questionnaire's schema."""
    spec = (spec or "ours").strip()
    kind, _, rest = spec.partition(":")
    if spec == "ours":
        return questionnaire_from_yaml(_bundled("persona_questionnaire.yaml"))
    if kind in HUB_FILES and rest:
        return numbered_questionnaire(kind, {"any": Path(rest).expanduser()})
    if spec in HUB_FILES:
        return numbered_questionnaire(spec, {g: hub_file(f) for g, f in HUB_FILES[spec].items()})
    path = Path(spec).expanduser()
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        return questionnaire_from_yaml(path)
    raise UserError(f"--questionnaire {spec!r}: use ours, pvq40, svs, pvq40:FILE.csv, svs:FILE.csv or a YAML file")


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
    items = []
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
        with open(path, encoding="utf-8", newline="") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    if not rows:
        raise UserError(f"{path}: empty questionnaire file")
    texts, scale = [], None
    for n, row in enumerate(rows, 1):
        options = tuple(c.strip() for c in row[1:] if c.strip() and c.strip().lower() != "undef")
        if len(options) < 2:
            raise UserError(f"{path}:{n}: expected the item text followed by its answer options")
        if scale is not None and options != scale:
            raise UserError(f"{path}:{n}: answer options differ from the first row's")
        scale = options
        texts.append(row[0].strip())
    return texts, scale


def numbered_questionnaire(kind: str, files: dict[str, Path]) -> Questionnaire:
    """PVQ-40 or SVS from the leaderboard's CSV files (one per gender for PVQ), scored by the standard key."""
    key = PVQ40_KEY if kind == "pvq40" else SVS_KEY
    n_items = max(n for numbers in key.values() for n in numbers)
    value_of = {n: value for value, numbers in key.items() for n in numbers}
    parsed = {gender: parse_numbered_csv(path) for gender, path in files.items()}
    for gender, (texts, _) in parsed.items():
        if len(texts) != n_items:
            raise UserError(f"{files[gender]}: {kind} has {n_items} items, the file has {len(texts)}")
    first_texts, scale = next(iter(parsed.values()))
    items = tuple(  # SVS items outside the ten-value key are not asked: they score nothing
        QItem(id=f"{kind}-{n}", text=first_texts[n - 1], value=value_of[n],
              texts=tuple((g, texts[n - 1]) for g, (texts, _) in parsed.items() if g != "any"))
        for n in range(1, n_items + 1) if n in value_of)
    return Questionnaire(name=kind, prompt=PVQ_PROMPT if kind == "pvq40" else SVS_PROMPT, scale=scale, items=items)


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
