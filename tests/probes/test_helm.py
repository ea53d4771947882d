"""HELM's perturbations against HELM's own expected strings.

The cases are read from `test_perturbation.py` of the installed crfm-helm package (Apache-2.0;
``make setup`` installs it with --no-deps): each test's perturbation and arguments, its instance
(id, input, references) and the strings it asserts. They are applied as HELM's
`TextPerturbation.apply` does: ``Random(instance id)``, the references first where HELM perturbs
them, then the input. HELM's dialect list, names and synonym table are downloaded by HELM at run
time and shipped by no package: the dialect case runs on a fixture in the real format (tests/
fixtures/helm), the person-name and synonym cases only where the real files are present.
"""

from __future__ import annotations

import ast
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from robusteval.errors import UserError
from robusteval.probes import helm, registry, wordnet
from robusteval.probes.apply import helm_item

FIXTURES = Path(__file__).parents[1] / "fixtures" / "helm"


def _helm_tests() -> Path | None:
    try:
        return helm.package_file("test_perturbation.py")
    except UserError:
        return None


@dataclass(frozen=True)
class Case:
    test: str
    cls: str
    kwargs: dict
    instance_id: str
    input: str
    references: tuple[str, ...]
    expected_input: str
    expected_references: dict[int, str]


def _cases() -> list[Case]:
    path = _helm_tests()
    if path is None:
        return []
    cases = []
    for fn in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_") or fn.decorator_list:
            continue  # HELM's skipped tests carry @unittest.skip
        calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        augmenter = next(c for c in calls if c.func.id == "DataAugmenter")  # type: ignore[attr-defined]
        pert = augmenter.keywords[0].value.elts[0]  # type: ignore[attr-defined]
        instance = next(c for c in calls if c.func.id == "Instance")  # type: ignore[attr-defined]
        kw = {k.arg: k.value for k in instance.keywords}
        text_arg = kw["input"].keywords[0] if isinstance(kw["input"], ast.Call) and kw["input"].keywords else None
        if text_arg is None or text_arg.arg != "text":
            continue  # multimedia input: not a text perturbation case
        refs = tuple(ast.literal_eval(r.args[0].keywords[0].value) for r in kw["references"].elts)
        expected_input, expected_refs = None, {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq):
                target = ast.unparse(node.left)
                if target == "instances[1].input.text":
                    expected_input = ast.literal_eval(node.comparators[0])
                elif target.startswith("instances[1].references[") and target.endswith("].output.text"):
                    expected_refs[int(target.split("[")[2].split("]")[0])] = ast.literal_eval(node.comparators[0])
        if expected_input is None:
            continue
        cases.append(Case(fn.name, pert.func.id, {k.arg: ast.literal_eval(k.value) for k in pert.keywords},
                          ast.literal_eval(kw["id"]), ast.literal_eval(text_arg.value), refs, expected_input,
                          expected_refs))
    return cases


CASES = _cases()
# HELM's class -> our name
OURS = {
    "TyposPerturbation": "helm:typos", "MisspellingPerturbation": "helm:misspelling",
    "ContractionPerturbation": "helm:contraction", "ExpansionPerturbation": "helm:expansion",
    "LowerCasePerturbation": "helm:lowercase", "ExtraSpacePerturbation": "helm:extra_space",
    "SpacePerturbation": "helm:space", "FillerWordsPerturbation": "helm:filler", "SynonymPerturbation": "helm:synonym",
    "DialectPerturbation": "helm:dialect", "PersonNamePerturbation": "helm:person_name",
    "GenderPerturbation": "helm:gender",
}
# HELM's `should_perturb_references = True`: the references are perturbed first, from the same generator
PERTURBS_REFERENCES = {"DialectPerturbation", "PersonNamePerturbation", "GenderPerturbation"}


def _rate(case: Case) -> float | None:
    return case.kwargs.get("prob", case.kwargs.get("insert_prob"))


def _fn(case: Case):
    """Our function for the case, with HELM's constructor arguments that are not the rate checked
    against what ours fixes (HELM's run-spec settings)."""
    k = case.kwargs
    if case.cls == "ExtraSpacePerturbation":
        return lambda t, rng, _: helm.extra_space(t, rng, num_spaces=k["num_spaces"])
    if case.cls == "SpacePerturbation":
        return lambda t, rng, _: helm.space(t, rng, max_spaces=k["max_spaces"])
    if case.cls == "FillerWordsPerturbation":
        assert k.get("speaker_ph") is False  # helm:filler is HELM's run spec: speaker phrases off
    if case.cls == "DialectPerturbation":
        assert (k["source_class"], k["target_class"]) == ("SAE", "AAVE")
    if case.cls == "GenderPerturbation":
        assert (k["source_class"], k["target_class"]) == ("male", "female")
        return helm.gender_pronouns if k["mode"] == "pronouns" else helm.gender_terms
    p = registry.REGISTRY[OURS[case.cls]]
    assert isinstance(p, registry.TextPerturbation)
    return p.fn


def test_the_cases_were_read():
    if not CASES:
        why = "crfm-helm is not installed (pip install --no-deps crfm-helm==0.5.16; make setup does)"
        if os.environ.get("ROBUSTEVAL_REQUIRE_HELM"):
            pytest.fail(why)  # CI: HELM's conformance cases must run, never skip
        pytest.skip(why)
    assert {c.cls for c in CASES} >= {"TyposPerturbation", "MisspellingPerturbation", "ContractionPerturbation",
                                      "ExpansionPerturbation", "LowerCasePerturbation", "ExtraSpacePerturbation",
                                      "FillerWordsPerturbation", "DialectPerturbation", "GenderPerturbation",
                                      "PersonNamePerturbation", "SynonymPerturbation", "SpacePerturbation"}


@pytest.mark.parametrize("case", [c for c in CASES if c.cls in OURS], ids=lambda c: c.test)
def test_helm_expected_strings(case, monkeypatch, tmp_path):
    monkeypatch.setattr(helm, "HELM_DATA_URL", "http://127.0.0.1:9/")  # never the network in a test
    if case.cls == "DialectPerturbation":
        monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(FIXTURES))  # HELM's words for this case, HELM's format
    elif case.cls in ("PersonNamePerturbation", "SynonymPerturbation"):
        if case.cls == "SynonymPerturbation":  # HELM's table is not downloadable here: derived from WordNet
            monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(tmp_path))
        try:
            registry.get(OURS[case.cls], skip_missing=False)
        except UserError as exc:
            pytest.skip(f"not available offline: {exc}")
    rng = random.Random(case.instance_id)
    fn, rate = _fn(case), _rate(case)
    if case.cls in PERTURBS_REFERENCES:  # through the path mcq takes: the options (references) first
        name = "helm:gender_terms" if case.kwargs.get("mode") == "terms" else OURS[case.cls]
        p = registry.get(name)
        assert isinstance(p, registry.TextPerturbation) and p.references and p.rate == rate
        text, refs = helm_item(p, case.input, case.references, rng)
    else:
        refs, text = case.references, fn(case.input, rng, rate)
    assert text == case.expected_input
    for i, expected in case.expected_references.items():
        assert refs[i] == expected


def test_helm_seeding_in_a_run_is_helms():
    """mcq's first copy of an item is HELM's default seed (``Random(id)``), its second HELM's seed 1."""
    import asyncio

    from robusteval.probes.apply import perturb_text

    text = "After their marriage, she started a close collaboration with Karvelas."
    first = asyncio.run(perturb_text("helm:typos", text, seed="0:id0:helm:typos#1", instance=("id0", 0)))
    second = asyncio.run(perturb_text("helm:typos", text, seed="0:id0:helm:typos#2", instance=("id0", 1)))
    assert first.text == "After tjeir marriage, she xrwrted a cloae dollabpration with Iarvwlas."  # HELM's string
    assert second.text == helm.typos(text, random.Random("1id0"), 0.1) != first.text


def test_an_mcq_copy_is_helms_instance(monkeypatch):
    """mcq's copy of an item under a perturbation HELM applies to references too: the options are
    perturbed first from the question's generator, so the question (and, with --perturb-options,
    the options) are HELM's strings for that instance (HELM's dialect case, on the fixture)."""
    import asyncio

    from robusteval.probes.apply import perturb_item

    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(FIXTURES))
    question, options = "I will remember this day to be the best day of my life.", ("Is this love?", "No")
    for with_options in (True, False):
        q, opts = asyncio.run(perturb_item("helm:dialect", question, options, seed="0:id0:helm:dialect#1",
                                           instance=("id0", 0), with_options=with_options))
        assert q.text == "I gon remember dis day to b the best day of mah life."
        assert [o.text for o in opts] == (["Is dis love?", "No"] if with_options else [])


def test_dialect_and_names_offline_say_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(helm, "HELM_DATA_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(tmp_path))
    for name, file in (("helm:dialect", "SAE_to_AAVE_mapping.json"), ("helm:person_name", "person_names.txt")):
        with pytest.raises(UserError, match=f"{name} needs HELM's {file}.*could not be downloaded.*"
                                            "ROBUSTEVAL_HELM_DATA"):
            registry.get(name, skip_missing=False)
    assert registry.is_perturbation("helm:dialect")  # known by name: the message is about the data, not the name


def test_the_cli_exits_2_with_one_line_offline(tmp_path):
    env = {**os.environ, "ROBUSTEVAL_HELM_DATA": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    # an address nothing listens on: the loader's download fails at once, as offline
    code = ("import robusteval.probes.helm as h; h.HELM_DATA_URL = 'http://127.0.0.1:9/'; "
            "from robusteval.cli import main; raise SystemExit(main(['perturb', '-p', 'helm:dialect', '--text', 'x']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2
    assert "helm:dialect needs HELM's SAE_to_AAVE_mapping.json" in out.stderr and "Traceback" not in out.stderr


def test_the_downloaded_file_is_kept_and_read_from_the_folder(monkeypatch, tmp_path):
    """The online loader: a file at HELM's address (here a local folder standing in for it) is
    downloaded once into the data folder and read from there afterwards."""
    source = tmp_path / "remote" / "dialect_perturbation"
    source.mkdir(parents=True)
    (source / "SAE_to_AAVE_mapping.json").write_text((FIXTURES / "SAE_to_AAVE_mapping.json").read_text())
    monkeypatch.setattr(helm, "HELM_DATA_URL", (tmp_path / "remote").as_uri() + "/")
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(tmp_path / "data"))
    table, _ = helm.dialect_mapping()
    assert table["with"] == ["wit", "wid"] and (tmp_path / "data" / "SAE_to_AAVE_mapping.json").is_file()
    assert helm.dialect("I will go with my brother.", random.Random("q1"), 1.0) == \
        helm.dialect("I will go with my brother.", random.Random("q1"), 1.0)
    out = helm.dialect("I will go with my brother.", random.Random("q1"), 1.0)
    # "my" stays: HELM's pattern takes the space before it with the match of "with" (HELM's own quirk)
    assert out in {f"I gon go {w} my {b}." for w in ("wit", "wid") for b in ("brotha", "bruh")}
    assert helm.dialect("I will go.", random.Random(0), 0.0) == "I will go."


def test_person_names_persist_and_keep_gender(monkeypatch):
    names = helm.read_names(FIXTURES / "person_names.txt")
    assert names.source == ("jack", "peter", "lauren") and names.target == ("lamar", "tyree", "sharise")
    out = helm.substitute_names(["Peter met Lauren.", "PETER and peter, and Jack."], random.Random("x"), 1.0, names)
    first = out[0].split()[0]
    assert first in ("Lamar", "Tyree") and "Sharise" in out[0]  # a male name for Peter, the female one for Lauren
    assert out[1].startswith(f"{first.upper()} and {first.lower()},")  # the same substitute everywhere, case kept
    with pytest.raises(UserError, match=r"not HELM's person_names.txt"):
        helm.read_names(FIXTURES / "SAE_to_AAVE_mapping.json")


def test_synonym_says_why_it_is_unavailable(monkeypatch, tmp_path):
    """Where WordNet is installed the synonym table is derived from it, so its absence is simulated."""
    monkeypatch.setattr(helm, "HELM_DATA_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(tmp_path))

    def absent(cache_dir):
        raise wordnet.Missing("no WordNet 3.0")

    monkeypatch.setattr(wordnet, "wordnet", absent)
    helm._synonyms.cache_clear()
    try:
        with pytest.raises(UserError, match=r"helm:synonym needs .*no WordNet 3\.0"):
            registry.get("helm:synonym", skip_missing=False)
    finally:
        helm._synonyms.cache_clear()  # later tests see the real WordNet again


def test_mild_mix_is_helms_composition_in_helms_order():
    """HELM's robustness runs use MildMixPerturbation: lowercase, contraction, misspelling (0.1),
    space (1-3), in that order from one generator. HELM's test file has no case for it, so its
    parts' pinned strings above and this order are what hold it to HELM."""
    text = "She is sure that Already, the new product is not available."
    rng_a, rng_b = random.Random("id0"), random.Random("id0")
    out = helm.mild_mix(text, rng_a, 0.1)
    step = helm.contraction(helm.lowercase(text, rng_b), rng_b)
    assert out == helm.space(helm.misspelling(step, rng_b, 0.1), rng_b)
    assert out == out.lower() and out.replace("  ", " ").replace("  ", " ").startswith("she's sure that")
    assert helm.mild_mix(text, random.Random(0), 1.0) != helm.mild_mix(text, random.Random(0), 0.0)


def test_a_run_skips_a_perturbation_whose_data_is_unavailable(monkeypatch, tmp_path, capsys):
    """Offline, a run asked for helm:dialect still runs: one loud warning naming the file, and every
    copy (mcq's items with their options, consistency's variants, tree's leaves) rejected with the
    reason `registry.UNAVAILABLE_DATA`; the other perturbations are untouched."""
    import asyncio

    from robusteval.probes.apply import perturb_item, perturb_text
    from robusteval.probes.tree import lexical_fn

    monkeypatch.setattr(helm, "HELM_DATA_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(tmp_path))
    p = registry.get("helm:dialect")
    assert isinstance(p, registry.TextPerturbation) and "SAE_to_AAVE_mapping.json" in (p.missing or "")
    registry.get("helm:dialect")
    warned = capsys.readouterr().err
    assert warned.count("helm:dialect SKIPPED") == 1 and "SAE_to_AAVE_mapping.json" in warned  # once a process
    text = "I will remember this day."
    out = asyncio.run(perturb_text("helm:dialect", text, seed="0:q:helm:dialect#1", instance=("q", 0)))
    assert out.text is None and out.rejections == (registry.UNAVAILABLE_DATA,)
    q, opts = asyncio.run(perturb_item("helm:dialect", text, ("Is this love?", "No"), seed="0:q:helm:dialect#1",
                                       instance=("q", 0), with_options=True))
    assert q.text is None and q.rejections == (registry.UNAVAILABLE_DATA,) and opts == ()
    typos = asyncio.run(perturb_text("helm:typos", text, seed="0:q:helm:typos#1", instance=("q", 0)))
    assert typos.text and typos.text != text  # another family of the same run is as before
    assert lexical_fn("helm:dialect", 0.1)(text, random.Random(0)) == text  # tree: the leaf is rejected
    with pytest.raises(UserError, match=r"helm:dialect needs HELM's SAE_to_AAVE_mapping\.json"):
        registry.get("helm:dialect", skip_missing=False)  # robusteval perturb: ends on it (exit 2)
    monkeypatch.setenv("ROBUSTEVAL_HELM_DATA", str(FIXTURES))  # the file there: nothing skipped
    assert registry.get("helm:dialect").missing is None  # type: ignore[union-attr]


def test_wordnet_offline_from_debians_database(tmp_path):
    """Without NLTK's data, WordNet 3.0 is read from Debian's database (copied into an NLTK data
    folder with the lexnames NLTK wants); the synonym table derived from it holds HELM's entries."""
    from robusteval.probes import wordnet

    pytest.importorskip("nltk")
    if not all((Path(wordnet.DEBIAN_WORDNET) / f).is_file() for f in wordnet.WORDNET_FILES):
        pytest.skip("Debian's wordnet-base and wordnet-sense-index are not installed (make helm-synonym)")
    reader = wordnet.wordnet(tmp_path)
    assert reader._morphy("movies", "n") == ["movie"] and reader._morphy("watched", "v") == ["watch"]
    movie = wordnet.derived(reader, "movie", "n")
    assert movie[:3] == ["movie", "film", "picture"] and "motion-picture show" in movie  # "_" read as a space
    assert wordnet.derived(reader, "again", "r") == ["again", "once again", "once more", "over again"]
    assert len(wordnet.LEXNAMES) == 45


def test_missing_wordnet_names_what_to_install(monkeypatch, tmp_path):
    pytest.importorskip("nltk")
    from nltk.corpus import wordnet as nltk_wordnet

    from robusteval.probes import wordnet

    def absent():
        raise LookupError("no wordnet")

    monkeypatch.setattr(nltk_wordnet, "ensure_loaded", absent)
    monkeypatch.setenv("ROBUSTEVAL_WORDNET", str(tmp_path))
    with pytest.raises(wordnet.Missing, match=r"lacks data\.noun.*apt-get install wordnet-base wordnet-sense-index"):
        wordnet.wordnet(tmp_path / "cache")


def test_helm_data_lives_in_the_cache_folder_robusteval_was_given(monkeypatch, tmp_path):
    """With ROBUSTEVAL_CACHE_DIR set (and no ROBUSTEVAL_HELM_DATA), HELM's files are looked for, and the
    offline message points, under it: once the message named ~/.cache/robusteval/helm whatever was set."""
    monkeypatch.setattr(helm, "HELM_DATA_URL", "http://127.0.0.1:9/")
    monkeypatch.delenv("ROBUSTEVAL_HELM_DATA", raising=False)
    monkeypatch.setenv("ROBUSTEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(UserError) as caught:
        helm.downloaded_file("dialect", "SAE_to_AAVE_mapping.json")
    assert f"it is not in {tmp_path / 'cache' / 'helm'} and could not be downloaded" in str(caught.value)
    assert ".cache/robusteval" not in str(caught.value).replace(str(tmp_path), "")
    (tmp_path / "cache" / "helm").mkdir(parents=True)
    (tmp_path / "cache" / "helm" / "SAE_to_AAVE_mapping.json").write_bytes(
        (FIXTURES / "SAE_to_AAVE_mapping.json").read_bytes())
    assert helm.downloaded_file("dialect", "SAE_to_AAVE_mapping.json") == tmp_path / "cache" / "helm" / \
        "SAE_to_AAVE_mapping.json"
