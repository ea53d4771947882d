"""Every ``robusteval run`` command in README.md and docs/ is one the command line accepts: its
flags exist and its values pass the same validation a run does (issue 34: a documented command
that fails is the first hour lost). Commands with placeholders (SPEC, FILE, [..]) or files of the
reader's own (prompts.jsonl, trees.json) are skipped and counted; nothing is asked of any model."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from robusteval.cli import build_parser
from robusteval.cli.run import config_from_args

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
PLACEHOLDER = re.compile(r"SPEC|FILE|\.\.\.|\[|<|\bN\b|\||\$")
OWN_FILE = re.compile(r"\.(jsonl?|csv|tsv|gguf|yaml|yml)$")


def commands() -> list[tuple[str, str]]:
    """(where, command) for every ``robusteval run`` line in a code block, continuations joined,
    comments and a leading ``$`` dropped."""
    out = []
    for path in DOCS:
        for block in FENCE.findall(path.read_text(encoding="utf-8")):
            lines = block.replace("\\\n", " ").splitlines()
            for line in lines:
                text = line.strip().removeprefix("$ ").split("  #")[0].strip()
                if text.startswith("robusteval run "):
                    out.append((path.relative_to(ROOT).as_posix(), text))
    return out


def runnable(command: str) -> bool:
    if PLACEHOLDER.search(command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return not any(OWN_FILE.search(w) and not (ROOT / w).exists() for w in words)


ALL = commands()
CHECKED = [c for c in ALL if runnable(c[1])]


def test_the_docs_have_commands_to_check():
    assert len(CHECKED) >= 20, f"only {len(CHECKED)} of {len(ALL)} documented commands are checkable"


@pytest.mark.parametrize(("where", "command"), CHECKED, ids=[f"{w}:{c[15:60]}" for w, c in CHECKED])
def test_a_documented_command_is_accepted(where, command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_the_pages_own_example(where, monkeypatch)
    argv = shlex.split(command)[1:]
    args = build_parser(argv).parse_args(argv)
    config = config_from_args(args)  # the flags' values through the run's own validation
    assert config.suite == argv[1]


def _run_the_pages_own_example(where: str, monkeypatch) -> None:
    """A page that registers a part in a Python block (docs/extending.md's perturbation) documents
    commands that use it: the block runs first, its registry entry undone after the test."""
    import textwrap

    from robusteval.probes import registry

    blocks = [b for b in re.findall(r"```python\n(.*?)```", (ROOT / where).read_text(encoding="utf-8"), flags=re.S)
              if "REGISTRY[" in b]
    if blocks:
        monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))
        for block in blocks:
            exec(compile(textwrap.dedent(block), where, "exec"), {})
