"""``robusteval list KIND``: one line per name, read from the registries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from robusteval.cli import main
from robusteval.cli.listing import KINDS
from robusteval.models.spec import OPTIONS
from robusteval.probes.registry import REGISTRY
from robusteval.probes.templates import load_templates

EXPECTED = {"datasets": {"mmlu", "arc-easy", "robusteval-en", "squad"}, "families": {"format", "order", "seeds"},
            "perturbations": {*REGISTRY, "language:CODE"}, "templates": {t.name for t in load_templates()},
            "readers": {"robusteval"}, "judges": {"oracle", "embedding", "nli"},
            "backends": {"llamacpp", "openai", "hf"}}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_lists_its_names_one_line_each(kind, capsys):
    assert main(["list", kind]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = {line.split("  ")[0].strip() for line in lines}
    assert EXPECTED[kind] <= names
    assert all(len(line.split("  ", 1)) == 2 and line.split("  ", 1)[1].strip() for line in lines)  # name + text


def test_an_unknown_kind_is_refused(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["list", "models"])
    assert caught.value.code == 2 and "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("suite", ["mcq", "consistency", "hallucination", "persona", "tree"])
def test_a_suites_help_speaks_to_users_not_of_code(suite, capsys):
    with pytest.raises(SystemExit):
        main(["run", suite, "--help"])
    description = capsys.readouterr().out.split("options:")[0]
    assert f"docs/suites/{suite}.md" in description
    assert "`write_copies`" not in description and ".py`" not in description  # no module or function names


def test_cache_help_describes_each_subcommand(capsys):
    with pytest.raises(SystemExit):
        main(["cache", "--help"])
    text = capsys.readouterr().out
    assert all(f"{action}:" in text for action in ("stats", "clear", "check", "merge"))


def test_every_backend_says_what_it_is_and_which_options_it_takes(capsys):
    assert main(["list", "backends"]) == 0
    lines = {line.split("  ", 1)[0]: line.split("  ", 1)[1].strip() for line in capsys.readouterr().out.splitlines()}
    assert set(lines) == set(OPTIONS)
    for kind, text in lines.items():
        what, _, options = text.rpartition("; ")
        assert what and what != kind and f"{kind}:" in what, text  # once "batchfile  batchfile; options "
        assert options == (f"options {', '.join(OPTIONS[kind])}" if OPTIONS[kind] else "no options"), text
    assert "export-requests" in lines["batchfile"] and "import-results" in lines["batchfile"]


def test_output_cut_short_by_its_reader_ends_quietly():
    """``robusteval list perturbations | head -1``: the reader leaves before the output is written;
    once "error: Broken pipe" and exit 2 (or Python's "Exception ignored" at exit)."""
    proc = subprocess.Popen([sys.executable, "-m", "robusteval.cli", "list", "perturbations"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command has even started: every write it makes meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == ""
