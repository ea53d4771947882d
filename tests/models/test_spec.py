"""ModelSpec parsing: kind:name?key=value&key=value, with one clear UserError per mistake."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.models.spec import DEFAULT_SPEC, OPTIONS, ModelSpec, parse_model_spec


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


def test_bad_numeric_option_is_a_user_error_naming_option_when_the_spec_is_parsed():
    with pytest.raises(UserError) as err:
        parse_model_spec("llamacpp:/x.gguf?n_parallel=two")
    assert "n_parallel" in str(err.value) and "'two'" in str(err.value) and "not an integer" in str(err.value)
    with pytest.raises(UserError, match="n_ctx='hot' is not an integer"):
        parse_model_spec("llamacpp:/x.gguf?n_ctx=hot")


@pytest.mark.parametrize(("option", "shown"), [
    ("n_parallel=0", r"n_parallel=0: out of range; it must be in \[1, 256\]"),
    ("n_threads=-3", r"n_threads=-3: out of range"),
    ("cache_ram_mib=-2", r"cache_ram_mib=-2: out of range; it must be in \[-1, 4194304\]; -1 for the default"),
])
def test_llamacpp_numeric_options_outside_their_range_are_refused_at_parse(option, shown):
    with pytest.raises(UserError, match=shown):
        parse_model_spec(f"llamacpp?{option}")


@pytest.mark.parametrize(("option", "shown"), [
    ("timeout=nan", "timeout=nan: not a finite number; it must be in \\(0, 604800\\]"),
    ("timeout=inf", "timeout=inf: not a finite number"),
    ("timeout=-1", "timeout=-1: out of range"),
    ("timeout=0", "timeout=0: out of range"),
    ("max_concurrency=", "max_concurrency='' is not an integer"),
    ("max_concurrency=0", "max_concurrency=0: out of range"),
    ("batch=1&batch_poll=0", "batch_poll=0: out of range; it must be in \\(0, 86400\\]"),
    ("batch=1&batch_poll=nan", "batch_poll=nan: not a finite number"),
    ("batch=1&batch_window=-1", "batch_window=-1: out of range; it must be in \\[0, 86400\\]"),
    ("batch=1&batch_window=1e9", "batch_window=1000000000: out of range"),
])
def test_openai_numeric_options_outside_their_range_are_refused_at_parse(option, shown):
    with pytest.raises(UserError, match=shown):
        parse_model_spec(f"openai:m?base_url=http://127.0.0.1:8000/v1&{option}")


def test_numeric_options_inside_their_range_parse():
    spec = parse_model_spec("openai:m?timeout=0.5&max_concurrency=1&batch_window=0&batch_poll=0.1")
    assert spec.float_option("timeout", 1.0) == pytest.approx(0.5)
    assert spec.int_option("max_concurrency", 4) == 1
    assert parse_model_spec("llamacpp?n_parallel=256&cache_ram_mib=-1").int_option("n_parallel", 1) == 256


def test_a_broken_ipv6_base_url_is_one_message():
    from robusteval.models import load_backend

    with pytest.raises(UserError, match=r"is not a URL \(Invalid IPv6 URL\)"):
        load_backend(parse_model_spec("openai:x?base_url=http://[::1:8000/v1"))
    with pytest.raises(UserError, match="port is not a number in 0-65535"):
        load_backend(parse_model_spec("openai:x?base_url=http://127.0.0.1:99999/v1"))


def test_float_option_parses():
    spec = parse_model_spec("openai:m?timeout=2.5")
    assert spec.float_option("timeout", 0.0) == 2.5
    assert spec.float_option("max_concurrency", 7.0) == 7.0
    with pytest.raises(UserError):
        spec.int_option("timeout", 1)  # "2.5" is not an int


@pytest.mark.parametrize(("text", "kind"), [("openai:m?bogus=1", "openai"), ("llamacpp?rpm=2", "llamacpp"),
                                            ("hf:x?device=cpu&n_ctx=4", "hf"),
                                            ("openai:m?base_url=http://h/v1&timout=5", "openai")])
def test_an_unknown_option_is_an_error_naming_the_valid_ones(text, kind):
    with pytest.raises(UserError) as err:
        parse_model_spec(text)
    message = str(err.value)
    assert "unknown option" in message and f"for {kind}" in message
    assert all(option in message for option in OPTIONS[kind])


@pytest.mark.parametrize("option", ["api_key", "key", "token", "OPENAI_API_KEY", "password"])
def test_a_secret_in_the_spec_is_refused_and_never_echoed(option):
    with pytest.raises(UserError) as err:
        parse_model_spec(f"openai:gpt-x?base_url=https://api.example.com/v1&{option}=sk-abcdef0123456789")
    message = str(err.value)
    assert "environment variable" in message and "api_key_env=" in message
    assert "sk-abcdef0123456789" not in message and "0123456789" not in message


def test_every_option_a_backend_documents_is_accepted():
    parse_model_spec("llamacpp?n_parallel=1&n_ctx=512&n_threads=1&cache_ram_mib=0")
    parse_model_spec("openai:m?base_url=http://h/v1&api_key_env=K&max_concurrency=2&timeout=5")
    parse_model_spec("hf:x?device=cpu&dtype=float32&max_concurrency=1")


def test_a_malformed_spec_message_does_not_echo_a_key():
    with pytest.raises(UserError) as err:
        parse_model_spec("openai:m?api_key=sk-abcdef0123456789&oops")
    assert "sk-abcdef0123456789" not in str(err.value) and "key=value" in str(err.value)


def test_helper_takes_the_options_it_leaves_unset_from_the_model_under_test():
    from robusteval.models.spec import inherit_options, spec_text

    under_test = [parse_model_spec("llamacpp?n_threads=1&n_ctx=2048")]
    plain = inherit_options(parse_model_spec("llamacpp"), under_test)
    assert plain == under_test[0]  # the default rewriter is then the very model under test, started once
    own = inherit_options(parse_model_spec("llamacpp?n_threads=3"), under_test)
    assert own.options == {"n_threads": "3", "n_ctx": "2048"}  # its own option wins, the rest inherited
    other_file = inherit_options(parse_model_spec("llamacpp:/m/other.gguf"), under_test)
    assert other_file.name == "/m/other.gguf" and other_file.options == {"n_threads": "1", "n_ctx": "2048"}
    assert parse_model_spec(spec_text(own)) == own


def test_helper_of_another_kind_or_server_inherits_nothing():
    from robusteval.models.spec import inherit_options

    remote = [parse_model_spec("openai:mine?base_url=http://h:1/v1&max_concurrency=4")]
    assert inherit_options(parse_model_spec("llamacpp"), remote) == parse_model_spec("llamacpp")
    # another OpenAI model is another server: its base_url is not this one's
    other = parse_model_spec("openai:gpt-4o-mini")
    assert inherit_options(other, remote) == other
    # the same name is the same server: the helper is the model under test
    assert inherit_options(parse_model_spec("openai:mine"), remote) == remote[0]
    hf = inherit_options(parse_model_spec("hf:judge"), [parse_model_spec("hf:tested?device=cpu&max_concurrency=2")])
    assert hf.options == {"device": "cpu"}


def test_a_model_under_test_keeps_its_own_spec():
    from robusteval.models.spec import inherit_options

    tested = [parse_model_spec("llamacpp?n_threads=1"), parse_model_spec("llamacpp:/x.gguf")]
    assert inherit_options(tested[1], tested) == tested[1]
