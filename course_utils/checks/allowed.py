"""What a graded function may compute with: the allowlist that stands behind the forbidden list.

A forbidden list (checks/forbidden.py) names the ready-made answers we know of. An allowlist covers the ones we
do not: a task that asks for a computation by hand declares the operations a hand computation needs,

    Forbidden(calls=VARIANCE + TORCH_NORMS, hint=..., allowed=BASIC)

and the learner's check and the grader compare what one call really ran with it:

    ATen ops      every op the call dispatched (course_utils.tracing records them below every Python spelling,
                  so torch.var, x.var(), torch._VF.var and torch.ops.aten.var are all "aten::var"). Allowed:
                  every op torch itself tags elementwise (torch.Tag.pointwise: add, mul, pow, sqrt, exp,
                  where, masked_fill, ...) and the ops the task's groups name (reductions such as sum and
                  mean, shapes and indexing, creating tensors; matrix products and softmax for attention)
    library       the numpy, scipy, statistics and math functions the learner's own code calls directly.
                  Allowed: the few the groups name (math.sqrt, numpy.mean, ...)

An op or a function outside the list is not a ❌: a learner may find an honest way we did not foresee
(torch.linalg.vector_norm for a root mean square, say). It is marked for the instructor's review, with its
name, so that no unknown shortcut passes unseen as full marks. A forbidden call is still a ❌ (its name is
on the forbidden list, which comes first).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..tracing import runtime_key

__all__ = ["Allowed", "BASIC", "ATTENTION_BY_HAND", "unlisted"]

LIBRARIES = ("numpy", "scipy", "statistics", "math")  # the Python libraries whose direct calls a trace records


@dataclass(frozen=True)
class Allowed:
    """The ATen ops (besides the elementwise ones) and the library functions a task's function may use."""

    ops: frozenset[str]
    library: tuple[str, ...] = ()

    def __add__(self, other: Allowed) -> Allowed:
        return Allowed(self.ops | other.ops, self.library + other.library)


REDUCTIONS = Allowed(
    frozenset(
        f"aten::{op}"
        for op in (
            "sum mean nansum nanmean amax amin max min prod argmax argmin cumsum cumprod all any count_nonzero"
        ).split()
    )
)
SHAPES = Allowed(  # views, copies, indexing and joining: they move numbers, they compute none
    frozenset(
        f"aten::{op}"
        for op in (
            "view _unsafe_view reshape _reshape_alias expand permute transpose t unsqueeze squeeze select slice "
            "split split_with_sizes chunk unbind cat stack flatten unflatten narrow movedim diagonal as_strided "
            "repeat flip roll tril triu index index_select gather masked_select index_put index_put_ nonzero "
            "clone contiguous _to_copy copy_ copy detach alias lift_fresh lift_fresh_copy resolve_conj resolve_neg "
            "_local_scalar_dense scalar_tensor item size dim numel stride to type_as view_as expand_as reshape_as "
            "repeat_interleave is_floating_point is_complex"
        ).split()
    )
)
CREATION = Allowed(
    frozenset(
        f"aten::{op}"
        for op in (
            "empty empty_like empty_strided zeros zeros_like ones ones_like full full_like new_zeros new_ones "
            "new_full new_empty new_empty_strided arange linspace fill_ zero_ eye tensor as_tensor"
        ).split()
    )
)
MATMUL = Allowed(
    frozenset(f"aten::{op}" for op in "mm bmm addmm baddbmm dot mv addmv matmul einsum outer linear".split())
)
SOFTMAX = Allowed(frozenset(f"aten::{op}" for op in "_softmax softmax _log_softmax log_softmax".split()))
PLAIN_PYTHON = Allowed(  # a mean or a square root computed on plain numbers, or through numpy's basics
    frozenset(),
    (
        "math.sqrt",
        "math.fsum",
        "math.prod",
        "math.isfinite",
        "math.isclose",
        "math.pow",
        "math.exp",
        "math.log",
        "numpy.asarray",
        "numpy.array",
        "numpy.mean",
        "numpy.sum",
        "numpy.ndarray.mean",
        "numpy.ndarray.sum",
        "numpy.ndarray.astype",
        "numpy.ndarray.reshape",
        "numpy.ndarray.tolist",
        "statistics.mean",
        "statistics.fmean",
    ),
)

BASIC = REDUCTIONS + SHAPES + CREATION + PLAIN_PYTHON  # "basic tensor operations (mean, sum, sqrt, arithmetic)"
ATTENTION_BY_HAND = BASIC + MATMUL + SOFTMAX  # logits, mask, softmax and the weighted sum, by hand


@functools.cache
def _library_keys(library: tuple) -> frozenset:
    """The runtime keys (course_utils.tracing.runtime_key) of the allowed library functions: numpy.mean is the
    dispatcher numpy exports, and the Python function `numpy._core.fromnumeric.mean` that a trace sees run."""
    from .forbidden import _resolve

    keys = set()
    for name in library:
        try:
            obj, _ = _resolve(name)
        except (ImportError, AttributeError):
            continue
        for o in (obj, getattr(obj, "_implementation", None), getattr(obj, "__wrapped__", None)):
            key = runtime_key(o) if o is not None else None
            if key:
                keys.add(key)
        keys.add(name)
    return frozenset(keys)


@functools.cache
def _elementwise(op: str) -> bool:
    """Whether torch tags the ATen op `op` ("aten::add") elementwise in any of its overloads."""
    import torch

    namespace, _, short = op.partition("::")
    if namespace != "aten" or not short.isidentifier():
        return False
    try:
        packet = getattr(torch.ops.aten, short)
        return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())
    except Exception:  # no such op in this torch
        return False


def unlisted(check, ops, library) -> list:
    """The ops, torch functions and library functions one call ran that the check's allowlist does not name (none
    when the check has no allowlist), forbidden ones left out (they are ❌ already), each once, in order.

    `ops` and `library` are a trace's `ops_seen` and `library_seen`, from this process or decoded from what the
    grader's kernel sent (anything that is not a short string is dropped). A torch function ("torch.cov",
    "torch._C.TensorBase.mean") stands for the ATen op of its name: it matters for the composite ones, which
    reach the dispatcher only as the basic ops they are made of (torch.cov as mean, sub and mm). One with no op
    of its name (x.float(), x.shape, x ** 2's wrapper) computes nothing of its own: its ops are seen below it."""
    allowed = getattr(getattr(check, "forbidden", None), "allowed", None)
    if allowed is None:
        return []
    from .forbidden import _index

    denied = _index(check).key_names()
    library_keys = _library_keys(allowed.library)
    out = []
    for name in _strings(ops):
        op = name if "::" in name else _op_of(name.rsplit(".", 1)[-1])
        if op is None or name in denied or op in denied or op in allowed.ops or _elementwise(op) or name in out:
            continue
        out.append(name)
    for name in _strings(library):
        if name not in library_keys and name not in denied and name not in out:
            out.append(name)
    return out[:20]


@functools.cache
def _op_of(short: str) -> str | None:
    """The ATen op a torch function of this name stands for ("cov" -> "aten::cov"), else None (a dunder method
    such as __getitem__, or a name with no op). torch.special.xlogy is the op special_xlogy: the op xlogy."""
    import torch

    if short.startswith("_") or not short.isidentifier():
        return None
    for name in (short.removeprefix("special_"), short):
        if name and hasattr(torch.ops.aten, name):
            return f"aten::{name}"
    return None


def _strings(values) -> list:
    if not isinstance(values, (list, tuple)):
        return []
    return [v for v in values[:500] if isinstance(v, str) and len(v) < 200]
