"""Run configuration common to all suites (`RunConfig`), and the one function that coerces settings
(`decode_settings`). It imports no suite: `robusteval.configure` builds a suite's configuration from
YAML and flags with the suite's ``Options``."""

from __future__ import annotations

import os
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from robusteval.data.shard import parse_shard
from robusteval.errors import UserError
from robusteval.results.codec import RecordError, decode


def default_cache_dir() -> Path:
    return Path(os.environ.get("ROBUSTEVAL_CACHE_DIR") or Path.home() / ".cache" / "robusteval")


@dataclass(frozen=True)
class RunConfig:
    suite: str = "mcq"
    models: tuple[str, ...] = ("llamacpp",)
    data: str | None = None  # None: the suite's own default set
    limit: int | None = 20
    seed: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    samples: int = 1
    rpm: float | None = None
    tpm: float | None = None
    concurrency: int | None = None
    timeout: float = 300.0
    max_retries: int = 5
    price_in: float = 0.0
    price_out: float = 0.0
    cache_dir: str = field(default_factory=lambda: str(default_cache_dir()))
    use_cache: bool = True
    out_dir: str = "runs"
    run_id: str | None = None
    overwrite: bool = False  # an existing --run-id folder is replaced (its old files removed) instead of refused
    options: Any = None  # the suite's own settings (its Options dataclass)
    estimate: bool = False  # count requests, tokens, time and cost; ask nothing
    check_determinism: int = 0  # ask this many greedy requests again after the run, count replies that differ
    shard: str | None = None  # "I/N": a deterministic 1/N of the items (data/shard.py); `robusteval merge` joins them

    def validated(self) -> RunConfig:
        checks = [
            (self.limit is None or self.limit > 0, "--limit must be a positive number"),
            (self.temperature >= 0, "--temperature must be >= 0"),
            (0 < self.top_p <= 1, "--top-p must be in (0, 1]"),
            (self.max_tokens > 0, "--max-tokens must be positive"),
            (self.samples >= 1, "--samples must be >= 1"),
            (self.samples == 1 or self.temperature > 0,
             "--samples > 1 repeats identical greedy requests; set --temperature > 0"),
            (self.rpm is None or self.rpm > 0, "--rpm must be positive"),
            (self.tpm is None or self.tpm > 0, "--tpm must be positive"),
            (self.concurrency is None or self.concurrency > 0, "--concurrency must be positive"),
            (self.timeout > 0, "--timeout must be positive"),
            (self.max_retries >= 0, "--max-retries must be >= 0"),
            (bool(self.models), "give at least one --model"),
            (self.run_id is None or run_id_problem(self.run_id) is None,
             f"--run-id {self.run_id!r}: {run_id_problem(self.run_id or '')}"),
            (self.check_determinism >= 0, "--check-determinism must be >= 0"),
        ]
        parse_shard(self.shard)  # a UserError naming --shard
        for ok, message in checks:
            if not ok:
                raise UserError(message)
        return self


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a folder inside ``--out`` (None if it can): a run id is one plain
    folder name, so a run never writes outside ``--out``."""
    if not run_id.strip():
        return "is empty"
    if run_id in (".", ".."):
        return "is not a folder name"
    if any(sep in run_id for sep in ("/", "\\", os.sep, os.altsep or "/")) or Path(run_id).is_absolute():
        return "must be a plain folder name, without '/' or '\\' (it names a folder inside --out)"
    if any(ord(c) < 32 or c == "\x7f" for c in run_id):
        return "must not contain control characters"
    return None


T = typing.TypeVar("T")

# pydantic's error types -> what the setting needs, in the words of the messages users see
_EXPECTED = {
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "must be an integer"),
    **dict.fromkeys(("float_parsing", "float_type", "finite_number"), "must be a number"),
    **dict.fromkeys(("bool_parsing", "bool_type"), "must be true or false"),
    "string_type": "must be one text value (a name or a path)",
}
_LIST = "must be a list of names (or 'a,b')"


def decode_settings(cls: type[T], values: dict[str, Any]) -> T:
    """``values`` (from YAML and flags) as the settings dataclass ``cls`` (`RunConfig`, a suite's
    ``Options``): the one place settings are coerced, by the field types through the results codec
    (YAML ``turns: "2"`` -> 2; ``families: order,format`` -> a tuple). A value that does not fit is
    one `UserError` naming the setting and what it must be, never a traceback. Flags arrive typed."""
    hints = typing.get_type_hints(cls)
    prepared = {k: _prepare(k, v, hints.get(k, Any)) for k, v in values.items()}
    try:
        return decode(cls, prepared)
    except RecordError as exc:
        problem: dict[str, Any] = exc.problems[0] if exc.problems else {"loc": (), "type": "", "msg": str(exc)}
        name = str(problem["loc"][0]) if problem["loc"] else "?"
        inner = _inner(hints.get(name, Any))
        expected = _EXPECTED.get(str(problem["type"]), str(problem["msg"]).lower())
        what = _LIST if typing.get_origin(inner) is tuple else expected
        raise UserError(f"setting {name!r} {what}, got {_shown(values.get(name))}") from None


def _inner(hint: Any) -> Any:
    """``X`` of ``X | None``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint


def _prepare(name: str, value: Any, hint: Any) -> Any:
    """What YAML writes but the field type reads otherwise: ``a,b`` or a list of numbers for a
    list of names, a number for a text value. A boolean is no number (pydantic would read it as 1)."""
    hint = _inner(hint)
    if typing.get_origin(hint) is tuple:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                    for v in value):
            return tuple(str(v) for v in value)
    elif hint is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    elif hint in (int, float) and isinstance(value, bool):
        raise UserError(f"setting {name!r} {_EXPECTED[f'{hint.__name__}_type']}, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    kind = {list: "a list", dict: "a mapping", bool: "a boolean", type(None): "nothing"}.get(type(value))
    return kind + f" ({value!r})" if kind else f"{value!r} ({type(value).__name__})"


TEXT_SUFFIXES = {".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".txt", ".md"}


def check_text_files(config: RunConfig) -> None:
    """Every text file a setting names (``--data``, ``--templates``, a suite's ``--population``...)
    must be UTF-8: checked here once, before any model starts, so a loader never fails with a bare
    decoding error. The message names the setting, the file and the line."""
    settings = [(f.name, getattr(config, f.name)) for f in fields(RunConfig) if f.name != "options"]
    if config.options is not None:
        settings += [(f.name, getattr(config.options, f.name)) for f in fields(config.options)]
    for name, value in settings:
        if not isinstance(value, str) or not value:
            continue
        path = Path(value).expanduser()
        if path.suffix.lower() not in TEXT_SUFFIXES or not path.is_file():
            continue
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise UserError(f"--{name.replace('_', '-')} {value}: cannot read it ({exc.strerror or exc})") from None
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[:exc.start].count(b"\n") + 1
            raise UserError(f"--{name.replace('_', '-')} {value}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}: "
                            f"{exc.reason}); save the file as UTF-8") from None
