"""Answer a robusteval batch file with Ray Data: each request line posted to an OpenAI-compatible server.

    robusteval run mcq --model batchfile:NAME --export-requests requests.jsonl
    python examples/ray_batch.py requests.jsonl answers.jsonl --base-url http://HOST:8000/v1
    robusteval import-results answers.jsonl
    robusteval run mcq --model batchfile:NAME        # completes from the store, asks nothing

The map step is plain Python: it reads one input line (``custom_id``, ``url``, ``body``), posts the body
to ``base_url`` + the line's path, and writes one output line in the OpenAI batch output shape
(``custom_id``, ``response: {status_code, body}``, ``error``). A server error becomes an error line,
which `robusteval import-results` counts and does not store. Ray spreads the lines over the cluster's
workers (``--concurrency`` of them, each posting one line at a time); on GPUs, Ray Data LLM's vLLM
processor replaces the HTTP call (docs/scale.md).

Needs ``pip install 'ray[data]==2.60.0'``; with no cluster running, ``ray.init`` starts a local one.
"""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from typing import Any


def answer_line(text: str, base_url: str, timeout_s: float = 300.0) -> str:
    """One batch input line -> one batch output line (JSON text)."""
    line = json.loads(text)
    path = line["url"].removeprefix("/v1")
    request = urllib.request.Request(base_url.rstrip("/") + path, data=json.dumps(line["body"]).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            status, body = reply.status, json.loads(reply.read())
        out: dict[str, Any] = {"custom_id": line["custom_id"], "response": {"status_code": status, "body": body},
                               "error": None}
    except urllib.error.HTTPError as exc:
        out = {"custom_id": line["custom_id"], "response": {"status_code": exc.code, "body": None},
               "error": {"message": exc.read().decode("utf-8", "replace")[:500]}}
    except (urllib.error.URLError, TimeoutError, ValueError) as exc:
        out = {"custom_id": line["custom_id"], "response": None, "error": {"message": str(exc)}}
    return json.dumps(out, ensure_ascii=False)


def run(input_path: str, output_path: str, base_url: str, concurrency: int = 2, address: str | None = None) -> int:
    """Answer every line of ``input_path`` through Ray Data; write ``output_path``; the lines written."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    lines = ray.data.read_text(input_path)
    answered = lines.map(lambda row: {"text": answer_line(row["text"], base_url)}, concurrency=concurrency)
    n = 0
    with open(output_path, "w", encoding="utf-8") as out:
        for row in answered.iter_rows():
            out.write(row["text"] + "\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="the file `robusteval run ... --export-requests` wrote")
    parser.add_argument("output", help="where to write the answers (then: robusteval import-results OUTPUT)")
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server, e.g. http://HOST:8000/v1")
    parser.add_argument("--concurrency", type=int, default=2, help="Ray workers posting lines")
    parser.add_argument("--address", help="a running Ray cluster (default: start a local one)")
    args = parser.parse_args(argv)
    n = run(args.input, args.output, args.base_url, args.concurrency, args.address)
    print(f"wrote {n} answers to {args.output}")


if __name__ == "__main__":
    main()
