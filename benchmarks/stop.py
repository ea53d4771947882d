"""How long Ctrl-C takes to end a run while the embedded model is decoding a long reply.

    .venv/bin/python benchmarks/stop.py [--repeats 3] [--threads 1]

Each repeat starts a fresh process that asks the embedded model (``llamacpp?n_threads=N``) one short
question (stored), then a counting request that runs to its 2000-token limit when nobody stops it;
once llama.cpp has decoded its first token (read from the in-process server's ``/slots``), SIGINT
is sent and the seconds until the process has exited are printed, with what a full decode of that
request takes on this machine for scale. Asserts nothing (tests/models/test_llamacpp_stop.py checks
the exit and the store).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

CHILD = """
import asyncio, sys
from robusteval.engine import Engine, Store
from robusteval.models import load_backend, parse_model_spec
from robusteval.types import GenParams, Message

COUNT = "Write the numbers 1, 2, 3, and so on up to 10000, separated by commas, with nothing else."

async def main():
    engine = Engine(Store(sys.argv[1]), use_cache=False)
    await engine.add_model("m", load_backend(parse_model_spec(f"llamacpp?n_threads={sys.argv[2]}")))
    try:
        await engine.chat("m", (Message("user", "Name a colour."),), GenParams(max_tokens=4))
        print(engine._models["m"].backend._server.listening_address, flush=True)
        start = asyncio.get_running_loop().time()
        await engine.chat("m", (Message("user", COUNT),), GenParams(max_tokens=int(sys.argv[3])))
        print(f"full {asyncio.get_running_loop().time() - start:.1f}", flush=True)
    finally:
        await engine.close()
        engine.store.close()

try:
    asyncio.run(main())
except KeyboardInterrupt:
    sys.exit(130)
"""


def one(store: Path, threads: int, max_tokens: int, interrupt: bool) -> float:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(store), str(threads), str(max_tokens)],
                            stdout=subprocess.PIPE, text=True)
    address = proc.stdout.readline().strip()
    if not interrupt:
        line = proc.stdout.readline()
        proc.wait()
        return float(line.split()[1])
    while True:
        with urlopen(address + "/slots", timeout=30) as response:
            if json.load(response)[0]["next_token"][0]["n_decoded"] > 0:
                break
        time.sleep(0.05)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait()
    return time.monotonic() - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stops = [one(Path(tmp) / f"s{i}.sqlite", args.threads, args.max_tokens, True) for i in range(args.repeats)]
        full = one(Path(tmp) / "full.sqlite", args.threads, args.max_tokens, False)
    print(f"SIGINT to exit, n_threads={args.threads}: " + ", ".join(f"{s:.2f}" for s in stops) + " s")
    print(f"the same request decoded to its {args.max_tokens}-token limit: {full:.1f} s")


if __name__ == "__main__":
    main()
