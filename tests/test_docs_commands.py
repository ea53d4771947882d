"""Every ``robusteval`` command in README.md and docs/ runs as written (issue 34: a documented command
that fails is the first hour lost).

- ``robusteval run ...``: its flags parse and pass the run's own validation (fast), and the whole run
  is dry-run with ``--estimate`` (slow: it reads the data, builds every variant, plans every stage and
  counts prompt tokens with the embedded model's tokenizer; nothing is asked of any model; a run
  with ``--export-requests`` is run as written, the other dry run). A remote model's key is set to
  a dummy: a dry run sends nothing.
- ``robusteval list|perturb|tree build|data check`` and ``--help``: run as written (they ask no model;
  ``tree build`` with ``--estimate``).
- The rest read what a run or another tool wrote (``score``, ``compare``, ``report``, ``serve``,
  ``merge``, ``cache``, ``import-results``), or are synopses with placeholders: each is named in
  `NOT_RUN` with the reason, and a documented command that is neither run nor listed fails the test.

Files of the reader's own that the docs name (``prompts.jsonl``) are written in the test's working
folder first (`OWN_FILES`), and HELM's word lists come from tests/fixtures/helm, so those commands
run too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from robusteval.cli import build_parser, main
from robusteval.cli.run import config_from_args

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
COMMENT = re.compile(r"\s+#\s")
SYNOPSIS = re.compile(r"SPEC|FILE|\.\.\.|\[|<|\bN\b|\||\$")  # placeholders: a synopsis, not a command

# Commands that cannot run offline here, by a piece of their text, and why. Keep this list short:
# a command that could run belongs in the docs as one that does.
NOT_RUN = {
    "--data mmlu-pro": "MMLU-Pro's full split loads from the Hugging Face hub (network; a 400-row sample is "
                       "in ../shared/realdata, used by benchmarks/estimate_scale.py)",
    "--data hallucigen-en": "HalluciGen's test data loads from the Hugging Face hub (network)",
    "--trees trees.json": "needs the trees a `robusteval tree build --output trees.json` run wrote with a model",
    "llamacpp:/models/qwen.gguf": "a model file and an OpenAI key of the reader's own",
    "hf:/models/Qwen2.5-7B-Instruct": "a model folder of the reader's own, on a GPU",
    "base_url=http://127.0.0.1:8000/v1": "a vLLM server of the reader's own (docs/scale.md, one GPU)",
}
# Subcommands that read what a run or another tool wrote, never a model's first hour: not run here.
READS_OUTPUTS = {
    "score": "scores replies another tool wrote (the docs name the reader's files)",
    "compare": "compares run folders a run wrote",
    "plan": "sizes a study from a pilot run folder a run wrote, or a grid file",
    "report": "renders a run folder a run wrote",
    "serve": "serves run folders (a long-running server)",
    "merge": "merges shard runs a run wrote",
    "cache": "works on a store a run wrote",
    "import-results": "imports a batch engine's answers",
    "check-determinism": "asks the model every request twice (minutes); its flags are the run's",
}
# Commands run from a folder of someone else's files, as the docs say: the leaderboard's own copy of
# Stick To Your Role!'s repository (../shared/realdata/value-stability, read only).
RUN_IN = {"personas/real_world_people.json": ROOT.parent / "shared" / "realdata" / "value-stability"}
OWN_FILES = {
    "prompts.jsonl": "".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate((
        "How do I keep basil fresh for a week?", "What should I pack for a day of hiking?"))),
}


def commands() -> list[tuple[str, str]]:
    """(where, command) for every ``robusteval`` line in a code block: continuations joined,
    comments, a leading ``$`` and ``.venv/bin/`` dropped."""
    out = []
    for path in DOCS:
        for block in FENCE.findall(path.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                text = COMMENT.split(line.strip().removeprefix("$ ").removeprefix(".venv/bin/"))[0].strip()
                if text.startswith("robusteval ") and not text.startswith("robusteval measures"):
                    out.append((path.relative_to(ROOT).as_posix(), text))
    return out


REMOTE = re.compile(r"openai:[^\s'\"]*")
REMOTE_REASON = ("asks an OpenAI-compatible server elsewhere (OpenAI's API, a cluster's vLLM replicas): even "
                 "--estimate first checks that each base_url answers, and this machine reaches none")


def why_not_run(command: str) -> str | None:
    if SYNOPSIS.search(command):
        return "a synopsis with placeholders"
    if any("batch=1" not in m and "127.0.0.1" not in m for m in REMOTE.findall(command)):
        return REMOTE_REASON
    for piece, reason in NOT_RUN.items():
        if piece in command:
            return reason
    words = command.split()
    return READS_OUTPUTS.get(words[1]) if words[1] != "run" else None


ALL = commands()
RUNS = [c for c in ALL if c[1].startswith("robusteval run ") and why_not_run(c[1]) is None]
NEEDS_HUB = re.compile(r"--data (mmlu-pro|hallucigen-en)\b")
# a run that cannot be dry-run here still has flags the parser and the run's validation must accept
PARSED = [c for c in ALL if c[1].startswith("robusteval run ") and not SYNOPSIS.search(c[1])
          and (why_not_run(c[1]) in (None, REMOTE_REASON) or NEEDS_HUB.search(c[1]))]
OTHERS = [c for c in ALL if not c[1].startswith("robusteval run ") and why_not_run(c[1]) is None]


def _ids(cases):
    return [f"{w}:{c[11:70]}" for w, c in cases]


def test_every_documented_command_is_run_or_named_with_a_reason():
    """Nothing is left out silently: what is not run has its reason, and most commands run."""
    for where, command in ALL:
        assert (where, command) in RUNS or (where, command) in OTHERS or why_not_run(command), (where, command)
    assert len(RUNS) >= 25 and len(OTHERS) >= 5, (len(RUNS), len(OTHERS), len(ALL))
    used = {piece for piece in NOT_RUN if any(piece in c for _, c in ALL)}
    assert used == set(NOT_RUN), f"no documented command has {set(NOT_RUN) - used}: drop them from NOT_RUN"


def _in_a_folder_with_the_readers_files(tmp_path, monkeypatch, where: str, command: str = "") -> None:
    folder = next((f for piece, f in RUN_IN.items() if piece in command), tmp_path)
    if not folder.is_dir():
        if os.environ.get("ROBUSTEVAL_REQUIRE_REALDATA"):
            pytest.fail(f"{folder} is missing")
        pytest.skip(f"{folder} is not here")
    monkeypatch.chdir(folder)
    # HELM's word lists, which HELM itself downloads at run time (a copy is in tests/fixtures/helm)
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(ROOT / "tests" / "fixtures" / "helm"))
    for name, text in OWN_FILES.items() if folder == tmp_path else ():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _run_the_pages_own_example(where, monkeypatch)


@pytest.mark.parametrize(("where", "command"), PARSED, ids=_ids(PARSED))
def test_a_documented_run_is_accepted(where, command, tmp_path, monkeypatch):
    _in_a_folder_with_the_readers_files(tmp_path, monkeypatch, where, command)
    argv = shlex.split(command)[1:]
    config = config_from_args(build_parser(argv).parse_args(argv))  # the flags' values through the run's validation
    assert config.suite == argv[1]


@pytest.mark.slow
@pytest.mark.parametrize(("where", "command"), RUNS, ids=_ids(RUNS))
def test_a_documented_run_dry_runs_with_estimate(where, command, tmp_path, monkeypatch, capsys):
    _in_a_folder_with_the_readers_files(tmp_path, monkeypatch, where, command)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-key-the-dry-run-never-sends")
    argv = shlex.split(command)[1:]
    exports = "--export-requests" in argv  # the other dry run: the requests written as batch lines
    argv += [*([] if exports else ["--estimate"]), "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "r")]
    assert main(argv) == 0, capsys.readouterr().err[-3000:]
    out = capsys.readouterr()
    assert "estimate for `robusteval run" in out.out or (exports and "requests" in out.err + out.out)


@pytest.mark.parametrize(("where", "command"), OTHERS, ids=_ids(OTHERS))
def test_a_documented_command_that_asks_no_model_runs(where, command, tmp_path, monkeypatch, capsys):
    _in_a_folder_with_the_readers_files(tmp_path, monkeypatch, where, command)
    argv = shlex.split(command)[1:]
    if argv[:2] == ["tree", "build"] and "--estimate" not in argv:
        argv.append("--estimate")
    try:
        code = main([*argv, "--cache-dir", str(tmp_path / "cache")] if argv[0] == "tree" else argv)
    except SystemExit as exc:  # --help
        code = exc.code
    assert code == 0, capsys.readouterr().err[-3000:]


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
