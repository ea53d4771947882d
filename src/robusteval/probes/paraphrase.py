"""Paraphrase children of a tree node: the request, the reading of messy replies, the invariants.

One request per node asks for ``n`` diverse paraphrases as a JSON list; each candidate must still
be a question, must not give away a gold answer (an alias the root question does not contain: a
small paraphraser sometimes answers instead, "Marla Quenby is a historian who..."), keep close to
its parent (cosine within [lower, upper]), move away from the root (lower similarity to the root
than its parent has) and differ from every node already in the tree. A failed candidate is asked
for again alone (with another seed) up to ``retries`` times; one that never passes is rejected,
never accepted. Under ``--estimate`` (a dry-run engine) the re-requests are not planned: whether a
candidate fails depends on answers not yet given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from robusteval.engine import Engine
from robusteval.engine.runner import DRY_RUN, is_stand_in
from robusteval.probes.rewrite_checks import fluency_problem, form_problem, language_problem
from robusteval.readers.aliases import alias_match
from robusteval.types import GenParams, Message, Response

STAND_IN_HEAD = 60  # characters of a stand-in reply that keep its mark and key (`engine.runner.STAND_IN`)

BATCH_PROMPT = ("Rewrite the question below in {n} different ways. Each rewrite must ask exactly the same thing "
                "with different words. Reply with a JSON list of {n} strings and nothing else.\n\n"
                "Question: {text}")
SINGLE_PROMPT = ("Rewrite the question below with different words, keeping exactly its meaning. "
                 "Reply with the rewritten question only.\n\nQuestion: {text}")

_FENCE = re.compile(r"```(?:json)?", re.I)
_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)+)"')
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.):]|(?:paraphrase|rewrite|question|version)\s*\d*\s*[:.)-])\s*", re.I)
_PREAMBLE = re.compile(r"^(here (are|is)|sure|certainly|okay|ok\b|the (rewritten|paraphrased))", re.I)
# A question without its "?" still opens with one of these (or a preposition and then one: "In what...").
_ASKING = {"what", "who", "whom", "whose", "which", "when", "where", "why", "how", "is", "are", "was", "were", "am",
           "do", "does", "did", "can", "could", "will", "would", "should", "shall", "may", "might", "must", "has",
           "have", "had", "name", "tell", "give", "list", "identify", "state", "describe", "explain"}
_WH = {"what", "who", "whom", "whose", "which", "when", "where", "why", "how"}


@dataclass(frozen=True)
class Cost:
    """What producing something took: requests, tokens and model seconds (cached answers included,
    so a tree's cost is the same when it is rebuilt from the cache)."""

    requests: float = 0
    prompt_tokens: float = 0
    completion_tokens: float = 0
    latency_s: float = 0.0

    @classmethod
    def of(cls, response: Response) -> Cost:
        return cls(1, response.prompt_tokens, response.completion_tokens, response.latency_s)

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.requests + other.requests, self.prompt_tokens + other.prompt_tokens,
                    self.completion_tokens + other.completion_tokens, self.latency_s + other.latency_s)

    def share(self, n: int) -> Cost:
        """An n-th of this cost (one request that produced n nodes)."""
        return Cost(self.requests / n, self.prompt_tokens / n, self.completion_tokens / n, self.latency_s / n)

    @property
    def tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict:
        return {"requests": round(self.requests, 4), "prompt_tokens": round(self.prompt_tokens, 2),
                "completion_tokens": round(self.completion_tokens, 2), "latency_s": round(self.latency_s, 4)}


def parse_candidates(text: str | None) -> list[str]:
    """Questions in a reply that should be a JSON list of strings but may be anything: a list
    (possibly cut off), numbered or bulleted lines, a preamble, code fences."""
    if not text:
        return []
    body = _FENCE.sub("", text).strip()
    found: list[str] = []
    start = body.find("[")
    if start >= 0:
        end = body.rfind("]")
        try:
            value = json.loads(body[start:end + 1]) if end > start else None
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list):
            found = [_from_json(v) for v in value]
        else:  # a list cut off by the token limit, or with bad escapes: take the quoted strings
            found = [_unescape(m) for m in _QUOTED.findall(body[start:])]
    if not any(found):
        found = [_clean_line(line) for line in body.splitlines()]
        found = [f for f in found if f and not _PREAMBLE.match(f) and not f.endswith(":")]
    return list(dict.fromkeys(f for f in (_clean(c) for c in found) if f))


def _from_json(value) -> str:
    if isinstance(value, dict):
        value = next((value[k] for k in ("paraphrase", "question", "text", "rewrite") if k in value), "")
    return value if isinstance(value, str) else ""


def _unescape(quoted: str) -> str:
    try:
        return json.loads(f'"{quoted}"')
    except json.JSONDecodeError:
        return quoted


def _clean_line(line: str) -> str:
    line = line.strip()
    while (stripped := _BULLET.sub("", line, count=1).strip()) != line:  # "- Paraphrase 2: ..."
        line = stripped
    return line.rstrip(",").strip()


def _clean(text: str) -> str:
    text = " ".join(text.split()).strip().strip('"“”\'').strip()
    return text if len(text.split()) >= 2 else ""  # a lone word is no question


@dataclass(frozen=True)
class Candidate:
    text: str | None
    cost: Cost
    error: str | None = None  # the request failed


@dataclass
class LLMParaphraser:
    """Asks ``model`` for paraphrases through the engine (cached, accounted like every call).

    Sampling at ``temperature`` gives diverse paraphrases; each single re-request uses its own
    seed, so a retry is a new draw and still reproducible (and cached) on a rerun."""

    engine: Engine
    model: str
    temperature: float = 0.7
    max_tokens: int = 160
    seed: int = 0

    async def batch(self, text: str, n: int) -> tuple[list[str], Cost, str | None]:
        params = GenParams(temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed)
        r = await self.engine.chat(self.model, (Message("user", BATCH_PROMPT.format(n=n, text=text)),), params)
        if is_stand_in(r.text):  # an estimate: the n paraphrases a usable reply holds, a share of it each
            assert r.text is not None
            share = r.text[:max(STAND_IN_HEAD, len(r.text) // n)]
            return [f"{share} #{slot + 1}" for slot in range(n)], Cost.of(r), r.error
        return parse_candidates(r.text), Cost.of(r), r.error

    async def single(self, text: str, slot: int, attempt: int) -> Candidate:
        if self.engine.dry_run:  # an estimate: whether a re-request is needed depends on answers not yet given
            return Candidate(None, Cost(), DRY_RUN)
        seed = self.seed * 100_003 + slot * 1_009 + attempt
        params = GenParams(temperature=self.temperature, max_tokens=self.max_tokens // 2, seed=seed)
        r = await self.engine.chat(self.model, (Message("user", SINGLE_PROMPT.format(text=text)),), params)
        found = parse_candidates(r.text)
        return Candidate(found[0] if found else None, Cost.of(r), r.error)


@dataclass(frozen=True)
class Invariants:
    """The bounds a paraphrase must keep (LexEval's defaults)."""

    lower: float = 0.80
    upper: float = 0.96


def norm_text(text: str) -> str:
    """What counts as the same prompt for the duplicate check: case, spacing and punctuation aside."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def is_question(text: str) -> bool:
    """Whether ``text`` asks something: it ends with a question mark, or opens with a question word
    or request ("Which river...", "Name the river...", "In what country..."). A statement ("Marla
    Quenby is a historian who...") is not one."""
    words = re.findall(r"[\w']+", text.lower())
    if text.rstrip().rstrip('"”’\'').endswith("?"):
        return True
    return bool(words) and (words[0] in _ASKING or (len(words) > 1 and words[1] in _WH))


def leaked_answers(text: str, answers: tuple[str, ...] | list[str], root: str) -> list[str]:
    """Gold aliases that ``text`` contains (whole words, normalised as the scorer does) and the root
    question does not: a paraphrase that holds the answer is no longer the same test."""
    return [a for a in answers if alias_match(text, [a]) and not alias_match(root, [a])]


def check_candidate(*, sim_parent: float, sim_root: float, parent_sim_root: float, duplicate: bool,
                    bounds: Invariants, text: str | None = None, answers: tuple[str, ...] = (),
                    root: str = "") -> str | None:
    """Why a candidate fails the invariants, or None when it passes. With ``text``: it must be a
    question and must not contain a gold alias of ``answers`` absent from the ``root`` question."""
    if text is not None and not is_question(text):
        return "not_a_question"
    if text is not None and leaked_answers(text, answers, root):
        return "contains_answer"
    if text is not None and root and (reason := language_problem(root, text) or form_problem(root, text)
                                      or fluency_problem(root, text)):
        return reason  # wrong_language, not_fluent, too_long, repetitive, word_salad (probes/rewrite_checks.py)
    if duplicate:
        return "duplicate"
    if sim_parent < bounds.lower:
        return "too_far_from_parent"
    if sim_parent > bounds.upper:
        return "too_close_to_parent"
    if sim_root >= parent_sim_root:
        return "not_further_from_root"
    return None
