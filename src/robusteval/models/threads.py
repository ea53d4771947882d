"""How many compute threads a local model (llama.cpp, torch) may start without oversubscribing.

llama.cpp's threads meet at a barrier after every layer: when other processes hold the cores, one
thread that loses its core stalls the rest, and a request takes many times longer than with fewer
threads (measured in docs/performance.md, "Threads on a busy machine": at load 10-14 on 2 cores,
35-54 s per request with 2 threads against 5-9 s with 1). So a default takes the cores that are
actually free, not every core: the cores granted to this process (a container's or taskset's grant)
less what other processes keep busy on them, to the nearest core, at least 1, and never more than a
container's CPU quota allows (`cpu_quota`: Docker's ``--cpus 2`` leaves every host core in the affinity
and limits the time instead, so counting the cores alone would start a thread per host core).

How busy the cores are is read two ways (`read_cpu`), and the busier reading wins (`threads_for`):

- what the granted cores did over the last `WINDOW_S` seconds (``/proc/stat``'s busy ticks, less this
  process's own): sees a competitor that started a moment ago, which the load average, a one-minute
  mean, shows only as a few tenths (docs/performance.md, "make demo beside a busy loop": a busy loop
  started with the run was missed, and the model took both cores);
- the 1-minute load average: counts processes waiting for a core, beyond what the cores can show as
  busy, and a competitor that is busy in bursts and happened to pause during the window.

The busier one wins because the two mistakes cost differently: one thread too few on an idle machine
costs 1.6x (2 threads against 1 alone on 2 cores), one too many on a busy one 16x. Without
``/proc/stat`` (macOS, Windows) only the load average is read.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

WINDOW_S = 0.3  # long enough for a scheduler tick per core to count (100 Hz), short beside a model's load
PROC_STAT = Path("/proc/stat")
PROC_SELF_STAT = Path("/proc/self/stat")
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class CpuReadings:
    """What the thread count is chosen from; every figure in cores (``None``: not known here)."""

    cores: int  # this process may run on (its affinity)
    host_cores: int  # on the host, which the load average is spread over
    load: float | None = None  # the host's 1-minute load average
    busy: float | None = None  # granted cores other processes kept busy over the last window
    quota: float | None = None  # the cgroup's CPU time per period, in cores (None: no quota)


def quota_cores(quota: float | None) -> int | None:
    """Whole cores a CPU quota grants: rounded down, at least 1 (None: no quota).

    llama.cpp's threads are whole. Rounding ``--cpus 1.5`` up to 2 threads would use the half core
    that rounding down leaves, but the quota is spent by the whole process (the event loop, the store's
    writer, a judge run on it too), and once a period's time is spent the cgroup is throttled, one
    thread possibly mid-layer while the other waits at the barrier. Rounding down never asks for more
    than the quota grants; it is the side the measured costs favour (one thread too few cost 1.6x
    alone on 2 cores, one too many up to 16x on a busy machine; docs/performance.md). Neither side
    was measured under a fractional quota."""
    return None if quota is None else max(1, math.floor(quota))


def threads_for(r: CpuReadings) -> int:
    """Threads a local model may start: the granted cores less the busier of the two readings, to the
    nearest core, at least 1 (every granted core where neither is known), and no more than the quota's
    whole cores (`quota_cores`).

    The load average is host-wide: the share of it that falls on the granted cores is taken as busy
    (all of it when the process may use every core). To the nearest core: a core busy less than half
    the time counts as free (this process's own start-up shows in the load of an idle machine as a
    few tenths). The quota caps the free cores rather than replacing the affinity count: what other
    processes keep busy is measured on the cores this process may run on, and a container on a busy
    host with a quota of 2 still has 2 free cores as long as 2 of its host's cores are idle."""
    readings = [] if r.busy is None else [r.busy]
    if r.load is not None:
        readings.append(r.load * r.cores / max(r.cores, r.host_cores))
    free = r.cores if not readings else math.floor(r.cores - max(readings) + 0.5)
    quota = quota_cores(r.quota)
    return max(1, min(r.cores, free, r.cores if quota is None else quota))


def granted_cpus() -> set[int] | None:
    """The ids of the CPUs this process may run on (its affinity), None where the system does not say."""
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return None


def affinity_cores(cpus: set[int] | None) -> int:
    """How many cores the affinity ``cpus`` name (the host's count where the system does not say)."""
    return max(1, len(cpus)) if cpus is not None else os.cpu_count() or 1


def granted_cores() -> int:
    """The cores this process may use: its CPU affinity, within a container's CPU quota
    (`quota_cores`), not the host's count."""
    cores, quota = affinity_cores(granted_cpus()), quota_cores(cpu_quota())
    return cores if quota is None else min(cores, quota)


def parse_quota(quota: str, period: str) -> float | None:
    """Cores' worth of CPU time from a quota and a period in microseconds; None for no quota (cgroup
    v2's ``max``, v1's ``-1``) or text that is not a positive quota."""
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max", or not a number at all
        return None
    return q / p if q > 0 and p > 0 else None


def _read_quota(folder: Path, v2: bool) -> float | None:
    """One cgroup folder's quota in cores (None: none set, or not there)."""
    try:
        if v2:
            quota, _, period = (folder / "cpu.max").read_text().strip().partition(" ")
            return parse_quota(quota, period)
        return parse_quota((folder / "cpu.cfs_quota_us").read_text().strip(),
                           (folder / "cpu.cfs_period_us").read_text().strip())
    except OSError:
        return None


def _own_path(membership: str, v2: bool) -> str:
    """This process's cgroup path in the hierarchy the quota is read from, from ``/proc/self/cgroup``
    lines ("ID:CONTROLLERS:PATH"): cgroup v2's unified one ("0::/PATH"), else the v1 hierarchy whose
    controllers include ``cpu`` ("4:cpu,cpuacct:/PATH"); "/" where the process is in neither."""
    for line in membership.splitlines():
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if controllers == "" if v2 else "cpu" in controllers.split(","):
            return path.strip() or "/"
    return "/"


def cpu_quota(root: Path | None = None, membership: str | None = None) -> float | None:
    """This process's CPU quota in cores (``docker --cpus 2``: 2.0), None where none is set or the files
    are absent (not Linux, no cgroup CPU controller mounted).

    A quota limits its cgroup and every cgroup below it, so the tightest of the process's own cgroup
    and its ancestors holds: a container sees its own cgroup at the root (``/proc/self/cgroup`` says
    "/", or names a path its mount does not show), a systemd service with ``CPUQuota=`` or a nested
    container a path below it. Read from cgroup v2's ``cpu.max`` ("QUOTA PERIOD", or "max PERIOD"),
    else cgroup v1's ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` under ``cpu`` or ``cpu,cpuacct``
    (most hosts mount one as a link to the other). ``root`` defaults to `CGROUP_ROOT` and
    ``membership`` to `PROC_SELF_CGROUP`'s text (tests point both at fakes)."""
    base = CGROUP_ROOT if root is None else root
    if membership is None:
        try:
            membership = PROC_SELF_CGROUP.read_text()
        except OSError:
            membership = ""
    # v2: a unified hierarchy (every v2 cgroup, the root included, has cgroup.controllers), or the
    # process is in no v1 cpu hierarchy; a hybrid host's v1 cpu controller holds the quota
    in_v1 = any("cpu" in line.split(":")[1].split(",") for line in membership.splitlines() if line.count(":") >= 2)
    v2 = (base / "cgroup.controllers").exists() or (base / "cpu.max").exists() or (
        not in_v1 and "0::" in membership)
    top = base if v2 else next((base / c for c in ("cpu", "cpu,cpuacct") if (base / c).is_dir()), None)
    if top is None:
        return None
    here = top.joinpath(_own_path(membership, v2).strip("/"))
    found = []
    while True:  # the cgroup and each ancestor up to the hierarchy's root
        quota = _read_quota(here, v2)
        if quota is not None:
            found.append(quota)
        if here == top:
            return min(found) if found else None
        here = here.parent


def load_average() -> float | None:
    """The host's 1-minute load average (runnable processes), None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class Ticks:
    """One reading of the clock ticks spent: on the chosen CPUs (busy and in all) and by this process."""

    busy: int
    total: int
    cpus: int  # how many CPU lines were summed
    own: int  # this process's user + system ticks, all its threads


def cpu_ticks(proc_stat: str, cpus: set[int] | None) -> tuple[int, int, int] | None:
    """(busy ticks, all ticks, CPUs summed) of the ``cpuN`` lines of ``/proc/stat`` text for ``cpus``
    (every CPU where None); None when a CPU asked for has no line (a container that shows another
    machine's CPUs), so the caller falls back to the load average instead of guessing."""
    found: dict[int, list[int]] = {}
    for line in proc_stat.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            found[int(name[3:])] = [int(v) for v in rest.split()]
    wanted = set(found) if cpus is None else cpus
    if not wanted or not wanted <= set(found):
        return None
    busy = total = 0
    for cpu in wanted:
        # user nice system idle iowait irq softirq steal (guest time is inside user already)
        fields = (found[cpu] + [0] * 8)[:8]
        idle = fields[3] + fields[4]
        total += sum(fields)
        busy += sum(fields) - idle
    return busy, total, len(wanted)


def own_ticks(self_stat: str) -> int:
    """User + system ticks of this process (``/proc/self/stat``'s utime and stime, fields 14 and 15;
    read after the command name, which may hold spaces and parentheses)."""
    fields = self_stat.rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def busy_between(before: Ticks, after: Ticks) -> float:
    """Cores other processes kept busy between two readings: the busy ticks less this process's own,
    over the ticks one CPU had, within [0, CPUs]."""
    per_cpu = (after.total - before.total) / max(1, after.cpus)
    if per_cpu <= 0:
        return 0.0
    others = (after.busy - before.busy) - (after.own - before.own)
    return min(float(after.cpus), max(0.0, others / per_cpu))


def read_ticks(cpus: set[int] | None) -> Ticks | None:
    """Ticks now, from ``/proc``; None where it is absent or unreadable (not Linux)."""
    try:
        summed = cpu_ticks(PROC_STAT.read_text(), cpus)
        own = own_ticks(PROC_SELF_STAT.read_text())
    except (OSError, ValueError, IndexError):
        return None
    return None if summed is None else Ticks(*summed, own)


def busy_cores(cpus: set[int] | None, window: float = WINDOW_S) -> float | None:
    """Granted cores that other processes kept busy over the next ``window`` seconds (this call waits
    that long), None where ``/proc/stat`` cannot tell."""
    before = read_ticks(cpus)
    if before is None:
        return None
    time.sleep(window)
    after = read_ticks(cpus)
    return None if after is None else busy_between(before, after)


def read_cpu(window: float = WINDOW_S) -> CpuReadings:
    """This machine's readings now (takes ``window`` seconds where ``/proc/stat`` is there)."""
    cpus = granted_cpus()
    cores = affinity_cores(cpus)
    return CpuReadings(cores=cores, host_cores=max(cores, os.cpu_count() or cores), load=load_average(),
                       busy=busy_cores(cpus, window), quota=cpu_quota())


def free_threads() -> int:
    """Threads a local model may start now: `threads_for` this machine's `read_cpu`."""
    return threads_for(read_cpu())


def cap_torch_threads() -> int:
    """Lower torch's intra-op threads to `free_threads` (never raise them: a user's
    ``OMP_NUM_THREADS`` or ``torch.set_num_threads`` stays the ceiling); returns the count used."""
    import torch

    threads = min(torch.get_num_threads(), free_threads())
    torch.set_num_threads(threads)
    return threads


__all__ = ["CpuReadings", "busy_cores", "cap_torch_threads", "cpu_quota", "free_threads", "granted_cores",
           "load_average", "quota_cores", "read_cpu", "threads_for"]
