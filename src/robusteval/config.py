"""Run configuration: flags, or a YAML file with the same keys; validated in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from robusteval.errors import UserError

from robusteval.suites import SUITES, get_suite


def default_cache_dir() -> Path:
    return Path(os.environ.get("ROBUSTEVAL_CACHE_DIR") or Path.home() / ".cache" / "robusteval")


@dataclass(frozen=True)
class RunConfig:
    suite: str = "mcq"
    models: tuple[str, ...] = ("llamacpp",)
    data: str | None = None  # None: the suite's own default set
    families: tuple[str, ...] = ("order", "format")
    cross: tuple[str, ...] = ()
    scoring: str = "generate"
    templates: str | None = None
    shots: str | None = None
    n_shots: int = 5
    fewshot_multiturn: bool = True
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
    options: Any = None  # the suite's own settings (its Options dataclass)
    estimate: bool = False  # count requests, tokens, time and cost; ask nothing
    check_determinism: int = 0  # ask this many greedy requests again after the run, count replies that differ

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
            (self.check_determinism >= 0, "--check-determinism must be >= 0"),
        ]
        for ok, message in checks:
            if not ok:
                raise UserError(message)
        suite.validate(self, self.options)
        return self


TUPLE_FIELDS = {"models", "families", "cross"}


def load_config_file(path: str, suite: str | None = None) -> dict:
    """Read a YAML config; errors name the file and line. ``suite``: the one named on the command
    line, whose own settings the file may also hold."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise UserError(f"--config {path}: no such file") from None
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
        known |= {f.name for f in fields(get_suite(str(suite)).Options)}
    out = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in known:
            raise UserError(f"{path}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        if name == "model":
            name = "models"
        if name in TUPLE_FIELDS:
            value = tuple(value) if isinstance(value, list) else tuple(str(value).split(","))
        out[name] = value
    return out


def build_config(file_values: dict, flag_values: dict) -> RunConfig:
    """Defaults, overridden by the file, overridden by flags the user actually gave.

    Keys that are not RunConfig fields are the suite's own settings (its ``Options``)."""
    merged = {**file_values, **{k: v for k, v in flag_values.items() if v is not None}}
    suite = get_suite(str(merged.get("suite", RunConfig.suite)))
    common = {f.name for f in fields(RunConfig)}
    option_names = {f.name for f in fields(suite.Options)}
    if unknown := sorted(set(merged) - common - option_names):
        raise UserError(f"settings {', '.join(unknown)} do not apply to suite {suite.NAME!r}")
    for f in fields(suite.Options):  # YAML lists and "a,b" strings for tuple settings
        if f.name in merged and isinstance(f.default, tuple) and not isinstance(merged[f.name], tuple):
            value = merged[f.name]
            merged[f.name] = tuple(value) if isinstance(value, list) else tuple(str(value).split(","))
    try:
        options = suite.Options(**{k: v for k, v in merged.items() if k in option_names})
        config = replace(RunConfig(), **{k: v for k, v in merged.items() if k in common}, options=options)
    except TypeError as exc:
        raise UserError(f"bad configuration: {exc}") from None
    for f in fields(RunConfig):  # YAML may give "5" where a number is meant
        value = getattr(config, f.name)
        if f.name in ("limit", "seed", "max_tokens", "samples", "max_retries", "concurrency", "n_shots",
                      "check_determinism") \
                and value is not None:
            if not isinstance(value, int) or isinstance(value, bool):
                raise UserError(f"setting {f.name!r} must be an integer, got {value!r}")
        if f.name in ("temperature", "top_p", "timeout", "price_in", "price_out") and not isinstance(value, (int, float)):
            raise UserError(f"setting {f.name!r} must be a number, got {value!r}")
    return config.validated()
