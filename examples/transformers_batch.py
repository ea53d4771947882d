"""Answer a robusteval batch file with a local Hugging Face transformers model, batched on a GPU (or the CPU).

    robusteval run mcq --model batchfile:NAME --export-requests requests.jsonl
    python examples/transformers_batch.py requests.jsonl answers.jsonl --model DIR_OR_HUB_ID [--gguf FILE]
    robusteval import-results answers.jsonl
    robusteval run mcq --model batchfile:NAME        # completes from the store, asks nothing

For an engine with no server: the model is loaded once, the chat requests are rendered with the
tokenizer's chat template, sorted by length and decoded greedily in batches (left padding), and each
answer is written as an OpenAI batch output line (``custom_id``, ``response: {status_code: 200, body:
<chat.completion>}``). ``--gguf FILE`` loads the weights from a GGUF file in ``--model``'s folder
(transformers dequantizes them; it needs the ``gguf`` and ``accelerate`` packages): this is how the
embedded SmolLM2 GGUF was run on a GPU for docs/performance.md's crossed grid.

Only greedy chat requests are answered (``temperature`` 0, as robusteval's runs ask by default);
``--scoring loglik`` lines (``/v1/completions``) and sampled requests get an error line, which
`robusteval import-results` counts and does not store. Requests may be gzip-compressed (``.gz``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO


def _open(path: str, mode: str) -> TextIO:
    return gzip.open(path, mode + "t", encoding="utf-8") if path.endswith(".gz") else open(path, mode, encoding="utf-8")


def _error(custom_id: str, message: str) -> str:
    return json.dumps({"custom_id": custom_id, "response": None, "error": {"message": message}})


def _answer(custom_id: str, model: str, text: str, prompt_tokens: int, new_tokens: int, finished: bool) -> str:
    body = {"id": f"tb-{custom_id[:16]}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop" if finished else "length"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": new_tokens,
                      "total_tokens": prompt_tokens + new_tokens}}
    return json.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None},
                      ensure_ascii=False)


def _batches(items: list[tuple[int, Any]], size: int) -> Iterator[list[tuple[int, Any]]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _decode(model: Any, tokenizer: Any, group: list[tuple[str, str, list[int], int]], eos: set[int],
            device: str, stops: dict[str, list[str]]) -> list[str]:
    """One batch decoded greedily (left padding); on running out of GPU memory, each half in turn."""
    import torch

    pad = tokenizer.pad_token_id
    width = max(len(prompt) for _, _, prompt, _ in group)
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for _, _, p, _ in group], device=device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for _, _, p, _ in group], device=device)
    try:
        with torch.inference_mode():
            generated = model.generate(input_ids=input_ids, attention_mask=mask, do_sample=False,
                                       max_new_tokens=max(most for *_, most in group), pad_token_id=pad)
    except torch.cuda.OutOfMemoryError:
        if len(group) == 1:
            raise
        del input_ids, mask
        torch.cuda.empty_cache()
        half = len(group) // 2
        return (_decode(model, tokenizer, group[:half], eos, device, stops)
                + _decode(model, tokenizer, group[half:], eos, device, stops))
    lines = []
    for row, (custom_id, name, prompt, most) in zip(generated[:, width:].tolist(), group, strict=True):
        new, finished = [], False
        for token in row[:most]:
            if token in eos:
                finished = True
                break
            new.append(token)
        text = tokenizer.decode(new, skip_special_tokens=True)
        cut = min((i for i in (text.find(s) for s in stops.get(custom_id, [])) if i >= 0), default=-1)
        if cut >= 0:  # a stop string ends the answer before it, as a server's `stop` does
            text, finished = text[:cut], True
        lines.append(_answer(custom_id, name, text, len(prompt), len(new), finished))
    return lines


def run(input_path: str, output_path: str, model_id: str, gguf: str | None = None, batch_size: int = 256,
        device: str | None = None, dtype: str = "float32", time_limit_s: float | None = None) -> dict[str, int]:
    """Answer every line of ``input_path``; write ``output_path``; counts of answered and refused lines.
    Past ``time_limit_s`` no new batch is started: the lines left unanswered are simply not written, and
    exporting again after the import writes exactly those."""
    started = time.monotonic()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    extra = {"gguf_file": gguf} if gguf else {}
    tokenizer = AutoTokenizer.from_pretrained(model_id, **extra)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_id, dtype=getattr(torch, dtype), **extra).to(device).eval()

    refused, wanted, stops = [], [], {}
    with _open(input_path, "r") as f:
        for text in f:
            if not text.strip():
                continue
            line = json.loads(text)
            body = line.get("body") or {}
            if line.get("url") != "/v1/chat/completions":
                refused.append(_error(line["custom_id"], f"{line.get('url')}: only chat completions are answered"))
            elif float(body.get("temperature", 0.0)) != 0.0:
                refused.append(_error(line["custom_id"], "only greedy requests (temperature 0) are answered"))
            else:
                wanted.append((line["custom_id"], body.get("model", model_id), int(body.get("max_tokens", 256)),
                               tokenizer.apply_chat_template(body["messages"], add_generation_prompt=True,
                                                             tokenize=False)))
                stops[line["custom_id"]] = list(body.get("stop") or [])
    # The rendered template carries its own special tokens; one call tokenizes every prompt.
    encoded = tokenizer([w[3] for w in wanted], add_special_tokens=False)["input_ids"] if wanted else []
    jobs = [(custom_id, name, list(ids), most) for (custom_id, name, most, _), ids in zip(wanted, encoded, strict=True)]
    # Similar lengths together: less padding, and one max_tokens per batch.
    order = sorted(range(len(jobs)), key=lambda k: (jobs[k][3], len(jobs[k][2])))
    configured = getattr(model.generation_config, "eos_token_id", None)
    eos = {tokenizer.eos_token_id} | set(configured if isinstance(configured, list) else [configured])
    done = 0
    with _open(output_path, "w") as out:
        for line_text in refused:
            out.write(line_text + "\n")
        for group in _batches([(k, jobs[k]) for k in order], batch_size):
            if time_limit_s is not None and time.monotonic() - started > time_limit_s:
                break
            for line_text in _decode(model, tokenizer, [job for _, job in group], eos, device, stops):
                out.write(line_text + "\n")
            done += len(group)
            out.flush()
            print(f"{done}/{len(jobs)} answered, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return {"answered": done, "refused": len(refused), "unanswered": len(jobs) - done}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--model", required=True, help="a transformers model folder or hub id")
    parser.add_argument("--gguf", help="a GGUF file in --model's folder to load the weights from")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--device", help="cuda, cpu, ... (default: cuda when there is one)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--time-limit", type=float, help="start no new batch after this many seconds")
    args = parser.parse_args()
    if args.batch_size < 1:
        parser.error(f"--batch-size {args.batch_size}: give 1 or more")
    if not os.path.isfile(args.input):
        parser.error(f"{args.input}: no such file (the requests `--export-requests` wrote)")
    started = time.perf_counter()
    counts = run(args.input, args.output, args.model, args.gguf, args.batch_size, args.device, args.dtype,
                 args.time_limit)
    print(f"{counts['answered']} answered, {counts['refused']} refused, {counts['unanswered']} left for a later"
          f" batch, in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
