"""Contexts and prompts of the persona suite (pure functions).

A context decides the first message a persona receives: ``no_conv`` (none: the questionnaire at
once), ``chunk`` (each persona gets a different opening post) or ``fixed`` (every persona gets the
same opener, and the interlocutor plays another persona of the population). A conversation is a
list of turns; each side sees it from its own seat (its own lines as ``assistant``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from robusteval.data.persona import (
    HUB_CHUNKS,
    Openers,
    Persona,
    QItem,
    Questionnaire,
    hub_file,
    load_chunk_file,
)
from robusteval.engine.estimate import CHARS_PER_TOKEN
from robusteval.errors import UserError
from robusteval.files import slug
from robusteval.labels import LETTERS
from robusteval.types import Message

CONTEXT_HELP = ("no_conv | chunk[:K] (our opening posts, assignment K) | hub:K (leaderboard Reddit chunk K) | "
                "file:PATH.jsonl | fixed:NAME (chess, grammar, weather) | fixed:any literal text")


@dataclass(frozen=True)
class Context:
    """One context: its name, kind (no_conv | chunk | fixed) and openers (one per persona for
    chunks, in population order; one shared for fixed; none for no_conv)."""

    name: str
    kind: str
    openers: tuple[str, ...] = ()

    def opener_for(self, index: int) -> str | None:
        if not self.openers:
            return None
        return self.openers[index % len(self.openers)]


def parse_context(spec: str, openers: Openers, n_personas: int, seed: int = 0) -> Context:
    """Turn a ``--contexts`` entry into a Context (see CONTEXT_HELP)."""
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if spec == "no_conv":
        return Context("no_conv", "no_conv")
    if kind == "chunk":
        if arg and not arg.isdigit():
            raise UserError(f"--contexts {spec}: chunk takes a number (chunk:1), got {arg!r}")
        k = int(arg or 0)
        if not openers.posts:
            raise UserError("--contexts chunk: the openers file has no posts")
        posts = list(openers.posts)
        random.Random(seed * 7919 + k).shuffle(posts)
        return Context(f"chunk_{k}", "chunk", tuple(posts[i % len(posts)] for i in range(n_personas)))
    if kind == "hub":
        if not arg.isdigit():
            raise UserError(f"--contexts {spec}: hub takes a chunk number, e.g. hub:0")
        return Context(f"hub_chunk_{arg}", "chunk", load_chunk_file(hub_file(HUB_CHUNKS.format(n=arg))))
    if kind == "file":
        path = Path(arg).expanduser()
        return Context(f"file_{path.stem}", "chunk", load_chunk_file(path))
    if kind == "fixed":
        if not arg.strip():
            raise UserError(f"--contexts {spec}: give an opener name ({', '.join(n for n, _ in openers.fixed)}) "
                            "or a literal message after fixed:")
        named = dict(openers.fixed)
        if arg in named:
            return Context(f"fixed_{arg}", "fixed", (named[arg],))
        return Context(f"fixed_{_slug(arg)}", "fixed", (arg,))
    raise UserError(f"--contexts: unknown context {spec!r}; use {CONTEXT_HELP}")


def truncate_text(text: str, max_tokens: int) -> str:
    """``text`` cut to about ``max_tokens`` tokens, at a word boundary; unchanged when it is shorter.

    Tokens are counted as CHARS_PER_TOKEN characters each, the same for every model, so every model
    of a comparison sees the same contexts (a model's own tokenizer would cut each model's context
    elsewhere). On the leaderboard's chunk_4 SmolLM2's tokenizer gives 0.75-1.76 of its tokens per
    such token (mean 0.95): leave a margin below the model's window."""
    limit = int(max_tokens * CHARS_PER_TOKEN)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip()


def truncate_context(context: Context, max_tokens: int | None) -> tuple[Context, tuple[int, ...]]:
    """The context with every opener cut to ``max_tokens`` (see `truncate_text`), and the indices
    of the openers that were cut (for the data audit)."""
    if max_tokens is None or not context.openers:
        return context, ()
    cut = tuple(truncate_text(o, max_tokens) for o in context.openers)
    changed = tuple(i for i, (a, b) in enumerate(zip(context.openers, cut)) if a != b)
    return (Context(context.name, context.kind, cut) if changed else context), changed


def _slug(text: str) -> str:
    return slug(text.lower(), keep="")[:24].strip("_") or "custom"


def persona_system(persona: Persona) -> str:
    return (f"You are {persona.name}. {persona.description} Stay in character as {persona.name}: speak in the "
            "first person with their views, values and manner. Never say you are an AI. Keep replies short.")


def user_system(opener: str) -> str:
    """The interlocutor of a chunk context: a person online who wrote the opening post."""
    return ("You are a person chatting online. You started the conversation with this message:\n"
            f"\"{opener}\"\n"
            "Reply to your conversation partner as that person would: one or two sentences, in your own "
            "voice, keeping the conversation going. Never say you are an AI.")


def other_persona_system(other: Persona) -> str:
    """The interlocutor of a fixed context: another persona of the population."""
    return persona_system(other) + " You are chatting with someone you just met."


@dataclass(frozen=True)
class Turn:
    speaker: str  # "persona" | "interlocutor"
    text: str


def view(system: str, turns: tuple[Turn, ...], me: str) -> tuple[Message, ...]:
    """The conversation from ``me``'s seat: its own turns as assistant, the other's as user.

    A conversation that begins with ``me`` speaking (the interlocutor's own opener) starts with an
    assistant turn, which chat templates accept after the system message."""
    messages = [Message("system", system)]
    for turn in turns:
        messages.append(Message("assistant" if turn.speaker == me else "user", turn.text))
    return tuple(messages)


def question(questionnaire: Questionnaire, item: QItem, gender: str) -> str:
    """One item as the last interlocutor message. The lettered scale comes first so that all items
    of one conversation share their prefix (llama.cpp and API prompt caches reuse it); the item last."""
    options = "\n".join(f"{LETTERS[i]}. {label}" for i, label in enumerate(questionnaire.scale))
    letters = ", ".join(LETTERS[: len(questionnaire.scale)])
    return (f"Answer with one letter ({letters}):\n{options}\n\n"
            f"{questionnaire.prompt.format(text=item.text_for(gender))}")


__all__ = ["CONTEXT_HELP", "Context", "Turn", "other_persona_system", "parse_context", "persona_system",
           "question", "truncate_context", "truncate_text", "user_system", "view"]
