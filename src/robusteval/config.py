"""Run configuration common to all suites (`RunConfig`), and the one function that coerces settings
(`decode_settings`). It imports no suite: `robusteval.configure` builds a suite's configuration from
YAML and flags with the suite's ``Options``."""

from __future__ import annotations

import os
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any

from robusteval.data.shard import parse_shard
from robusteval.errors import UserError
from robusteval.files import (
    decode_text,
    default_cache_dir as default_cache_dir,  # the commands' default --cache-dir, from here
)
from robusteval.ranges import FINITE, Range, check, declared_range
from robusteval.results.codec import RecordError, decode

SEED = Range(0, 2**32 - 1)  # NumPy's seeds are 32-bit and non-negative; every --seed takes this range
MAX_SAMPLES = 10**4  # --samples at most: a sample index (a draw's number) is below it


@dataclass(frozen=True)
class RunConfig:
    suite: str = "mcq"
    models: tuple[str, ...] = ("llamacpp",)
    data: str | None = None  # None: the suite's own default set
    # Each number's declared range (`ranges.Range`), checked by `decode_settings`. The upper ends
    # are far beyond any sensible run and there so that a typo (a limit of 10^20, a temperature of
    # 1e308) is refused instead of run for days or sent to a server.
    limit: Annotated[int, Range(1, 10**7, hint="use --all for every item")] | None = 20
    seed: Annotated[int, SEED] = 0
    temperature: Annotated[float, Range(0, 10)] = 0.0
    top_p: Annotated[float, Range(0, 1, low_open=True)] = 1.0
    max_tokens: Annotated[int, Range(1, 10**7)] = 256
    # strings that end a reply where they first appear (left out of it), e.g. "\n\n": the demo's replies
    # end after their first paragraph instead of running on to --max-tokens (docs/performance.md)
    stop: tuple[str, ...] = ()
    samples: Annotated[int, Range(1, MAX_SAMPLES)] = 1
    rpm: Annotated[float, Range(0, 10**9, low_open=True)] | None = None
    tpm: Annotated[float, Range(0, 10**12, low_open=True)] | None = None
    concurrency: Annotated[int, Range(1, 10**5)] | None = None
    timeout: Annotated[float, Range(0, 7 * 86400, low_open=True)] = 300.0  # seconds
    max_retries: Annotated[int, Range(0, 1000)] = 5
    price_in: Annotated[float, Range(0, 10**6)] = 0.0  # per 1M tokens
    price_out: Annotated[float, Range(0, 10**6)] = 0.0
    cache_dir: str = field(default_factory=lambda: str(default_cache_dir()))
    use_cache: bool = True
    out_dir: str = "runs"
    run_id: str | None = None
    overwrite: bool = False  # an existing --run-id folder is replaced (its old files removed) instead of refused
    options: Any = None  # the suite's own settings (its Options dataclass)
    estimate: bool = False  # count requests, tokens, time and cost; ask nothing
    # ask this many greedy requests again after the run, count replies that differ
    check_determinism: Annotated[int, Range(0, 10**6)] = 0
    shard: str | None = None  # "I/N": a deterministic 1/N of the items (data/shard.py); `robusteval merge` joins them

    def validated(self) -> RunConfig:
        """The checks between settings (each number's own range is `decode_settings`'s)."""
        checks = [
            (self.samples == 1 or self.temperature > 0,
             "--samples > 1 repeats identical greedy requests; set --temperature > 0"),
            (bool(self.models), "give at least one --model"),
            (all(self.stop), "--stop: an empty string would end every reply before it starts; give some text"),
            (self.run_id is None or run_id_problem(self.run_id) is None,
             f"--run-id {self.run_id!r}: {run_id_problem(self.run_id or '')}"),
            (bool(self.cache_dir.strip()), "--cache-dir is empty; name the folder of the response store"),
            (bool(self.out_dir.strip()), "--out is empty; name the folder for run folders"),
            (not Path(self.cache_dir).expanduser().exists() or Path(self.cache_dir).expanduser().is_dir(),
             f"--cache-dir {self.cache_dir}: is a file; name the folder the response store lives in"),
            (not Path(self.out_dir).expanduser().exists() or Path(self.out_dir).expanduser().is_dir(),
             f"--out {self.out_dir}: is a file; name the folder for run folders"),
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


def decode_settings(cls: type[T], values: dict[str, Any], flags: dict[str, str] | None = None) -> T:
    """``values`` (from YAML and flags) as the settings dataclass ``cls`` (`RunConfig`, a suite's
    ``Options``): the one place settings are coerced, by the field types through the results codec
    (YAML ``turns: "2"`` -> 2; ``families: order,format`` -> a tuple), and every number checked
    against its field's declared `Range` (any float against `FINITE`). A value that does not fit is
    one `UserError` naming the setting and what it must be, never a traceback. Flags arrive typed.
    ``flags``: the flag of a setting whose flag is not ``--`` and its name (``n_shots``:
    ``--shots-per-question``)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    prepared = {k: _prepare(k, v, hints.get(k, Any)) for k, v in values.items()}
    try:
        decoded = decode(cls, prepared)
    except RecordError as exc:
        problem: dict[str, Any] = exc.problems[0] if exc.problems else {"loc": (), "type": "", "msg": str(exc)}
        name = str(problem["loc"][0]) if problem["loc"] else "?"
        inner = _inner(hints.get(name, Any))
        expected = _EXPECTED.get(str(problem["type"]), str(problem["msg"]).lower())
        what = _LIST if typing.get_origin(inner) is tuple else expected
        raise UserError(f"setting {name!r} {what}, got {_shown(values.get(name))}") from None
    for name in values:
        hint = hints.get(name, Any)
        declared = declared_range(hint) or (FINITE if _inner(_bare(hint)) is float else None)
        if declared is not None:
            check(setting_flag(name, flags), getattr(decoded, name), declared)
    return decoded


def setting_flag(name: str, flags: dict[str, str] | None = None) -> str:
    """How messages name setting ``name``: its flag, with the YAML key when the two differ."""
    flag = (flags or {}).get(name) or _COMMON_FLAGS.get(name) or f"--{name.replace('_', '-')}"
    return flag if flag == f"--{name.replace('_', '-')}" else f"{flag} (YAML {name})"


_COMMON_FLAGS = {"models": "--model", "out_dir": "--out"}


def _bare(hint: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` (also inside ``| None``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.Union[tuple(_bare(a) for a in typing.get_args(hint))]  # noqa: UP007 - built from a tuple
    return getattr(hint, "__origin__", hint) if hasattr(hint, "__metadata__") else hint


def _inner(hint: Any) -> Any:
    """``X`` of ``X | None`` (and of ``Annotated[X, ...]``)."""
    hint = _bare(hint)
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
    must be UTF-8 (a BOM accepted): checked here once, before any model starts, by `files.decode_text`
    as every loader reads, so a loader never fails with a bare decoding error. The message names the
    setting, the file, the line and the encoding the bytes look like."""
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
        decode_text(raw, f"{setting_flag(name)} {value}")
