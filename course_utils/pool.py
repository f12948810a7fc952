"""A process pool for independent CPU runs: `parallel_map`, and how many workers this machine can give it.

    for record in parallel_map(cpu_run, [(preset, "baseline", lr) for lr in lrs], workers="auto"):
        ...                                  # in the order of the calls, each as soon as it is done

The stability sweep (`course_utils.experiments`) and chapter 06's extra runs (`course_utils.recipe_lab`) train many
small models that share nothing; on a CPU of several cores they train side by side, one process each. Every run is
seeded, so the results do not depend on the number of workers; only the wall time does.

"auto" is one worker per usable core (`usable_cpus`: the process's affinity and its container's CPU limit), at
most `MAX_AUTO_WORKERS`.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

__all__ = ["MAX_AUTO_WORKERS", "usable_cpus", "worker_count", "parallel_map"]

MAX_AUTO_WORKERS = 8  # each worker is a Python process with torch loaded (a few hundred MB of memory)
CGROUP = Path("/sys/fs/cgroup")  # where a Linux process reads its own cgroup's limits


def usable_cpus() -> int:
    """The CPU cores this process may use: the cores it may run on (its affinity), and no more than its cgroup's CPU
    limit. In a hub's container os.cpu_count() is the whole node's count; a limit of 2 cores (Kubernetes'
    `cpu.limit`, TLJH's `limits.cpu`) reaches the process only as a CFS quota, read here from cgroup v2's cpu.max or
    cgroup v1's cpu.cfs_quota_us. One worker per usable core keeps a learner's sweep inside what the hub gave them."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS has no affinity
        cores = os.cpu_count() or 1
    quota = None
    try:
        text = (CGROUP / "cpu.max").read_text().split()
        if text and text[0] != "max":
            quota = int(text[0]) / int(text[1])
    except (OSError, ValueError, IndexError):
        try:
            limit = int((CGROUP / "cpu" / "cpu.cfs_quota_us").read_text())
            period = int((CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
            quota = limit / period if limit > 0 else None
        except (OSError, ValueError, ZeroDivisionError):
            quota = None
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def worker_count(workers, n_calls: int) -> int:
    """The processes `parallel_map` starts for `n_calls` calls: `workers` ("auto": usable_cpus(), at most
    MAX_AUTO_WORKERS), never more than the calls, at least 1 (1: no process is started)."""
    n = min(usable_cpus(), MAX_AUTO_WORKERS) if workers == "auto" else int(workers)
    return max(1, min(n, n_calls))


def parallel_map(fn, calls, workers="auto"):
    """fn(*args) for each args in `calls`, in `workers` processes (worker_count); yields the results in the order
    of `calls`, each as soon as it and those before it are done.

    fn must be defined at a module's top level (a spawned process imports it). "spawn" starts clean
    interpreters on every OS; fork is unsafe once torch has started its threads. In a script, call this under
    `if __name__ == "__main__":`, as Python's multiprocessing requires.
    """
    calls = list(calls)
    n = worker_count(workers, len(calls))
    if n == 1:
        for args in calls:
            yield fn(*args)
        return
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, *args) for args in calls]
        for future in futures:
            yield future.result()
