"""Property-based fuzzing of everything a user types or hands over: every subcommand's flags (found
by walking the real parser, so a new flag is fuzzed the day it lands), model-spec options, YAML
settings, and data files of odd shapes and encodings.

The properties, for every input drawn: the command ends with exit code 0 or 2 (``cache`` may also
say 1, "damaged"); no traceback; a refusal is one line of stderr naming what was wrong; and a number
outside its declared range (`robusteval.ranges`) is never accepted (exit 0).

Nothing waits on a model: ``run`` and ``tree build`` go as far as ``--estimate`` would start (the
planning is replaced by a marker, after every setting is decoded and checked), ``serve`` stops
before binding, ``check-determinism`` before asking; the data-file properties run the real mcq
``--estimate`` against the deterministic stub, and ``data check``. Hypothesis draws a bounded
number of examples with a fixed seed (``derandomize``), so CI runs the same cases in about a minute;
``ROBUSTEVAL_FUZZ_EXAMPLES=N`` draws N per property instead, to look harder locally.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import os
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from robusteval.config import RunConfig, _inner
from robusteval.models.spec import OPTIONS
from robusteval.ranges import FINITE, Range, declared_range
from robusteval.testing.openai_stub import StubServer

EXAMPLES = int(os.environ.get("ROBUSTEVAL_FUZZ_EXAMPLES", "0")) or None
SUITES = ("mcq", "consistency", "hallucination", "persona", "tree")
COMMANDS = (*(("run", s) for s in SUITES), ("tree", "build"), ("serve",), ("check-determinism",), ("cache",),
            ("data", "check"), ("compare",), ("report",), ("merge",))
RAN: dict[str, dict[int, int]] = {}  # property -> exit code -> examples; printed by the last test
LOG = os.environ.get("ROBUSTEVAL_FUZZ_LOG")  # a file to append every example's argv, exit code and stderr to


def record(name: str, argv: list[str], code: int, err: str) -> None:
    RAN.setdefault(name, {}).setdefault(code, 0)
    RAN[name][code] += 1
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"property": name, "argv": argv, "code": code, "err": err[-400:]}) + "\n")


def _settings(examples: int):
    return settings(max_examples=EXAMPLES or examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.filter_too_much])


class Reached(Exception):
    """Raised where a command would start its real work: every check before it passed."""


# ------------------------------------------------------------------ the world the commands see

@pytest.fixture(scope="module")
def world(tmp_path_factory, mcq_file_module):
    """Files and folders the drawn paths point at, and the stub model; built once per module."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "data.jsonl").write_bytes(mcq_file_module.read_bytes())
    (root / "empty.jsonl").write_bytes(b"")
    (root / "folder").mkdir()
    (root / "notes.txt").write_text("just text\n")
    (root / "latin.csv").write_bytes("question,A,B,answer\nCafé?,x,y,A\n".encode("latin-1"))
    (root / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (root / "broken.yaml").write_text("limit: [unclosed\n")
    fake_run = root / "runs" / "fake"
    fake_run.mkdir(parents=True)
    (fake_run / "results.json").write_text("{")
    (fake_run / "samples.jsonl").write_text('{"model": 1}\n')
    mp = pytest.MonkeyPatch()
    (root / "cwd").mkdir()
    mp.chdir(root / "cwd")  # a drawn relative path ("é", "-") lands here, never in the checkout
    mp.setenv("ROBUSTEVAL_CACHE_DIR", str(root / "default-cache"))
    with StubServer() as stub:
        yield {"root": root, "stub": stub.base_url}
    mp.undo()


@pytest.fixture(scope="module")
def mcq_file_module():
    return Path(__file__).parent / "fixtures" / "mcq_small.jsonl"


@pytest.fixture
def patched():
    """Stop each command where it would ask a model, bind a port or plan a run (for one test: the
    data-file property runs the real ``--estimate``)."""
    mp = pytest.MonkeyPatch()

    def reached(*_args, **_kwargs):
        raise Reached

    import robusteval.check_determinism
    import robusteval.cli.tree
    import robusteval.run
    import robusteval.web.server

    mp.setattr(robusteval.run, "run_or_estimate", reached)  # `run`'s one door to the models (or the estimate)
    mp.setattr(robusteval.cli.tree, "estimate_command", reached)
    mp.setattr(robusteval.web.server, "make_server", reached)
    mp.setattr(robusteval.check_determinism, "check", reached)
    yield
    mp.undo()


def call(argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of ``robusteval ARGV`` in this process; `Reached` counts as exit 0."""
    from robusteval.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except Reached:
            code = 0
    return code, err.getvalue() + ("Traceback" if "Traceback" in out.getvalue() else "")


def assert_clean(argv: list[str], code: int, err: str, *, allowed: tuple[int, ...] = (0, 2)) -> None:
    assert code in allowed, (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        lines = [line.rstrip() for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if "error:" in line]
        assert len(errors) == 1 and lines[-1] == errors[0], (argv, err)
        non_usage = [line for line in lines if not line.startswith(("usage:", " "))]
        assert non_usage == errors, (argv, err)  # argparse's usage lines, then the one message


# ------------------------------------------------------------------ what may be typed

ODD_NUMBERS = ["", " ", "nan", "-nan", "inf", "-inf", "Infinity", "1e308", "1e400", "-1e308", "0", "-0", "-1",
               "0.0", "1.5", "0x10", "1_000", "٣", " 7 ", "+5", "99999999999999999999", "2147483648", "1e-320"]
ODD_TEXT = ["", " ", "-", "--", "\t", "é", "../..", "a,b", ",", "[/bold]", ":smile:", "\u2028", "x" * 300]


def path_values(root: Path) -> list[str]:
    names = ["data.jsonl", "empty.jsonl", "folder", "notes.txt", "latin.csv", "deep.json", "broken.yaml",
             "runs/fake", "runs/fake/samples.jsonl", "runs", "missing.jsonl", "missing/dir/x.json"]
    return [str(root / n) for n in names]


def number_strategy(kind: type) -> st.SearchStrategy[str]:
    base = st.integers(-(2**70), 2**70) if kind is int else st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30))
    return st.one_of(base.map(str), st.integers(-3, 300).map(str), st.sampled_from(ODD_NUMBERS))


def text_strategy(root: Path) -> st.SearchStrategy[str]:
    chars = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")  # argv holds neither
    return st.one_of(st.sampled_from(path_values(root) + ODD_TEXT), st.text(chars, max_size=12))


def spec_strategy(stub: str) -> st.SearchStrategy[str]:
    """Model specs with odd options: numbers in and out of their ranges, odd URLs, unknown keys."""
    def build(kind: str, pairs: list[tuple[str, str]]) -> str:
        head = {"openai": "openai:m", "llamacpp": "llamacpp", "hf": "hf:m"}[kind]
        return head + ("?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")

    def options(kind: str) -> st.SearchStrategy[list[tuple[str, str]]]:
        keys = st.sampled_from([*OPTIONS[kind], "bogus", "api_key"])
        value = st.one_of(number_strategy(float), st.sampled_from([stub, "http://[::1:8000/v1", "http://h:99999/v1",
                                                                    "ftp://x", "1", "0", "yes", ""]))
        return st.lists(st.tuples(keys, value), max_size=3)

    return st.sampled_from(("openai", "llamacpp", "hf")).flatmap(lambda k: options(k).map(lambda o: build(k, o)))


# ------------------------------------------------------------------ the flags, from the parser

def command_actions(command: tuple[str, ...]) -> list[argparse.Action]:
    from robusteval.cli import build_parser

    parser: argparse.ArgumentParser = build_parser(list(command))
    for word in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]


def hints_for(command: tuple[str, ...]) -> dict[str, typing.Any]:
    from robusteval.suites import get_suite

    suite = command[1] if command[0] == "run" else "tree" if command[0] == "tree" else "mcq"
    return {**typing.get_type_hints(RunConfig, include_extras=True),
            **typing.get_type_hints(get_suite(suite).Options, include_extras=True)}


def range_of(command: tuple[str, ...], action: argparse.Action) -> Range | None:
    """The declared range of a flag's value (None: not a number, or none declared)."""
    from robusteval.cli.check_determinism import REQUESTS
    from robusteval.cli.serve import PORTS

    if command == ("serve",) and action.dest == "port":
        return PORTS
    if command == ("check-determinism",) and action.dest == "n":
        return REQUESTS
    hint = hints_for(command).get(action.dest)
    if hint is not None and _inner(hint) in (int, float):
        return declared_range(hint) or FINITE
    return FINITE if action.type is float else None


def drawn_flags(draw, command, actions, root, stub) -> list[tuple[argparse.Action, list[str]]]:
    """A few optional flags of ``command``, each with a drawn value."""
    optional = [a for a in actions if a.option_strings]
    chosen = draw(st.lists(st.sampled_from(optional), min_size=1, max_size=4, unique_by=lambda a: a.dest)) \
        if optional else []
    out = []
    for action in chosen:
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            out.append((action, [flag]))
            continue
        if action.type in (int, float):
            value = draw(number_strategy(action.type))
        elif action.choices:
            value = draw(st.sampled_from([*map(str, action.choices), "", "bogus"]))
        elif action.dest == "models":
            value = draw(spec_strategy(stub))
        else:
            value = draw(text_strategy(root))
        out.append((action, [f"{flag}={value}"] if value.startswith("-") else [flag, value]))
    return out


def out_of_range(command, flags: list[tuple[argparse.Action, list[str]]]) -> list[str]:
    """The drawn flags whose value parses as argparse would parse it and lies outside its declared range."""
    bad = []
    for action, words in flags:
        declared = range_of(command, action)
        if declared is None or action.nargs == 0:
            continue
        raw = words[-1].split("=", 1)[1] if len(words) == 1 else words[-1]
        try:
            value = (action.type or float)(raw)
        except (ValueError, TypeError):
            continue  # argparse refuses it: exit 2 either way
        if not declared.contains(value):
            bad.append(" ".join(words))
    return bad


@st.composite
def command_line(draw, command, root, stub):
    actions = command_actions(command)
    flags = drawn_flags(draw, command, actions, root, stub)
    base = {
        "run": ["--estimate", "--cache-dir", str(root / "cache"), "--model", f"openai:m?base_url={stub}"],
        "tree": ["--estimate", "--cache-dir", str(root / "cache"), "--model", f"openai:m?base_url={stub}"],
        "serve": [str(root / "runs")],
        "check-determinism": ["--model", f"openai:m?base_url={stub}", "--data", str(root / "data.jsonl")],
        "cache": [draw(st.sampled_from(["stats", "check", "clear", "merge"])), "--cache-dir", str(root / "cache")],
        "data": [draw(st.sampled_from(path_values(root)))],
        "compare": draw(st.lists(st.sampled_from(path_values(root)), min_size=1, max_size=3)),
        "report": draw(st.lists(st.sampled_from(path_values(root)), min_size=1, max_size=2)),
        "merge": [*draw(st.lists(st.sampled_from(path_values(root)), min_size=1, max_size=2)),
                  "--out", str(root / "merged")],
    }[command[0]]
    if command[:2] == ("run", "mcq"):
        base += ["--data", str(root / "data.jsonl")]
    argv = [*command, *base, *(w for _, words in flags for w in words)]
    return argv, out_of_range(command, flags)


# ------------------------------------------------------------------ the properties

@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_flag_of_every_command(world, patched, command):
    @_settings(40)
    @given(data=st.data())
    def prop(data):
        argv, bad = data.draw(command_line(command, world["root"], world["stub"]))
        code, err = call(argv)
        record(" ".join(command), argv, code, err)
        assert_clean(argv, code, err, allowed=(0, 1, 2) if command == ("cache",) else (0, 2))
        assert not (bad and code == 0), (argv, bad, err)  # a number outside its range was accepted

    prop()


def yaml_value() -> st.SearchStrategy[typing.Any]:
    """Mostly numbers (in and out of every range), then text, then lists and mappings."""
    numbers = st.one_of(st.integers(-(2**70), 2**70), st.integers(-3, 300),
                        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, -1, 0.0, 1e308, 0.5]))
    scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=8),
                        st.sampled_from(["1e400", ".inf", "nan", "", "order,format", "language:zz", "zz:x"]))
    nested = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                           st.dictionaries(st.text(max_size=4), inner, max_size=2)),
                          max_leaves=4)
    return st.one_of(numbers, numbers, scalars, nested)


@pytest.mark.parametrize("suite", SUITES)
def test_every_yaml_setting_of_every_suite(world, patched, suite, tmp_path):
    from robusteval.suites import get_suite

    hints = {**typing.get_type_hints(RunConfig, include_extras=True),
             **typing.get_type_hints(get_suite(suite).Options, include_extras=True)}
    names = sorted(set(hints) - {"options", "suite"})

    @_settings(40)
    @given(values=st.dictionaries(st.sampled_from(names), yaml_value(), min_size=1, max_size=3))
    def prop(values):
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump(values, allow_unicode=True), encoding="utf-8")
        argv = ["run", suite, "--config", str(config), "--estimate", "--cache-dir", str(world["root"] / "cache"),
                "--model", f"openai:m?base_url={world['stub']}"]
        code, err = call(argv)
        record(f"yaml {suite}", [*argv, json.dumps(values, default=str)], code, err)
        assert_clean(argv, code, err)
        for name, value in values.items():
            declared = declared_range(hints[name])
            if (declared and isinstance(value, (int, float)) and not isinstance(value, bool)
                    and not declared.contains(value)):
                assert code == 2, (values, err)

    prop()


def data_file() -> st.SearchStrategy[tuple[str, bytes]]:
    """(suffix, bytes) of JSONL/CSV files of odd shapes: good rows, wrong types, deep nesting, other
    encodings, BOMs, blank lines, NULs, enormous fields."""
    good = {"question": "What is 2 plus 2?", "choices": ["3", "4"], "answer": 1}
    json_rows = st.one_of(
        st.just(good),
        st.fixed_dictionaries({"question": st.one_of(st.text(max_size=20), st.integers(), st.none()),
                               "choices": st.one_of(st.lists(st.text(max_size=5), max_size=5), st.text(max_size=5),
                                                    st.integers()),
                               "answer": st.one_of(st.integers(-3, 9), st.text(max_size=2), st.none())}),
        st.recursive(st.one_of(st.integers(), st.text(max_size=4)), lambda x: st.lists(x, max_size=2), max_leaves=4),
        st.integers(1, 300).map(lambda depth: json.loads("[" * depth + "]" * depth)),
    )

    def jsonl(rows, encoding, bom, blank) -> bytes:
        text = ("\n\n" if blank else "\n").join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"
        return (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding, errors="replace")

    def csv_bytes(cells, encoding, bom) -> bytes:
        text = "question,A,B,answer\n" + "".join(",".join(row) + "\n" for row in cells)
        return (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding, errors="replace")

    encodings = st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16", "cp1252"])
    cell = st.one_of(st.text(max_size=6), st.sampled_from(["A", "B", "", '"', "\x00", "é", "x" * 200_000]))
    return st.one_of(
        st.tuples(st.just(".jsonl"), st.builds(jsonl, st.lists(json_rows, min_size=1, max_size=4), encodings,
                                               st.booleans(), st.booleans())),
        st.tuples(st.just(".csv"), st.builds(csv_bytes, st.lists(st.lists(cell, min_size=1, max_size=5),
                                                                 min_size=1, max_size=3), encodings, st.booleans())),
        st.tuples(st.sampled_from([".jsonl", ".csv"]), st.binary(max_size=40)),
    )


def test_data_files_of_odd_shapes(world, tmp_path):
    import robusteval.run

    assert robusteval.run.run_or_estimate.__module__ == "robusteval.run"  # the real one, not `patched`

    @_settings(100)
    @given(file=data_file(), command=st.sampled_from(["run", "data check"]))
    def prop(file, command):
        suffix, raw = file
        path = tmp_path / f"data{suffix}"
        path.write_bytes(raw)
        argv = (["run", "mcq", "--estimate", "--data", str(path), "--cache-dir", str(world["root"] / "cache"),
                 "--families", "order", "--model", f"openai:m?base_url={world['stub']}"]
                if command == "run" else ["data", "check", str(path)])
        code, err = call(argv)
        record("data files", [*argv, repr(raw[:80])], code, err)
        assert_clean(argv, code, err)
        if raw.startswith(codecs.BOM_UTF8) and code == 2:
            assert "BOM" not in err and "not valid JSON (Unexpected UTF-8 BOM" not in err, err

    prop()


def test_zz_examples_were_run():
    """Last in the module: the number of examples each property ran (in CI's log with -rA / -s)."""
    if not RAN:
        pytest.skip("run with the properties above")
    total = sum(n for codes in RAN.values() for n in codes.values())
    print(f"\nfuzz: {total} examples (property: exit code x examples):")
    for name, codes in sorted(RAN.items()):
        print(f"  {name}: " + ", ".join(f"{code} x {n}" for code, n in sorted(codes.items())))
    assert all(codes for codes in RAN.values())
