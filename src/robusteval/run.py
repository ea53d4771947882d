"""One run from configuration to files: load data, start models, run the suite, write results.

This is the only place that wires the stages together; the CLI and tests call `run_suite`.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from robusteval.config import RunConfig
from robusteval.data.mcq import load_dev_items, load_file, load_items
from robusteval.engine import Engine, RetryPolicy, Store
from robusteval.engine.progress import RichProgress
from robusteval.models import load_backend, parse_model_spec
from robusteval.probes.design import Design
from robusteval.probes.fewshot import ShotPool
from robusteval.probes.templates import BASE, load_templates
from robusteval.results import new_run_id, write_run
from robusteval.suites import mcq
from robusteval.types import GenParams

STORE_FILE = "responses.sqlite"


async def run_suite(config: RunConfig, *, console: Console | None = None, quiet: bool = False) -> tuple[Path, dict]:
    """Run ``config`` and write ``runs/<id>/``; returns the run folder and a summary dict."""
    console = console or Console(stderr=True)
    started = time.time()
    items = load_items(config.data, limit=config.limit, seed=config.seed)
    design, design_info = build_design(config)
    specs = [parse_model_spec(m) for m in config.models]  # all specs checked before any model starts
    params = GenParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens,
                       seed=config.seed)
    store = Store(Path(config.cache_dir).expanduser() / STORE_FILE)
    progress = RichProgress(f"{config.suite}", console=console, enabled=not quiet and console.is_terminal)
    engine = Engine(store, use_cache=config.use_cache, progress=progress,
                    retry=RetryPolicy(max_retries=config.max_retries, timeout_s=config.timeout))
    samples, model_info, metrics = [], {}, {}
    try:
        for spec in specs:
            await engine.add_model(spec.label, load_backend(spec), rpm=config.rpm, tpm=config.tpm,
                                   concurrency=config.concurrency, price_in_per_mtok=config.price_in,
                                   price_out_per_mtok=config.price_out)
        with progress:
            for spec in specs:
                if config.scoring == "loglik":
                    model_samples = await mcq.run_loglik(engine, spec.label, items, config.families, design,
                                                         config.cross)
                else:
                    model_samples = await mcq.run(engine, spec.label, items, config.families, params,
                                                  config.samples, design, config.cross)
                samples.extend(model_samples)
                metrics[spec.label] = mcq.metrics(model_samples, items, config.families, seed=config.seed)
        for spec in specs:
            model_info[spec.label] = {"fingerprint": engine.fingerprint(spec.label),
                                      "usage": engine.usage[spec.label].as_dict()}
    finally:
        await engine.close()
        store.close()
    run_dir = Path(config.out_dir) / new_run_id(config)
    write_run(run_dir, config=config, models=model_info, metrics=metrics, samples=samples,
              started=started, finished=time.time(), extra={"design": design_info})
    return run_dir, {"metrics": metrics, "usage": {m: info["usage"] for m, info in model_info.items()}}


def build_design(config: RunConfig) -> tuple[Design, dict]:
    """Templates and shot pool for the families asked; the info dict goes into results.json."""
    families = set(config.families) | set(config.cross)
    templates = load_templates(config.templates) if families & {"prompt", "fewshot"} else (BASE,)
    info: dict = {"templates": [t.name for t in templates], "cross": list(config.cross)}
    shots = None
    if "fewshot" in families:
        if config.shots:
            shots = ShotPool(tuple(load_file(config.shots)), config.shots)
        elif (dev := load_dev_items(config.data)) is not None:
            shots = ShotPool(tuple(dev[0]), dev[1])
        else:
            shots = ShotPool(tuple(load_items(config.data)),
                             "the evaluated set itself (it has no dev split), never the question being asked")
        info |= {"shots_source": shots.source, "shots_per_question": config.n_shots,
                 "fewshot_as_multiturn": config.fewshot_multiturn}
    return Design(templates, shots, config.n_shots, config.fewshot_multiturn, config.seed), info
