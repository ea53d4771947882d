"""What a dry run would send to one model, tallied as the requests are planned.

`--estimate` needs, of each new distinct request, only its prompt's length in characters, its
message count and its max_tokens, and a seeded sample of whole requests for the tokenizer to count.
Holding every planned request instead made the estimate of MMLU-Pro's test split x order,format
grow past the peak of the run it estimated (the run itself streams); a `Plan` keeps the requests
only where a caller needs them all (`robusteval export`, `check-determinism`).
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass, field

from robusteval.types import Request


def prompt_chars(request: Request) -> int:
    return sum(len(m.content) for m in request.messages)


@dataclass
class Plan:
    """The distinct new requests a dry run planned for one model: counts and lengths of all of them,
    a seeded uniform sample of ``sample_size`` (all of them, in planned order, up to that size), and
    every request itself only with ``keep_requests``."""

    keep_requests: bool = True
    sample_size: int = 1000
    seed: int = 0
    requests: dict[str, Request] = field(default_factory=dict)  # every planned request, when kept
    sample: list[Request] = field(default_factory=list)
    chars: array[int] = field(default_factory=lambda: array("q"))  # per planned request, in planned order
    messages: array[int] = field(default_factory=lambda: array("q"))
    max_tokens: array[int] = field(default_factory=lambda: array("q"))
    _keys: set[str] = field(default_factory=set)
    _rng: random.Random | None = None

    def add(self, key: str, request: Request) -> None:
        if key in self._keys:  # planned twice within the run: sent once
            return
        self._keys.add(key)
        self.chars.append(prompt_chars(request))
        self.messages.append(len(request.messages))
        self.max_tokens.append(request.params.max_tokens)
        if self.keep_requests:
            self.requests[key] = request
        seen = len(self._keys)
        if seen <= self.sample_size:
            self.sample.append(request)
            return
        if self._rng is None:
            self._rng = random.Random(self.seed)
        slot = self._rng.randrange(seen)  # reservoir sampling: each request kept with chance size/seen
        if slot < self.sample_size:
            self.sample[slot] = request

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def complete_sample(self) -> bool:
        """Whether the sample holds every planned request, in planned order."""
        return len(self._keys) <= self.sample_size
