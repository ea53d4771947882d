"""Loaders of the persona suite on the bundled files and on fixtures we wrote in the real schemas."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from robusteval.data.audit import SourceAudit
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
    assert Counter(q.item_values) == dict.fromkeys(VALUES, 2)
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
    male = FIX / "pvq_schema_male.csv"
    q = load_questionnaire(f"pvq40:male={male},female={male}")
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


# ------------------------------------------------------------------ the leaderboard's real files

def test_leaderboard_population_json_with_f_and_m(realdata):
    """personas/real_world_people.json: a JSON list, gender "F"/"M", no ids."""
    audit = SourceAudit("population")
    people = load_population(str(realdata / "value-stability" / "personas" / "real_world_people.json"), audit)
    assert len(people) == 50 and Counter(p.gender for p in people) == {"female": 25, "male": 25}
    assert people[0].name == "Marilyn Monroe" and people[0].gender == "female" and people[0].id == "p01"
    assert people[2].name == "Nelson Mandela" and people[2].gender == "male"
    assert audit.rows_read == 50 and audit.assumed == {"gender": "F = female, M = male (file's spelling)"}


def test_pvq40_folder_gives_each_gender_its_own_wording(realdata):
    folder = realdata / "value-stability" / "data_pvq"
    audit = SourceAudit("questionnaire")
    q = load_questionnaire(f"pvq40:{folder}", audit)
    assert q.name == "pvq40" and len(q.items) == 40 and q.scale[0] == "Not like me at all" and len(q.scale) == 6
    first = q.items[0]
    assert first.text_for("female").startswith("Thinking up new ideas and being creative is important to her.")
    assert first.text_for("male").startswith("Thinking up new ideas and being creative is important to him.")
    with open(folder / "pvq_female_test.csv", encoding="utf-8") as f:
        female = [row[0] for row in csv.reader(f)]
    with open(folder / "pvq_male_test.csv", encoding="utf-8") as f:
        male = [row[0] for row in csv.reader(f)]
    assert [i.text_for("female") for i in q.items] == female and [i.text_for("male") for i in q.items] == male
    # the key in values.json is the standard one: item n scores the value the standard key names
    for value, numbers in PVQ40_KEY.items():
        assert {q.items[n - 1].value for n in numbers} == {value}
    assert audit.rows_read == 40 and audit.rows_used == 40 and not audit.left_out
    assert any("values.json" in n for n in audit.notes) and not any("differs" in n for n in audit.notes)
    # the explicit form gives the same questionnaire
    same = load_questionnaire(f"pvq40:male={folder / 'pvq_male_test.csv'},female={folder / 'pvq_female_test.csv'}")
    assert same == q


def test_pvq40_needs_both_gendered_files(realdata, tmp_path):
    folder = realdata / "value-stability" / "data_pvq"
    with pytest.raises(UserError, match="PVQ-40 is worded by gender"):
        load_questionnaire(f"pvq40:{folder / 'pvq_male_test.csv'}")
    (tmp_path / "pvq_male_test.csv").write_bytes((folder / "pvq_male_test.csv").read_bytes())
    with pytest.raises(UserError, match=r"no pvq_female_test.csv in this folder; PVQ-40 needs both"):
        load_questionnaire(f"pvq40:{tmp_path}")
    with pytest.raises(UserError, match="name both files"):
        load_questionnaire(f"pvq40:male={folder / 'pvq_male_test.csv'}")


def test_svs_folder_with_its_key(realdata):
    audit = SourceAudit("svs")
    q = load_questionnaire(f"svs:{realdata / 'value-stability' / 'data_svs'}", audit)
    assert q.name == "svs" and len(q.items) == 46 and q.scale[0] == "-1 - opposed to my values" and len(q.scale) == 9
    assert q.items[0].text == "EQUALITY (equal opportunity for all)" and q.items[0].value == "universalism"
    assert audit.rows_read == 57 and audit.rows_used == 46
    assert sum(audit.left_out.values()) == 11  # items outside the ten-value key


def test_a_key_file_that_differs_is_used_and_said(tmp_path):
    rows = "".join(f'"Item {n} is important to him.","No","Yes"\n' for n in range(1, 41))
    (tmp_path / "pvq_male_test.csv").write_text(rows)
    (tmp_path / "pvq_female_test.csv").write_text(rows.replace("him", "her"))
    key = {k: list(v) for k, v in PVQ40_KEY.items()}
    key["power"], key["hedonism"] = key["hedonism"], key["power"]
    (tmp_path / "values.json").write_text(json.dumps({"_comment": "x", **{k.replace("_", "-").title(): v
                                                                          for k, v in key.items()}}))
    audit = SourceAudit("q")
    q = load_questionnaire(f"pvq40:{tmp_path}", audit)
    assert q.items[1].value == "hedonism"  # item 2 is power in the standard key
    assert any("differs from the standard key" in n for n in audit.notes)
    (tmp_path / "values.json").write_text('{"Kindness": [1]}')
    with pytest.raises(UserError, match="'Kindness' is not one of the ten values"):
        load_questionnaire(f"pvq40:{tmp_path}")
