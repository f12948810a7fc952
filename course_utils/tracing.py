"""A runtime trace of what a call really runs: which of a given set of functions it called, however spelled.

    with CallTrace({"ops": ["torch.var", "aten::var"], "python": ["course_utils.norms.layer_norm"]}) as trace:
        learner_function(x)
    trace.hits        # ["torch.var"]: the watched names it called, in the order of their first call

Three kinds of calls are watched, each by the name `runtime_key` gives it:

    ops      torch functions and Tensor methods, through a torch.overrides.TorchFunctionMode: every torch
             function a call makes is seen, whatever name or alias reached it (torch.var, x.var,
             getattr(torch, "v" + "ar"), torch.ops.aten.var), but only at the outermost level: what runs
             inside a torch function is hidden from the mode. The ATen ops among them ("aten::var",
             "prims::var") are also watched below it, by a TorchDispatchMode: whatever Python spelling
             reached the op (torch._VF, torch._C._VariableFunctions, torch._refs, torch.ops.prims), even
             with torch functions switched off (torch._C.DisableTorchFunction)
    python   Python functions (the course's references, torch.nn modules' forward, torch.nn.functional),
             through a profile hook (sys.setprofile): every call at any depth, through any import alias,
             matched by the module and qualified name of the code that runs
    c        C functions (numpy's ndarray.var, torch.var, a Tensor's var method), through the same profile hook

The profile hook is also set for the threads that start inside the trace (threading.setprofile), so what they
call is recorded as well. A trace checks that it was really in place: entering and leaving, it makes a call
that each of its layers must see (a canary: torch.lcm for the modes and the C hook, a Python function for
the Python hook), and it records, in `tampered`, why it cannot vouch for what it saw: a layer that missed
its canary ("tracing-off": the notebook replaced or switched off what the trace relies on), a call that
switches tracing off inside the traced code (sys.setprofile, torch._C.DisableTorchFunction, popping the
torch mode stack), or Python threads of the notebook's own running beside the traced call ("threads").

The learners' checks (course_utils.checks) and the grader's messenger in the learner's kernel
(course_utils.grading.kernel) run this same code. This file must stay self-contained: the grader sends
its source text into the kernel next to kernel.py's, so it imports only the standard library and torch,
and has no `from __future__` import. A trace never raises into the traced call: what it cannot install
it leaves out (a profiler or debugger that already owns sys.setprofile keeps it, and Python calls go
unwatched), so a missing hit is no proof; a hit is.
"""

import sys
from typing import Any

__all__ = ["CallTrace", "runtime_key"]

_MISSING = object()


def runtime_key(obj: Any) -> str | None:
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
        self.record = watch.get("record") is True  # also record every ATen op and every direct library call
        self.hits = []
        self.ops_seen = []  # with `record`: ATen ops dispatched ("aten::sum"), torch functions called ("torch.cov")
        self.library_seen = []  # with `record`: the numpy/scipy/statistics/math functions the traced code called
        self.tampered = []  # why the trace cannot vouch for what it saw: "tracing-off", "threads"
        self._seen = set()
        self._dispatch = None
        self._canary_on = False
        self._canary_seen = set()
        self._threads_before = None
        self._codes = {}  # code object -> its key when watched, else None
        self._op_keys = {}  # torch function -> its key when watched, else None
        self._library_codes = {}  # code object -> whether it is a library's (with `record`)
        self._c_running = {}  # id(frame) -> True while that frame of the learner's waits on a C function
        self._library = {}  # code object -> its key when a library's function, else None (with `record`)
        self._mode = None
        self._previous = None
        self._profiling = False

    # ------------------------------------------------------------------------------------------------
    def __enter__(self):
        if self.ops or self.record:
            try:
                self._mode = _mode_class()(self)
                self._mode.__enter__()
            except Exception:  # torch's overrides replaced or broken: no op trace
                self._mode = None
            if self.record or any("::" in k for k in self.ops):
                try:
                    self._dispatch = _dispatch_class()(self)
                    self._dispatch.__enter__()
                except Exception:
                    self._dispatch = None
        if self.python or self.c or self.record:
            try:
                previous = sys.getprofile()
                if previous is None or isinstance(getattr(previous, "__self__", None), CallTrace):
                    self._previous = previous  # an outer trace keeps recording through this one
                    self._profiling = True
                    sys.setprofile(self._profile)
                    _set_thread_profile(self._profile)
            except Exception:
                self._profiling = False
        self._threads_before = _other_threads()
        self._check_canaries("entering")
        return self

    def __exit__(self, *exc):
        self._check_canaries("leaving")
        before, after = self._threads_before or {}, _other_threads()
        if any(before.get(ident) != where for ident, where in after.items()):  # ran Python during the call
            self._tamper("threads")
        if self._profiling:
            self._profiling = False
            try:
                sys.setprofile(self._previous)
                _set_thread_profile(None)
            except Exception:
                pass
        for attr in ("_dispatch", "_mode"):
            mode = getattr(self, attr)
            if mode is not None:
                setattr(self, attr, None)
                try:
                    mode.__exit__(None, None, None)
                except Exception:  # the traced code left the mode stack in another state
                    pass
        return False

    # ------------------------------------------------------------------------------------------------
    def _tamper(self, reason):
        if reason not in self.tampered:
            self.tampered.append(reason)

    def _check_canaries(self, when):
        """Make the call each active layer must see; a layer that does not see it was switched off."""
        expected = set()
        if self._mode is not None:
            expected.add("function")
        if self._dispatch is not None:
            expected.add("dispatch")
        if self._profiling:
            expected.update(("python", "c") if self.c else ("python",))
        if not expected:
            return
        self._canary_seen = set()
        self._canary_on = True
        try:
            _canary()
        except Exception:
            pass
        finally:
            self._canary_on = False
        if expected - self._canary_seen:
            self._tamper("tracing-off")

    # ------------------------------------------------------------------------------------------------
    def _hit(self, key):
        if key not in self._seen:
            self._seen.add(key)
            self.hits.append(key)

    def _op(self, func, layer="function"):
        if self._canary_on:
            self._canary_seen.add(layer)
            return
        try:
            key = self._op_keys.get(func, _MISSING)
            if key is _MISSING:  # the first call of this op: is it watched, and (with `record`) note its name
                name = runtime_key(func)
                key = self._op_keys[func] = name if name in self.ops else None
                if self.record:
                    _add_once(self.ops_seen, name or "?")
            if key is not None:
                self._hit(key)
        except Exception:
            pass

    def _profile(self, frame, event, arg):
        """The profile hook (sys.setprofile): Python runs it on every call and return of a Python or C function.
        It notes the canary's calls, the calls that tamper with the trace, (with `record`) the library calls,
        and the watched functions called; then it hands the event on to an outer trace's hook."""
        if not self._profiling:
            return
        try:
            if self._canary_on:
                self._see_canary(frame, event, arg)
                return
            if event == "c_call":
                self._check_tampering(frame, arg)
            if self.record:
                if event in ("call", "c_call"):
                    self._record_library(frame, event, arg)
                elif self._c_running and event in ("c_return", "c_exception"):
                    self._c_running.pop(id(frame), None)
            if event == "call":
                self._python_call(frame)
            elif event == "c_call" and self._c_names and getattr(arg, "__name__", None) in self._c_names:
                self._c_call(arg)
            if self._previous is not None:
                self._previous(frame, event, arg)
        except Exception:  # a profile function that raises would unset itself and break the traced call
            pass

    def _see_canary(self, frame, event, arg):
        """While the canary runs: note which layers of the profile hook saw it (the Python one, the C one)."""
        if event == "call" and frame.f_code is _canary_python.__code__:
            self._canary_seen.add("python")
        elif event == "c_call" and getattr(arg, "__name__", None) == "lcm":
            self._canary_seen.add("c")

    def _check_tampering(self, frame, fn):
        """A C function called inside the trace that starts a thread or switches tracing off: the trace can no
        longer vouch for what it saw."""
        if getattr(fn, "__name__", None) == "start_new_thread":
            self._tamper("threads")  # traced by the profile hook when threading started it, but not by the modes
        elif (
            getattr(fn, "__name__", None) in _SWITCHES
            and frame.f_code.co_filename != _canary_python.__code__.co_filename  # not a trace's own switch
            and _switches_tracing_off(fn)
        ):
            self._tamper("tracing-off")

    def _python_call(self, frame):
        """A Python function called: a hit when its module and qualified name are watched (cached per code object)."""
        code = frame.f_code
        key = self._codes.get(code, _MISSING)
        if key is _MISSING:
            key = f"{frame.f_globals.get('__name__')}.{code.co_qualname}"
            key = self._codes[code] = key if key in self.python else None
        if key is not None:
            self._hit(key)

    def _c_call(self, fn):
        """A C function called that bears a watched name: a hit when its runtime key is watched. A method of a
        Tensor subclass (a Parameter's var) counts under the Tensor method's key."""
        key = runtime_key(fn)
        if key not in self.c:
            bound = getattr(fn, "__self__", None)
            if bound is not None and _is_tensor(bound):
                key = "torch.Tensor." + fn.__name__
        if key in self.c:
            self._hit(key)

    def _record_library(self, frame, event, arg):
        """With `record`: a numpy/scipy/statistics/math function called directly by code that is not a
        library's own (the learner's: what numpy.mean runs inside is numpy's business). A Python function that a
        C function runs for the learner's call (ndarray.var runs numpy._core._methods._var) is that C function's
        business too, and so is numpy's dispatch helper of each function (`_mean_dispatcher`). Every answer is
        cached per code object: this runs for every call the traced code makes."""
        if event == "call":
            code = frame.f_code
            key = self._library.get(code, _MISSING)
            if key is _MISSING:
                key = f"{frame.f_globals.get('__name__')}.{code.co_qualname}"
                mine = _recorded(key) and not code.co_name.endswith("_dispatcher") and not code.co_name.startswith("__")
                key = self._library[code] = key if mine else None
            if key is None:
                return
            caller = frame.f_back
            if caller is None or self._library_code(caller) or self._c_running.get(id(caller)):
                return
            _add_once(self.library_seen, key)
        elif not self._library_code(frame):
            self._c_running[id(frame)] = True
            key = runtime_key(arg)
            if _recorded(key):
                _add_once(self.library_seen, key)

    def _library_code(self, frame):
        """Whether the code `frame` runs is a library's or the standard library's (cached per code object)."""
        code = frame.f_code
        mine = self._library_codes.get(code)
        if mine is None:
            mine = self._library_codes[code] = _library_module(frame.f_globals.get("__name__"))
        return mine


_RECORDED = ("numpy", "scipy", "statistics", "math")  # the libraries whose direct calls `record` notes
_LIBRARY_CODE = _RECORDED + ("torch", "course_utils")  # code that is not the learner's


def _recorded(key):
    return isinstance(key, str) and key.split(".", 1)[0] in _RECORDED


def _library_module(dotted):
    """Whether a dotted name ("numpy._core.fromnumeric.mean", a frame's module) is a library's or the stdlib's."""
    if not isinstance(dotted, str):
        return False
    top = dotted.split(".", 1)[0]
    return top in _LIBRARY_CODE or (top in sys.stdlib_module_names and top != "__main__")


def _module_of(frame):
    return frame.f_globals.get("__name__") if frame is not None else None


def _add_once(seen, name):
    if name not in seen and len(seen) < 500:
        seen.append(name)


_SWITCHES = frozenset(("setprofile", "settrace", "__exit__"))


def _switches_tracing_off(fn):
    """True for a C function that switches a trace's layers off: sys.setprofile or sys.settrace, or leaving
    torch._C.DisableTorchFunction (whose __enter__ Python does not report). (Popping the trace's modes off
    torch's stacks is seen by the canary, or leaves the C hook to see the call.)"""
    name = getattr(fn, "__name__", "")
    bound = getattr(fn, "__self__", None)
    if name == "__exit__":
        return type(bound).__name__ in ("DisableTorchFunction", "DisableTorchFunctionSubclass", "_DisableTorchDispatch")
    if name in ("setprofile", "settrace"):
        return getattr(bound, "__name__", None) in ("sys", "threading", "_thread")
    return True


def _is_tensor(value):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _canary_python():
    """Called by a trace's canary: the Python hook must see it."""
    return 0


def _canary():
    """One call that every layer of a trace must see: a Python function, then torch.lcm (a torch function, an
    ATen op and a C function at once), which no exercise's code has a reason to call."""
    _canary_python()
    import torch

    torch.lcm(torch.ones(1, dtype=torch.int64), torch.ones(1, dtype=torch.int64))


def _other_threads():
    """Where the notebook's own Python threads are, besides the one that makes the traced call: {ident: (top
    frame, its last instruction)} for each thread that is not a daemon (Jupyter's, IPython's and the kernel's
    threads all are) or that runs the notebook's code. A thread whose entry changed between two calls ran Python
    in between; one blocked in C (waiting on a queue or a lock) keeps its entry."""
    import threading

    current = threading.get_ident()
    frames = sys._current_frames()
    out = {}
    for t in threading.enumerate():
        if t.ident is not None and t.ident != current and t is not threading.main_thread() and _the_notebooks(t):
            frame = frames.get(t.ident)
            out[t.ident] = (id(frame), getattr(frame, "f_lasti", None))
    return out


def _the_notebooks(thread):
    if not thread.daemon:
        return True
    target = getattr(thread, "_target", None)
    return "__main__" in (getattr(target, "__module__", None), type(thread).__module__)


def _set_thread_profile(fn):
    import threading

    threading.setprofile(fn)


_MODE_CLASS: list[type] = []  # made on first use: torch is imported late
_DISPATCH_CLASS: list[type] = []


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


def _dispatch_class():
    """The TorchDispatchMode that reports each ATen op to its trace, below every Python spelling of it."""
    if not _DISPATCH_CLASS:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC2701 (torch's only home of the dispatch hook)

        class _TraceDispatch(TorchDispatchMode):
            def __init__(self, trace):
                super().__init__()
                self.trace = trace

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.trace._op(getattr(func, "overloadpacket", func), "dispatch")
                return func(*args, **(kwargs or {}))

        # torch wraps a mode's __torch_dispatch__ so that torch.compile skips it, and the wrapper imports
        # torch._dynamo on its first call: 1.4 s, in every kernel. Nothing here is compiled: skip the import.
        original = getattr(_TraceDispatch.__dict__.get("__torch_dispatch__"), "__wrapped__", None)
        if original is not None:
            setattr(original, "__dynamo_disable", original)
        _DISPATCH_CLASS.append(_TraceDispatch)
    return _DISPATCH_CLASS[0]
