"""A runtime trace of what a call really runs: which of a given set of functions it called, however spelled.

    with CallTrace({"ops": ["torch.var", "aten::var"], "python": ["course_utils.norms.layer_norm"]}) as trace:
        learner_function(x)
    trace.hits        # ["torch.var"]: the watched names it called, in the order of their first call

Three kinds of calls are watched, each by the name `runtime_key` gives it:

    ops      torch functions and Tensor methods, through a torch.overrides.TorchFunctionMode: every torch
             function a call makes is seen, whatever name or alias reached it (torch.var, x.var,
             getattr(torch, "v" + "ar"), torch.ops.aten.var), but only at the outermost level: what runs
             inside a torch function is hidden from the mode
    python   Python functions (the course's references, torch.nn modules' forward, torch.nn.functional),
             through a profile hook (sys.setprofile): every call at any depth, through any import alias,
             matched by the module and qualified name of the code that runs
    c        C functions outside torch (numpy's ndarray.var), through the same profile hook

The learners' checks (course_utils.checks) and the grader's messenger in the learner's kernel
(course_utils.grading.kernel) run this same code. This file must stay self-contained: the grader sends
its source text into the kernel next to kernel.py's, so it imports only the standard library and torch,
and has no `from __future__` import. A trace never raises into the traced call: what it cannot install
it leaves out (a profiler or debugger that already owns sys.setprofile keeps it, and Python calls go
unwatched), so a missing hit is no proof; a hit is.
"""

import sys

__all__ = ["CallTrace", "runtime_key"]

_MISSING = object()


def runtime_key(obj):
    """The name a trace records for a callable (the same in every process), or None.

    torch.ops.aten.var / .var.correction -> "aten::var"; a Tensor method -> "torch._C.TensorBase.var";
    a builtin -> "torch.var"; a Python function -> its module's name and its code's qualified name,
    "course_utils.norms.layer_norm" (a function's code, not its __qualname__, which decorators rewrite);
    a bound C method (ndarray.var of one array) -> its type's name and the method's, "numpy.ndarray.var".
    """
    kind = type(obj).__name__
    if kind == "OpOverloadPacket":
        return str(obj._qualified_op_name)
    if kind == "OpOverload":
        return str(obj.overloadpacket._qualified_op_name)
    code = getattr(obj, "__code__", None)
    if code is not None and hasattr(code, "co_qualname"):
        module = (getattr(obj, "__globals__", None) or {}).get("__name__")
        return f"{module}.{code.co_qualname}"
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    owner = getattr(obj, "__objclass__", None)
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}.{name}"
    bound = getattr(obj, "__self__", None)
    if bound is not None and not isinstance(bound, type) and type(bound).__name__ != "module":
        owner = type(bound)
        return f"{owner.__module__}.{owner.__qualname__}.{name}"
    module = getattr(obj, "__module__", None)
    return f"{module}.{name}" if isinstance(module, str) else None


class CallTrace:
    """Records which watched functions the code inside `with trace:` calls (see the module docstring).

    `watch` is plain data, {"ops": [...], "python": [...], "c": [...]} of runtime keys, so that the grader
    can send it to a kernel. A trace can be entered again (one per call of a learner's function): its
    hits accumulate.
    """

    def __init__(self, watch):
        watch = watch if isinstance(watch, dict) else {}
        self.ops = frozenset(k for k in watch.get("ops", ()) if isinstance(k, str))
        self.python = frozenset(k for k in watch.get("python", ()) if isinstance(k, str))
        self.c = frozenset(k for k in watch.get("c", ()) if isinstance(k, str))
        self._c_names = frozenset(k.rsplit(".", 1)[-1] for k in self.c)
        self.hits = []
        self._seen = set()
        self._codes = {}  # code object -> its key when watched, else None
        self._op_keys = {}  # torch function -> its key when watched, else None
        self._mode = None
        self._previous = None
        self._profiling = False

    # ------------------------------------------------------------------------------------------------
    def __enter__(self):
        if self.ops:
            try:
                self._mode = _mode_class()(self)
                self._mode.__enter__()
            except Exception:  # torch's overrides replaced or broken: no op trace
                self._mode = None
        if self.python or self.c:
            try:
                previous = sys.getprofile()
                if previous is None or isinstance(getattr(previous, "__self__", None), CallTrace):
                    self._previous = previous  # an outer trace keeps recording through this one
                    sys.setprofile(self._profile)
                    self._profiling = True
            except Exception:
                self._profiling = False
        return self

    def __exit__(self, *exc):
        if self._profiling:
            self._profiling = False
            try:
                sys.setprofile(self._previous)
            except Exception:
                pass
        if self._mode is not None:
            mode, self._mode = self._mode, None
            try:
                mode.__exit__(None, None, None)
            except Exception:  # the traced code left the mode stack in another state
                pass
        return False

    # ------------------------------------------------------------------------------------------------
    def _hit(self, key):
        if key not in self._seen:
            self._seen.add(key)
            self.hits.append(key)

    def _op(self, func):
        try:
            key = self._op_keys.get(func, _MISSING)
            if key is _MISSING:
                key = runtime_key(func)
                key = self._op_keys[func] = key if key in self.ops else None
            if key is not None:
                self._hit(key)
        except Exception:
            pass

    def _profile(self, frame, event, arg):
        try:
            if event == "call":
                code = frame.f_code
                key = self._codes.get(code, _MISSING)
                if key is _MISSING:
                    key = f"{frame.f_globals.get('__name__')}.{code.co_qualname}"
                    key = self._codes[code] = key if key in self.python else None
                if key is not None:
                    self._hit(key)
            elif event == "c_call" and self._c_names and getattr(arg, "__name__", None) in self._c_names:
                key = runtime_key(arg)
                if key in self.c:
                    self._hit(key)
            if self._previous is not None:
                self._previous(frame, event, arg)
        except Exception:  # a profile function that raises would unset itself and break the traced call
            pass


_MODE_CLASS = []


def _mode_class():
    """The TorchFunctionMode that reports each torch function to its trace, made once (torch imported late)."""
    if not _MODE_CLASS:
        from torch.overrides import TorchFunctionMode

        class _TraceMode(TorchFunctionMode):
            def __init__(self, trace):
                super().__init__()
                self.trace = trace

            def __torch_function__(self, func, types, args=(), kwargs=None):
                self.trace._op(func)
                return func(*args, **(kwargs or {}))

        _MODE_CLASS.append(_TraceMode)
    return _MODE_CLASS[0]
