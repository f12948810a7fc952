"""The session's run cache (course_utils/run_cache.py) returns exactly what training would, and only when asked."""

import math

import pytest

from course_utils import experiments, run_cache


def _sweep():
    return experiments.stability_sweep(lrs=[1e-2, 0.3], variants=("baseline",), steps=12, progress=False)


def _same(a, b):
    for x, y in zip(a, b):
        for field in ("variant", "lr", "diverged", "diverged_at", "tokens"):
            assert getattr(x, field) == getattr(y, field)
        for field in ("losses", "max_logit", "entropy"):
            assert [v if math.isfinite(v) else "inf" for v in getattr(x, field)] == [
                v if math.isfinite(v) else "inf" for v in getattr(y, field)
            ], field
        assert x.final_loss == y.final_loss or not (math.isfinite(x.final_loss) or math.isfinite(y.final_loss))


def test_a_cached_run_equals_a_trained_one(tmp_path, monkeypatch):
    monkeypatch.delenv(run_cache.ENV, raising=False)
    trained = _sweep()
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    first, second = _sweep(), _sweep()  # the first trains and stores, the second reads
    assert len(list(tmp_path.glob("run-*.pkl"))) == 2
    _same(trained, first)
    _same(trained, second)


def test_the_cache_is_off_unless_the_variable_names_a_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(run_cache.ENV, "")
    calls = []
    assert run_cache.memo("x", 1, lambda: calls.append(1) or len(calls)) == 1
    assert run_cache.memo("x", 1, lambda: calls.append(1) or len(calls)) == 2  # computed again: no cache
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    assert run_cache.memo("x", 1, lambda: "first") == "first"
    assert run_cache.memo("x", 1, lambda: "second") == "first"
    assert run_cache.memo("x", 2, lambda: "other key") == "other key"


@pytest.mark.parametrize("key", [(0.01, 0), (0.01, 1), (0.03, 0)])
def test_every_argument_is_part_of_the_key(tmp_path, monkeypatch, key):
    monkeypatch.setenv(run_cache.ENV, str(tmp_path))
    run_cache.memo("run", (0.01, 0), lambda: "stored")
    expected = "stored" if key == (0.01, 0) else "fresh"
    assert run_cache.memo("run", key, lambda: "fresh") == expected
