"""A run's configuration from YAML and flags: the common settings (`config.RunConfig`) and the named
suite's ``Options``, each coerced by `config.decode_settings` and validated (common checks, then the
suite's ``validate``).

It sits between the command line and the suites: it looks suites up in their registry
(`robusteval.suite_specs`), which `config` must not (suites and results read `RunConfig`)."""

from __future__ import annotations

import argparse
from dataclasses import fields, replace
from typing import Any

from robusteval.config import RunConfig, decode_settings
from robusteval.errors import UserError
from robusteval.files import parse_yaml, read_text
from robusteval.models.spec import parse_model_spec
from robusteval.suite_specs import suite_spec


def suite_flags(suite_name: str) -> dict[str, str]:
    """The suite's own settings -> their flags (``n_shots`` -> ``--shots-per-question``), from its parser."""
    parser = argparse.ArgumentParser(add_help=False)
    suite_spec(suite_name).suite().add_arguments(parser)
    return {a.dest: max(a.option_strings, key=len) for a in parser._actions if a.option_strings}


def unused_settings_message(suite_name: str, given: list[str]) -> str:
    """The error for common settings a suite does not read, naming the flags it does take."""
    own = list(suite_flags(suite_name).values())
    flags = ", ".join(f"--{name.replace('_', '-')}" for name in given)
    return (f"`robusteval run {suite_name}` does not use {flags} (given as a flag or in --config); "
            f"its own flags: {', '.join(own) or 'none'}; common flags: see `robusteval run {suite_name} --help`")



def load_config_file(path: str, suite: str | None = None) -> dict:
    """Read a YAML config; errors name the file and line. ``suite``: the one named on the command
    line, whose own settings the file may also hold."""
    data = parse_yaml(read_text(path, f"--config {path}"), path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of settings (key: value), got {type(data).__name__}")
    known = {f.name for f in fields(RunConfig)} - {"options"} | {"model"}
    named = data.get("suite")
    if suite is not None and named is not None and str(named) != suite:
        # the file was written for another suite: its settings would be read as this one's, or dropped
        raise UserError(f"{path}: suite: {named} in the file, but the command runs {suite}; run "
                        f"`robusteval run {named} --config {path}`, or change or remove its suite: line")
    suite = suite or named
    if suite is not None:
        spec = suite_spec(str(suite))
        # another suite's settings (mcq's families in a persona file) are refused as unused, naming them
        known |= {f.name for f in fields(spec.options)} | set(spec.unused)
    out = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in known:
            raise UserError(f"{path}: unknown setting {key!r}; known: {', '.join(sorted(known))}")
        if name == "model":
            name = "models"
        out[name] = value
    return out



# A suite's settings that name a model (a judge, a rewriter...): parsed with the models under test.
MODEL_SETTINGS = ("rewriter", "oracle", "judge", "detectors", "interlocutor", "paraphraser", "ner_model")


def _model_settings(options: Any) -> list[tuple[str, str]]:
    """(setting, model spec) of each model the suite's settings name."""
    out: list[tuple[str, str]] = []
    for name in MODEL_SETTINGS:
        value = getattr(options, name, None)
        out += [(name, v) for v in ((value,) if isinstance(value, str) else value or ()) if v and v != "none"]
    return out


def build_config(file_values: dict, flag_values: dict) -> RunConfig:
    """Defaults, overridden by the file, overridden by flags the user actually gave.

    Keys that are not RunConfig fields are the suite's own settings (its ``Options``)."""
    merged = {**file_values, **{k: v for k, v in flag_values.items() if v is not None}}
    suite = suite_spec(str(merged.get("suite", RunConfig.suite)))
    common = {f.name for f in fields(RunConfig)} - {"options"}
    option_names = {f.name for f in fields(suite.options)}
    if unused := [k for k in suite.unused if k in merged and k not in option_names]:
        raise UserError(unused_settings_message(suite.name, unused))
    if unknown := sorted(set(merged) - common - option_names):
        raise UserError(f"settings {', '.join(unknown)} do not apply to suite {suite.name!r}; "
                        f"known: {', '.join(sorted(common | option_names))}")
    options: Any = decode_settings(suite.options, {k: v for k, v in merged.items() if k in option_names},
                              suite_flags(suite.name))
    settings: dict[str, Any] = {k: v for k, v in merged.items() if k in common}
    config = replace(decode_settings(RunConfig, settings), options=options).validated()
    for spec in config.models:
        parse_model_spec(spec)  # its options' ranges and URLs, before the suite plans anything
    for name, spec in _model_settings(options):
        try:
            parse_model_spec(spec)
        except UserError as exc:
            raise UserError(f"{suite_flags(suite.name).get(name, name)} {spec!r}: {exc}") from None
    suite.suite().validate(config, options)
    return config
