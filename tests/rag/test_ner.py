"""Entity extraction: messy replies read into entities; whether they cover the subject."""

from __future__ import annotations

import pytest

from robusteval.errors import UserError
from robusteval.rag.ner import checkable_subject, parse_entities, spacy_entities, subject_found

Q = "When did Marla Quenby start keeping the light on Hesk?"


@pytest.mark.parametrize("reply, expected", [
    ('["Marla Quenby", "Hesk"]', ["Marla Quenby", "Hesk"]),
    ('```json\n["Marla Quenby", "Hesk"]\n```', ["Marla Quenby", "Hesk"]),
    ('Here are the entities:\n- Marla Quenby\n- Hesk', ["Marla Quenby", "Hesk"]),
    ("Marla Quenby, Hesk.", ["Marla Quenby", "Hesk"]),
    ('["Marla Quenby", "Hes', ["Marla Quenby"]),  # cut off: complete strings only
    ('[{"entity": "Hesk"}, {"name": "Marla Quenby"}]', ["Hesk", "Marla Quenby"]),
    ('["Marla Quenby", "Paris", "The Lamp"]', ["Marla Quenby"]),  # names not in the question are dropped
    ("[]", []), ("None", []), (None, []),
])
def test_parse_entities(reply, expected):
    assert parse_entities(reply, Q) == expected


def test_parse_entities_without_question_keeps_all_and_caps():
    many = '["a1", "b2", "c3", "d4", "e5", "f6"]'
    assert parse_entities(many) == ["a1", "b2", "c3", "d4", "e5"]


def test_subject_found():
    assert subject_found(["Marla Quenby"], "Marla Quenby") is True
    assert subject_found(["Quenby"], "Marla Quenby") is True  # contained
    assert subject_found(["the Harvard University crew"], "Harvard University") is True
    assert subject_found(["Harvard"], "Harvard University") is True  # half of the subject's words
    assert subject_found(["Hesk"], "Marla Quenby") is False
    assert subject_found(["Qenby Marla"], "Marla Quenby") is True  # one of two words
    assert subject_found(["Mrla Qenby"], "Marla Quenby") is False  # typos in both words
    assert subject_found([], "Marla Quenby") is False
    assert subject_found(["x"], None) is None


def test_spacy_without_spacy_is_a_user_error():
    try:
        import spacy  # noqa: F401
    except ImportError:
        with pytest.raises(UserError, match="spaCy"):
            spacy_entities(Q, "en_core_web_sm")
    else:
        with pytest.raises(UserError, match="not installed"):
            spacy_entities(Q, "no_such_spacy_model_xyz")


def test_only_subjects_the_question_names_are_checked():
    assert checkable_subject("Marla Quenby", Q) == "Marla Quenby"
    assert checkable_subject("Harvard University", "When was Harvard founded?") == "Harvard University"
    assert checkable_subject("Ctenophora", "Which species are ribbon-shaped planktonic animals?") is None
    assert checkable_subject(None, Q) is None
