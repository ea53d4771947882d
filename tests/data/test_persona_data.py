"""Loaders of the persona suite on the bundled files and on fixtures we wrote in the real schemas."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from robusteval.data.persona import (
    PVQ40_KEY,
    SVS_KEY,
    VALUES,
    balanced_subset,
    load_chunk_file,
    load_openers,
    load_population,
    load_questionnaire,
    numbered_questionnaire,
)
from robusteval.errors import UserError

FIX = Path(__file__).parent.parent / "fixtures" / "persona"


def test_bundled_population_is_fifty_balanced_and_varied():
    people = load_population()
    assert len(people) == 50 and len({p.id for p in people}) == 50
    assert Counter(p.gender for p in people) == {"female": 25, "male": 25}
    assert {p.kind for p in people} == {"real", "historical", "fictional"}
    assert all(p.name and len(p.description) > 20 for p in people)


def test_balanced_subset_alternates_genders():
    people = load_population()
    ten = balanced_subset(people, 10)
    assert Counter(p.gender for p in ten) == {"female": 5, "male": 5}
    assert balanced_subset(people, None) == people and balanced_subset(people, 80) == people


def test_user_population_files(tmp_path):
    jsonl = load_population(str(FIX / "population.jsonl"))
    assert [p.id for p in jsonl] == ["a", "b", "p03", "p04"]
    csv_people = load_population(str(FIX / "population.csv"))
    assert [p.gender for p in csv_people] == ["female", "male", "other"] and csv_people[0].kind == "fictional"
    with pytest.raises(UserError, match=r"population_bad_gender.yaml: personas\[1\]: gender 'robot'"):
        load_population(str(FIX / "population_bad_gender.yaml"))
    short = tmp_path / "two.jsonl"
    short.write_text('{"name": "A", "gender": "male", "description": "x"}\n{"name": "B", "gender": "female", '
                     '"description": "y"}\n')
    with pytest.raises(UserError, match="at least 3"):
        load_population(str(short))
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"name": "A", "gender": "male"}\n')
    with pytest.raises(UserError, match=r"missing.jsonl:1: missing description"):
        load_population(str(missing))
    with pytest.raises(UserError, match="no such file"):
        load_population(str(tmp_path / "nope.yaml"))


def test_bundled_questionnaire_has_two_items_per_value():
    q = load_questionnaire("ours")
    assert len(q.items) == 20 and len(q.scale) == 6
    assert Counter(q.item_values) == {v: 2 for v in VALUES}
    assert q.scale[0] == "Not like me at all" and q.scale[-1] == "Very much like me"
    assert "{text}" in q.prompt


def test_questionnaire_yaml_with_reversed_item():
    q = load_questionnaire(str(FIX / "questionnaire.yaml"))
    assert q.name == "tiny" and q.values == ("warmth", "drive") and q.scale == ("No", "Rather not", "Rather yes", "Yes")
    assert [i.reverse for i in q.items] == [False, True, False, False]


def test_questionnaire_errors(tmp_path):
    unquoted = tmp_path / "yesno.yaml"
    unquoted.write_text("scale: [No, Yes]\nitems:\n  - {text: hi, value: power}\n")
    with pytest.raises(UserError, match="must be text"):
        load_questionnaire(str(unquoted))
    bad = tmp_path / "bad.yaml"
    bad.write_text("scale: ['no', 'yes']\nitems:\n  - {text: hi, value: kindness}\n")
    with pytest.raises(UserError, match=r"bad.yaml: items\[0\]: value 'kindness'"):
        load_questionnaire(str(bad))
    with pytest.raises(UserError, match="--questionnaire 'pvq99'"):
        load_questionnaire("pvq99")


def test_pvq40_in_the_leaderboard_csv_schema():
    q = load_questionnaire(f"pvq40:{FIX / 'pvq_schema_male.csv'}")
    assert q.name == "pvq40" and len(q.items) == 40 and len(q.scale) == 6 and "undef" not in q.scale
    for value, numbers in PVQ40_KEY.items():
        assert {q.items[n - 1].value for n in numbers} == {value}
    assert q.items[0].text.startswith("Placeholder portrait 1:")
    # gendered files: each persona reads its own form
    both = numbered_questionnaire("pvq40", {"male": FIX / "pvq_schema_male.csv", "female": FIX / "pvq_schema_male.csv"})
    assert both.items[3].text_for("female") == both.items[3].text_for("male")


def test_svs_key_and_wrong_length():
    assert sum(len(v) for v in SVS_KEY.values()) == 46 and max(max(v) for v in SVS_KEY.values()) == 57
    with pytest.raises(UserError, match="svs has 57 items, the file has 10"):
        load_questionnaire(f"svs:{FIX / 'svs_schema_short.csv'}")


def test_openers_and_chunk_files():
    openers = load_openers()
    assert len(openers.posts) >= 20 and dict(openers.fixed)["chess"] == "1. e4"
    assert len({len(p) // 60 for p in openers.posts}) >= 3  # varied lengths
    assert len(load_chunk_file(FIX / "chunk.jsonl")) == 3
    with pytest.raises(UserError, match=r"chunk_bad.jsonl:2: expected a row with a non-empty 'content'"):
        load_chunk_file(FIX / "chunk_bad.jsonl")
