"""The suite registry (`robusteval.suite_specs`): every part a spec names exists and has the shape its
readers call, and the CLI, configure, results, the report and ``data check`` read the registry."""

from __future__ import annotations

import dataclasses

import pytest

from robusteval.config import RunConfig
from robusteval.errors import UserError
from robusteval.suite_specs import SUITES, suite_spec


@pytest.mark.parametrize("name", sorted(SUITES))
def test_every_part_a_spec_names_exists(name):
    spec = SUITES[name]
    module = spec.suite()
    assert name == module.NAME and dataclasses.is_dataclass(spec.options)
    for part in ("add_arguments", "validate", "execute"):
        assert callable(getattr(module, part)), f"{name}: no {part}"
    assert all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
               for f in dataclasses.fields(spec.options))
    section = spec.section_module()
    assert section is None or (callable(section.sections) and callable(section.headlines))
    assert spec.metrics is None or spec.metrics_type() is not None
    assert spec.item_values is None or callable(spec.item_values_of())
    assert spec.checker is None or callable(spec.checker_of())
    # common settings: RunConfig's, and mcq's design settings (which users put in any config)
    common = {f.name for f in (*dataclasses.fields(RunConfig), *dataclasses.fields(SUITES["mcq"].options))}
    assert set(spec.unused) <= common


def test_an_unknown_suite_is_one_message_naming_the_suites():
    with pytest.raises(UserError, match="unknown suite 'nope'; available: mcq, consistency"):
        suite_spec("nope")


def test_the_command_line_lists_the_registry(capsys):
    from robusteval.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert all(name in out and spec.summary[:30] in " ".join(out.split()) for name, spec in SUITES.items())


def test_unused_settings_come_from_the_spec():
    from robusteval.configure import build_config

    with pytest.raises(UserError, match="does not use --limit"):
        build_config({}, {"suite": "persona", "limit": 3})
