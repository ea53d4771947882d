"""``robusteval check-determinism``: how often a model gives a different reply to the same request.

The requests are a suite's own (by default the mcq suite's order and format variants of ``--data``),
planned by running the suite against a dry-run engine, so the check asks what a real run asks.
A seeded sample of them is asked twice (`engine.determinism`): once through the store as a run
would, once again bypassing it in the reverse order. The share of replies that differ is the
backend's noise floor: robusteval counts a changed answer as the model's inconsistency, so a
backend that answers the same request differently inflates every consistency figure by about that
much.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

# Imported lazily: the command line builds this command's parser on every start.
if TYPE_CHECKING:
    from robusteval.config import RunConfig
    from robusteval.engine.determinism import DeterminismResult
    from robusteval.engine.progress import RichProgress
    from robusteval.types import Request


async def plan_requests(config: RunConfig, spec_text: str) -> list[Request]:
    """The distinct requests ``config``'s suite would send to the model ``spec_text``, in the order
    the suite asks them; nothing is sent (the model is not even loaded)."""
    from rich.console import Console

    from robusteval.engine import Engine, Store
    from robusteval.engine.store import STORE_FILE
    from robusteval.models import load_backend, parse_model_spec
    from robusteval.suites import get_suite
    from robusteval.suites.base import SuiteContext
    from robusteval.types import GenParams

    suite = get_suite(config.suite)
    params = GenParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
                       seed=config.seed)
    with tempfile.TemporaryDirectory() as tmp:  # an empty store: every request counts as new
        store = Store(Path(tmp) / STORE_FILE)
        engine = Engine(store, use_cache=False, dry_run=True)
        try:
            label = parse_model_spec(spec_text).label
            await engine.add_model(label, load_backend(parse_model_spec(spec_text)))
            ctx = SuiteContext(config=config, options=config.options, engine=engine, models=[label], params=params,
                               console=Console(stderr=True, quiet=True))
            await suite.execute(ctx)
        finally:
            await engine.close()
            store.close()
    plan = engine.planned.get(label)
    return list(plan.requests.values()) if plan else []


def sample_requests(requests: list[Request], n: int, seed: int) -> list[Request]:
    """``n`` of ``requests`` drawn with ``random.Random(seed)``, in their planned order."""
    if n >= len(requests):
        return list(requests)
    chosen = sorted(random.Random(seed).sample(range(len(requests)), n))
    return [requests[i] for i in chosen]


async def check(config: RunConfig, spec_text: str, n: int, progress: RichProgress | None = None) -> DeterminismResult:
    """Plan ``config``'s requests, ask ``n`` of them twice against ``spec_text``, count the differences.

    The first pass goes through the store at ``config.cache_dir`` (stored answers are what a resumed
    run would use; new answers are stored) unless ``config.use_cache`` is off; the second bypasses it.
    ``progress`` shows the stages (planning, asking, asking again) and their counts."""
    from robusteval.engine import Store
    from robusteval.engine.determinism import RecordingEngine, ask_twice
    from robusteval.engine.store import STORE_FILE
    from robusteval.errors import UserError
    from robusteval.models import load_backend, parse_model_spec

    if n < 1:
        raise UserError("--n must be at least 1")
    if progress is not None:
        progress.stage("planning requests")
        progress.note(f"running suite {config.suite} without asking")
    planned = await plan_requests(config, spec_text)
    if progress is not None:
        progress.note("")
    requests = sample_requests(planned, n, config.seed)
    if not requests:
        raise UserError(f"suite {config.suite} planned no requests for these settings; nothing to check")
    spec = parse_model_spec(spec_text)
    store = Store(Path(config.cache_dir).expanduser() / STORE_FILE)
    engine = RecordingEngine(store, keep=len(requests), use_cache=config.use_cache, progress=progress)
    try:
        await engine.add_model(spec.label, load_backend(spec), rpm=config.rpm, tpm=config.tpm,
                               concurrency=config.concurrency)
        return await ask_twice(engine, spec.label, requests, rpm=config.rpm, tpm=config.tpm,
                               concurrency=config.concurrency)
    finally:
        await engine.close()
        store.close()

