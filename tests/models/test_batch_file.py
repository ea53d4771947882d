"""`models.batch_file`: a ``batchfile:NAME`` is the ``model`` field of every exported line and is
printed in the hints after a run, so NAME is one line of a served model's length that climbs no path;
``org/model`` (a Hugging Face id, as vLLM serves it) stays a name."""

from __future__ import annotations

import pytest

from robusteval.cli import main
from robusteval.errors import UserError
from robusteval.models.spec import parse_model_spec


@pytest.mark.parametrize(("name", "message"), [
    ("a\nb", "must not contain a line break"),
    ("a\rb", "must not contain a line break"),
    ("../../x", "'.' or '..' as a path part"),
    ("org/../x", "'.' or '..' as a path part"),
    ("./x", "'.' or '..' as a path part"),
    ("x" * 5000, "is 5,000 characters long; a served model's name has at most 256"),
])
def test_a_name_that_is_not_a_served_models_name_is_refused(name, message):
    with pytest.raises(UserError, match="--model batchfile:NAME: the name") as caught:
        parse_model_spec(f"batchfile:{name}")
    assert message in str(caught.value) and name not in str(caught.value)  # the hostile name is not echoed


@pytest.mark.parametrize("name", ["Qwen/Qwen2.5-7B-Instruct", "smollm2", "my model v1.5", "x" * 256])
def test_served_model_names_are_names(name):
    assert parse_model_spec(f"batchfile:{name}").name == name


def test_the_run_is_refused_before_anything_is_written(tmp_path, capsys):
    argv = ["run", "mcq", "--model", "batchfile:a\nb", "--families", "order", "--limit", "2",
            "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "runs")]
    assert main(argv) == 2
    assert "line break" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "c").exists()
