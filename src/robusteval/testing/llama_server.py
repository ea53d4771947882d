"""Serve a GGUF model (default: the embedded SmolLM2) as a real llama.cpp OpenAI-compatible HTTP
server on loopback. Tests and benchmarks use it as the "remote endpoint" they talk to over HTTP.

    python -m robusteval.testing.llama_server --port 8080 [--model PATH.gguf] [--parallel 1] [--cache-prompt]

Prints ``PORT`` on its first stdout line once the server accepts requests, then serves until killed.
Its defaults are the ``llamacpp`` backend's reproducible ones (one slot, no prompt cache: see
`robusteval.models.llamacpp`), so a model under test served over HTTP answers as it does in-process.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(model: str | None = None, port: int = 0, parallel: int = 1, n_ctx_per_slot: int = 4096, threads: int = 0,
          cache_prompt: bool = False):
    """Start the server in this process; returns (server, port). Keep the server object alive."""
    import xllamacpp as xl

    from robusteval.models.llamacpp import default_threads, embedded_model_path, server_params

    port = port or free_port()
    server = xl.Server(server_params(Path(model) if model else embedded_model_path(), parallel, n_ctx_per_slot,
                                     threads or default_threads(), port, cache_prompt=cache_prompt))
    _wait_ready(port)
    return server, port


@contextmanager
def in_subprocess(parallel: int = 1, threads: int = 0, env: dict[str, str] | None = None,
                  cache_prompt: bool = False) -> Iterator[str]:
    """This server in its own process (so it never shares the caller's GIL or event loop); yields
    its base URL (``http://127.0.0.1:PORT/v1``) and stops it on exit."""
    cmd = [sys.executable, "-m", "robusteval.testing.llama_server", "--parallel", str(parallel)]
    if threads:
        cmd += ["--threads", str(threads)]
    if cache_prompt:
        cmd += ["--cache-prompt"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stdout is not None  # stdout=PIPE
        line = proc.stdout.readline()
        if not line.strip():
            raise RuntimeError("llama.cpp server did not start")
        yield f"http://127.0.0.1:{int(line)}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _wait_ready(port: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF file (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--parallel", type=int, default=1,
                        help="llama.cpp slots (continuous batching; more than 1 makes greedy replies vary)")
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: every granted core)")
    parser.add_argument("--cache-prompt", action="store_true",
                        help="reuse cached prompt prefixes (faster; greedy replies then vary with what was cached)")
    args = parser.parse_args()
    server, port = start(args.model, args.port, args.parallel, threads=args.threads, cache_prompt=args.cache_prompt)
    print(port, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    del server


if __name__ == "__main__":
    main()
