"""The grader's messenger inside a learner's kernel, and the plain-data format it speaks.

The grader (course_utils.grade) never trusts the learner's kernel. After the submitted notebook has run,
it sends this module's *source text* into the kernel (not an import: the learner may have replaced
modules there) and asks it to call one learner function on inputs that the grader generated. The
kernel answers with plain data only, written as JSON to a file:

    None, bool, int, str           as themselves
    float                          as repr text ("nan", "inf" survive)
    tuple, list, dict (str keys)   element by element
    torch.Tensor / numpy array     dtype, shape and the raw bytes (base64), nothing else

Anything else (an object whose __eq__ always says True, a class the learner wrote) is sent as
{"k": "unsupported", "type": "ClassName"}: the grader reports it and never touches the object. A
tensor subclass is sent as its raw values, so its overridden methods never run in the grader.

`decode` is strict: on the grader's side it accepts exactly this format, builds fresh plain
`torch.Tensor`s from bytes, and raises `FormatError` on anything else, so a forged answer file can be
wrong, but it cannot execute code or smuggle an object into the comparison.

This file must stay self-contained (imports inside functions): the kernel runs its source text.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

MAX_ELEMENTS = 2_000_000  # per tensor sent back; a learner returning a 10 GB tensor gets "too large"
MAX_DEPTH = 16
MAX_TEXT = 10_000

# dtype name -> (numpy dtype used for the bytes, itemsize). bfloat16 travels as float32 (exact).
_STORAGE = {
    "float64": ("<f8", 8),
    "float32": ("<f4", 4),
    "float16": ("<f2", 2),
    "bfloat16": ("<f4", 4),
    "int64": ("<i8", 8),
    "int32": ("<i4", 4),
    "int16": ("<i2", 2),
    "int8": ("i1", 1),
    "uint8": ("u1", 1),
    "bool": ("?", 1),
    "complex64": ("<c8", 8),
    "complex128": ("<c16", 16),
}


class FormatError(ValueError):
    """The data is not in the grader's plain format."""


# ------------------------------------------------------------------------------------------------------
# plain value -> JSON-able structure (used on both sides)
# ------------------------------------------------------------------------------------------------------
def encode(value: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON-able description of `value` (see the module docstring)."""
    import numpy as np
    import torch

    if depth > MAX_DEPTH:
        return {"k": "unsupported", "type": "a structure nested too deeply"}
    kind = type(value)
    if value is None:
        return {"k": "none"}
    if kind is bool or isinstance(value, np.bool_):
        return {"k": "bool", "v": bool(value)}
    if kind is int or isinstance(value, np.integer):
        return {"k": "int", "v": str(int(value))}
    if kind is float or isinstance(value, np.floating):
        return {"k": "float", "v": float.__repr__(float(value))}
    if kind is str:
        return {"k": "str", "v": value[:MAX_TEXT]}
    if isinstance(value, torch.Tensor):
        return _encode_array(value, "tensor")
    if isinstance(value, np.ndarray):
        return _encode_array(torch.from_numpy(np.ascontiguousarray(value)), "ndarray")
    if kind in (tuple, list) or (isinstance(value, tuple) and hasattr(value, "_fields")):
        return _encode_sequence(value, depth)
    if kind is dict:
        return _encode_dict(value, depth)
    return {"k": "unsupported", "type": getattr(kind, "__qualname__", "an unknown type")[:100]}


def _encode_sequence(value: list | tuple, depth: int) -> dict[str, Any]:
    """A list, or a tuple (a named tuple travels as a plain tuple), element by element."""
    kind = type(value)
    if len(value) > 10_000:
        return {"k": "unsupported", "type": f"a {kind.__name__} of {len(value)} items"}
    return {"k": "list" if kind is list else "tuple", "v": [encode(v, depth + 1) for v in value]}


def _encode_dict(value: dict, depth: int) -> dict[str, Any]:
    """A dict with string keys, value by value; any other key (or too many) makes it unsupported."""
    if not all(type(k) is str for k in value) or len(value) > 10_000:
        return {"k": "unsupported", "type": "a dict whose keys are not all strings"}
    return {"k": "dict", "v": {k: encode(v, depth + 1) for k, v in value.items()}}


def _encode_array(tensor: Any, kind: str) -> dict[str, Any]:
    import torch

    t = torch.Tensor.detach(tensor)
    if t.layout != torch.strided:
        t = t.to_dense()
    name = str(t.dtype).replace("torch.", "")
    if name not in _STORAGE:
        return {"k": "unsupported", "type": f"a tensor of dtype {name}"}
    if t.numel() > MAX_ELEMENTS:
        return {"k": "unsupported", "type": f"a tensor of {t.numel()} elements (too large)"}
    t = t.cpu().contiguous()
    if name == "bfloat16":
        t = t.float()
    data = t.numpy().tobytes()
    return {"k": kind, "dtype": name, "shape": [int(s) for s in t.shape], "data": base64.b64encode(data).decode()}


# ------------------------------------------------------------------------------------------------------
# JSON-able structure -> plain value (strict: used by the grader on what the kernel sent)
# ------------------------------------------------------------------------------------------------------
class Unsupported:
    """Stands in for a value the kernel could not send as plain data (reported, never compared)."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"Unsupported({self.type_name!r})"


def decode(data: Any, depth: int = 0) -> Any:
    """The plain value described by `data`; FormatError if it is not exactly the grader's format."""
    if depth > MAX_DEPTH + 1 or type(data) is not dict or type(data.get("k")) is not str:
        raise FormatError("not an encoded value")
    k = data["k"]
    keys = set(data)
    if k == "none" and keys == {"k"}:
        return None
    if k == "unsupported" and keys == {"k", "type"} and type(data["type"]) is str:
        return Unsupported(data["type"][:200])
    if keys != (
        {"k", "v"} if k in ("bool", "int", "float", "str", "list", "tuple", "dict") else {"k", "dtype", "shape", "data"}
    ):
        raise FormatError(f"unexpected fields for {k!r}")
    v = data.get("v")
    if k == "bool" and type(v) is bool:
        return v
    if k == "int" and type(v) is str and len(v) < 400:
        return int(v)
    if k == "float" and type(v) is str and len(v) < 40:
        return float(v)
    if k == "str" and type(v) is str:
        return v
    if k in ("list", "tuple") and type(v) is list:
        items = [decode(item, depth + 1) for item in v]
        return items if k == "list" else tuple(items)
    if k == "dict" and type(v) is dict:
        return {str(key): decode(item, depth + 1) for key, item in v.items()}
    if k in ("tensor", "ndarray"):
        return _decode_array(data, k)
    raise FormatError(f"bad value for {k!r}")


def _decode_array(data: dict[str, Any], k: str) -> Any:
    """A fresh numpy array (k "ndarray") or plain torch.Tensor (k "tensor") built from the raw bytes, after checking
    that the dtype is one the format knows and that the bytes are exactly what the shape asks for. A bfloat16
    array travels as float32 and comes back as a bfloat16 tensor (numpy has no bfloat16)."""
    import numpy as np
    import torch

    dtype, shape, raw = data["dtype"], data["shape"], data["data"]
    if type(dtype) is not str or dtype not in _STORAGE:
        raise FormatError(f"unsupported dtype {dtype!r}")
    if type(shape) is not list or len(shape) > 16 or not all(type(s) is int and 0 <= s for s in shape):
        raise FormatError("bad shape")
    numel = math.prod(shape)
    storage, itemsize = _STORAGE[dtype]
    if type(raw) is not str or numel > MAX_ELEMENTS:
        raise FormatError("bad tensor data")
    buffer = base64.b64decode(raw, validate=True)
    if len(buffer) != numel * itemsize:
        raise FormatError("tensor data does not match its shape")
    array = np.frombuffer(buffer, dtype=storage).reshape(shape).copy()
    if k == "ndarray" and dtype != "bfloat16":
        return array
    tensor = torch.from_numpy(array)
    return tensor.to(torch.bfloat16) if dtype == "bfloat16" else tensor


# ------------------------------------------------------------------------------------------------------
# the kernel side: call one learner function on the grader's inputs
# ------------------------------------------------------------------------------------------------------
def call_learner_function(namespace: dict[str, Any], function_name: str, request_path: str, answer_path: str) -> None:
    """Call namespace[function_name] on each argument tuple in request_path; write the answers as JSON.

    The request is {"kind": "function" | "choice", "calls": [[encoded args...], ...]}. The answer is
    {"status": "ok", "results": [{"output": ..., "args_after": [...]}, ...]} or a status saying what went
    wrong: "missing" (with the names the notebook does define), "not-callable", "not-implemented",
    "raised" (type, message, which call).
    """
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    answer = _call(namespace, function_name, request)
    text = json.dumps(answer)
    with open(answer_path, "w", encoding="utf-8") as f:
        f.write(text)


def _call(namespace: dict[str, Any], function_name: str, request: dict[str, Any]) -> dict[str, Any]:
    fn = namespace.get(function_name, _call)  # _call itself marks "missing"
    if fn is _call:
        defined = sorted(
            name
            for name, value in list(namespace.items())
            if not name.startswith("_") and callable(value) and getattr(value, "__module__", "") == "__main__"
        )
        return {"status": "missing", "defined": defined[:50]}
    if request["kind"] == "choice" and not callable(fn):
        return {"status": "ok", "results": [{"output": encode(fn), "args_after": []}]}
    if not callable(fn):
        return {"status": "not-callable", "type": type(fn).__name__[:100]}
    results = []
    trace = _trace(request.get("watch"))
    for index, encoded_args in enumerate(request["calls"]):
        args = [decode(a) for a in encoded_args]
        try:
            with trace:
                output = fn(*args)
        except NotImplementedError:
            return {"status": "not-implemented"}
        except (Exception, SystemExit) as exc:  # the learner's bug: reported, not raised
            try:
                message = str(exc)
            except Exception:
                message = "(the exception's message could not be read)"
            return {
                "status": "raised",
                "type": type(exc).__name__[:100],
                "message": message[:500],
                "call": index,
                **_seen(trace),
            }
        try:
            results.append({"output": encode(output), "args_after": [encode(a) for a in args]})
        except Exception as exc:
            results.append(
                {
                    "output": {"k": "unsupported", "type": f"a value that could not be read ({type(exc).__name__})"},
                    "args_after": [encode(a) for a in args],
                }
            )
    return {"status": "ok", "results": results, **_seen(trace)}


def _trace(watch: dict[str, Any] | None) -> Any:
    """A runtime trace of the forbidden calls the grader asked to watch (course_utils/tracing.py, whose source
    runs next to this one in the kernel), or a context that records nothing."""
    import contextlib

    try:
        trace_class: Any = globals().get("CallTrace")
        if trace_class is None:  # this module imported, not sent as source (the grader's own tests)
            from course_utils.tracing import CallTrace as trace_class
        return trace_class(watch) if watch else contextlib.nullcontext()
    except Exception:
        return contextlib.nullcontext()


def _seen(trace: object) -> dict[str, list[str]]:
    """What the trace saw, as plain data: the watched calls (`trace`), why it cannot vouch for them (`tampered`),
    and with the grader's `record`, every ATen op (`ops`) and direct library call (`library`) for the allowlist."""

    def strings(name: str, most: int, length: int) -> list[str]:
        values = getattr(trace, name, [])
        return [str(v)[:length] for v in values[:most]] if isinstance(values, list) else []

    return {
        "trace": strings("hits", 100, 200),
        "tampered": strings("tampered", 20, 40),
        "ops": strings("ops_seen", 500, 200),
        "library": strings("library_seen", 500, 200),
    }


def kernel_source() -> str:
    """This module's source and the runtime trace's (course_utils/tracing.py), executed in the kernel in a
    fresh namespace."""
    import inspect
    import sys

    from .. import tracing

    return inspect.getsource(sys.modules[__name__]) + "\n\n" + inspect.getsource(tracing)
