"""The hallucination suite with scripted models whose behaviour is known, so every metric can be
checked exactly; the real embedded model runs it in test_hallucination_e2e.py."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from dataclasses import replace

import pytest
from rich.console import Console

from robusteval.config import RunConfig
from robusteval.configure import build_config
from robusteval.data.hallucigen import load_items
from robusteval.engine import Engine, Store
from robusteval.errors import UserError
from robusteval.report.terminal_hallucination import matrix_csv, summary_markdown
from robusteval.results.codec import decode, encode
from robusteval.results.hallucination import HallucinationMetrics
from robusteval.results.samples_file import SampleWriter
from robusteval.suites.base import SuiteContext
from robusteval.suites.hallucination import (
    DetectionSample,
    Options,
    cross_items,
    execute,
    vote,
)
from robusteval.testing.scripted import ScriptedBackend
from robusteval.types import GenParams

TRIAL = load_items("trial")
HALLUCINATED = {i.hyp1 if i.label == "hyp1" else i.hyp2 for i in TRIAL}


def _line(prompt: str, name: str) -> str:
    return re.search(rf"^{re.escape(name)} \([^)]*\): (.*)$", prompt, re.MULTILINE).group(1)


def generator(prompt: str) -> str:
    source = _line(prompt, "Source")
    return f"{source} Indeed." if "hallucination" not in prompt else f"{source} Not."


def oracle(prompt: str) -> str:
    """Knows which hypothesis is hallucinated: the trial set's, or the one the generator marked."""
    first = _line(prompt, "hyp1")
    return "hyp1" if first in HALLUCINATED or first.endswith("Not.") else "Answer: hyp2"


def always_first(prompt: str) -> str:
    return "hyp1"


def judge(prompt: str) -> str:
    return "Yes." if re.search(r"Indeed\.$", prompt.split("\n\n")[0]) else "No."


class KeptSamples(SampleWriter):
    """samples.jsonl's writer, keeping what it is handed (the tests read the sample objects)."""

    def __init__(self):
        super().__init__()
        self.kept: list = []

    def write(self, sample) -> None:
        super().write(sample)
        self.kept.append(sample)


async def _execute(tmp_path, options: Options, limit: int | None = 6, data: str | None = None):
    models = {"gen": generator, "oracle": oracle, "first": always_first, "judge": judge}
    store = Store(tmp_path / "s.sqlite")
    engine = Engine(store)
    for name, reply in models.items():
        # the reply is a function of the last user message
        await engine.add_model(name, ScriptedBackend(lambda messages, params, reply=reply: reply(messages[-1].content),
                                                     fingerprint=f"scripted:{name}"))

    async def add(spec: str) -> str:
        assert spec in models
        return spec

    options = replace(options, bootstrap=100)  # CIs are not what these tests check; keep them quick
    config = RunConfig(suite="hallucination", models=("gen",), limit=limit, data=data, options=options)
    kept = KeptSamples()
    ctx = SuiteContext(config=config, options=options, engine=engine, models=["gen"],
                       params=GenParams(max_tokens=32), console=Console(), _add_model=add, samples=kept)
    try:
        result = await execute(ctx)
        assert result.samples == []  # streamed to ctx.samples, none held to the end
        result.samples = kept.kept
        return result
    finally:
        await engine.close()
        store.close()


def test_all_steps_with_known_behaviour(tmp_path):
    options = Options(detectors=("oracle", "first"), prompts=("incorrect", "meaning"), orders="both", judge="judge",
                      ensembles=("oracle/incorrect+first/incorrect", "oracle/incorrect+oracle/meaning+first/meaning"))
    result = asyncio.run(_execute(tmp_path, options))
    m = encode(result.metrics)
    steps = [s.step for s in result.samples]
    assert steps.count("generation") == 6 and steps.count("judge") == 12
    # 6 items, both orders, 4 configs + 2 votes
    assert steps.count("detection") == steps.count("cross") == 6 * 2 * (4 + 2)

    gen = m["generation"]["gen"]
    assert gen["valid"]["value"] == 1.0 and gen["invalid"] == gen["failed"] == 0
    assert gen["judges"]["judge"]["hyp+_faithful"]["value"] == 1.0
    assert gen["judges"]["judge"]["hyp-_hallucinated"]["value"] == 1.0

    for step in ("detection", "cross"):
        d = m[step]["detectors"]
        for variant in ("incorrect", "meaning"):
            assert d[f"oracle/{variant}"]["f1"]["value"] == 1.0
            assert d[f"oracle/{variant}"]["order_consistency"]["value"] == 1.0
            first = d[f"first/{variant}"]
            assert first["accuracy"]["value"] == 0.5  # always position 1: right in exactly one order
            assert first["position_bias"]["chose_first"]["value"] == 1.0
            assert first["position_bias"]["gold_first"] == 0.5
            assert first["order_consistency"]["value"] == 0.0
        # oracle and first disagree whenever the gold is shown second: a tie, so no majority
        tie = d["vote(oracle/incorrect+first/incorrect)"]
        assert tie["accuracy"]["value"] == 0.5 and tie["invalid"] == 6 and tie["invalid_reasons"] == {"no majority": 6}
        assert d["vote(oracle/incorrect+oracle/meaning+first/meaning)"]["f1"]["value"] == 1.0
        agree = m[step]["agreement"]
        assert agree["pairwise"]["oracle/incorrect ~ oracle/meaning"]["cohen_kappa"] == 1.0
        assert agree["pairwise"]["first/incorrect ~ first/meaning"]["agreement"] == 1.0
        assert agree["fleiss_n"] == 12 and agree["configs"] == ["oracle/incorrect", "oracle/meaning",
                                                                "first/incorrect", "first/meaning"]
    assert m["cross"]["matrix"]["gen"]["oracle/incorrect"]["f1"]["value"] == 1.0
    assert m["cross"]["matrix"]["gen"]["first/meaning"]["accuracy"]["value"] == 0.5
    rows = list(csv.DictReader(io.StringIO(result.files["matrix.csv"])))
    assert len(rows) == 6 and rows[0]["generator"] == "gen" and float(rows[0]["f1"]) == 1.0
    assert "## cross" in result.files["summary.md"] and "| oracle/incorrect | 1.000" in result.files["summary.md"]
    # every detection sample's verdict agrees with its own prediction and gold
    for s in result.samples:
        if isinstance(s, DetectionSample) and s.status != "failed":
            assert s.correct == (s.predicted == s.gold)


def test_seeded_single_order_and_separate_steps(tmp_path):
    result = asyncio.run(_execute(tmp_path, Options(step="detection", detectors=("first",), prompts=("support",),
                                                    judge="none"), limit=20))
    assert {s.step for s in result.samples} == {"detection"} and len(result.samples) == 20
    orders = [s.order for s in result.samples]
    assert 0 < orders.count("21") < 20  # seeded coin per item
    d = encode(result.metrics)["detection"]["detectors"]["first/support"]
    assert "order_consistency" not in d and set(encode(result.metrics)) == {"detection"}
    # always-first is right exactly where the gold was shown first
    right = sum((s.gold == "hyp1") == (s.order == "12") for s in result.samples)
    assert d["accuracy"]["value"] == pytest.approx(right / 20)
    again = asyncio.run(_execute(tmp_path, Options(step="detection", detectors=("first",), prompts=("support",),
                                                   judge="none"), limit=20))
    assert [s.order for s in again.samples] == orders


def test_joint_generation_and_unparsed_outputs_skip_cross(tmp_path):
    result = asyncio.run(_execute(tmp_path, Options(step="cross", gen_mode="joint", detectors=("oracle",),
                                                    prompts=("incorrect",), judge="judge"), limit=3))
    gen = [s for s in result.samples if s.step == "generation"]
    # the scripted generator does not write hyp+:/hyp-: lines: every output is invalid, nothing to cross
    assert [s.status for s in gen] == ["invalid"] * 3 and all(s.reason == "no hyp+" for s in gen)
    m = encode(result.metrics)
    assert m["cross"]["matrix"] == {} and m["generation"]["gen"]["judges"] == {}
    assert m["generation"]["gen"]["invalid_reasons"] == {"no hyp+": 3}
    assert "matrix.csv" in result.files


def test_generation_step_needs_sources_only(tmp_path):
    path = tmp_path / "sources.jsonl"
    path.write_text('{"id": "s1", "source": "Snow fell all night.", "lang": "en", "type": "date"}\n'
                    '{"id": "s2", "langpair": "de-en", "source": "Es schneit seit Montag."}\n')
    result = asyncio.run(_execute(tmp_path, Options(step="generation", judge="judge"), limit=None, data=str(path)))
    gen = [s for s in result.samples if s.step == "generation"]
    assert [(g.item_id, g.status, g.type) for g in gen] == [("s1", "ok", "date"), ("s2", "ok", None)]
    assert gen[0].hyp_plus == "Snow fell all night. Indeed." and gen[1].hyp_minus == "Es schneit seit Montag. Not."
    assert "type date" in gen[0].prompts[1] and "translation into English" in gen[1].prompts[0]
    assert set(encode(result.metrics)) == {"generation"} and "matrix.csv" not in result.files
    with pytest.raises(UserError, match="detection needs both hypotheses, hyp1 and hyp2"):
        asyncio.run(_execute(tmp_path, Options(step="detection"), limit=None, data=str(path)))


def _det(config, order, predicted, status="ok", gold="hyp1"):
    return DetectionSample(step="detection", model="m", config=config, generator=None, item_id="a",
                           scenario="paraphrase", lang="en", type="date", order=order, prompt="p", response="r",
                           predicted=predicted, predicted_position=None, gold=gold, correct=predicted == gold,
                           status=status, reason=None, error=None, cached=True, key="k")


def test_vote_abstains_ties_and_failures():
    samples = [_det("x", "21", "hyp1"), _det("y", "21", None, status="invalid"), _det("z", "21", None, status="failed")]
    (v,) = vote(samples, ("x", "y", "z"))
    assert (v.predicted, v.predicted_position, v.status, v.correct) == ("hyp1", 2, "ok", True)
    assert v.response == "x=hyp1 y=invalid z=failed" and v.config == "vote(x+y+z)" and not v.key
    (v,) = vote([_det("x", "12", "hyp1"), _det("y", "12", "hyp2")], ("x", "y"))
    assert (v.predicted, v.status, v.reason, v.correct) == (None, "invalid", "no majority", False)
    (v,) = vote([_det("x", "12", None, status="failed"), _det("y", "12", None, status="failed")], ("x", "y"))
    assert (v.status, v.correct) == ("failed", None)


def test_vote_tie_break_decides_a_tie_as_participants_did():
    tie = [_det("x", "21", "hyp1"), _det("y", "21", "hyp2", gold="hyp1")]
    (v,) = vote(tie, ("x", "y"), tie_break="hyp1")
    assert (v.predicted, v.predicted_position, v.status, v.reason, v.correct) == ("hyp1", 2, "ok", None, True)
    (v,) = vote(tie, ("y", "x"), tie_break="first")  # y voted first
    assert (v.predicted, v.status, v.correct) == ("hyp2", "ok", False)
    (v,) = vote(tie, ("x", "y"))  # the default: no majority
    assert (v.predicted, v.status, v.reason) == (None, "invalid", "no majority")


def test_cross_items_balance_the_hallucinated_position():
    from robusteval.suites.hallucination import GenerationSample

    items = {i.id: i for i in TRIAL}
    generated = [GenerationSample(model="g", item_id=i.id, scenario=i.scenario, lang=i.lang, type=i.type, mode="joint",
                                  source=i.source, prompts=("p",), responses=("r",), hyp_plus=f"{i.id} plus",
                                  hyp_minus=f"{i.id} minus", status="ok" if n % 5 else "invalid", reason=None,
                                  error=None, cached=True, keys=("k",)) for n, i in enumerate(TRIAL)]
    pairs = cross_items(generated, items, seed=0)["g"]
    assert len(pairs) == len([g for g in generated if g.status == "ok"])
    for pair in pairs:
        hallucinated = pair.hyp1 if pair.label == "hyp1" else pair.hyp2
        assert hallucinated == f"{pair.id} minus" and pair.source == items[pair.id].source
    assert 8 < sum(p.label == "hyp1" for p in pairs) < 27


@pytest.mark.parametrize(("values", "message"), [
    ({"step": "everything"}, "--step must be one of"),
    ({"prompts": ("incorrect", "vibes")}, "unknown --prompts vibes"),
    ({"gen_types": ("item", "date")}, "--hallucination-types takes"),
    ({"gen_types": ("dates",)}, "--hallucination-types takes"),
    ({"ensembles": ("llamacpp/incorrect+llamacpp/nope",)}, "unknown detector configuration llamacpp/nope"),
    ({"ensembles": ("llamacpp/incorrect",)}, "needs two or more"),
    ({"ensembles": ("nli+llamacpp/meaning",)}, "unknown detector configuration nli"),  # no --nli-model
    ({"label_max_tokens": 0}, "--label-max-tokens 0: out of range; it must be in [1, 10000000]"),
    ({"orders": "reverse"}, "--orders must be one of"),
    ({"bootstrap": 10}, "--bootstrap 10: out of range; it must be in [100, 1000000]"),
])
def test_bad_settings_are_user_errors(values, message):
    with pytest.raises(UserError, match=re.escape(message)):
        build_config({}, {"suite": "hallucination", **values})


def test_settings_from_flags_and_yaml_lists():
    config = build_config({"ensembles": ["nli+llamacpp/support", "all"], "detectors": ["llamacpp"]},
                          {"suite": "hallucination", "nli_model": "some/nli", "prompts": ("support",)})
    assert config.options.ensembles == ("nli+llamacpp/support", "all") and config.options.detectors == ("llamacpp",)


def test_summary_markdown_escapes_and_lists_every_table():
    metrics = {"generation": {"g": {"valid": {"value": 0.5, "ci_low": 0.0, "ci_high": 1.0}, "invalid": 1, "failed": 0,
                                    "judges": {}}}}
    text = summary_markdown(decode(HallucinationMetrics, metrics))
    assert "## generation" in text and "| g | 0.500 [0.000, 1.000] | 1 | 0 | (no judge) | n/a | n/a |  |" in text
    assert matrix_csv({}) == "generator,detector,f1,f1_low,f1_high,accuracy,samples,invalid\n"


def test_nli_judge_and_baseline_on_a_tiny_model(tmp_path, tiny_nli_model):
    from robusteval.judges.hallucination_nli import nli_detect
    from robusteval.judges.nli import NLIModel

    options = Options(detectors=("oracle",), prompts=("incorrect",), judge="none", nli_model=str(tiny_nli_model),
                      ensembles=("nli+oracle/incorrect",))
    result = asyncio.run(_execute(tmp_path, options, limit=4))
    nli = NLIModel(str(tiny_nli_model))
    items = {i.id: i for i in TRIAL}
    judged = [s for s in result.samples if s.step == "judge"]
    assert len(judged) == 8 and {s.judge for s in judged} == {f"nli:{tiny_nli_model}"}
    for s in judged:  # hyp+ succeeds when entailed, hyp- when not
        p = nli.predict([(items[s.item_id].source, s.text)])[0].entailment
        assert s.score == pytest.approx(p, abs=1e-5)
        assert s.success == float((p >= 0.5) == (s.hypothesis == "hyp+"))
    base = [s for s in result.samples if s.step == "detection" and s.config == "nli"]
    assert len(base) == 4
    for s in base:
        item = items[s.item_id]
        p1, p2 = (r.entailment for r in nli.predict([(item.source, item.hyp1), (item.source, item.hyp2)]))
        assert s.predicted == nli_detect(p1, p2) and s.correct == (s.predicted == item.label)
        shown_first = "hyp2" if s.order == "21" else "hyp1"
        assert s.predicted_position == (1 if s.predicted == shown_first else 2)
    assert "nli" in encode(result.metrics)["cross"]["detectors"]
    assert "vote(nli+oracle/incorrect)" in encode(result.metrics)["detection"]["detectors"]
    assert encode(result.metrics)["detection"]["agreement"]["configs"] == ["oracle/incorrect", "nli"]
