"""Hugging Face transformers: generation and log-likelihood, on CPU or GPU (extra ``hf``).

Spec: ``hf:PATH_OR_HUB_ID?device=cpu|cuda|auto&dtype=auto|float32|bfloat16|float16``.
One model answers one request at a time (a lock serialises calls), so ``max_concurrency`` is 1;
the engine still overlaps everything else around it.

The context window is the model's (`model_window`): a prompt that leaves no room for a reply fails,
not retried, as llama.cpp's and vLLM's servers refuse it (past its positions a model either stops with
an index error or goes on with positions it never learned, and its reply would be stored as an
answer); a reply stops at the window's end. `--estimate` warns of such prompts before the run.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import UserError
from robusteval.models.base import file_sha256, over_window, window_error
from robusteval.types import Completion, GenParams, Message, TokenLogprob

if TYPE_CHECKING:  # spec.load_backend imports the backends
    from robusteval.models.spec import ModelSpec

WEIGHT_PATTERNS = ("*.safetensors", "*.bin")
# Where a model's configuration states how many positions it was built for (GPT-2: n_positions).
WINDOW_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
NO_LIMIT = 10**9  # transformers' "no limit" for a tokenizer's model_max_length is 1e30

# A torch.Tensor: torch is an optional extra that mypy reads as untyped (ignore_missing_imports), so Any.
Tensor = Any


@dataclass
class HFBackend:
    name: str
    device: str = "cpu"
    dtype: str = "auto"
    max_concurrency: int = 1
    fingerprint: str = ""
    context_window: int | None = None  # known once the model has loaded (`model_window`)
    loglik_text = True  # scores any continuation, option texts included

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> HFBackend:
        return cls(name=spec.name, device=spec.option("device", "cpu"), dtype=spec.option("dtype", "auto"),
                   max_concurrency=spec.int_option("max_concurrency", 1))

    async def start(self) -> None:
        self._lock = threading.Lock()
        await asyncio.to_thread(self._load)

    def _load(self) -> None:
        try:
            import torch
            import transformers
        except ImportError:
            raise UserError("the hf backend needs transformers and torch: pip install 'robusteval[hf]'") from None
        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = "auto" if self.dtype == "auto" else getattr(torch, self.dtype, None)
        if dtype is None:
            raise UserError(f"hf:{self.name}: unknown dtype {self.dtype!r}; use auto, float32, bfloat16 or float16")
        local = Path(self.name).expanduser()
        if not local.exists() and (self.name.startswith((".", "/", "~")) or self.name.count("/") > 1):
            raise UserError(f"hf model path not found: {self.name}")
        try:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.name)
            self._model = transformers.AutoModelForCausalLM.from_pretrained(self.name, dtype=dtype)
        except OSError as exc:
            raise UserError(f"cannot load hf model {self.name!r} (a local folder, or a hub id when online): "
                            f"{str(exc).splitlines()[0]}") from None
        self._model.to(self.device).eval()
        self._torch = torch
        self.context_window = model_window(self._model.config, self._tokenizer)
        self.fingerprint = f"hf:{self.name}:{self._weights_hash(local)}"

    def _weights_hash(self, local: Path) -> str:
        """Hash of the weight files of a local model, else the hub commit the weights came from."""
        if local.is_dir():
            files = sorted(p for pattern in WEIGHT_PATTERNS for p in local.glob(pattern))
            h = hashlib.sha256()
            for p in files:
                h.update(p.name.encode() + file_sha256(p).encode())
            return h.hexdigest()[:16]
        return str(getattr(self._model.config, "_commit_hash", None) or "unknown")

    def _prompt(self, messages: tuple[Message, ...]) -> str:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        if getattr(self._tokenizer, "chat_template", None):
            prompt: str = self._tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            return prompt  # tokenize=False: the template's text (transformers is read untyped, see pyproject)
        return "".join(f"{m.role}: {m.content}\n" for m in messages) + "assistant:"

    async def chat(self, messages: tuple[Message, ...], params: GenParams) -> Completion:
        return await asyncio.to_thread(self._generate, self._prompt(messages), params)

    async def count_prompt_tokens(self, messages: tuple[Message, ...]) -> int:
        """The prompt's length in tokens as `chat` feeds it to the model (the estimate's exact count)."""
        return await asyncio.to_thread(lambda: len(self._tokenizer(self._prompt(messages),
                                                                   add_special_tokens=False)["input_ids"]))

    def _generate(self, prompt: str, params: GenParams) -> Completion:
        torch, tok = self._torch, self._tokenizer
        enc = tok(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        n_prompt = int(enc["input_ids"].shape[1])
        window = self.context_window
        if window is not None and over_window(n_prompt, window):
            raise window_error(n_prompt, window)
        room = params.max_tokens if window is None else min(params.max_tokens, window - n_prompt)
        sample = params.temperature > 0
        kwargs = {"max_new_tokens": room, "do_sample": sample, "return_dict_in_generate": True,
                  "output_logits": params.logprobs, "pad_token_id": tok.pad_token_id or tok.eos_token_id}
        if sample:
            kwargs |= {"temperature": params.temperature, "top_p": params.top_p, "top_k": 0}
        else:
            kwargs |= {"temperature": None, "top_p": None, "top_k": None}
        with self._lock, torch.no_grad():
            if params.seed is not None:
                torch.manual_seed(params.seed)  # under the lock: the global RNG is this call's alone
            out = self._model.generate(**enc, **kwargs)
        new = out.sequences[0, enc["input_ids"].shape[1]:].tolist()
        eos = tok.eos_token_id
        finish = "length"
        if eos is not None and eos in new:
            new, finish = new[: new.index(eos)], "stop"
        text = tok.decode(new, skip_special_tokens=True)
        cut = min((i for i in (text.find(s) for s in params.stop) if i >= 0), default=-1)
        if cut >= 0:
            text, finish = text[:cut], "stop"
            new = new[: self._tokens_covering(new, cut)]
        logprobs = self._logprobs(out.logits, new, params.top_logprobs) if params.logprobs else None
        return Completion(text=text, prompt_tokens=n_prompt, completion_tokens=len(new),
                          finish_reason=finish, logprobs=logprobs)

    def _tokens_covering(self, tokens: list[int], n_chars: int) -> int:
        """How many generated tokens it takes to spell the first ``n_chars`` characters."""
        for k in range(len(tokens) + 1):
            if len(self._tokenizer.decode(tokens[:k], skip_special_tokens=True)) >= n_chars:
                return k
        return len(tokens)

    def _logprobs(self, logits: Tensor, tokens: list[int], top: int) -> tuple[TokenLogprob, ...]:
        """Log-probabilities under the model itself (raw logits, before temperature or top-p)."""
        torch, tok = self._torch, self._tokenizer
        out = []
        for step, token in enumerate(tokens):
            lp = torch.log_softmax(logits[step][0].float(), dim=-1)
            best = torch.topk(lp, top) if top else None
            alternatives = () if best is None else tuple(
                (tok.decode([int(i)]), float(v)) for v, i in zip(best.values, best.indices))
            out.append(TokenLogprob(tok.decode([token]), float(lp[token]), alternatives))
        return tuple(out)

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        """log P(continuation | prompt + prefix) and whether greedy decoding would produce it, as
        lm-evaluation-harness scores multiple-choice options for base models."""
        context = self._prompt(messages) + prefix
        total, greedy = await asyncio.to_thread(self._loglikelihood, context, continuation)
        return Completion(text="", loglik=total, greedy=greedy)

    def _loglikelihood(self, context: str, continuation: str) -> tuple[float, bool]:
        torch, tok = self._torch, self._tokenizer
        ctx = tok(context, add_special_tokens=False)["input_ids"]
        full = tok(context + continuation, add_special_tokens=False)["input_ids"]
        if self.context_window is not None and len(full) > self.context_window:  # scored, nothing generated
            raise window_error(len(full), self.context_window)
        n_cont = max(1, len(full) - len(ctx))
        ids = torch.tensor([full], device=self.device)
        with self._lock, torch.no_grad():
            logits = self._model(ids).logits[0].float()
        lp = torch.log_softmax(logits[-n_cont - 1:-1], dim=-1)
        target = ids[0, -n_cont:]
        total = float(lp.gather(1, target[:, None]).sum())
        greedy = bool((lp.argmax(dim=-1) == target).all())
        return total, greedy

    async def close(self) -> None:
        self._model = None
        self._tokenizer = None


def model_window(config: Any, tokenizer: Any) -> int | None:
    """Tokens the model can hold: the least of what its configuration (`WINDOW_FIELDS`) and its
    tokenizer's ``model_max_length`` state, None where neither states one."""
    stated = [getattr(config, name, None) for name in WINDOW_FIELDS] + [getattr(tokenizer, "model_max_length", None)]
    windows = [w for w in stated if isinstance(w, int) and not isinstance(w, bool) and 0 < w < NO_LIMIT]
    return min(windows) if windows else None
