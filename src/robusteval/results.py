"""Writing a run to disk: ``results.json`` (config, versions, metrics, usage, failures) and
``samples.jsonl`` (every variant: prompt, reply, parsed answer, verdict)."""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from robusteval.config import RunConfig


# The fields of a failed sample worth listing in results.json (suites have different samples).
FAILURE_KEYS = ("model", "item_id", "family", "variant", "step", "context", "node", "sample", "error")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("robusteval", "aiohttp", "xllamacpp", "numpy", "transformers", "torch"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


def new_run_id(config: RunConfig) -> str:
    return config.run_id or f"{config.suite}-{time.strftime('%Y%m%d-%H%M%S')}"


def write_run(run_dir: Path, *, config: RunConfig, models: dict[str, dict], metrics: dict, samples: list,
              started: float, finished: float, extra: dict | None = None) -> Path:
    """Write results.json and samples.jsonl atomically (temp file + rename)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    failures = [{k: v for k, v in s.as_dict().items() if k in FAILURE_KEYS}
                for s in samples if s.status == "failed"]
    results = {
        "run_id": run_dir.name,
        "suite": config.suite,
        "config": asdict(config),
        "versions": versions(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "wall_time_s": round(finished - started, 3),
        **(extra or {}),
        "models": models,
        "metrics": metrics,
        "failures": failures,
    }
    _atomic_write(run_dir / "results.json", json.dumps(results, indent=2, ensure_ascii=False))
    _atomic_write(run_dir / "samples.jsonl",
                  "".join(json.dumps(s.as_dict(), ensure_ascii=False) + "\n" for s in samples))
    return run_dir


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
