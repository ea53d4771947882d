"""Settings from YAML and flags: one coercion by the field types (config.decode_settings, through the
results codec), every error one message naming the setting and what it must be."""

from __future__ import annotations

import pytest

from robusteval.config import RunConfig, decode_settings
from robusteval.configure import build_config, load_config_file
from robusteval.errors import UserError


def _tree(tmp_path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return build_config(load_config_file(str(path), "tree"), {"suite": "tree"})


def test_yaml_strings_are_converted_by_the_field_types(tmp_path):
    config = _tree(tmp_path, 'depth: "2"\ntypo_prob: "0.25"\nbuild_only: "yes"\nlexical_kinds: [swap_chars, visual]\n'
                             'modes: closed\nseed: "3"\nner: llm\n')
    o = config.options
    assert (o.depth, o.typo_prob, o.build_only) == (2, 0.25, True)
    assert (o.lexical_kinds, o.modes) == (("swap_chars", "visual"), ("closed",))
    assert config.seed == 3 and isinstance(config, RunConfig)


@pytest.mark.parametrize(("yaml", "message"), [
    ('depth: "two"\n', "setting 'depth' must be an integer, got 'two' (str)"),
    ("depth: 2.5\n", "setting 'depth' must be an integer, got 2.5 (float)"),
    ("depth: true\n", "setting 'depth' must be an integer, got a boolean (True)"),
    ("typo_prob: lots\n", "setting 'typo_prob' must be a number, got 'lots' (str)"),
    ("ner: [llm, spacy]\n", "setting 'ner' must be one text value (a name or a path), got a list (['llm', 'spacy'])"),
    ("modes: {closed: 1}\n", "setting 'modes' must be a list of names (or 'a,b'), got a mapping ({'closed': 1})"),
    ("build_only: maybe\n", "setting 'build_only' must be true or false, got 'maybe' (str)"),
    ("seed: [1]\n", "setting 'seed' must be an integer, got a list ([1])"),
])
def test_a_value_of_the_wrong_kind_is_one_message_naming_the_setting(tmp_path, yaml, message):
    with pytest.raises(UserError) as caught:
        _tree(tmp_path, yaml)
    assert str(caught.value) == message


def test_an_unknown_setting_is_refused_with_the_known_ones(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("depht: 2\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"unknown setting 'depht'; known: .*\bdepth\b.*\bseed\b"):
        load_config_file(str(path), "tree")
    # a setting given past the file (a flag, or a file read for another suite) is refused the same way
    with pytest.raises(UserError, match=r"settings depht do not apply to suite 'tree'; known: .*\bdepth\b"):
        build_config({"depht": 2}, {"suite": "tree"})


def test_decode_settings_works_on_any_settings_dataclass():
    from robusteval.suites.tree import Options

    assert decode_settings(Options, {"k": "4", "retrievers": "bm25"}) == Options(k=4, retrievers=("bm25",))
    assert decode_settings(Options, {"modes": [1, "rag"]}).modes == ("1", "rag")  # a list of numbers: names
    with pytest.raises(UserError, match="setting 'k' must be an integer"):
        decode_settings(Options, {"k": "four"})


def test_a_config_written_for_another_suite_is_refused(tmp_path, capsys):
    from robusteval.cli import main

    path = tmp_path / "sp.yaml"
    path.write_text("suite: persona\n")
    with pytest.raises(UserError, match=r"sp.yaml: suite: persona in the file, but the command runs mcq"):
        load_config_file(str(path), "mcq")
    assert load_config_file(str(path), "persona") == {"suite": "persona"}  # its own suite: read as before
    assert main(["run", "mcq", "--config", str(path), "--model", "openai:stub?base_url=http://127.0.0.1:9/v1",
                 "--limit", "1", "--families", "order", "--out", str(tmp_path / "runs"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "suite: persona in the file, but the command runs mcq" in err
    assert not (tmp_path / "runs").exists()
