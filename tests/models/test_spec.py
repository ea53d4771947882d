"""Model spec strings are parsed in one place, with clear errors."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.models import parse_model_spec


def test_default_is_embedded_llamacpp():
    for text in (None, "", "llamacpp"):
        spec = parse_model_spec(text)
        assert (spec.kind, spec.name, spec.options, spec.label) == ("llamacpp", "", {}, "llamacpp")


def test_name_and_options():
    spec = parse_model_spec("llamacpp:/models/x.gguf?n_parallel=2&n_ctx=1024")
    assert spec.name == "/models/x.gguf" and spec.int_option("n_parallel", 4) == 2
    assert spec.int_option("n_threads", 7) == 7
    spec = parse_model_spec("openai:gpt-x?base_url=http://h:1/v1&api_key_env=K")
    assert spec.options == {"base_url": "http://h:1/v1", "api_key_env": "K"} and spec.label == "openai:gpt-x"
    assert parse_model_spec("hf:org/model").name == "org/model"


@pytest.mark.parametrize("text, message", [
    ("gguf:x", "unknown model kind 'gguf'"),
    ("openai", "openai needs a model name"),
    ("hf:", "hf needs a model name"),
    ("openai:m?base_url", "key=value"),
])
def test_bad_specs(text, message):
    with pytest.raises(UserError, match=message):
        parse_model_spec(text)


def test_bad_numeric_option():
    with pytest.raises(UserError, match="n_parallel='many' is not a int"):
        parse_model_spec("llamacpp?n_parallel=many").int_option("n_parallel", 4)
