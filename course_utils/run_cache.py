"""Train a run once per test session: a disk memo for the experiments, used only when COURSE_RUN_CACHE names a folder.

The test session executes the same training runs several times over: the English chapter under nbval, the
Japanese edition of the same chapter (identical code: only its prose and labels differ), and the browser suite,
which runs the chapters again in JupyterLab. A CPU run is deterministic, so its second execution can only
reproduce the first. The root conftest.py points COURSE_RUN_CACHE at a folder shared by the session's processes
(pytest's workers, the nbval kernels, JupyterLab's kernels and the sweep's worker processes all inherit it); the
first process that needs a run trains it and stores its record, and the others read it. Concurrent requests for
the same run wait on a lock instead of training twice.

Learners, `make execute` and `make lab` never set COURSE_RUN_CACHE: for them every cell trains for real.

A key holds the function's arguments, the version of torch and a hash of course_utils' own source files, so a
change to the code, the preset or the arguments trains again. `tests/test_run_cache.py` checks that a cached
record equals a freshly trained one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

__all__ = ["ENV", "memo", "enabled"]

ENV = "COURSE_RUN_CACHE"
PACKAGE = Path(__file__).resolve().parent


def enabled() -> bool:
    return bool(os.environ.get(ENV))


@lru_cache(maxsize=1)
def code_version() -> str:
    import torch

    digest = hashlib.sha256(torch.__version__.encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock, at worst a run is trained twice
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_T = TypeVar("_T")


def memo(kind: str, key: object, compute: Callable[[], _T]) -> _T:
    """compute() — or, when COURSE_RUN_CACHE is set, the result stored for (kind, key) by an earlier call."""
    root = os.environ.get(ENV)
    if not root:
        return compute()
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(repr((kind, key, code_version())).encode()).hexdigest()[:24]
    path = folder / f"{kind}-{name}.pkl"
    with _locked(folder / f"{kind}-{name}.lock"):
        if path.exists():
            with open(path, "rb") as handle:
                return pickle.load(handle)
        result = compute()
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with open(partial, "wb") as handle:
            pickle.dump(result, handle)
        partial.replace(path)
        return result
