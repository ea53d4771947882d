"""Hugging Face transformers: generation and log-likelihood, on CPU or GPU (extra ``hf``).

Spec: ``hf:PATH_OR_HUB_ID?device=cpu|cuda|auto&dtype=auto|float32|bfloat16|float16&batch_size=N|auto``.

Dynamic batching: requests that arrive while the model is busy wait in a queue, and the next call to
the model takes as many of them as fit into one batch (left-padded, one ``generate``; log-likelihood
requests one forward), then splits the result back per request, each with its own max tokens, stop
strings, EOS and logprobs. ``batch_size=N`` caps a batch at N; ``auto`` (the default) caps it at
`AUTO_BATCH` and at what the free memory holds for the batch's prompt lengths and max tokens (the KV
cache and one step's logits per row); a batch that still runs out of device memory is answered in
halves, and later batches are capped at the half that fitted. ``max_concurrency`` follows the batch
size (the engine sends that many at once, so the batch stays full) unless given.

What a batch shares: greedy requests batch with greedy requests (their seed chooses nothing);
a sampled request (temperature > 0) runs alone, its seed seeding torch's generator for that call
only, so a sampled reply depends on its request alone, never on which others were in flight. In
float32 a greedy reply is the same in any batch as alone (tests/models/test_hf_batching.py); in
bfloat16 or float16 the padded matrix products round differently, so a near-tie between two tokens
may fall the other way (docs/performance.md): there the batch size enters the fingerprint, unless 1.

The context window is the model's (`model_window`): a prompt that leaves no room for a reply fails,
not retried, as llama.cpp's and vLLM's servers refuse it (past its positions a model either stops with
an index error or goes on with positions it never learned, and its reply would be stored as an
answer); a reply stops at the window's end. `--estimate` warns of such prompts before the run.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.errors import UserError
from robusteval.files import file_sha256
from robusteval.models.base import over_window, window_error
from robusteval.types import Completion, GenParams, Message, TokenLogprob

if TYPE_CHECKING:  # spec.load_backend imports the backends
    from robusteval.models.spec import ModelSpec

WEIGHT_PATTERNS = ("*.safetensors", "*.bin")
# Where a model's configuration states how many positions it was built for (GPT-2: n_positions).
WINDOW_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
NO_LIMIT = 10**9  # transformers' "no limit" for a tokenizer's model_max_length is 1e30
AUTO_BATCH = 64  # the most requests an ``auto`` batch takes (memory may allow fewer)
MEMORY_SHARE = 0.5  # of the free memory, what an ``auto`` batch may fill (weights' activations need the rest)

# A torch.Tensor: torch is an optional extra that mypy reads as untyped (ignore_missing_imports), so Any.
Tensor = Any


@dataclass
class HFBackend:
    name: str
    device: str = "cpu"
    dtype: str = "auto"
    batch_size: int | None = None  # the most requests one call to the model takes; None: ``auto``
    max_concurrency: int = AUTO_BATCH
    fingerprint: str = ""
    context_window: int | None = None  # known once the model has loaded (`model_window`)
    loglik_text = True  # scores any continuation, option texts included

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> HFBackend:
        auto = spec.option("batch_size", "auto").strip().lower() == "auto"
        batch_size = None if auto else spec.int_option("batch_size", AUTO_BATCH)
        return cls(name=spec.name, device=spec.option("device", "cpu"), dtype=spec.option("dtype", "auto"),
                   batch_size=batch_size, max_concurrency=spec.int_option("max_concurrency", batch_size or AUTO_BATCH))

    async def start(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[_Job] = []
        self._worker: asyncio.Task[None] | None = None
        self._running: list[_Job] = []  # the batch in the model now
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
        if self._model.dtype in (torch.bfloat16, torch.float16) and self.batch_size != 1:
            # in half precision a reply may differ with the batch it was in (padding rounds differently):
            # such answers are not a batch-1 run's (float32 ones are, test_hf_batching)
            self.fingerprint += f":{str(self._model.dtype).removeprefix('torch.')}-batch-{self.batch_size or 'auto'}"

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
        return await self._submit(_Job(self._prompt(messages), params))

    async def count_prompt_tokens(self, messages: tuple[Message, ...]) -> int:
        """The prompt's length in tokens as `chat` feeds it to the model (the estimate's exact count)."""
        return await asyncio.to_thread(lambda: len(self._tokenizer(self._prompt(messages),
                                                                   add_special_tokens=False)["input_ids"]))

    async def loglikelihood(self, messages: tuple[Message, ...], prefix: str, continuation: str) -> Completion:
        """log P(continuation | prompt + prefix) and whether greedy decoding would produce it, as
        lm-evaluation-harness scores multiple-choice options for base models."""
        return await self._submit(_Job(self._prompt(messages) + prefix, None, continuation))

    async def _submit(self, job: _Job) -> Completion:
        """Queue ``job`` for the next batch; start the loop that drains the queue if none runs."""
        job.future = asyncio.get_running_loop().create_future()
        self._queue.append(job)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
            self._worker.add_done_callback(self._abandon)
        return await job.future

    async def _drain(self) -> None:
        """Run batches while requests wait: those that arrive during one call to the model form the next."""
        await asyncio.sleep(0)  # requests sent together (one gather, one engine tick) join the first batch
        while self._queue:
            self._running = self._next_batch()
            if not self._running:
                continue
            try:
                results = await asyncio.to_thread(self._run, self._running)
            except Exception as exc:  # the model itself failed: every request of the batch did
                results = [exc] * len(self._running)
            for job, result in zip(self._running, results, strict=True):
                if job.future.done():  # its caller gave up (a timeout, Ctrl-C)
                    continue
                if isinstance(result, Exception):
                    job.future.set_exception(result)
                else:
                    job.future.set_result(result)
            self._running = []

    def _abandon(self, worker: asyncio.Task[None]) -> None:
        """The batching loop was cancelled (the event loop shutting down), maybe before it began: cancel
        what still waits, so no caller waits for ever on a batch that never runs."""
        if worker is not self._worker or not worker.cancelled():
            return  # it ended with the queue empty, or a new loop has taken the queue over
        for job in [*self._running, *self._queue]:
            if not job.future.done():
                job.future.cancel()

    def _next_batch(self) -> list[_Job]:
        """The first waiting request and those that may share its call, up to the batch's cap."""
        waiting = [j for j in self._queue if not j.future.done()]
        if not waiting:
            self._queue.clear()
            return []
        key = waiting[0].batch_key
        alike = [j for j in waiting if j.batch_key == key] if key is not None else waiting[:1]
        cap = self.batch_size or self._memory_cap(alike[:AUTO_BATCH])
        batch = alike[:cap]
        taken = {id(j) for j in batch}
        self._queue = [j for j in waiting if id(j) not in taken]
        return batch

    def _memory_cap(self, jobs: list[_Job]) -> int:
        """How many of ``jobs`` (an ``auto`` batch) the free memory holds: per row, the KV cache of its
        prompt and reply, and the logits of the longest row (a log-likelihood forward keeps them all)."""
        config = self._model.config
        layers = getattr(config, "num_hidden_layers", 32)
        heads = getattr(config, "num_attention_heads", 32)
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = getattr(config, "head_dim", None) or getattr(config, "hidden_size", 4096) // heads
        vocab = getattr(config, "vocab_size", 32000)
        element = self._model.dtype.itemsize if hasattr(self._model.dtype, "itemsize") else 4
        # tokens from characters before tokenizing: a third of them over-counts English (about 4 per token)
        tokens = max((len(j.prompt) + len(j.continuation or "")) // 3 + (j.params.max_tokens if j.params else 0)
                     for j in jobs)
        per_row = tokens * 2 * layers * kv_heads * head_dim * element + vocab * 4 * (1 if jobs[0].params else tokens)
        return max(1, min(AUTO_BATCH, int(MEMORY_SHARE * self._free_memory() // max(1, per_row))))

    def _free_memory(self) -> int:
        """Bytes free on the model's device (the GPU's, or the machine's available memory on CPU)."""
        torch = self._torch
        if str(self.device).startswith("cuda") and torch.cuda.is_available():
            return int(torch.cuda.mem_get_info(torch.device(self.device))[0])
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # not Linux: assume room for a full batch
            return 1 << 40

    def _run(self, batch: list[_Job]) -> list[Completion | Exception]:
        """The batch's replies; where the device runs out of memory, the same requests in two halves,
        and later batches capped at the half that fitted (as lm-eval's ``auto`` halves its batch)."""
        try:
            return self._loglik_batch(batch) if batch[0].params is None else self._generate_batch(batch)
        except self._torch.OutOfMemoryError:
            if len(batch) == 1:
                raise
            if str(self.device).startswith("cuda"):
                self._torch.cuda.empty_cache()
            half = len(batch) // 2
            self.batch_size = min(self.batch_size or half, half)
            return self._run(batch[:half]) + self._run(batch[half:])

    def _pad_id(self) -> int:
        tok = self._tokenizer
        pad = tok.pad_token_id or tok.eos_token_id
        return int(pad) if pad is not None else 0

    def _generate_batch(self, jobs: list[_Job]) -> list[Completion | Exception]:
        """One left-padded ``generate`` for requests of one batch key, split back per request."""
        torch, tok = self._torch, self._tokenizer
        results: list[Completion | Exception] = []
        rows: list[tuple[int, list[int], int]] = []  # (job index, prompt ids, tokens it may generate)
        window = self.context_window
        for i, job in enumerate(jobs):
            assert job.params is not None
            ids = tok(job.prompt, add_special_tokens=False)["input_ids"]
            if window is not None and over_window(len(ids), window):
                results.append(window_error(len(ids), window))
                continue
            results.append(Completion(text=""))  # placeholder, replaced below
            rows.append((i, ids, job.params.max_tokens if window is None else min(job.params.max_tokens,
                                                                                   window - len(ids))))
        if not rows:
            return results
        params = jobs[rows[0][0]].params
        assert params is not None  # a generation batch: every job has params, and they sample alike
        width = max(len(ids) for _, ids, _ in rows)
        pad = self._pad_id()
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for _, ids, _ in rows], device=self.device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for _, ids, _ in rows], device=self.device)
        want_logits = any(jobs[i].params.logprobs for i, _, _ in rows)  # type: ignore[union-attr]
        sample = params.temperature > 0
        kwargs: dict[str, Any] = {"max_new_tokens": max(room for _, _, room in rows), "do_sample": sample,
                  "return_dict_in_generate": True, "output_logits": want_logits, "pad_token_id": pad}
        if sample:
            kwargs |= {"temperature": params.temperature, "top_p": params.top_p, "top_k": 0}
        else:
            kwargs |= {"temperature": None, "top_p": None, "top_k": None}
        with self._lock, torch.no_grad():
            if sample and params.seed is not None:
                torch.manual_seed(params.seed)  # under the lock: the global RNG is this call's alone
            out = self._model.generate(input_ids=input_ids, attention_mask=mask, **kwargs)
        for row, (i, ids, room) in enumerate(rows):
            own = jobs[i].params
            assert own is not None
            new = out.sequences[row, width:width + room].tolist()
            results[i] = self._completion(new, len(ids), own, out.logits, row)
        return results

    def _completion(self, new: list[int], n_prompt: int, params: GenParams, logits: Tensor, row: int) -> Completion:
        """One row's reply: cut at its EOS, then at its first stop string; its tokens' logprobs."""
        tok = self._tokenizer
        eos = tok.eos_token_id
        finish = "length"
        if eos is not None and eos in new:
            new, finish = new[: new.index(eos)], "stop"
        text = tok.decode(new, skip_special_tokens=True)
        cut = min((i for i in (text.find(s) for s in params.stop) if i >= 0), default=-1)
        if cut >= 0:
            text, finish = text[:cut], "stop"
            new = new[: self._tokens_covering(new, cut)]
        logprobs = self._logprobs(logits, row, new, params.top_logprobs) if params.logprobs else None
        return Completion(text=text, prompt_tokens=n_prompt, completion_tokens=len(new),
                          finish_reason=finish, logprobs=logprobs)

    def _tokens_covering(self, tokens: list[int], n_chars: int) -> int:
        """How many generated tokens it takes to spell the first ``n_chars`` characters."""
        for k in range(len(tokens) + 1):
            if len(self._tokenizer.decode(tokens[:k], skip_special_tokens=True)) >= n_chars:
                return k
        return len(tokens)

    def _logprobs(self, logits: Tensor, row: int, tokens: list[int], top: int) -> tuple[TokenLogprob, ...]:
        """Log-probabilities under the model itself (raw logits, before temperature or top-p)."""
        torch, tok = self._torch, self._tokenizer
        out = []
        for step, token in enumerate(tokens):
            lp = torch.log_softmax(logits[step][row].float(), dim=-1)
            best = torch.topk(lp, top) if top else None
            alternatives = () if best is None else tuple(
                (tok.decode([int(i)]), float(v)) for v, i in zip(best.values, best.indices))
            out.append(TokenLogprob(tok.decode([token]), float(lp[token]), alternatives))
        return tuple(out)

    def _loglik_batch(self, jobs: list[_Job]) -> list[Completion | Exception]:
        """One right-padded forward for a batch of log-likelihood requests (causal attention: the
        padding after a row's tokens changes none of its logits)."""
        torch, tok = self._torch, self._tokenizer
        results: list[Completion | Exception] = []
        rows: list[tuple[int, list[int], int]] = []  # (job index, context + continuation ids, continuation tokens)
        for i, job in enumerate(jobs):
            ctx = tok(job.prompt, add_special_tokens=False)["input_ids"]
            full = tok(job.prompt + (job.continuation or ""), add_special_tokens=False)["input_ids"]
            if self.context_window is not None and len(full) > self.context_window:  # scored, nothing generated
                results.append(window_error(len(full), self.context_window))
                continue
            results.append(Completion(text=""))
            rows.append((i, full, max(1, len(full) - len(ctx))))
        if not rows:
            return results
        width = max(len(full) for _, full, _ in rows)
        pad = self._pad_id()
        ids = torch.tensor([full + [pad] * (width - len(full)) for _, full, _ in rows], device=self.device)
        mask = torch.tensor([[1] * len(full) + [0] * (width - len(full)) for _, full, _ in rows], device=self.device)
        with self._lock, torch.no_grad():
            logits = self._model(input_ids=ids, attention_mask=mask).logits
        for row, (i, full, n_cont) in enumerate(rows):
            end = len(full)
            lp = torch.log_softmax(logits[row, end - n_cont - 1:end - 1].float(), dim=-1)
            target = ids[row, end - n_cont:end]
            total = float(lp.gather(1, target[:, None]).sum())
            greedy = bool((lp.argmax(dim=-1) == target).all())
            results[i] = Completion(text="", loglik=total, greedy=greedy)
        return results

    async def close(self) -> None:
        self._model = None
        self._tokenizer = None


@dataclass(eq=False)
class _Job:
    """A request waiting for a batch: a prompt to continue (``params``) or to score (``continuation``)."""

    prompt: str
    params: GenParams | None
    continuation: str | None = None
    future: asyncio.Future[Completion] = field(init=False)

    @property
    def batch_key(self) -> tuple[object, ...] | None:
        """Requests of one key share a call: greedy ones, log-likelihood ones; a sampled one (None) runs alone."""
        if self.params is None:
            return ("loglik",)
        return ("greedy",) if self.params.temperature <= 0 else None


def model_window(config: Any, tokenizer: Any) -> int | None:
    """Tokens the model can hold: the least of what its configuration (`WINDOW_FIELDS`) and its
    tokenizer's ``model_max_length`` state, None where neither states one."""
    stated = [getattr(config, name, None) for name in WINDOW_FIELDS] + [getattr(tokenizer, "model_max_length", None)]
    windows = [w for w in stated if isinstance(w, int) and not isinstance(w, bool) and 0 < w < NO_LIMIT]
    return min(windows) if windows else None
