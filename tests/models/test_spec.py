"""ModelSpec parsing: kind:name?key=value&key=value, with one clear UserError per mistake."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.models.spec import DEFAULT_SPEC, ModelSpec, parse_model_spec


def test_bare_llamacpp_is_the_embedded_default():
    spec = parse_model_spec("llamacpp")
    assert spec == ModelSpec(kind="llamacpp", name="", options={})
    assert spec.label == "llamacpp"


@pytest.mark.parametrize("text", [None, "", "   "])
def test_empty_spec_means_default(text):
    assert parse_model_spec(text) == parse_model_spec(DEFAULT_SPEC)
    assert parse_model_spec(text).kind == "llamacpp"


def test_kind_is_case_insensitive_and_trimmed():
    assert parse_model_spec("  LlamaCpp ").kind == "llamacpp"


def test_llamacpp_path_with_options():
    spec = parse_model_spec("llamacpp:/x.gguf?n_parallel=2")
    assert spec.kind == "llamacpp"
    assert spec.name == "/x.gguf"
    assert spec.options == {"n_parallel": "2"}
    assert spec.int_option("n_parallel", 1) == 2
    assert spec.int_option("n_ctx", 4096) == 4096  # absent -> default
    assert spec.label == "llamacpp:/x.gguf"


def test_openai_with_base_url_and_key_env():
    spec = parse_model_spec("openai:gpt-x?base_url=http://h:1/v1&api_key_env=K")
    assert spec.kind == "openai"
    assert spec.name == "gpt-x"
    assert spec.option("base_url") == "http://h:1/v1"
    assert spec.option("api_key_env") == "K"
    assert spec.option("missing") is None
    assert spec.option("missing", "d") == "d"
    # the label is for tables: model name only, no options (where URLs / key names live)
    assert spec.label == "openai:gpt-x"


def test_name_may_contain_colons():
    # only the first colon separates kind from name (Windows-ish paths, tags like model:latest)
    spec = parse_model_spec("openai:llama3:8b")
    assert spec.name == "llama3:8b"


def test_hf_path():
    spec = parse_model_spec("hf:/models/tiny")
    assert (spec.kind, spec.name, spec.options) == ("hf", "/models/tiny", {})
    assert spec.label == "hf:/models/tiny"


def test_unknown_kind_names_the_kind():
    with pytest.raises(UserError) as err:
        parse_model_spec("ollama:qwen")
    assert "'ollama'" in str(err.value)
    assert "llamacpp" in str(err.value)  # says what is allowed


@pytest.mark.parametrize("text", ["openai", "openai:", "hf", "hf:?device=cpu"])
def test_openai_and_hf_need_a_name(text):
    with pytest.raises(UserError, match="needs a model name"):
        parse_model_spec(text)


def test_malformed_options_are_a_user_error():
    with pytest.raises(UserError, match="key=value"):
        parse_model_spec("llamacpp:/x.gguf?n_parallel")


def test_bad_numeric_option_is_a_user_error_naming_option():
    spec = parse_model_spec("llamacpp:/x.gguf?n_parallel=two&temp=hot")
    with pytest.raises(UserError) as err:
        spec.int_option("n_parallel", 1)
    assert "n_parallel" in str(err.value) and "'two'" in str(err.value)
    with pytest.raises(UserError, match="temp"):
        spec.float_option("temp", 0.0)


def test_float_option_parses():
    spec = parse_model_spec("llamacpp?rpm=2.5")
    assert spec.float_option("rpm", 0.0) == 2.5
    assert spec.float_option("tpm", 7.0) == 7.0
    with pytest.raises(UserError):
        spec.int_option("rpm", 1)  # "2.5" is not an int
