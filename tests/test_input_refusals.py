"""Each input of issue 35 that once ended in a traceback, a silent nonsense run or a hang: now exit 2
and one message naming the flag, option or file (and a UTF-8 BOM, which Excel writes, is read).

In-process `robusteval.cli.main` calls; a model spec points at the deterministic stub, and runs are
``--estimate`` (nothing is asked), so no test waits on a model."""

from __future__ import annotations

import codecs
import json

import pytest

from robusteval.cli import main


@pytest.fixture
def data(tmp_path, mcq_file):
    path = tmp_path / "data.jsonl"
    path.write_bytes(mcq_file.read_bytes())
    return path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``robusteval ARGV`` in this process (argparse's exits included)."""
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv: str, needles: tuple[str, ...]) -> str:
    """Run ``argv``; assert exit 2, no traceback, one line of stderr holding every needle."""
    code, out, err = cli(capsys, *argv)
    assert code == 2, (code, err)
    assert "Traceback" not in err + out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def estimate(stub, tmp_path, *extra: str, data=None, suite: str = "mcq") -> list[str]:
    model = [] if any(a == "--model" for a in extra) else ["--model", f"openai:m?base_url={stub.base_url}"]
    return ["run", suite, "--estimate", "--cache-dir", str(tmp_path / "cache"),
            *(["--data", str(data)] if data else []), *model, *extra]


# ------------------------------------------------------------------ once tracebacks

def test_a_negative_seed(capsys, stub, tmp_path, data):
    refused(capsys, *estimate(stub, tmp_path, "--seed", "-1", data=data),
            needles=("--seed -1: out of range", "[0, 4294967295]"))


def test_a_broken_ipv6_base_url(capsys, stub, tmp_path, data):
    refused(capsys, *estimate(stub, tmp_path, "--model", "openai:x?base_url=http://[::1:8000/v1", data=data),
            needles=("'http://[::1:8000/v1' is not a URL", "Invalid IPv6 URL"))


def test_no_parallel_slots(capsys, stub, tmp_path, data):
    refused(capsys, *estimate(stub, tmp_path, "--model", "llamacpp?n_parallel=0", data=data),
            needles=("option n_parallel=0: out of range", "[1, 256]"))


@pytest.mark.parametrize("command", ["run", "data check"])
def test_a_deeply_nested_json_array(capsys, stub, tmp_path, command):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    argv = estimate(stub, tmp_path, data=deep) if command == "run" else ["data", "check", str(deep)]
    refused(capsys, *argv, needles=(f"{deep}:1: JSON nested 100000 deep", "at most 64"))


@pytest.mark.parametrize("port", ["-1", "70000"])
def test_a_port_outside_0_to_65535(capsys, tmp_path, port):
    (tmp_path / "runs").mkdir()
    refused(capsys, "serve", str(tmp_path / "runs"), "--port", port,
            needles=(f"--port {port}: out of range", "[0, 65535]"))


def test_compare_of_runs_of_different_suites(capsys, stub, tmp_path, data):
    common = ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "runs"), "--quiet",
              "--model", f"openai:m?base_url={stub.base_url}"]
    assert cli(capsys, "run", "mcq", "--data", data, "--families", "format", "--limit", "2", "--run-id", "a",
               *common)[0] == 0
    assert cli(capsys, "run", "hallucination", "--step", "detection", "--limit", "2", "--judge", "none",
               "--bootstrap", "100", "--run-id", "b", *common)[0] == 0
    refused(capsys, "compare", tmp_path / "runs" / "a", tmp_path / "runs" / "b",
            needles=("different suites (hallucination, mcq)",))


# ------------------------------------------------------------------ once accepted and run

@pytest.mark.parametrize(("flag", "value", "needle"), [
    ("--temperature", "inf", "--temperature inf: not a finite number; it must be in [0, 10]"),
    ("--temperature", "1e308", "--temperature 1e+308: out of range; it must be in [0, 10]"),
    ("--price-in", "-1", "--price-in -1: out of range; it must be in [0, 1000000]"),
    ("--price-in", "nan", "--price-in nan: not a finite number"),
    ("--price-in", "inf", "--price-in inf: not a finite number"),
    ("--cache-dir", "", "--cache-dir is empty"),
])
def test_nonsense_numbers_and_an_empty_cache_dir(capsys, stub, tmp_path, data, flag, value, needle):
    refused(capsys, *estimate(stub, tmp_path, flag, value, data=data), needles=(needle,))


@pytest.mark.parametrize(("options", "needle"), [
    ("timeout=nan", "option timeout=nan: not a finite number; it must be in (0, 604800]"),
    ("timeout=-1", "option timeout=-1: out of range"),
    ("timeout=0", "option timeout=0: out of range"),
    ("max_concurrency=", "option max_concurrency='' is not an integer"),
    ("batch=1&batch_poll=0", "option batch_poll=0: out of range; it must be in (0, 86400]"),
    ("batch=1&batch_poll=1e9", "option batch_poll=1000000000: out of range"),
    ("batch=1&batch_window=-1", "option batch_window=-1: out of range; it must be in [0, 86400]"),
])
def test_spec_options_outside_their_range(capsys, stub, tmp_path, data, options, needle):
    refused(capsys, *estimate(stub, tmp_path, "--model", f"openai:m?base_url={stub.base_url}&{options}",
                              data=data), needles=(needle,))


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
@pytest.mark.parametrize("command", ["run", "data check"])
def test_a_latin1_data_file_is_named_as_such(capsys, stub, tmp_path, suffix, command):
    latin = tmp_path / f"latin{suffix}"
    latin.write_bytes('{"question": "Café?", "choices": ["a", "b"], "answer": 0}\n'.encode("latin-1")
                      if suffix == ".jsonl" else "question,A,B,answer\nCafé?,x,y,A\n".encode("latin-1"))
    argv = estimate(stub, tmp_path, data=latin) if command == "run" else ["data", "check", str(latin)]
    line = refused(capsys, *argv, needles=(f"{latin}:{1 if suffix == '.jsonl' else 2}: not UTF-8 text",
                                           "byte 0xe9", "Latin-1 / Windows-1252", "save the file as UTF-8"))
    assert line.startswith("error: --data " if command == "run" else "error: ")


def test_a_language_code_that_is_not_iso_639_1(capsys, stub, tmp_path, data):
    refused(capsys, *estimate(stub, tmp_path, "--lang", "zz", suite="hallucination"),
            needles=("--lang 'zz': 'zz' is not an ISO 639-1 language code",))
    refused(capsys, *estimate(stub, tmp_path, "--lang", "de-qq", suite="hallucination"),
            needles=("'qq' is not an ISO 639-1 language code",))


@pytest.mark.parametrize("action", ["stats", "check", "clear"])
def test_cache_dir_naming_a_file(capsys, tmp_path, action):
    store = tmp_path / "responses.sqlite"
    store.write_bytes(b"")
    refused(capsys, "cache", action, "--cache-dir", str(store), needles=(f"--cache-dir {store} is a file",))
    assert store.read_bytes() == b""  # clear touched nothing


def test_tree_build_output_naming_a_folder(capsys, stub, tmp_path):
    refused(capsys, "tree", "build", "--estimate", "--model", f"openai:m?base_url={stub.base_url}",
            "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path),
            needles=(f"--output {str(tmp_path)!r}: is a folder",))


# ------------------------------------------------------------------ once hangs

def test_a_limit_of_twenty_digits(capsys, stub, tmp_path, data):
    refused(capsys, *estimate(stub, tmp_path, "--limit", "99999999999999999999", data=data),
            needles=("--limit 99999999999999999999: out of range", "use --all for every item"))


def test_a_translation_into_no_language(capsys, stub, tmp_path, data):
    refused(capsys, *estimate(stub, tmp_path, "--families", "language:zz", data=data),
            needles=("perturbation 'language:zz': 'zz' is not an ISO 639-1 language code",))


# ------------------------------------------------------------------ accepted: a UTF-8 BOM

@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_utf8_bom_at_the_start_of_a_data_file_is_read(capsys, stub, tmp_path, suffix):
    rows = [{"question": "What is 7 times 6?", "choices": ["42", "36"], "answer": 0},
            {"question": "What is 2 plus 2?", "choices": ["3", "4"], "answer": 1}]
    text = ("\n".join(json.dumps(r) for r in rows) + "\n" if suffix == ".jsonl" else
            "question,A,B,answer\n" + "".join(f"{r['question']},{r['choices'][0]},{r['choices'][1]},"
                                              f"{'AB'[r['answer']]}\n" for r in rows))
    path = tmp_path / f"bom{suffix}"
    path.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    code, out, err = cli(capsys, *estimate(stub, tmp_path, data=path))
    assert code == 0, err
    assert f"{path}: 2 rows read, 2 used" in err
    code, out, err = cli(capsys, "data", "check", str(path))
    assert code == 0, err
    assert "2 rows read, 2 used" in out


def test_a_utf8_bom_in_a_config_file_is_read(capsys, stub, tmp_path, data):
    config = tmp_path / "run.yaml"
    config.write_bytes(codecs.BOM_UTF8 + b"limit: 2\n")
    code, _, err = cli(capsys, *estimate(stub, tmp_path, "--config", str(config), data=data))
    assert code == 0, err
    assert "a seeded sample (--limit 2" in err
