"""The `persona` suite (Stick To Your Role!): do simulated personas keep their values across contexts?

The model under test plays each persona of a population (system prompt). In every context the
persona first holds a short conversation with an interlocutor (a second instance, or another
model), then answers a value questionnaire one item at a time on that same conversation. The
answers give each persona a profile over Schwartz's ten values; the suite asks whether the
population keeps its rank order across contexts (rank-order stability) and whether each context's
answers show the theoretical value structure (MDS Stress-1, CFA fit), and aggregates models the
way the leaderboard does (cardinal score, win rate, diversity, sensitivity).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Annotated, Any

import numpy as np
from rich.console import Console

from robusteval.data.audit import DataAudit, SourceAudit
from robusteval.data.persona import (
    Persona,
    Questionnaire,
    balanced_subset,
    load_openers,
    load_population,
    load_questionnaire,
)
from robusteval.engine import Engine, gather_all
from robusteval.errors import UserError
from robusteval.metrics.persona import PersonaTally, context_scores, json_safe, leaderboard, model_record
from robusteval.metrics.psychometrics import MDS_METHODS
from robusteval.probes.persona import (
    CONTEXT_HELP,
    Context,
    Turn,
    other_persona_system,
    parse_context,
    persona_system,
    question,
    truncate_context,
    user_system,
    view,
)
from robusteval.ranges import Range
from robusteval.readers.scale import read_scale, read_scale_logprobs
from robusteval.report.terminal_persona import print_tables
from robusteval.results.codec import decode
from robusteval.results.persona import ContextInfo, ModelStability, PersonaBoard, PersonaExtra
from robusteval.results.spool import Spool
from robusteval.suites.base import SampleBase, SuiteContext, SuiteResult, csv_arg
from robusteval.types import GenParams, Message, Response

NAME = "persona"
DEFAULT_CONTEXTS = ("no_conv", "chunk:0", "chunk:1", "fixed:chess", "fixed:grammar")
SCORINGS = ("generate", "logprobs", "expected")
ANSWER_PREFIX = "Answer:"  # prefilled before the scale letter in the logprob scorings
TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return


@dataclass(frozen=True)
class Options:
    population: str | None = None  # YAML/JSONL/CSV of personas; None: the bundled 50
    # subset size (balanced by gender); None: everyone
    personas: Annotated[int, Range(3, 10**6, hint='rank orders need 3')] | None = None
    contexts: tuple[str, ...] = DEFAULT_CONTEXTS
    turns: Annotated[int, Range(1, 1000)] = 2  # persona replies before the questionnaire
    questionnaire: str = "ours"
    interlocutor: str | None = None  # model spec; None: the model under test plays the interlocutor too
    openers: str | None = None  # YAML of opening posts and fixed openers; None: the bundled ones
    # reply limit for questionnaire answers (--max-tokens is for conversation turns)
    answer_tokens: Annotated[int, Range(1, 10**7)] = 16
    scoring: str = "generate"  # generate: parse the reply; logprobs / expected: the first token's distribution
    n_resamples: Annotated[int, Range(1, 10**6)] = 1000
    # cut each opening post to about this many tokens; None: as published
    context_max_tokens: Annotated[int, Range(1, 10**7)] | None = None
    mds: str | None = None  # leaderboard | classic; None: leaderboard for the leaderboard's questionnaires


def default_mds(questionnaire_name: str) -> str:
    """The leaderboard's MDS for its own questionnaires (results comparable with it), else classic."""
    return "leaderboard" if questionnaire_name in ("pvq40", "svs") else "classic"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--population", help="personas file (YAML/JSON/JSONL/CSV: name, gender, description; the "
                   "leaderboard's real_world_people.json with gender F/M loads as it is); default: our 50")
    p.add_argument("--personas", type=int, help="use the first N personas, alternating by gender (default: all)")
    p.add_argument("--contexts", type=csv_arg, help=f"comma-separated contexts: {CONTEXT_HELP} "
                   f"(default: {','.join(DEFAULT_CONTEXTS)})")
    p.add_argument("--turns", type=int,
                   help="persona replies in each conversation before the questionnaire (default: 2)")
    p.add_argument("--questionnaire", help="ours (default) | pvq40 | svs (hub) | pvq40:DIR (holding the leaderboard's "
                   "pvq_male_test.csv and pvq_female_test.csv: each persona gets its gender's wording) | "
                   "pvq40:male=FILE,female=FILE | svs:DIR | svs:FILE.csv | FILE.yaml")
    p.add_argument("--interlocutor", help="model spec playing the user (default: the model under test)")
    p.add_argument("--openers", help="YAML with 'posts' (chunk openers) and 'fixed' (name: message)")
    p.add_argument("--answer-tokens", dest="answer_tokens", type=int,
                   help="reply limit for questionnaire answers (default: 16; --max-tokens limits conversation turns)")
    p.add_argument("--scoring", choices=SCORINGS,
                   help="generate: the persona writes its answer and it is parsed (default, as the leaderboard); "
                        "logprobs: the most probable scale letter after an 'Answer:' prefill (never invalid while "
                        "a letter is among the top tokens); expected: the probability-weighted scale point")
    p.add_argument("--bootstrap", dest="n_resamples", type=int, help="bootstrap resamples for CIs (default: 1000)")
    p.add_argument("--context-max-tokens", dest="context_max_tokens", type=int,
                   help="cut each opening post to about N tokens (4 characters each, at a word boundary), so that "
                        "long posts (the leaderboard's Reddit chunks reach 5,000-7,000 tokens) fit a small model's "
                        "window; the data audit counts the posts cut (default: as published)")
    p.add_argument("--mds", choices=MDS_METHODS, help="MDS Stress-1 as the leaderboard computes it (default with "
                   "pvq40/svs) or classic metric MDS (default with ours); docs/suites/persona.md")


def validate(config: Any, options: Options) -> None:
    checks = (
        (options.scoring in SCORINGS, f"--scoring must be one of {', '.join(SCORINGS)}"),
        (options.mds in (None, *MDS_METHODS), f"--mds must be one of {', '.join(MDS_METHODS)}"),
        (len(options.contexts) >= 1, "give at least one --contexts entry"),
        (len(set(options.contexts)) == len(options.contexts), "--contexts lists a context twice"),
        (config.samples == 1, "--samples does not apply to the persona suite (each persona answers once)"),
    )
    for ok, message in checks:
        if not ok:
            raise UserError(message)


@dataclass(frozen=True, kw_only=True)
class Sample(SampleBase):
    """One questionnaire answer of one persona in one context; a line of samples.jsonl (the
    context is the variant: samples.jsonl names it ``context``, as it always has)."""

    persona_id: str
    persona: str
    context: str
    value: str
    turns: int  # messages before the question (system included)
    answer: float | None  # 1..len(scale); a fraction under --scoring expected
    clue: str
    probs: tuple[float, ...] | None = None  # over the scale points (logprob scorings)
    letter_mass: float | None = None  # share of the first token's probability on scale letters

    LABEL = ("model", "context", "persona_id")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().as_dict().items() if k != "variant"}


@dataclass(frozen=True)
class Conversation:
    model: str
    persona_id: str
    context: str
    interlocutor: str
    turns: tuple[Turn, ...]
    error: str | None


async def execute(ctx: SuiteContext[Options]) -> SuiteResult:
    config, options = ctx.config, ctx.options
    population = ctx.audit.source(f"population {options.population or '(bundled)'}", options.population)
    personas = balanced_subset(load_population(options.population, population), options.personas)
    population.rows_used = len(personas)
    asked = ctx.audit.source(f"questionnaire {options.questionnaire}", options.questionnaire)
    questionnaire = load_questionnaire(options.questionnaire, asked)
    if not asked.rows_read:  # ours or a YAML file: every item is asked
        asked.rows_read = asked.rows_used = len(questionnaire.items)
    audit_wording(asked, questionnaire, personas)
    openers = load_openers(options.openers)
    contexts = [load_context(spec, openers, personas, config.seed, options.context_max_tokens, ctx.audit)
                for spec in options.contexts]
    if len({c.name for c in contexts}) != len(contexts):
        raise UserError("--contexts: two entries give the same context")
    mds_method = options.mds or default_mds(questionnaire.name)
    # A shard's items are personas (each with all its contexts and answers: the unit the stability
    # figures resample). The population stays whole: a persona's post and partner are picked by its
    # place in it, so a persona is asked exactly what the unsharded run asks it.
    in_shard = ctx.shard_items(range(len(personas)), key=lambda i: personas[i].id)
    simulated = [personas[i] for i in in_shard]
    names = [c.name for c in contexts]
    conversations = Spool()  # conversations.jsonl, a line per conversation as it ends
    tallies: dict[str, PersonaTally] = {}
    metrics: dict[str, ModelStability] = {}
    ctx.stage("conversations and questionnaires")
    for model in ctx.models:
        interlocutor = await ctx.model(options.interlocutor) if options.interlocutor else model
        # Each answer goes to samples.jsonl and into the compact tally as it is read, then dropped:
        # memory holds the personas x items answers per context, not the samples (metrics/persona.py).
        tally = tallies[model] = PersonaTally(simulated, names, questionnaire)
        async for group, talk in simulate_each(ctx, model, interlocutor, personas, contexts, questionnaire,
                                               ctx.params, options.turns, options.answer_tokens, config.seed,
                                               scoring=options.scoring, asked=in_shard):
            for sample in group:  # written to samples.jsonl by `SuiteContext.stream`
                tally.add(sample)
            if talk is not None:
                conversations.write(json.dumps(_conv_dict(talk)) + "\n")
        metrics[model] = model_record(tally, simulated, contexts, questionnaire, seed=config.seed,
                                       n_resamples=options.n_resamples, mds_method=mds_method)
    extra = PersonaExtra(
        # as JSON holds it: a figure that is not finite (NaN: undefined) is null
        leaderboard=decode(PersonaBoard, json_safe(leaderboard(metrics, [c.name for c in contexts]))),
        population=json_safe([asdict(p) for p in simulated]),
        contexts=[ContextInfo(c.name, c.kind) for c in contexts],
        questionnaire={"name": questionnaire.name, "items": len(questionnaire.items),
                       "scale": list(questionnaire.scale)},
        turns=options.turns, scoring=options.scoring, context_max_tokens=options.context_max_tokens, mds=mds_method)
    files: dict[str, Any] = {"conversations.jsonl": conversations.chunks,
                             "value_scores.csv": scores_csv(tallies, simulated, contexts, questionnaire)}
    return SuiteResult(metrics=metrics, samples=[], extra=extra, files=files)


def load_context(spec: str, openers: Any, personas: list[Persona], seed: int, max_tokens: int | None,
                 audit: DataAudit) -> Context:
    """One ``--contexts`` entry, its posts cut to ``max_tokens``; posts read from a file (the
    leaderboard's chunks) are audited: how many, how many used, how many cut."""
    context, cut = truncate_context(parse_context(spec, openers, len(personas), seed), max_tokens)
    if context.kind == "chunk":
        source = audit.source(f"context {spec}")
        source.rows_read = len(context.openers)
        source.rows_used = min(len(context.openers), len(personas))  # persona i gets post i
        if len(personas) > len(context.openers):
            source.anomaly(f"fewer posts than personas: posts reused ({len(personas)} personas)")
        for i in cut:
            if i < len(personas) and max_tokens is not None:  # nothing is cut without a limit
                source.anomaly(f"opening post truncated to --context-max-tokens {max_tokens} "
                               f"(about {max_tokens * 4} characters)", f"post {i + 1}")
    elif cut:
        audit.source(f"context {spec}").anomaly(f"opener truncated to --context-max-tokens {max_tokens}")
    return context


def audit_wording(audit: SourceAudit, questionnaire: Questionnaire, personas: list[Persona]) -> None:
    """Say which wording each gender gets; a persona whose gender has no wording of its own (PVQ-40
    has male and female forms only) gets the first form, and the audit counts it."""
    forms = [g for g, _ in questionnaire.items[0].texts] if questionnaire.items else []
    if not forms:
        return
    for p in personas:
        if p.gender not in forms:
            audit.anomaly(f"persona of gender {p.gender} asked the {forms[0]} wording (the questionnaire has "
                          f"{' and '.join(forms)} forms only)", p.id)
    counts = {g: sum(p.gender == g for p in personas) for g in forms}
    audit.note("personas asked in their gender's wording: " + ", ".join(f"{n} {g}" for g, n in counts.items()))


def _conv_dict(c: Conversation) -> dict[str, Any]:
    return {"model": c.model, "persona_id": c.persona_id, "context": c.context, "interlocutor": c.interlocutor,
            "turns": [asdict(t) for t in c.turns], "error": c.error}


def partner(personas: list[Persona], index: int, context: Context, seed: int) -> Persona:
    """The persona the interlocutor plays in a fixed context: a seeded shift, never oneself."""
    shift = 1 + random.Random(f"{seed}:{context.name}").randrange(len(personas) - 1)
    return personas[(index + shift) % len(personas)]


async def simulate_each(ctx: SuiteContext[Options], model: str, interlocutor: str, personas: list[Persona],
                        contexts: list[Context], questionnaire: Questionnaire, params: GenParams, turns: int,
                        answer_tokens: int, seed: int = 0, scoring: str = "generate",
                        asked: Sequence[int] | None = None
                        ) -> AsyncIterator[tuple[list[Sample], Conversation | None]]:
    """Every persona in every context: the conversation, then the questionnaire on top of it.
    ``asked``: the indices of the personas to simulate (a shard's), default all of them.

    Yields each (context, persona)'s answers (written to samples.jsonl) and conversation (None
    without one), context by context and persona by persona; at most a window of them is under way
    at once (`SuiteContext.stream`), so a large population never holds all its conversations."""
    engine = ctx.engine
    indices = range(len(personas)) if asked is None else asked
    prefill: tuple[Message, ...]
    if scoring == "generate":
        answer_params, prefill = replace(params, max_tokens=answer_tokens), ()
    else:  # one token after "Answer:", read from its distribution
        answer_params = replace(params, max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS)
        prefill = (Message("assistant", ANSWER_PREFIX),)

    async def one(job: tuple[int, Context]) -> tuple[list[Sample], Conversation | None]:
        index, context = job
        persona = personas[index]
        system = persona_system(persona)
        conv: tuple[Turn, ...] = ()
        error: str | None = None
        if context.kind != "no_conv":
            conv, error = await converse(engine, model, interlocutor, personas, index, context, params, turns, seed)
        history = view(system, conv, "persona")
        asked = [(item, question(questionnaire, item, persona.gender)) for item in questionnaire.items]
        answers: list[Response | None]
        if error:
            answers = [None] * len(asked)
        else:
            answers = await gather_all(engine.chat(model, (*history, Message("user", text), *prefill), answer_params)
                                       for _, text in asked)
        out = [_sample(model, persona, context, questionnaire, item, text, len(history), response, error, scoring)
               for (item, text), response in zip(asked, answers)]
        talk = None if context.kind == "no_conv" else Conversation(model, persona.id, context.name, interlocutor,
                                                                   conv, error)
        return out, talk

    def requests(job: tuple[int, Context]) -> int:
        """A conversation's turns (both sides), then the questionnaire on top of it."""
        return (0 if job[1].kind == "no_conv" else 2 * turns - 1) + len(questionnaire.items)

    # about a window of requests under way (a persona's questionnaire is one job of many requests)
    window = max(1, engine.window() // max(1, len(questionnaire.items)))
    async for done in ctx.stream(((i, c) for c in contexts for i in indices), one, requests_per_job=requests,
                                 window=window, write=lambda done: done[0]):
        yield done


async def converse(engine: Engine, model: str, interlocutor: str, personas: list[Persona], index: int,
                   context: Context, params: GenParams, turns: int, seed: int) -> tuple[tuple[Turn, ...], str | None]:
    """The opener, then ``turns`` persona replies with interlocutor messages between them."""
    persona = personas[index]
    opener = context.opener_for(index)
    assert opener is not None  # only no_conv has no opener, and it has no conversation
    other_system = (user_system(opener) if context.kind == "chunk"
                    else other_persona_system(partner(personas, index, context, seed)))
    conv: tuple[Turn, ...] = (Turn("interlocutor", opener),)
    for t in range(turns):
        reply = await engine.chat(model, view(persona_system(persona), conv, "persona"), params)
        if not reply.ok:
            return conv, f"persona turn {t + 1} failed: {reply.error}"
        assert reply.text is not None  # an answered request has its text
        conv += (Turn("persona", reply.text.strip()),)
        if t == turns - 1:
            break
        nxt = await engine.chat(interlocutor, view(other_system, conv, "interlocutor"), params)
        if not nxt.ok:
            return conv, f"interlocutor turn {t + 1} failed: {nxt.error}"
        assert nxt.text is not None  # an answered request has its text
        conv += (Turn("interlocutor", nxt.text.strip()),)
    return conv, None


def _sample(model: str, persona: Persona, context: Context, questionnaire: Questionnaire, item: Any, text: str,
            n_turns: int, response: Any, error: str | None, scoring: str = "generate") -> Sample:
    if response is None:
        return Sample(model=model, item_id=item.id, persona_id=persona.id, persona=persona.name, context=context.name,
                      value=item.value, prompt=text, turns=n_turns, response=None, error=error, status="failed",
                      answer=None, clue="", cached=False, key="")
    base = dict(model=model, item_id=item.id, persona_id=persona.id, persona=persona.name, context=context.name,
                value=item.value, prompt=text, turns=n_turns, response=response.text, error=response.error,
                cached=response.cached, key=response.key)
    if scoring == "generate":
        answer = read_scale(response.text, questionnaire.scale)
        return Sample(**base, status=answer.status, answer=None if answer.index is None else answer.index + 1,
                      clue=answer.clue)
    if response.ok and not response.logprobs:
        raise UserError(f"--scoring {scoring} needs log-probabilities, and {model} returned none for a "
                        "questionnaire answer; use --scoring generate with this backend")
    dist = read_scale_logprobs(response.logprobs[0].top if response.ok else None, len(questionnaire.scale))
    top = dist.argmax  # None exactly when there are no probabilities
    point = None if top is None else (dist.expected if scoring == "expected" else top + 1)
    return Sample(**base, status=dist.status, answer=point, clue=f"logprobs:{scoring}" if point is not None else "",
                  probs=dist.probs, letter_mass=dist.mass if response.ok else None)


def scores_csv(tallies: dict[str, PersonaTally], personas: list[Persona], contexts: list[Context],
               questionnaire: Questionnaire) -> str:
    """Centred value scores: one row per model, context and persona (models that answered nothing
    have no rows). ``tallies``: each model's answers (`metrics.persona.PersonaTally`)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["model", "context", "persona_id", "persona", *questionnaire.values])
    for model, tally in tallies.items():
        if not tally.count:
            continue
        for c, scores in zip(contexts, context_scores(tally, personas, [c.name for c in contexts], questionnaire)):
            for p, row in zip(personas, scores):
                writer.writerow([model, c.name, p.id, p.name, *("" if np.isnan(x) else f"{x:.4f}" for x in row)])
    return out.getvalue()


def print_summary(console: Console, result: SuiteResult) -> None:
    extra: PersonaExtra = result.extra
    print_tables(console, result.metrics, extra.leaderboard, mds=extra.mds)


__all__ = ["ANSWER_PREFIX", "DEFAULT_CONTEXTS", "NAME", "SCORINGS", "Options", "Sample", "add_arguments",
           "default_mds", "execute", "print_summary", "scores_csv", "simulate_each", "validate"]
