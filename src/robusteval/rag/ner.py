"""Entity extraction, the first RAG stage: which names in the question to look up.

``llm`` (as LexEval): the model is asked for a JSON list of the named entities and its reply,
however messy, is read into a list. ``spacy:MODEL`` uses an installed spaCy pipeline instead
(e.g. ``spacy:en_core_web_sm``). `subject_found` says whether the entities cover the subject the
question is about (a stage that failed when they do not).
"""

from __future__ import annotations

import functools
import json
import re

from robusteval.errors import UserError
from robusteval.readers.aliases import normalize_answer
from robusteval.types import Message

NER_PROMPT = ("List the named entities (people, places, organisations, works, events, things) in the question "
              "below. Reply with a JSON list of strings and nothing else.\n\nQuestion: {question}")
MAX_ENTITIES = 5
_QUOTED = re.compile(r'"([^"\n]{1,80})"')
_LEAD = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|entities?\s*:)\s*", re.I)
_SKIP = re.compile(r"^(here (are|is)|sure|the (named )?entities|none|n/a|\[\]|json)\b", re.I)


def ner_messages(question: str) -> tuple[Message, ...]:
    return (Message("user", NER_PROMPT.format(question=question)),)


def parse_entities(text: str | None, question: str | None = None) -> list[str]:
    """Entities in a reply that should be a JSON list: a list, quoted strings, or comma/line
    separated names. With ``question``, only entities whose words occur in it are kept (a small
    model likes to add names that are not there)."""
    if not text:
        return []
    body = re.sub(r"```(?:json)?", "", text).strip()
    found: list[str] = []
    start, end = body.find("["), body.rfind("]")
    if start >= 0:
        try:
            value = json.loads(body[start:end + 1]) if end > start else None
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list):
            found = [v if isinstance(v, str) else str(v.get("entity") or v.get("name") or v.get("text") or "")
                     if isinstance(v, dict) else "" for v in value]
        else:
            found = _QUOTED.findall(body[start:])
    if not any(found):
        found = [part for line in body.splitlines() if not _SKIP.match(line.strip())
                 for part in _LEAD.sub("", line).split(",")]
    out = []
    for entity in found:
        entity = entity.strip().strip("\"'“”.").strip()
        if entity and len(entity) <= 80 and (question is None or _in_question(entity, question)):
            out.append(entity)
    return list(dict.fromkeys(out))[:MAX_ENTITIES]


def _in_question(entity: str, question: str) -> bool:
    words = set(normalize_answer(question).split())
    ent = normalize_answer(entity).split()
    return bool(ent) and sum(w in words for w in ent) * 2 >= len(ent)


def subject_found(entities: list[str], subject: str | None) -> bool | None:
    """Whether some entity names the subject: one contains the other (normalised), or the entity
    holds at least half of the subject's words. None when the item has no subject."""
    if not subject:
        return None
    subj = normalize_answer(subject)
    subj_words = set(subj.split())
    for entity in entities:
        ent = normalize_answer(entity)
        if not ent:
            continue
        if ent in subj or subj in ent or len(subj_words & set(ent.split())) * 2 >= len(subj_words):
            return True
    return False


def checkable_subject(subject: str | None, question: str) -> str | None:
    """The subject when the original question names it (at least half of its words), else None:
    entity extraction cannot be blamed for missing a subject the question never mentions (SQuAD's
    article titles often are not in the question)."""
    return subject if subject and subject_found([question], subject) else None


@functools.lru_cache(maxsize=2)
def _spacy(model: str):
    try:
        import spacy
    except ImportError:
        raise UserError("--ner spacy needs spaCy and a model: pip install spacy && python -m spacy download "
                        f"{model}") from None
    try:
        return spacy.load(model)
    except OSError:
        raise UserError(f"spaCy model {model!r} is not installed: python -m spacy download {model}") from None


def spacy_entities(question: str, model: str = "en_core_web_sm") -> list[str]:
    doc = _spacy(model)(question)
    return list(dict.fromkeys(e.text for e in doc.ents))[:MAX_ENTITIES]
