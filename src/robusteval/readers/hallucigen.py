"""Readers for HalluciGen replies: generated hypotheses, a detection label, a yes/no verdict.

Strict on purpose: a reply that does not follow the asked format is *invalid* (kept, with the
reason, and counted) rather than guessed at. Harmless wrapping (Markdown bold, quotes, a leading
"Answer:") is tolerated; anything that leaves two possible readings is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABEL_LINE = re.compile(r"^[\s>*\-•]*\**\s*hyp\s*([+\-−–])\s*\**\s*[:：]\s*\**\s*(.*)$", re.IGNORECASE)
PREAMBLE = re.compile(r"^(?:here\s+is|here's|sure|certainly|okay|ok)\b.*[:.!]\s*$", re.IGNORECASE)
PREFIX = re.compile(r"^[\s*]*(?:paraphrase|translation|answer|output|sentence|result|reply"
                    r"|english|swedish|german|french|hyp\s*[+\-−–])(?:\s*\([^)]*\))?\s*[:：][\s*]*", re.IGNORECASE)
DETECTION_LABEL = re.compile(r"\b(?:hyp(?:othesis)?|h)[\s_#\-]*(\d+)\b", re.IGNORECASE)
# "hyp1: <text>" or "hyp1 (English): <text>" repeats the prompt's listing rather than answering
ECHO = re.compile(r"\**\s*(?:\([^)]*\)\s*)?:")
ANSWER_MARK = re.compile(r"\banswer\s*(?:is)?\s*[:：]?", re.IGNORECASE)
YES_NO = re.compile(r"\b(yes|no|ja|nej|nein|oui|non)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Generated:
    """hyp+ and hyp− read from a reply (or two replies); ``reason`` says why it is invalid."""

    hyp_plus: str | None
    hyp_minus: str | None
    status: str  # ok | invalid | failed
    reason: str | None = None


def _clean(text: str) -> str:
    text = text.strip().strip("*").strip()
    if len(text) >= 2 and text[0] in "\"'“„«" and text[-1] in "\"'”“»":
        text = text[1:-1].strip()
    return text


def _same(a: str, b: str) -> bool:
    norm = lambda s: re.sub(r"[\W_]+", " ", s.lower()).strip()  # noqa: E731
    return norm(a) == norm(b)


def check_pair(hyp_plus: str | None, hyp_minus: str | None, source: str) -> Generated:
    """The rules both generation modes share: two non-empty, different hypotheses, and a hyp− that
    is not the source itself (it could not hold a hallucination)."""
    if not hyp_plus:
        return Generated(hyp_plus, hyp_minus, "invalid", "no hyp+")
    if not hyp_minus:
        return Generated(hyp_plus, hyp_minus, "invalid", "no hyp-")
    if _same(hyp_plus, hyp_minus):
        return Generated(hyp_plus, hyp_minus, "invalid", "hyp+ and hyp- are the same")
    if _same(hyp_minus, source):
        return Generated(hyp_plus, hyp_minus, "invalid", "hyp- copies the source")
    return Generated(hyp_plus, hyp_minus, "ok")


def read_joint(text: str | None, source: str) -> Generated:
    """Read ``hyp+: ...`` and ``hyp-: ...`` lines. A label whose line is empty takes the next
    non-empty line; a label given twice with different texts is invalid."""
    if text is None:
        return Generated(None, None, "failed")
    found: dict[str, list[str]] = {"+": [], "-": []}
    lines = text.splitlines()
    for n, line in enumerate(lines):
        match = LABEL_LINE.match(line)
        if not match:
            continue
        sign = "+" if match.group(1) == "+" else "-"
        value = _clean(match.group(2))
        if not value:  # "**hyp+:**" then the sentence on the next line
            following = next((x for x in lines[n + 1:] if x.strip()), "")
            value = "" if LABEL_LINE.match(following) else _clean(following)
        found[sign].append(value)
    for sign in "+-":
        if len(set(found[sign])) > 1:
            return Generated(None, None, "invalid", f"hyp{sign} given {len(found[sign])} times")
    plus = found["+"][0] if found["+"] else None
    minus = found["-"][0] if found["-"] else None
    return check_pair(plus, minus, source)


def read_sentence(text: str | None) -> tuple[str | None, str | None]:
    """One sentence from a reply that was asked for the sentence only: (sentence, reason if invalid).

    A leading "Here is the paraphrase:" line and a "Translation:" prefix are dropped; more than one
    remaining line is invalid (the model added notes or alternatives)."""
    if text is None:
        return None, "failed"
    lines = [line for line in (x.strip() for x in text.splitlines()) if line]
    if lines and PREAMBLE.match(lines[0]) and len(lines) > 1:
        lines = lines[1:]
    if not lines:
        return None, "empty reply"
    if len(lines) > 1:
        return None, f"{len(lines)} lines instead of one sentence"
    sentence = _clean(PREFIX.sub("", lines[0]))
    return (sentence, None) if sentence else (None, "empty reply")


def read_separate(faithful: str | None, hallucinated: str | None, source: str) -> Generated:
    """hyp+ and hyp− from the two replies of the separate-prompt mode."""
    if faithful is None or hallucinated is None:
        return Generated(None, None, "failed")
    plus, why_plus = read_sentence(faithful)
    minus, why_minus = read_sentence(hallucinated)
    if plus is None:
        return Generated(None, minus, "invalid", f"hyp+: {why_plus}")
    if minus is None:
        return Generated(plus, None, "invalid", f"hyp-: {why_minus}")
    return check_pair(plus, minus, source)


@dataclass(frozen=True)
class Detected:
    """A detection reply read to a shown position (1 or 2), or invalid with the reason."""

    position: int | None
    status: str  # ok | invalid | failed
    reason: str | None = None  # no label | ambiguous | outside {hyp1, hyp2}


def read_detection(text: str | None) -> Detected:
    """The label of a detection reply.

    In order: the label right after the last "answer:" mark; else a label that opens the reply
    (unless it reads like the prompt's listing, "hyp1: <text>"); else the only label mentioned.
    Several different labels are ambiguous; a number other than 1 or 2 (hyp3) is outside the labels;
    both are invalid, like a reply with no label at all.
    """
    if text is None:
        return Detected(None, "failed")
    mentions = list(DETECTION_LABEL.finditer(text))
    if not mentions:
        return Detected(None, "invalid", "no label")
    marks = list(ANSWER_MARK.finditer(text))
    after = [m for m in mentions if marks and m.start() >= marks[-1].end()]
    if after and not text[marks[-1].end():after[0].start()].strip(" \t*\"'`([:"):
        chosen = after[0]
    elif ((not text[:mentions[0].start()].strip(" \t\n*\"'`([:#>-") and not ECHO.match(text, mentions[0].end()))
          or len({m.group(1) for m in mentions}) == 1):
        chosen = mentions[0]
    else:
        return Detected(None, "invalid", "ambiguous")
    number = int(chosen.group(1))
    if number not in (1, 2):
        return Detected(None, "invalid", "outside {hyp1, hyp2}")
    return Detected(number, "ok")


def read_yes_no(text: str | None) -> tuple[bool | None, str]:
    """(True for yes, False for no, None for neither; status). The first yes/no word decides
    (also ja/nej, nein, oui/non, since the judge may answer in the source's language)."""
    if text is None:
        return None, "failed"
    match = YES_NO.search(text)
    if not match:
        return None, "invalid"
    return match.group(1).lower() in ("yes", "ja", "oui"), "ok"


__all__ = ["Detected", "Generated", "check_pair", "read_detection", "read_joint", "read_sentence",
           "read_separate", "read_yes_no"]
