"""Run configuration: flags, or a YAML file with the same keys; validated in one place."""

from __future__ import annotations

import argparse
import os
import re
import types
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from robusteval.data.shard import parse_shard
from robusteval.errors import UserError
from robusteval.suites import UNUSED_COMMON_SETTINGS, get_suite


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
        suite = get_suite(self.suite)
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
        suite.validate(self, self.options)
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


def unused_settings_message(suite_name: str, given: list[str]) -> str:
    """The error for common settings a suite does not read, naming the flags it does take."""
    suite = get_suite(suite_name)
    parser = argparse.ArgumentParser(add_help=False)
    suite.add_arguments(parser)
    own = [max(a.option_strings, key=len) for a in parser._actions if a.option_strings]
    flags = ", ".join(f"--{name.replace('_', '-')}" for name in given)
    return (f"`robusteval run {suite_name}` does not use {flags} (given as a flag or in --config); "
            f"its own flags: {', '.join(own) or 'none'}; common flags: see `robusteval run {suite_name} --help`")


def load_config_file(path: str, suite: str | None = None) -> dict:
    """Read a YAML config; errors name the file and line. ``suite``: the one named on the command
    line, whose own settings the file may also hold."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise UserError(f"--config {path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"--config {path}: is a folder; give a YAML file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"--config {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                        f"save it as UTF-8") from None
    except OSError as exc:
        raise UserError(f"--config {path}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise UserError(f"{where}: malformed YAML ({getattr(exc, 'problem', None) or exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of settings (key: value), got {type(data).__name__}")
    known = {f.name for f in fields(RunConfig)} - {"options"} | {"model"}
    suite = suite or data.get("suite")
    if suite is not None:
        own = {f.name for f in fields(get_suite(str(suite)).Options)}
        # another suite's settings (mcq's families in a persona file) are refused as unused, naming them
        known |= own | set(UNUSED_COMMON_SETTINGS.get(str(suite), ()))
    out = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in known:
            raise UserError(f"{path}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        if name == "model":
            name = "models"
        out[name] = value
    return out


def _coerce(name: str, value: Any, hint: Any) -> Any:
    """``value`` as the type ``hint`` names, where that is unambiguous (YAML ``turns: "2"`` -> 2,
    ``families: order,format`` -> a tuple); anything else is a `UserError` naming the setting and
    the type it needs. Flags arrive already typed and pass through unchanged."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (hint,) = [a for a in args if a is not type(None)] or [Any]
        args = typing.get_args(hint)
    if hint is Any:
        return value
    if typing.get_origin(hint) is tuple:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                    for v in value):
            return tuple(str(v) for v in value)
        raise UserError(f"setting {name!r} must be a list of names (or 'a,b'), got {_shown(value)}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "false", "no", "off"):
            return value.strip().lower() in ("true", "yes", "on")
        raise UserError(f"setting {name!r} must be true or false, got {_shown(value)}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
        raise UserError(f"setting {name!r} must be an integer, got {_shown(value)}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise UserError(f"setting {name!r} must be a number, got {_shown(value)}")
    if hint is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise UserError(f"setting {name!r} must be one text value (a name or a path), got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    kind = {list: "a list", dict: "a mapping", bool: "a boolean", type(None): "nothing"}.get(type(value))
    return kind + f" ({value!r})" if kind else f"{value!r} ({type(value).__name__})"


def build_config(file_values: dict, flag_values: dict) -> RunConfig:
    """Defaults, overridden by the file, overridden by flags the user actually gave.

    Keys that are not RunConfig fields are the suite's own settings (its ``Options``)."""
    merged = {**file_values, **{k: v for k, v in flag_values.items() if v is not None}}
    suite = get_suite(str(merged.get("suite", RunConfig.suite)))
    common = {f.name for f in fields(RunConfig)}
    option_names = {f.name for f in fields(suite.Options)}
    if unused := [k for k in UNUSED_COMMON_SETTINGS.get(suite.NAME, ()) if k in merged and k not in option_names]:
        raise UserError(unused_settings_message(suite.NAME, unused))
    if unknown := sorted(set(merged) - common - option_names):
        raise UserError(f"settings {', '.join(unknown)} do not apply to suite {suite.NAME!r}")
    hints = {**typing.get_type_hints(RunConfig), **typing.get_type_hints(suite.Options)}
    merged = {k: _coerce(k, v, hints.get(k, Any)) for k, v in merged.items()}
    try:
        options = suite.Options(**{k: v for k, v in merged.items() if k in option_names})
        config = replace(RunConfig(), **{k: v for k, v in merged.items() if k in common}, options=options)
    except TypeError as exc:
        raise UserError(f"bad configuration: {exc}") from None
    return config.validated()


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
