import json
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

from robusteval.data.audit import SourceAudit
from robusteval.data.hallucigen import HALLUCINATION_TYPES, load_items, normalise_label, normalise_type, parse_row
from robusteval.data.language import lang_from_name
from robusteval.errors import UserError

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_paraphrase_schema(tmp_path):
    items = load_items(str(FIXTURES / "hallucigen_paraphrase.csv"))
    assert [i.id for i in items] == ["p1", "p2", "p3"]
    assert {i.scenario for i in items} == {"paraphrase"} and {i.lang for i in items} == {"en"}
    assert [i.label for i in items] == ["hyp2", "hyp1", "hyp2"]  # "Hyp2" normalised
    assert items[1].type == "named-entity" and items[1].source == "Leo arrived late, as usual."
    assert items[0].origin.endswith("hallucigen_paraphrase.csv:2")


def test_translation_schema():
    items = load_items(str(FIXTURES / "hallucigen_translation.csv"))
    assert [(i.scenario, i.lang, i.source_lang, i.target_lang) for i in items] == [
        ("translation", "en-de", "en", "de"), ("translation", "fr-en", "fr", "en")]
    assert items[1].hyp1 == "The cat will sleep." and items[1].label == "hyp1"


def test_bundled_trial_set_covers_every_type_scenario_and_language():
    items = load_items("trial")
    assert len(items) == 44 and len({i.id for i in items}) == 44
    for scenario in ("paraphrase", "translation"):
        types = Counter(i.type for i in items if i.scenario == scenario)
        assert set(types) == set(HALLUCINATION_TYPES) and set(types.values()) == {2}
    assert {i.lang for i in items} == {"en", "sv", "en-de", "de-en", "en-fr", "fr-en"}
    for lang in ("en", "sv", "en-de", "de-en", "en-fr", "fr-en"):  # both labels in every language
        assert {i.label for i in items if i.lang == lang} == {"hyp1", "hyp2"}
    assert all(i.labelled and i.hyp1 != i.hyp2 for i in items)


def test_limit_is_a_seeded_sample():
    a, b, c = load_items(None, limit=5, seed=1), load_items(None, limit=5, seed=1), load_items(None, limit=5, seed=2)
    assert [i.id for i in a] == [i.id for i in b] != [i.id for i in c]
    assert len(a) == 5


def test_generation_needs_sources_only(tmp_path):
    path = tmp_path / "sources.jsonl"
    path.write_text(json.dumps({"id": "s1", "source": "Snow fell all night.", "lang": "en"}) + "\n"
                    + json.dumps({"id": "s2", "langpair": "de-en", "source": "Es schneit."}) + "\n")
    items = load_items(str(path), need_pairs=False)
    assert [(i.scenario, i.labelled) for i in items] == [("paraphrase", False), ("translation", False)]
    with pytest.raises(UserError, match=r"sources.jsonl:1: detection needs both hypotheses, hyp1 and hyp2"):
        load_items(str(path))


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "x", "hyp1": "a", "hyp2": "b", "label": "hyp1"}', r"bad.jsonl:1: missing 'source'"),
    ('{"id": "x", "source": "s", "hyp1": "a", "hyp2": "b", "label": "both"}', "label 'both' is not hyp1 or hyp2"),
    ('{"id": "x", "source": "s", "hyp1": "a", "label": "hyp2"}', "needs both hyp1 and hyp2"),
    ('{"id": "x", "langpair": "english", "source": "s"}', "is not like en-de"),
    ('[1, 2]', "expected a JSON object"),
    ('{"id": ', "not valid JSON"),
])
def test_bad_rows_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(UserError, match=message):
        load_items(str(path), need_pairs=False)


def test_file_errors(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_items(str(tmp_path / "none.jsonl"))
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(UserError, match=r"expected a .jsonl, .csv or .tsv"):
        load_items(str(tmp_path / "x.txt"))
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "source": "s"}\n{"id": "a", "source": "t"}\n')
    with pytest.raises(UserError, match=r"id 'a' names two different rows \(line 1 and line 2\)"):
        load_items(str(dup), need_pairs=False)


def test_unknown_hub_name_is_a_user_error():
    with pytest.raises(UserError, match="unknown dataset 'hallucigen-xx'"):
        load_items("hallucigen-xx")
    with pytest.raises(UserError, match="unknown dataset"):
        load_items("hallucigen-en:dev")


def test_normalisers():
    assert normalise_type(" Named_Entity ") == "named-entity" and normalise_type("") is None
    assert [normalise_label(x) for x in ("hyp1", "Hyp 2", "2", "hypothesis_1", "hyp3", None)] == [
        "hyp1", "hyp2", "hyp2", "hyp1", None, None]
    item = parse_row({"source": "s", "lang": "SV"}, "f:1")
    assert (item.id, item.lang, item.scenario) == ("f:1", "sv", "paraphrase")


def test_hub_configs_and_languages(monkeypatch):
    """The hub path with a stand-in for `datasets` (no network): configs, splits and languages."""
    asked = []

    def load_dataset(hub_id, config, split):
        asked.append((hub_id, config, split))
        if config.endswith("translation"):
            pair = config.removesuffix("_translation").replace("_", "-")
            return [{"id": f"{pair}-1", "langpair": pair, "source": "s", "hyp1": "a", "hyp2": "b",
                     "type": "date", "label": "hyp1"}]
        return [{"id": f"{config}-1", "source": "s", "hyp1": "a", "hyp2": "b", "type": "date", "label": "hyp2"}]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    items = load_items("hallucigen-sv:trial")
    assert asked == [("NLP-RISE/HalluciGen", "sv_paraphrase", "trial")]
    assert (items[0].lang, items[0].scenario, items[0].origin) == ("sv", "paraphrase",
                                                                   "NLP-RISE/HalluciGen:sv_paraphrase:trial:1")
    items = load_items("hallucigen")
    assert [i.lang for i in items] == ["en", "sv", "de-en", "en-de", "fr-en", "en-fr"]
    assert asked[-1] == ("NLP-RISE/HalluciGen", "en_fr_translation", "test")

    def offline(*args, **kwargs):
        raise ConnectionError("no network\nmore detail")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=offline))
    with pytest.raises(UserError, match=r"cannot load NLP-RISE/HalluciGen \(en_paraphrase, split test\).*no network; "
                                        r"offline, use --data trial"):
        load_items("hallucigen-en")


# ------------------------------------------------- the task's files: the language is in the name only

REAL = FIXTURES / "hallucigen"  # the released files' layout, our sentences (see its README.md)


def test_swedish_files_load_as_swedish_from_their_name():
    audit = SourceAudit("trial_sv")
    items = load_items(str(REAL / "trial_sv.csv"), audit=audit)
    assert [(i.id, i.scenario, i.lang) for i in items] == [(f"sv-{n}", "paraphrase", "sv") for n in range(1, 5)]
    assert audit.assumed == {"language": "sv (from the file name trial_sv.csv)"}
    assert audit.rows_read == audit.rows_used == 4 and not audit.anomalies


def test_unlabelled_test_files_feed_generation_and_detection():
    assert [i.label for i in load_items(str(REAL / "test_detection_sv.csv"))] == [None] * 3  # predictions only
    with pytest.raises(UserError, match=r"test_generation_sv.csv:2: detection needs both hypotheses"):
        load_items(str(REAL / "test_generation_sv.csv"))
    audit = SourceAudit("test")
    items = load_items(str(REAL / "test_detection_sv.csv"), need_pairs=False, audit=audit)
    assert [(i.lang, i.labelled, i.hyp1 is not None) for i in items] == [("sv", False, True)] * 3
    assert any("no labels" in n for n in audit.notes)
    items = load_items(str(REAL / "test_generation_sv.csv"), need_pairs=False, limit=2, seed=0, audit=audit)
    assert len(items) == 2 and {i.lang for i in items} == {"sv"} and all(i.hyp1 is None for i in items)
    assert (audit.rows_read, audit.rows_used) == (4, 2)
    assert {i.lang for i in load_items(str(REAL / "test_generation_en.csv"), need_pairs=False)} == {"en"}


def test_lang_flag_overrides_and_a_translation_pair_in_the_name():
    audit = SourceAudit("x")
    items = load_items(str(REAL / "trial_sv.csv"), lang="en", audit=audit)
    assert {i.lang for i in items} == {"en"} and audit.assumed == {"language": "en (--lang)"}
    pair = load_items(str(REAL / "trial_de_en.csv"))
    assert [(i.scenario, i.source_lang, i.target_lang) for i in pair] == [("translation", "de", "en")] * 2
    with pytest.raises(UserError, match="--lang 'swedish'"):
        load_items(str(REAL / "trial_sv.csv"), lang="swedish")


def test_a_name_without_language_is_read_from_the_text(tmp_path):
    nameless = tmp_path / "sources.csv"
    nameless.write_bytes((REAL / "test_generation_sv.csv").read_bytes())
    audit = SourceAudit("sources")
    assert {i.lang for i in load_items(str(nameless), need_pairs=False, audit=audit)} == {"sv"}
    assert audit.assumed["language"].startswith("sv (identified from the sources by py3langid, p=")
    mislabelled = tmp_path / "trial_sv.csv"  # English sentences under a Swedish name
    mislabelled.write_bytes((REAL / "test_generation_en.csv").read_bytes())
    audit = SourceAudit("mislabelled")
    assert {i.lang for i in load_items(str(mislabelled), need_pairs=False, audit=audit)} == {"sv"}
    assert list(audit.anomalies) == ["sources read as en (py3langid, p=1.00), the file name says sv: the file name "
                                     "is used (--lang overrides)"]
    unknown = tmp_path / "names.csv"
    unknown.write_text("id,source\n1,Zq\n")
    audit = SourceAudit("unknown")
    assert load_items(str(unknown), need_pairs=False, audit=audit)[0].lang == "en"
    assert "give --lang" in audit.assumed["language"]


@pytest.mark.parametrize(("name", "lang"), [("trial_sv.csv", "sv"), ("test_detection_sv.csv", "sv"),
                                            ("test_generation_en.csv", "en"), ("trial_de_en.csv", "de-en"),
                                            ("test_en_fr.jsonl", "en-fr"), ("hallucigen_paraphrase.csv", None),
                                            ("trial_xx.csv", None), ("sources.csv", None)])
def test_language_from_a_file_name(name, lang):
    assert lang_from_name(name) == lang
