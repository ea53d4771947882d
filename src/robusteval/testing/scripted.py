"""A scripted backend for tests: replies computed by a function of the request, in-process.

Fine for unit tests of the engine, probes and judges (DESIGN.md: never the only test of a suite;
suites also run end to end through the OpenAI-compatible stub and the embedded model). It records
every request it was sent, so a test can count what reached the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from robusteval.types import Completion, GenParams, Message

Reply = Callable[[tuple[Message, ...], GenParams], str]


@dataclass
class ScriptedBackend:
    reply: Reply
    fingerprint: str = "scripted"
    max_concurrency: int = 4
    sent: list[tuple[tuple[Message, ...], GenParams]] = field(default_factory=list)

    async def start(self) -> None:
        return None

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        self.sent.append((messages, params))
        text = self.reply(messages, params)
        return Completion(text, prompt_tokens=sum(len(m.content.split()) for m in messages),
                          completion_tokens=len(text.split()), finish_reason="stop")

    async def close(self) -> None:
        return None


async def scripted_engine(tmp_path, reply: Reply, name: str = "scripted", **engine_kw):
    """A real engine over a real store in ``tmp_path``, with one scripted model called ``name``;
    returns (engine, backend). Close the engine when done."""
    from robusteval.engine import Engine, Store

    engine = Engine(Store(tmp_path / "store.sqlite"), **engine_kw)
    backend = ScriptedBackend(reply)
    await engine.add_model(name, backend)
    return engine, backend
