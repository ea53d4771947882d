"""How many compute threads a local model (llama.cpp, torch) may start without oversubscribing.

llama.cpp's threads meet at a barrier after every layer: when other processes hold the cores, one
thread that loses its core stalls the rest, and a request takes many times longer than with fewer
threads (measured in docs/performance.md, "Threads on a busy machine": at load 10-14 on 2 cores,
35-54 s per request with 2 threads against 5-9 s with 1). So a default takes the cores that are
actually free, not every core: the cores granted to this process (a container's or taskset's grant)
less their share of the load average, to the nearest core, at least 1.
"""

from __future__ import annotations

import math
import os


def granted_cores() -> int:
    """The cores this process may run on (its CPU affinity), not the host's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The host's 1-minute load average (runnable processes), None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def free_threads(cores: int | None = None, load: float | None = None, host_cores: int | None = None) -> int:
    """Threads a local model may start: the granted ``cores`` less the load on them, at least 1.

    ``load`` is the host's 1-minute load average over its ``host_cores``; the share that falls on the
    granted cores is taken as busy (all of it when the process may use every core), and what is left
    is rounded to the nearest core. Where the load is not known, every granted core."""
    cores = granted_cores() if cores is None else cores
    load = load_average() if load is None else load
    if load is None:
        return max(1, cores)
    host = max(cores, host_cores if host_cores is not None else (os.cpu_count() or cores))
    busy = load * cores / host
    # to the nearest core: a core busy less than half the time counts as free (this process's own
    # start-up shows in the load of an idle machine as a few tenths)
    return max(1, min(cores, math.floor(cores - busy + 0.5)))


def cap_torch_threads() -> int:
    """Lower torch's intra-op threads to `free_threads` (never raise them: a user's
    ``OMP_NUM_THREADS`` or ``torch.set_num_threads`` stays the ceiling); returns the count used."""
    import torch

    threads = min(torch.get_num_threads(), free_threads())
    torch.set_num_threads(threads)
    return threads


__all__ = ["cap_torch_threads", "free_threads", "granted_cores", "load_average"]
