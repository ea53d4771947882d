"""robusteval's hf backend against bare transformers ``generate``, on the same prompts (issue 43).

The prompts: the mcq requests `robusteval run mcq --data ../shared/realdata/mmlu-pro/test-sample-400.jsonl
--limit 20 --families order,format --max-tokens 32 --export-requests FILE` writes (297 of them), exported
here in a temporary folder (or read from ``--requests FILE``). The model: a random-weight Llama of a
given shape (no download), with a word-level tokenizer over the prompts' words, saved to a temporary
folder; both paths load it from there, in float32 unless ``--dtype`` says otherwise.

(a) bare: the prompts through the model's chat template, tokenized with left padding in fixed chunks of
    B (1, 16, 64, all), one ``generate(max_new_tokens=32, greedy)`` per chunk: what lm-eval's ``hf`` model
    does with ``--batch_size B``.
(b) robusteval: every prompt sent at once through the Engine (a fresh store each time) to the hf
    backend with ``batch_size=B``; the backend forms its batches as requests wait.
Printed per B: requests/s of each (the best of ``--repeat`` alternated runs), their ratio, how many
replies agree with bare's (greedy: all should, in float32), how many equal robusteval's at the first B
(batch 1 by default: what a batch changes; in bf16 a near-tie may fall the other way) and the mean
reply length. Measured side by side in one
process. Nothing passes or fails on time.

    python benchmarks/hf_throughput.py [--batches 1,16,64,all] [--limit N] [--hidden 64] [--layers 2]
        [--heads 4] [--device cpu|cuda] [--dtype float32|bfloat16] [--threads 1] [--requests FILE] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from robusteval.engine import Engine, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.testing.tiny_hf import save_tiny_llama
from robusteval.types import GenParams, Message

DATA = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "mmlu-pro" / "test-sample-400.jsonl"
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
            "{% if add_generation_prompt %}<|assistant|> {% endif %}")
MAX_TOKENS = 32


def export_prompts(folder: Path) -> Path:
    """The mcq requests of the issue's command, written by robusteval itself."""
    from robusteval.cli import main

    out = folder / "requests.jsonl"
    code = main(["run", "mcq", "--quiet", "--data", str(DATA), "--limit", "20", "--families", "order,format",
                 "--max-tokens", str(MAX_TOKENS), "--export-requests", str(out), "--cache-dir", str(folder / "c"),
                 "--out", str(folder / "runs")])
    if code != 0:
        raise SystemExit(f"exporting the requests failed ({code})")
    return out


def read_prompts(path: Path) -> list[tuple[Message, ...]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [tuple(Message(m["role"], m["content"]) for m in r["body"]["messages"]) for r in rows]


def save_model(folder: Path, prompts: list[tuple[Message, ...]], args: argparse.Namespace) -> None:
    """A random Llama of the given shape; its tokenizer knows every word of the prompts."""
    words = {w for p in prompts for m in p for w in m.content.split()}
    roles = {f"<|{r}|>" for r in ("user", "assistant", "system")}
    save_tiny_llama(folder, sorted(words | roles), TEMPLATE, hidden=args.hidden, intermediate=4 * args.hidden,
                    layers=args.layers, heads=args.heads, positions=4096)


Prompts = list[tuple[Message, ...]]


def bare(folder: Path, prompts: Prompts, batch: int, args: argparse.Namespace) -> tuple[float, list[str]]:
    """Seconds for every prompt through bare ``generate`` in chunks of ``batch``, and the replies."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    tok.padding_side = "left"
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, args.dtype))
    model.to(args.device).eval()
    texts = [tok.apply_chat_template([{"role": m.role, "content": m.content} for m in p], tokenize=False,
                                     add_generation_prompt=True) for p in prompts]
    with torch.no_grad():  # warm-up, as the backend's first call below
        model.generate(**tok(texts[:1], return_tensors="pt", add_special_tokens=False).to(args.device),
                       max_new_tokens=2, do_sample=False, temperature=None, top_p=None, top_k=None,
                       pad_token_id=tok.pad_token_id)
    replies: list[str] = []
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        enc = tok(texts[i:i + batch], return_tensors="pt", padding=True, add_special_tokens=False).to(args.device)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=MAX_TOKENS, do_sample=False, temperature=None, top_p=None,
                                 top_k=None, pad_token_id=tok.pad_token_id)
        for row in out[:, enc["input_ids"].shape[1]:].tolist():
            replies.append(tok.decode(row[:row.index(2)] if 2 in row else row, skip_special_tokens=True))
    return time.perf_counter() - start, replies


async def ours(folder: Path, prompts: Prompts, batch: int, args: argparse.Namespace) -> tuple[float, list[str], float]:
    """Seconds for every prompt sent at once through the Engine to the hf backend, the replies, and
    their mean length in tokens."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "s.sqlite"))
        spec = parse_model_spec(f"hf:{folder}?device={args.device}&dtype={args.dtype}&batch_size={batch}")
        await engine.add_model("hf", load_backend(spec))
        params = GenParams(max_tokens=MAX_TOKENS)
        await engine.chat("hf", (Message("user", "warm up"),), GenParams(max_tokens=2))
        start = time.perf_counter()
        responses = await asyncio.gather(*(engine.chat("hf", p, params) for p in prompts))
        seconds = time.perf_counter() - start
        await engine.close()
    failed = [r.error for r in responses if not r.ok]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, e.g. {failed[0]}")
    return seconds, [r.text or "" for r in responses], sum(r.completion_tokens for r in responses) / len(responses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", default="1,16,64,all")
    parser.add_argument("--limit", type=int, default=None, help="the first N prompts only")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads (both paths)")
    parser.add_argument("--requests", type=Path, default=None, help="an --export-requests file")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each path per batch size; the best is kept")
    args = parser.parse_args()

    import torch
    import transformers

    torch.set_num_threads(args.threads)
    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prompts = read_prompts(args.requests or export_prompts(folder / "export"))[:args.limit]
        save_model(folder / "model", prompts, args)
        n = len(prompts)
        print(f"{n} prompts, random Llama hidden={args.hidden} layers={args.layers} heads={args.heads}, "
              f"{args.device} {args.dtype}, {args.threads} torch thread(s), greedy, {MAX_TOKENS} new tokens at most")
        print(f"{'batch':>6} {'bare req/s':>11} {'robusteval req/s':>17} {'ratio':>6} {'same replies':>13} "
              f"{'= first B':>10} {'reply tokens':>13}")
        first: list[str] | None = None  # robusteval's replies at the first batch size (1 by default)
        for word in args.batches.split(","):
            batch = n if word == "all" else int(word)
            bare_s, our_s = float("inf"), float("inf")
            for _ in range(args.repeat):  # alternated, so neither path always runs on a warmer machine
                seconds, bare_replies = bare(folder / "model", prompts, batch, args)
                bare_s = min(bare_s, seconds)
                seconds, our_replies, tokens = asyncio.run(ours(folder / "model", prompts, batch, args))
                our_s = min(our_s, seconds)
            same = sum(a == b for a, b in zip(bare_replies, our_replies, strict=True))
            first = first or our_replies
            stable = sum(a == b for a, b in zip(first, our_replies, strict=True))
            print(f"{word:>6} {n / bare_s:11.2f} {n / our_s:17.2f} {bare_s / our_s:6.2f} {same:>9}/{n} "
                  f"{stable:>6}/{n} {tokens:13.1f}", flush=True)


if __name__ == "__main__":
    main()
