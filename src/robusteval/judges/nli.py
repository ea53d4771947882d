"""Natural-language inference with a user-named Hugging Face model: does the premise entail the
hypothesis?

No NLI model ships offline, so this loads whatever sequence-classification model the user names
(e.g. a multilingual XNLI model, as HalluciGen used) from a hub name or a local folder. The label
whose name contains "entail" (and not "not") is entailment; every other label counts as not
entailed, which covers both three-way (entailment/neutral/contradiction) and two-way
(entailment/not_entailment) heads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from robusteval.errors import UserError


@dataclass(frozen=True)
class NLIResult:
    entailment: float  # P(entailment)
    labels: dict[str, float]  # every label's probability

    @property
    def entailed(self) -> bool:
        return self.entailment >= 0.5


def entailment_index(id2label: dict[int, str]) -> int:
    """Index of the entailment label in a model's head; names are matched case-insensitively."""
    for index, label in id2label.items():
        name = str(label).lower().replace("-", "_")
        if "entail" in name and "not" not in name and "non" not in name:
            return int(index)
    raise UserError(f"the NLI model has no entailment label (labels: {list(id2label.values())}); "
                    "name a model trained for NLI")


class NLIModel:
    """A loaded NLI classifier; `predict` scores (premise, hypothesis) pairs in batches on the CPU."""

    def __init__(self, name: str, *, device: str = "cpu", batch_size: int = 16):
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise UserError("NLI judges need transformers and torch: pip install 'robusteval[hf]'") from None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(name)
            self.model = AutoModelForSequenceClassification.from_pretrained(name).to(device).eval()
        except OSError as exc:
            raise UserError(f"cannot load NLI model {name!r}: {exc}") from None
        if device == "cpu":
            from robusteval.models.threads import cap_torch_threads

            cap_torch_threads()  # a judge beside the model under test: only the cores that are free
        self.name, self.device, self.batch_size, self._torch = name, device, batch_size, torch
        self.id2label = {int(k): str(v) for k, v in self.model.config.id2label.items()}
        self.entail = entailment_index(self.id2label)

    def predict(self, pairs: list[tuple[str, str]]) -> list[NLIResult]:
        out: list[NLIResult] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start:start + self.batch_size]
            enc = self.tokenizer([p for p, _ in batch], [h for _, h in batch], truncation=True, padding=True,
                                 return_tensors="pt").to(self.device)
            with self._torch.no_grad():
                probs = self._torch.softmax(self.model(**enc).logits.float(), dim=-1).cpu().numpy()
            out.extend(NLIResult(float(row[self.entail]), {self.id2label[i]: float(p) for i, p in enumerate(row)})
                       for row in probs)
        return out

    def bidirectional(self, a: str, b: str) -> float:
        """Mean entailment probability of a→b and b→a: 1 when each answer implies the other."""
        forward, backward = self.predict([(a, b), (b, a)])
        return (forward.entailment + backward.entailment) / 2


@functools.lru_cache(maxsize=2)
def load_nli(name: str) -> NLIModel:
    return NLIModel(name)


def mean_bidirectional(model: NLIModel, texts: list[str]) -> float:
    """Mean over unordered pairs of the bidirectional entailment; NaN for fewer than two texts."""
    pairs = [(a, b) for i, a in enumerate(texts) for b in texts[i + 1:]]
    if not pairs:
        return float("nan")
    results = model.predict([p for a, b in pairs for p in ((a, b), (b, a))])
    scores = np.array([r.entailment for r in results]).reshape(-1, 2).mean(axis=1)
    return float(scores.mean())


class NLIJudge:
    """Mean bidirectional entailment between every pair of answers, times 5: two answers that each
    imply the other score 5, answers that imply nothing about each other 0. The NLI model runs off
    the event loop; ``clock`` holds the seconds it took."""

    name = "nli"

    def __init__(self, model_name: str):
        from robusteval.engine.local import LocalWork

        self.model_name = model_name
        self.clock = LocalWork()  # off the event loop, its time accounted

    async def rate(self, answers: list[str], hint: str | None, languages: tuple[str, ...]):
        from robusteval.judges.base import SCALE_MAX, Rating

        if len(answers) < 2:
            return Rating(None, detail="fewer than two answers")
        value = await self.clock.run("nli", lambda: mean_bidirectional(load_nli(self.model_name), answers))
        return Rating(SCALE_MAX * value, raw=value, detail=self.model_name)
