"""``robusteval merge SHARD_RUN...``: join the runs of ``--shard 1/N`` ... ``N/N`` into one run.

The merged run is the unsharded command rerun over the shards' answers: its configuration is the
shards' (without ``--shard``), every model is replaced by a `models.replay.ReplayBackend` with the
fingerprint its shards recorded, so every request has the cache key it had in its shard and is
served from the store, and nothing is sent. Metrics, intervals and the report are therefore
computed exactly as for a run that asked everything in one process (a test asserts the equality).

Checked before anything runs: the runs are shards of one configuration (same suite, settings,
models and fingerprints), all N are present and none twice, and they read the same data: each shard
records the sha256 of every data file it read (results.json ``data.sources``), and shards that read
different contents of one file, or a file that has changed since, are refused (`check_data`). Shards
written before hashes were recorded cannot be compared: the merge says so and goes on, as before.
The shards' stores must be one store (the same ``--cache-dir``), or be combined first with
``robusteval cache merge``; a store that lacks answers the shards had stops the merge before it
writes anything (`models.replay`).
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from robusteval.config import RunConfig
from robusteval.data.audit import DataAudit
from robusteval.data.shard import parse_shard
from robusteval.engine.store import STORE_FILE
from robusteval.errors import UserError
from robusteval.files import file_sha256, names_a_file
from robusteval.models.replay import Replay
from robusteval.results.codec import RecordError, decode
from robusteval.results.records import RunRecord, read_run
from robusteval.suites import get_suite

# Settings that may differ between the shards of one command (and the store, where the merge is told
# where their answers are: `merge --cache-dir`).
PER_SHARD = ("shard", "run_id", "out_dir", "overwrite", "estimate")


def read_shards(folders: list[str]) -> list[RunRecord]:
    records = []
    for folder in folders:
        path = Path(folder) / "results.json"
        if not path.is_file():
            raise UserError(f"merge: {folder} is not a run folder (no results.json)")
        try:
            records.append(read_run(folder))
        except UserError as exc:  # names the file and what is wrong with it (`results.records.read_run`)
            raise UserError(f"merge: {exc}") from None
    return records


def check_shards(records: list[RunRecord], *, own_stores: bool = False) -> None:
    """One configuration, all N shards, none twice; a `UserError` saying what is wrong otherwise."""
    if not records:
        raise UserError("merge: give the run folders of the shards")
    shards = []
    for r in records:
        shard = parse_shard(r.config.get("shard"))
        if shard is None:
            raise UserError(f"merge: run {r.run_id} is not a shard (it was run without --shard)")
        shards.append(shard)
    first = records[0]
    base = _shared_settings(first)
    for r, shard in zip(records[1:], shards[1:]):
        if r.suite != first.suite:
            raise UserError(f"merge: run {r.run_id} is a {r.suite} run, {first.run_id} a {first.suite} run")
        if shard.count != shards[0].count:
            raise UserError(f"merge: run {r.run_id} is shard {shard}, {first.run_id} shard {shards[0]}: "
                            f"not one split")
        if (diff := [d for d in _differences(base, _shared_settings(r)) if not (own_stores and d == "cache_dir")]):
            hint = ("; shards with stores of their own: `robusteval cache merge` them and give the result to "
                    "`merge --cache-dir`" if "cache_dir" in diff else "")
            raise UserError(f"merge: run {r.run_id} was not run with the settings of {first.run_id} "
                            f"(differs in {', '.join(diff)}){hint}")
        if _fingerprints(r) != _fingerprints(first):
            raise UserError(f"merge: run {r.run_id}'s models are not those of {first.run_id} "
                            f"(another model version or settings?)")
    seen: dict[int, str] = {}
    for r, shard in zip(records, shards):
        if shard.index in seen:
            raise UserError(f"merge: shard {shard} is given twice ({seen[shard.index]} and {r.run_id})")
        seen[shard.index] = r.run_id
    if missing := [i for i in range(1, shards[0].count + 1) if i not in seen]:
        raise UserError(f"merge: shard{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(f'{i}/{shards[0].count}' for i in missing)} missing")


def check_data(records: list[RunRecord]) -> list[str]:
    """Refuse shards that read different contents of one data file, or a file whose content has
    changed since they read it (the merged run reads it again: the shards' answers would be scored
    against other data). Returns the shards that recorded no hashes (older results): not checked."""
    read: dict[str, dict[str, list[str]]] = {}  # file -> sha256 -> the shards that read it
    unhashed = []
    for r in records:
        hashes = DataAudit.from_dict(r.data).hashes()
        if not hashes and names_a_file(str(r.config.get("data") or "")):
            unhashed.append(r.run_id)
        for file, digest in hashes.values():
            read.setdefault(file, {}).setdefault(digest, []).append(f"{r.config.get('shard')} ({r.run_id})")
    for file, digests in read.items():
        if len(digests) > 1:
            seen = "; ".join(f"sha256 {d[:12]} in shard {', '.join(shards)}" for d, shards in digests.items())
            raise UserError(f"merge: the shards read different contents of {file} ({seen}); rerun the shards "
                            f"on one version of the file, then merge")
        (digest,) = digests
        if names_a_file(file) and (now := file_sha256(file)) != digest:
            raise UserError(f"merge: {file} has changed since the shards read it (sha256 {digest[:12]} then, "
                            f"{now[:12]} now); the merged run would score their answers against other data: "
                            f"put back the file they read, or rerun the shards")
    return unhashed


def _shared_settings(r: RunRecord) -> dict[str, Any]:
    return {k: v for k, v in r.config.items() if k not in PER_SHARD}


def _differences(a: dict, b: dict) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _fingerprints(r: RunRecord) -> dict[str, str | None]:
    return {m.spec: m.fingerprint for m in r.models.values()}


def merged_config(first: RunRecord, *, out_dir: str, run_id: str | None, overwrite: bool = False,
                  cache_dir: str | None = None) -> RunConfig:
    """The unsharded command's configuration, as the shards recorded it; ``cache_dir`` reads the
    answers from another store than the shards' own path (their stores `cache merge`d elsewhere)."""
    raw = {k: v for k, v in first.config.items() if k in {f.name for f in fields(RunConfig)} and k != "options"}
    try:
        config = decode(RunConfig, raw)
        suite = get_suite(first.suite)
        options = decode(suite.Options, first.config.get("options") or {})
    except RecordError as exc:
        raise UserError(f"merge: the shards' configuration cannot be read back ({exc})") from None
    config = replace(config, cache_dir=cache_dir) if cache_dir else config
    return replace(config, options=options, shard=None, out_dir=out_dir, run_id=run_id, overwrite=overwrite,
                   estimate=False, use_cache=True, check_determinism=0).validated()


def replay_models(records: list[RunRecord]) -> dict[str, Replay]:
    """spec -> what replays it, for every model the shards started (under test and helpers): its
    fingerprint, and how many of its requests failed in the shards (they fail again in the merge)."""
    out: dict[str, Replay] = {}
    for r in records:
        for m in r.models.values():
            if m.fingerprint is not None:
                failed = int(m.usage.get("failed") or 0)
                before = out.get(m.spec)
                out[m.spec] = Replay(m.fingerprint, failed + (before.failed if before else 0),
                                     summed_usage(before.usage if before else None, m.usage))
    return out


# Usage figures that are the shard's own settings, not counts: the merged run takes the first shard's.
SETTINGS = ("price_in_per_mtok", "price_out_per_mtok", "price_factor")


def summed_usage(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Two shards' usage as one run's: counts, tokens and costs added (a merged run asks nothing:
    what its results cost is what its shards paid, and what their cached answers had cost)."""
    if a is None:
        return dict(b)
    out = dict(a)
    for key, value in b.items():
        if key not in SETTINGS and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = round(out.get(key, 0) + value, 6) if isinstance(value, float) else out.get(key, 0) + value
    return out


async def merge_runs(folders: list[str], *, out_dir: str, run_id: str | None = None, overwrite: bool = False,
                     cache_dir: str | None = None, console=None, quiet: bool = True):
    """Check the shards and write the merged run; returns what `run.run_suite` returns."""
    from robusteval.run import run_suite

    if cache_dir is not None and not (Path(cache_dir).expanduser() / STORE_FILE).is_file():
        raise UserError(f"merge --cache-dir {cache_dir}: no store there ({STORE_FILE}); give the folder that "
                        f"`robusteval cache merge --into` wrote or a shard's --cache-dir")
    records = read_shards(folders)
    check_shards(records, own_stores=cache_dir is not None)
    if (unhashed := check_data(records)) and console is not None:
        console.print(f"merge: shard run{'s' if len(unhashed) > 1 else ''} {', '.join(unhashed)} recorded no "
                      "content hash of their data (written before robusteval recorded one): their data could not "
                      "be compared with the other shards'", markup=False, highlight=False)
    config = merged_config(records[0], out_dir=out_dir, run_id=run_id, overwrite=overwrite, cache_dir=cache_dir)
    return await run_suite(config, console=console, quiet=quiet, replay=replay_models(records))
