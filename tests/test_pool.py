"""course_utils.pool: how many worker processes a sweep starts (the records themselves do not depend on it:
tests/test_experiments.py trains the same runs in one process and in two)."""

import pytest

from course_utils import pool


def test_auto_workers_follow_the_cores_but_stay_bounded(monkeypatch):
    monkeypatch.setattr(pool, "usable_cpus", lambda: 64)
    assert pool.worker_count("auto", 32) == pool.MAX_AUTO_WORKERS == 8
    assert pool.worker_count("auto", 3) == 3 and pool.worker_count(1, 32) == 1
    monkeypatch.setattr(pool, "usable_cpus", lambda: 1)
    assert pool.worker_count("auto", 32) == 1


@pytest.mark.parametrize(
    "files, expected",
    [
        ({}, 16),  # no cgroup limit: every core the process may run on
        ({"cpu.max": "max 100000\n"}, 16),  # cgroup v2, unlimited
        ({"cpu.max": "200000 100000\n"}, 2),  # a hub's 2-core limit (Kubernetes cpu.limit, TLJH limits.cpu)
        ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 cores: two workers share them
        ({"cpu.max": "50000 100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4),  # cgroup v1
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 16),  # cgroup v1, unlimited
        ({"cpu.max": "6400000 100000\n"}, 16),  # a limit above the cores: the cores
    ],
)
def test_usable_cpus_honour_a_containers_cpu_limit(tmp_path, monkeypatch, files, expected):
    """In a hub's container os.cpu_count() is the node's; the sweep must start one worker per core of the
    learner's CPU limit, or 8 workers of a few hundred MB each run in a pod sized for 2."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(pool, "CGROUP", tmp_path)
    monkeypatch.setattr(pool.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert pool.usable_cpus() == expected


def test_parallel_map_keeps_the_order_of_the_calls():
    assert list(pool.parallel_map(divmod, [(7, 2), (9, 4), (1, 1)], workers=1)) == [(3, 1), (2, 1), (1, 0)]
