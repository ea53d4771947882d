"""Tree children written by any registered rewrite (``--paraphrase-kind formality``, ``dialect``...).

LexEval's paraphrase children come from `LLMParaphraser` (one request asking for ``n`` paraphrases
as a JSON list: its prompts, and so its cache keys, stay as they were). Another kind of rewrite is
an instruction for one text (`probes.rewrites`), so each child is its own request with its own
seed, its reply read as `probes.apply.clean_rewrite` reads any rewrite; the tree's invariants
(probes/paraphrase.py `check_candidate`) then judge it as they judge a paraphrase.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from robusteval.engine.runner import DRY_RUN
from robusteval.probes.apply import Rewriter, clean_rewrite
from robusteval.probes.paraphrase import Candidate, Cost
from robusteval.probes.registry import Rewrite
from robusteval.types import GenParams, Message


@dataclass(frozen=True)
class RewriteParaphraser:
    """Children of a node under ``rewrite``: the same `Paraphraser` interface the tree builder uses."""

    rewriter: Rewriter
    rewrite: Rewrite
    seed: int = 0

    async def _ask(self, text: str, slot: int, attempt: int) -> Candidate:
        seed = random.Random(f"{self.seed}:{self.rewrite.name}:{slot}:{attempt}").randrange(2**31)
        params = GenParams(temperature=self.rewriter.temperature, max_tokens=self.rewriter.max_tokens, seed=seed)
        message = Message("user", self.rewrite.instruction.format(text=text))
        r = await self.rewriter.engine.chat(self.rewriter.model, (message,), params)
        return Candidate(None if r.error else clean_rewrite(r.text), Cost.of(r), r.error)

    async def batch(self, text: str, n: int) -> tuple[list[str], Cost, str | None]:
        """One request per child (seeded by slot, so the ``n`` requests differ); the texts that came back."""
        found = await asyncio.gather(*(self._ask(text, slot, 0) for slot in range(n)))
        cost = sum((c.cost for c in found), Cost())
        error = next((c.error for c in found if c.error), None)
        return [c.text for c in found if c.text], cost, error

    async def single(self, text: str, slot: int, attempt: int) -> Candidate:
        if self.rewriter.engine.dry_run:  # an estimate: a re-request depends on answers not yet given
            return Candidate(None, Cost(), DRY_RUN)
        return await self._ask(text, slot, attempt)
