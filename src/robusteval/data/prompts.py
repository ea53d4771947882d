"""Plain requests for the `consistency` suite to turn into prompt sets (``--variations``).

Two shapes, nothing else:

- ``.jsonl``: one object per line, ``{"id": "...", "prompt": "..."}`` (``"text"`` is read for
  ``"prompt"``; an optional ``"language"``, default ``en``, and ``"hint"`` for the judge);
- ``.txt``: one request per line; the ids are ``p1``, ``p2``, ... (the line numbers of the
  non-blank lines).

Blank lines are skipped. A line of another shape (a prompt set with ``variants``, a list, a line
without an id or a prompt) stops the run with one message naming the file, the line and the
shape expected; so does a repeated id.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from robusteval.data.audit import SourceAudit
from robusteval.errors import UserError
from robusteval.files import parse_json, read_text

SHAPE = ('one request per line: a .jsonl file of {"id": ..., "prompt": ...} objects (optional "language", '
         '"hint"), or a .txt file with one request per line')


@dataclass(frozen=True)
class PlainPrompt:
    id: str
    prompt: str
    language: str = "en"
    hint: str | None = None


def load_prompts(path_text: str | None, *, limit: int | None = None, seed: int = 0,
                 audit: SourceAudit | None = None) -> list[PlainPrompt]:
    """The requests in ``path_text``; ``limit`` takes a seeded random sample, in file order."""
    if not path_text:
        raise UserError(f"--variations needs --data FILE with {SHAPE}")
    path = Path(path_text)
    if not path.is_file():
        raise UserError(f"--data {path_text}: no such file; --variations needs {SHAPE}")
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".txt"):
        raise UserError(f"--data {path_text}: with --variations, give {SHAPE} (not a {suffix or 'suffix-less'} "
                        f"file); prompt sets already written out run without --variations")
    text = read_text(path, f"--data {path_text}")
    prompts = _parse_txt(text) if suffix == ".txt" else _parse_jsonl(text, path_text)
    if not prompts:
        raise UserError(f"--data {path_text}: no requests in it; give {SHAPE}")
    seen: dict[str, int] = {}
    for number, p in prompts:
        if p.id in seen:
            raise UserError(f"{path_text}:{number}: id {p.id!r} repeats line {seen[p.id]}; "
                            "give each request its own id")
        seen[p.id] = number
    items = [p for _, p in prompts]
    if limit is not None and limit < len(items):
        keep = set(random.Random(seed).sample(range(len(items)), limit))
        items = [p for i, p in enumerate(items) if i in keep]
    if audit is not None:
        audit.rows_read, audit.rows_used = len(prompts), len(items)
        if len(items) < len(prompts):
            audit.note(f"a seeded sample (--limit {limit}, seed {seed}) of the {len(prompts)} requests")
    return items


def _parse_txt(text: str) -> list[tuple[int, PlainPrompt]]:
    return [(n, PlainPrompt(f"p{n}", line.strip())) for n, line in enumerate(text.split("\n"), 1) if line.strip()]


def _parse_jsonl(text: str, source: str) -> list[tuple[int, PlainPrompt]]:
    out = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            raw = parse_json(line, f"{source}:{number}")
        except UserError as exc:
            raise UserError(f"{exc}; expected {SHAPE}") from None
        prompt = raw.get("prompt", raw.get("text")) if isinstance(raw, dict) else None
        item_id = raw.get("id") if isinstance(raw, dict) else None
        bad_id = item_id in (None, "") or isinstance(item_id, (dict, list))
        if not isinstance(prompt, str) or not prompt.strip() or bad_id:
            what = ("a prompt set (it has 'variants'; run it without --variations)"
                    if isinstance(raw, dict) and "variants" in raw else f"a {type(raw).__name__} without "
                    "an 'id' and a non-empty 'prompt'")
            raise UserError(f"{source}:{number}: {what}; expected {SHAPE}")
        hint = raw.get("hint")
        out.append((number, PlainPrompt(str(item_id), prompt.strip(), str(raw.get("language") or "en"),
                                        str(hint) if hint else None)))
    return out
