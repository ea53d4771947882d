"""How the default reader read each reply (`readers.content`), end to end through the deterministic stub:
kept in every sample, counted per family in results.json, printed beside each family's table, and
shown above the report's headline; and ``--stop`` reaching the request (and its cache key)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from robusteval.cli import build_parser
from robusteval.cli.run import config_from_args

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _mcq(stub, run_id: str, *extra: str) -> tuple:
    return ("run", "mcq", "--data", FIXTURES / "mcq_small.jsonl", "--model", stub.model(), "--families",
            "order,format", "--run-id", run_id, *extra)


def test_the_way_each_reply_was_read_is_kept_counted_and_shown(cli_run, stub):
    run = cli_run(*_mcq(stub, "r"))
    results, samples = run.written()
    # the stub writes "Let me think. The best answer is X.": read by the sentence, or invalid (a D of 3 options)
    assert {s["read_as"] for s in samples} == {"label", "invalid"}
    assert all((s["read_as"] == "invalid") == (s["status"] == "invalid") for s in samples)
    for family, fm in results["metrics"]["openai:stub"].items():
        counted = Counter(s["read_as"] for s in samples if s["family"] == family)
        assert fm["read_as"] == {way: counted[way] for way in ("label", "invalid")}, family
        assert sum(fm["read_as"].values()) == fm["samples"]
        label = fm["read_as"]["label"]
        line = (f"openai:stub · {family}: {fm['samples']} replies read: {label} by \"The best answer is "
                f"[label]\" ({label / fm['samples']:.0%})")
        assert line in " ".join(run.out.split()), family
        assert line.replace('"', "&#34;") in (run.folder / "report.html").read_text(encoding="utf-8")
        assert line in (run.folder / "report.md").read_text(encoding="utf-8")


def test_another_reader_records_no_way_of_reading(cli_run, stub):
    results, samples = cli_run(*_mcq(stub, "s", "--reader", "score")).written()
    assert {s["read_as"] for s in samples} == {None}
    assert all("read_as" not in fm for fm in results["metrics"]["openai:stub"].values())


def test_stop_strings_reach_the_request_and_its_cache_key(cli_run, stub, tmp_path):
    args = ["run", "mcq", "--stop", "\\n\\n", "--stop", "END", "--cache-dir", str(tmp_path)]
    assert config_from_args(build_parser(args).parse_args(args)).stop == ("\n\n", "END")
    _, plain = cli_run(*_mcq(stub, "plain", "--families", "order")).written()
    results, stopped = cli_run(*_mcq(stub, "stopped", "--families", "order", "--stop", "\\n\\n")).written()
    assert results["config"]["stop"] == ["\n\n"]
    assert len(plain) == len(stopped) and not {s["key"] for s in plain} & {s["key"] for s in stopped}
    config = tmp_path / "empty.yaml"
    config.write_text('stop: [""]\n', encoding="utf-8")
    refused = cli_run(*_mcq(stub, "empty", "--config", config))
    assert refused.code == 2 and "--stop: an empty string" in refused.err and "Traceback" not in refused.err
    assert len(refused.err.strip().splitlines()) == 1


def test_a_reply_naming_an_option_a_copy_shows_is_read_against_the_copys_texts():
    """add_distractor shows one more option and option_paraphrase rewrites them: a reply naming an
    option's text is compared with the texts the model saw, not the item's own (before: an IndexError
    on the added option, and a paraphrased option's text never matched)."""
    from robusteval.probes.design import Copy, Design, expand
    from robusteval.suites.mcq.ask import make_sample
    from robusteval.types import Item, Response

    item = Item("q1", "Which planet is closest to the Sun?", ("Venus", "Mercury", "Earth", "Mars"), 1)
    design = Design(copies={"q1": {"add_distractor": (Copy("add_distractor#1", item.question,
                                                            (*item.options, "Jupiter")),),
                                   "option_paraphrase": (Copy("option_paraphrase#1", item.question,
                                                              ("Planet Venus", "Planet Mercury", "Planet Earth",
                                                               "Planet Mars")),)}})
    added = next(v for v in expand(item, ("add_distractor",), design) if v.name == "add_distractor#1")
    wrong = make_sample("m", item, added, 0, Response(key="k", text="It is Jupiter, the largest."))
    assert (wrong.read_as, wrong.correct, wrong.answer_option) == ("text", False, 4)
    rewritten = next(v for v in expand(item, ("option_paraphrase",), design) if v.name == "option_paraphrase#1")
    right = make_sample("m", item, rewritten, 0, Response(key="k", text="Planet Mercury."))
    assert (right.read_as, right.correct) == ("text", True)
