"""Forbidden shortcuts: what a task asks learners not to call, and how a check finds such a call.

A task that asks the learner to write a computation (LayerNorm from mean and variance, attention by hand)
declares, next to its check in checks/exNN.py, the calls that would do it for them:

    LAYER_NORM_CHECK = FunctionCheck(..., forbidden=Forbidden(
        calls=VARIANCE + TORCH_NORMS + COURSE_NORMS,       # dotted names: functions, methods, classes
        hint="compute the variance yourself: the mean of the squared deviations from the mean.",
        why="the notebook: 'not torch.nn.functional.layer_norm, torch.var or torch.std'; the rest do the same",
    ))

Every check also forbids its own reference (`FunctionCheck.reference`), whatever the declaration says.
A check finds a forbidden call in two independent ways, and either is enough for a ❌:

    static scan    the function's source, parsed (`ast`): every name and attribute chain it uses, resolved
                   to the object it names (`F.layer_norm`, `torch.nn.functional.layer_norm`, an alias
                   bound by `from course_utils.norms import layer_norm as ln` or `ln = norms.layer_norm`,
                   `getattr(torch, "var")`) and compared by identity with the forbidden objects; a method
                   of a forbidden class called on any value (`x.var(...)`); and the same for the learner's
                   own helpers and classes that the function uses, followed by name.
    runtime trace  what one call really runs (course_utils.tracing.CallTrace): every torch function,
                   however spelled (`getattr(torch, "v" + "ar")`, `torch.ops.aten.var`), and every Python
                   function, such as the course's references, through any import alias.

The learner's check scans the live function (its source via `inspect.getsource`, its names via its
globals) and traces each call. The grader scans the submitted notebook's cells in its own process
(`notebook_hits`, names resolved from the notebook's imports and assignments, as a "Run All" binds them)
and takes the kernel's trace of each call as evidence: a kernel can hide a call from its own trace, but
not from the grader's scan. What neither can see is in docs/grading.md ("Forbidden shortcuts").
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import linecache
import sys
import textwrap
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..i18n import N_
from ..tracing import CallTrace, runtime_key

__all__ = [
    "Forbidden",
    "VARIANCE",
    "TORCH_NORMS",
    "COURSE_NORMS",
    "ATTENTION",
    "static_hits",
    "notebook_hits",
    "trace_for",
    "trace_names",
    "watch",
    "found",
    "confirmed",
    "Hits",
    "merge",
    "index_for",
]

_MISSING = object()


class Hits(list[str]):
    """The forbidden names a static scan found, in order; `uncertain` are those found only as an attribute of
    some value that is not called there (`s.var` read from the learner's own namedtuple, or a bound method kept
    for later): the runtime trace decides those when it can vouch for what it saw (`confirmed`)."""

    def __init__(self, names: Iterable[str] = (), uncertain: Iterable[str] = frozenset()) -> None:
        super().__init__(names)
        self.uncertain = frozenset(uncertain)


_MAX_FOLLOWED = 200  # the learner's definitions one scan follows at most


# ----------------------------------------------------------------------------------------------------
# the declaration
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Forbidden:
    """The calls one task forbids (dotted names of functions, methods and classes), the hint shown with
    the ❌, and why they are forbidden (the notebook's words, or what makes the task trivial)."""

    calls: tuple[str, ...]
    hint: str
    why: str = ""
    allowed: object = None  # what the function may compute with (checks/allowed.py's Allowed), else no allowlist

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))


# Groups the exercises combine. Each name must resolve (tests/test_forbidden.py checks it).
VARIANCE = (  # the variance and the standard deviation, ready-made
    "torch.var",
    "torch.Tensor.var",
    "torch.var_mean",
    "torch.std",
    "torch.Tensor.std",
    "torch.std_mean",
    "numpy.var",
    "numpy.std",
    "numpy.ndarray.var",
    "numpy.ndarray.std",
    "statistics.pvariance",
    "statistics.variance",
    "statistics.pstdev",
    "statistics.stdev",
    # the same, under other names (an audit found each one giving full marks)
    "numpy.nanvar",
    "numpy.nanstd",
    "numpy.cov",
    "numpy.ma.MaskedArray.var",
    "numpy.ma.MaskedArray.std",
    "torch.masked.var",
    "torch.masked.std",
    "torch._refs.var",
    "torch._refs.std",
    "torch._refs.var_mean",
    "torch._refs.std_mean",
    "torch.ops.prims.var",
    "torch.cov",
    "statistics.covariance",
)
TORCH_NORMS = (  # torch's normalizations: each computes LayerNorm, RMSNorm or BatchNorm, some after a transpose
    "torch.nn.functional.layer_norm",
    "torch.layer_norm",
    "torch.native_layer_norm",
    "torch.nn.LayerNorm",
    "torch.nn.functional.rms_norm",
    "torch.rms_norm",
    "torch.nn.RMSNorm",
    "torch.nn.functional.batch_norm",
    "torch.batch_norm",
    "torch.native_batch_norm",
    "torch.batch_norm_stats",
    "torch.batch_norm_update_stats",
    "torch.nn.BatchNorm1d",
    "torch.nn.BatchNorm2d",
    "torch.nn.BatchNorm3d",
    "torch.nn.LazyBatchNorm1d",
    "torch.nn.SyncBatchNorm",
    "torch.nn.functional.group_norm",
    "torch.group_norm",
    "torch.native_group_norm",
    "torch.nn.GroupNorm",
    "torch.nn.functional.instance_norm",
    "torch.instance_norm",
    "torch.nn.InstanceNorm1d",
    "torch.nn.InstanceNorm2d",
    "torch.nn.InstanceNorm3d",
    # private and reference spellings of the same computations
    "torch._native_batch_norm_legit",
    "torch.ops.aten._native_batch_norm_legit",
    "torch.ops.aten._native_batch_norm_legit_functional",
    "torch._batch_norm_impl_index",
    "torch.ops.aten._batch_norm_with_update",
    "torch._fused_rms_norm",
    "torch._refs.native_layer_norm",
    "torch._refs.nn.functional.layer_norm",
    "torch._refs.nn.functional.group_norm",
)
COURSE_NORMS = (  # the course's own reference norms and hand computations
    "course_utils.norms.layer_norm",
    "course_utils.norms.rms_norm",
    "course_utils.norms.batch_norm",
    "course_utils.norms.LayerNorm",
    "course_utils.norms.RMSNorm",
    "course_utils.norms.BatchNorm",
    "course_utils.handcalc.layer_norm_steps",
    "course_utils.handcalc.rms_norm_steps",
)
ATTENTION = (  # attention computed for you
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
    "course_utils.attention.CausalSelfAttention",
    "torch.ops.aten.scaled_dot_product_attention",
    "torch.ops.aten._scaled_dot_product_attention_math",
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu",
    "torch.ops.aten._scaled_dot_product_efficient_attention",
)

DEFAULT_HINT = N_(
    "write the computation yourself, as the task describes: the course's reference is what your output is "
    "compared with."
)


# ----------------------------------------------------------------------------------------------------
# the declaration, resolved: the objects (for the scan) and their runtime keys (for the trace)
# ----------------------------------------------------------------------------------------------------
class ForbiddenIndex:
    """A task's forbidden objects, looked up by identity (static scan) and by runtime key (trace)."""

    def __init__(self, entries: list[tuple[str, object, object]], hint: str) -> None:
        self.hint = hint
        self.objects: list[object] = []  # kept alive, so that an id() names one object
        self.by_id: dict[int, str] = {}
        self.classes: list[tuple[type, str]] = []  # (class, name): its instances and subclasses are forbidden too
        self.methods: dict[str, str] = {}  # method name -> name, for Tensor's and ndarray's: `value.var(...)`
        self.dotted: dict[str, str] = {}  # declared name -> name (for a name the scan cannot resolve)
        self.watch: dict[str, dict[str, str]] = {"ops": {}, "python": {}, "c": {}}  # runtime key -> name, per kind
        self.names: list[str] = []
        for name, obj, owner in entries:
            self._add(name, obj, owner)

    def _add(self, name: str, obj: object, owner: object) -> None:
        import torch

        self.names.append(name)
        self.dotted.setdefault(name, name)
        if isinstance(owner, type) and hasattr(obj, "__objclass__"):  # a C method: x.var(...) on any value
            self.methods.setdefault(name.rsplit(".", 1)[-1], name)
        todo, seen = [obj], set()
        while todo:
            o = todo.pop()
            if id(o) in seen or o is None:
                continue
            seen.add(id(o))
            self.objects.append(o)
            self.by_id.setdefault(id(o), name)
            todo += [getattr(o, "__wrapped__", None), getattr(o, "_implementation", None)]  # wraps, numpy dispatch
            if isinstance(o, type):
                self.classes.append((o, name))
                # what running it executes: a module's forward; another class's __call__, else its __init__
                call = o.forward if issubclass(o, torch.nn.Module) else o.__dict__.get("__call__", o.__init__)
                if call is not None:
                    self._watch(call, name)
            else:
                self._watch(o, name)

    def _watch(self, obj: Any, name: str) -> None:
        import torch

        key = runtime_key(obj)
        if not key:
            return
        torch_level = key.startswith("torch.") or "::" in key  # "aten::var", "prims::var": ATen ops
        if hasattr(obj, "__code__"):
            self.watch["python"].setdefault(key, name)
        if torch_level:
            self.watch["ops"].setdefault(key, name)
            short = getattr(obj, "__name__", "")
            if short and not short.startswith("_") and hasattr(torch.ops.aten, short):  # the ATen op of the same name
                self.watch["ops"].setdefault(f"aten::{short}", name)
        if not hasattr(obj, "__code__") and "::" not in key:  # a C function: the profile hook sees it called
            self.watch["c"].setdefault(key, name)
            owner = getattr(obj, "__objclass__", None)
            if owner is not None and issubclass(owner, torch._C.TensorBase):  # x.var(): reported as Tensor.var
                self.watch["c"].setdefault(f"torch.Tensor.{obj.__name__}", name)

    def match(self, obj: Any) -> str | None:
        """The forbidden name `obj` is (or wraps, or is an instance or subclass of), else None."""
        try:
            name = self.by_id.get(id(obj))
            if name is not None:
                return name
            kind = type(obj)
            if kind in (staticmethod, classmethod, types.MethodType):
                return self.match(obj.__func__)
            if kind is functools.partial:
                return self.match(obj.func)
            cls = obj if isinstance(obj, type) else kind
            return next((n for c, n in self.classes if issubclass(cls, c)), None)
        except Exception:  # a learner's object with an odd type
            return None

    def key_names(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for kind in ("ops", "python", "c"):
            for key, name in self.watch[kind].items():
                out.setdefault(key, name)
        return out


def _resolve(dotted: str) -> tuple[object, object]:
    """(object, the object it is an attribute of) for a declared dotted name; ImportError/AttributeError if none."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        owner: object = None
        for part in parts[i:]:
            owner, obj = obj, getattr(obj, part)
        return obj, owner
    raise ImportError(dotted)


def _display(fn: object) -> str:
    """course_utils.checks.ex04._block_ref for the closure ex04._block_ref.<locals>.ref."""
    qualname = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "the reference"))
    return f"{getattr(fn, '__module__', '?')}.{qualname.split('.<locals>')[0]}"


@functools.cache
def index_for(forbidden: Forbidden | None, reference: object) -> ForbiddenIndex:
    """The resolved index of a check: its declaration and its own reference. A declared name that does not
    resolve (another torch version) is left out; tests/test_forbidden.py asserts that every one resolves."""
    entries = []
    for name in forbidden.calls if forbidden else ():
        try:
            obj, owner = _resolve(name)
        except (ImportError, AttributeError):
            continue
        entries.append((name, obj, owner))
    if reference is not None:
        entries.append((_display(reference), reference, None))
    return ForbiddenIndex(entries, forbidden.hint if forbidden else DEFAULT_HINT)


def _index(check: object) -> ForbiddenIndex:
    return index_for(getattr(check, "forbidden", None), getattr(check, "reference", None))


# ----------------------------------------------------------------------------------------------------
# the static scan: one scanner, two ways of resolving a name (live objects, or a notebook's source)
# ----------------------------------------------------------------------------------------------------
Ref = tuple[str, Any]
"""What a name refers to, as the scan sees it: ("obj", a live object), ("dotted", a dotted name not imported here),
("def", a learner's definition: a live function or class, or its syntax tree), ("assign", the syntax tree of the
value a notebook assigned to it), ("value", None)."""

_VALUE: Ref = ("value", None)  # a runtime value the scan knows nothing about (a tensor, an argument)


def _is_namespace(obj: object) -> bool:
    return isinstance(obj, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType))


def _static_attr(obj: object, attr: str) -> Any:
    """obj.attr without running any code (no property, no __getattr__), else _MISSING."""
    found = inspect.getattr_static(obj, attr, _MISSING)
    if type(found) in (staticmethod, classmethod):
        found = found.__func__
    if found is _MISSING and isinstance(obj, types.ModuleType):
        found = sys.modules.get(f"{obj.__name__}.{attr}", _MISSING)
    return found


def _module_ref(dotted: str) -> Ref:
    """The object a dotted name names in this process (modules already imported only), or ("dotted", name)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        obj: object = sys.modules.get(".".join(parts[:i]))
        if obj is None:
            continue
        for part in parts[i:]:
            obj = _static_attr(obj, part)
            if obj is _MISSING:
                return ("dotted", dotted)
        return ("obj", obj)
    return ("dotted", dotted)


def _locals(node: ast.AST) -> dict[str, Ref]:
    """The names a definition binds inside itself: parameters and assignments (unknown values), and local
    imports (what they import). They shadow the globals; nested functions and classes count as local.
    An import wins over an earlier binding of its name; any other binding only fills a name not yet bound."""
    names: dict[str, Ref] = {}
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update(_local_imports(sub))
        else:
            for name in _local_values(sub, node):
                names.setdefault(name, _VALUE)
    return names


def _local_values(sub: ast.AST, definition: ast.AST) -> list[str]:
    """The names the syntax node `sub`, inside `definition`, binds to values the scan cannot know: the parameters
    of a function or lambda, the name of a nested function or class, an assigned (or deleted) name, the name of a
    caught exception."""
    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = sub.args
        parameters = [arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if arg is not None]
        if sub is definition or isinstance(sub, ast.Lambda):
            return parameters
        return [*parameters, sub.name]
    if isinstance(sub, ast.ClassDef) and sub is not definition:
        return [sub.name]
    if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
        return [sub.id]
    if isinstance(sub, ast.ExceptHandler) and sub.name:
        return [sub.name]
    return []


def _local_imports(sub: ast.Import | ast.ImportFrom) -> dict[str, Ref]:
    """The names an import inside a definition binds, and what each refers to: `import a.b` binds a, `import a.b
    as c` binds c to a.b, `from a import b` binds b to a.b (a relative or star import binds nothing known)."""
    bound: dict[str, Ref] = {}
    if isinstance(sub, ast.Import):
        for alias in sub.names:
            imported = alias.name if alias.asname else alias.name.split(".")[0]
            bound[alias.asname or imported] = _module_ref(imported)
    elif sub.module and not sub.level:
        for alias in sub.names:
            if alias.name != "*":
                bound[alias.asname or alias.name] = _module_ref(f"{sub.module}.{alias.name}")
    return bound


def _const_getattr(node: ast.Call) -> tuple[ast.expr, str] | None:
    """(object node, name) for getattr(obj, "name"[, default]), else None."""
    if (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value
    return None


def _const_import(node: ast.Call) -> str | None:
    """The module name of __import__("a.b") (binds "a") or importlib.import_module("a.b"), else None."""
    if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        return None
    name = node.args[0].value
    func = node.func
    if isinstance(func, ast.Name) and func.id == "__import__":
        return name if len(node.args) > 3 or node.keywords else name.split(".")[0]
    if (
        isinstance(func, ast.Name)
        and func.id == "import_module"
        or (isinstance(func, ast.Attribute) and func.attr == "import_module")
    ):
        return name
    return None


class _Env(Protocol):
    """How the scan resolves names: through live objects (`_LiveEnv`) or through a notebook's source (`_SourceEnv`)."""

    def lookup(self, name: str) -> Ref: ...
    def definitions(self, token: Any) -> list[tuple[ast.AST, _Env]]: ...
    def import_ref(self, name: str) -> Ref: ...
    def assignment(self, token: Any) -> tuple[ast.AST, _Env]: ...
    def patched(self, obj: object, attr: str) -> ast.expr | None: ...


class _Scanner(ast.NodeVisitor):
    """Walks definitions and expressions, resolving each name and attribute chain through an environment
    (`_LiveEnv` in the notebook, `_SourceEnv` in the grader), and records the forbidden names it meets."""

    def __init__(self, index: ForbiddenIndex, env: _Env) -> None:
        self.index = index
        self.hits: list[str] = []
        self.certain: set[str] = set()  # names found by what they are; the rest only by a method's name (x.var)
        self.followed: set[object] = set()
        self.env = env
        self.local: dict[str, Ref] = {}
        self.assigned: dict[object, Ref] = {}

    def hit(self, name: str | None, certain: bool = True) -> None:
        if name and name not in self.hits:
            self.hits.append(name)
        if name and certain:
            self.certain.add(name)

    def result(self) -> Hits:
        return Hits(self.hits, uncertain=frozenset(n for n in self.hits if n not in self.certain))

    def run(self, node: ast.AST, env: _Env) -> None:
        saved = self.env, self.local
        self.env, self.local = env, _locals(node)
        try:
            self.visit(node)
        finally:
            self.env, self.local = saved

    def chain_in(self, node: ast.AST, env: _Env) -> Ref:
        """The reference an expression evaluates to, scanned in env with no local names."""
        saved = self.env, self.local
        self.env, self.local = env, _locals(node)
        try:
            return self.chain(node)
        finally:
            self.env, self.local = saved

    # names -----------------------------------------------------------------------------------------
    def lookup(self, name: str) -> Ref:
        if name in self.local:
            return self.local[name]
        return self.env.lookup(name)

    def use(self, ref: Ref) -> Ref:
        kind, value = ref
        if kind == "obj":
            self.hit(self.index.match(value))
        elif kind == "dotted":
            self.hit(self.index.dotted.get(value))
        elif kind == "def":
            name = None if isinstance(value, ast.AST) else self.index.match(value)
            if name:  # the learner passed on a forbidden object defined next to their code
                self.hit(name)
            else:
                self.follow(value)
        elif kind == "assign":
            return self.assignment(value)
        return ref

    def follow(self, token: object) -> None:
        if token in self.followed or len(self.followed) >= _MAX_FOLLOWED:
            return
        self.followed.add(token)
        for node, env in self.env.definitions(token):
            self.run(node, env)

    def assignment(self, token: object) -> Ref:
        """What a module-level `name = value` binds: an alias when value is a name or attribute chain
        (ln = norms.layer_norm), else a value whose expression is scanned (m = torch.nn.LayerNorm(4))."""
        if token in self.assigned:
            return self.assigned[token]
        self.assigned[token] = _VALUE  # a cycle (a = b; b = a) ends here
        value, env = self.env.assignment(token)
        if isinstance(value, (ast.Name, ast.Attribute)) or isinstance(value, ast.Call) and _const_getattr(value):
            ref = self.chain_in(value, env)
        else:
            saved = self.env, self.local
            self.env, self.local = env, _locals(value)
            try:
                self.visit(value)
            finally:
                self.env, self.local = saved
            ref = _VALUE
        self.assigned[token] = ref
        return ref

    # chains ----------------------------------------------------------------------------------------
    def chain(self, node: ast.AST) -> Ref:
        """Scan a name, attribute chain, getattr(obj, "name") or import call, and return what it refers to."""
        if isinstance(node, ast.Name):
            return self.use(self.lookup(node.id)) if isinstance(node.ctx, ast.Load) else _VALUE
        if isinstance(node, ast.Attribute):
            base = self.chain(node.value)
            return self.attribute(base, node.attr) if isinstance(node.ctx, ast.Load) else _VALUE
        if isinstance(node, ast.Call):
            target = _const_getattr(node)
            if target is not None:
                base = self.chain(target[0])
                for extra in node.args[2:]:
                    self.visit(extra)
                return self.attribute(base, target[1])
            module = _const_import(node)
            if module is not None:
                return self.env.import_ref(module)
        self.visit(node)
        return _VALUE

    def attribute(self, base: Ref, attr: str) -> Ref:
        kind, value = base
        if kind == "obj" and _is_namespace(value):
            patched = self.env.patched(value, attr)
            if patched is not None:
                return self.use(("assign", patched))
            found = _static_attr(value, attr)
            if found is not _MISSING:
                return self.use(("obj", found))
            if isinstance(value, types.ModuleType):
                return self.use(("dotted", f"{value.__name__}.{attr}"))
            return _VALUE
        if kind == "dotted":
            return self.use(("dotted", f"{value}.{attr}"))
        # the attribute of some value: x.var(...) when called (visit_Call), else only perhaps a Tensor's method
        self.hit(self.index.methods.get(attr), certain=False)
        return _VALUE

    # the walk --------------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        self.chain(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.chain(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _const_getattr(node) is not None or _const_import(node) is not None:
            self.chain(node)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in self.index.methods:
            base = self.chain(node.func.value)
            kind, value = base
            if kind != "dotted" and not (kind == "obj" and _is_namespace(value)):
                self.hit(self.index.methods[node.func.attr])  # value.var(...): called, as a Tensor's would be
            self.attribute(base, node.func.attr)
            for child in [*node.args, *node.keywords]:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.use(_module_ref(alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    self.use(_module_ref(f"{node.module}.{alias.name}"))


# ---- names resolved through live objects: the learner's check in the notebook -------------------
class _LiveEnv:
    """Resolves a function's free names through its closure, its globals and the builtins (no code runs)."""

    def __init__(self, namespace: dict[str, Any], module: str, closure: dict[str, Any] | None = None) -> None:
        self.namespace, self.module, self.closure = namespace, module, closure or {}

    @classmethod
    def of(cls, fn: types.FunctionType) -> _LiveEnv:
        code = fn.__code__
        closure = dict(zip(code.co_freevars, fn.__closure__ or ()))
        return cls(fn.__globals__, fn.__module__, closure)

    def lookup(self, name: str) -> Ref:
        if name in self.closure:
            try:
                return self.ref(self.closure[name].cell_contents)
            except ValueError:  # an empty cell
                return _VALUE
        if name in self.namespace:
            return self.ref(dict.get(self.namespace, name))
        found = builtins.__dict__.get(name, _MISSING)
        return _VALUE if found is _MISSING else ("obj", found)

    def ref(self, obj: object) -> Ref:
        """A learner's own function or class (defined in the same module) is followed; anything else is an object."""
        if isinstance(obj, types.FunctionType) and obj.__module__ == self.module:
            return ("def", obj)
        cls = obj if isinstance(obj, type) else type(obj)
        if cls.__dict__.get("__module__") == self.module and not isinstance(obj, types.ModuleType):
            return ("def", cls)
        return ("obj", obj)

    def definitions(self, obj: object) -> list[tuple[ast.AST, _Env]]:
        node = _definition_node(obj)
        if node is None:
            return []
        env = _LiveEnv.of(obj) if isinstance(obj, types.FunctionType) else self
        return [(node, env)]

    def import_ref(self, name: str) -> Ref:
        return _module_ref(name)

    def assignment(self, token: ast.AST) -> tuple[ast.AST, _Env]:
        return token, self

    def patched(self, obj: object, attr: str) -> ast.expr | None:
        return None  # live objects already are what the notebook made them


def _definition_node(obj: Any) -> ast.AST | None:
    """The parsed definition of a function, lambda or class, from its source; None when there is none."""
    if isinstance(obj, type):
        return _class_node(obj)
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda in the middle of an expression that spans lines
        try:
            tree = ast.parse("(\n" + source.strip().rstrip(",") + "\n)")
        except SyntaxError:
            return None
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        return ast.Module(body=[ast.Expr(n) for n in lambdas], type_ignores=[]) if lambdas else None
    name = getattr(obj, "__name__", None)
    defs = (n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))
    return next((n for n in defs if isinstance(n, ast.ClassDef) == isinstance(obj, type) and n.name == name), None)


def _class_node(cls: type) -> ast.ClassDef | None:
    """A class's definition, found through the file and line of one of its methods: inspect.getsource looks
    for a class in its module's file, which a notebook cell's class (module __main__) is not in."""
    for member in vars(cls).values():
        code = getattr(member, "__code__", None)
        if code is None:
            continue
        try:
            tree = ast.parse("".join(linecache.getlines(code.co_filename)))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ClassDef)
                and node.name == cls.__name__
                and node.lineno <= code.co_firstlineno <= (node.end_lineno or node.lineno)
            ):
                return node
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return None
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)


# ---- names resolved through a notebook's source: the grader --------------------------------------
class _SourceEnv:
    """The top-level names of a notebook's code cells, bound as running them in order binds them:
    imports, definitions and assignments, the last binding of a name winning."""

    def __init__(self, sources: list[str]) -> None:
        self.bindings: dict[str, tuple[str, Any]] = {}
        self.patches: list[tuple[ast.Attribute, ast.expr]] = []  # `torch.mean = torch.var`: an attribute assigned
        self.stars: list[str] = []
        for source in sources:
            tree = _parse_cell(source)
            if tree is not None:
                self._bind(tree.body)

    def _bind(self, statements: list[ast.stmt]) -> None:
        """Bind what each statement binds, in order, and then what the blocks of a compound statement (if, for,
        while, with, try) bind: running a cell may run any of them. A definition's body binds nothing here."""
        for st in statements:
            self._bind_statement(st)
            for block in _blocks(st):
                self._bind(block)

    def _bind_statement(self, st: ast.stmt) -> None:
        """Bind the names one statement binds by itself (its blocks aside)."""
        if isinstance(st, ast.Import):
            for alias in st.names:
                top = alias.name.split(".")[0]
                self.bindings[alias.asname or top] = ("import", alias.name if alias.asname else top)
        elif isinstance(st, ast.ImportFrom) and st.module and not st.level:
            self._bind_import_from(st.module, st.names)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bindings[st.name] = ("def", st)
        elif isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            for target in st.targets if isinstance(st, ast.Assign) else [st.target]:
                self._bind_target(target, st.value)
        elif isinstance(st, (ast.AugAssign, ast.For, ast.AsyncFor)):
            self._bind_unknown(st.target)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self._bind_unknown(item.optional_vars)

    def _bind_import_from(self, module: str, aliases: list[ast.alias]) -> None:
        """`from module import a, b as c` binds a and c; `from module import *` is looked into by `lookup`."""
        for alias in aliases:
            if alias.name == "*":
                self.stars.append(module)
            else:
                self.bindings[alias.asname or alias.name] = ("import", f"{module}.{alias.name}")

    def _bind_target(self, target: ast.expr, value: ast.expr) -> None:
        """`name = value` binds the value's syntax tree; `obj.attr = value` patches an attribute; the names in
        any other target (a tuple, a subscript) get values the scan cannot know."""
        if isinstance(target, ast.Name):
            self.bindings[target.id] = ("assign", value)
        elif isinstance(target, ast.Attribute):
            self.patches.append((target, value))
        else:
            self._bind_unknown(target)

    def _bind_unknown(self, target: ast.expr | None) -> None:
        """Bind every name in `target` (an augmented assignment's, a for loop's or a with's `as`) to a value the scan
        cannot know."""
        for name in ast.walk(target) if target is not None else ():
            if isinstance(name, ast.Name):
                self.bindings[name.id] = ("value", None)

    def lookup(self, name: str) -> Ref:
        kind, value = self.bindings.get(name, ("", None))
        if kind == "import":
            return _module_ref(value)
        if kind == "def":
            return ("def", value)
        if kind == "assign":
            return ("assign", value)
        if kind == "value":
            return _VALUE
        for module in self.stars:
            ref = _module_ref(f"{module}.{name}")
            if ref[0] == "obj":
                return ref
        found = builtins.__dict__.get(name, _MISSING)
        return _VALUE if found is _MISSING else ("obj", found)

    def definitions(self, node: ast.AST) -> list[tuple[ast.AST, _Env]]:
        return [(node, self)]

    def import_ref(self, name: str) -> Ref:
        return _module_ref(name)

    def assignment(self, value: ast.AST) -> tuple[ast.AST, _Env]:
        return value, self

    def patched(self, obj: object, attr: str) -> ast.expr | None:
        """The value a cell assigned to obj.attr (an attribute of a module or class), if one did."""
        for target, value in reversed(self.patches):
            if target.attr == attr and self._quiet(target.value) == ("obj", obj):
                return value
        return None

    def _quiet(self, node: ast.expr) -> Ref:
        """What a name or attribute chain of the notebook refers to, found without scanning it."""
        if isinstance(node, ast.Name):
            kind, value = self.bindings.get(node.id, ("", None))
            return _module_ref(value) if kind == "import" else _VALUE
        if isinstance(node, ast.Attribute):
            kind, value = self._quiet(node.value)
            if kind == "obj" and _is_namespace(value):
                found = _static_attr(value, node.attr)
                return _VALUE if found is _MISSING else ("obj", found)
        return _VALUE


def _blocks(st: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of statements inside a compound statement (if, for, while, with, try), in the order _SourceEnv
    binds them: the body, the else, the finally, then each except handler; none for any other statement."""
    if not isinstance(st, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
        return []
    blocks = [getattr(st, body, []) for body in ("body", "orelse", "finalbody")]
    return blocks + [handler.body for handler in getattr(st, "handlers", [])]


def _parse_cell(source: str) -> ast.Module | None:
    """A code cell's syntax tree; IPython syntax (%magic, !shell) translated first; None if it is not Python."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        pass
    except (RecursionError, MemoryError):
        return None
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return ast.parse(TransformerManager().transform_cell(source))
    except (Exception, RecursionError, MemoryError):  # not Python: the kernel could not run it either
        return None


# ----------------------------------------------------------------------------------------------------
# what the checks and the grader call
# ----------------------------------------------------------------------------------------------------
def static_hits(check: object, fn: object) -> list[str]:
    """The forbidden names a live learner function uses, by the static scan (the learner's check). Never raises."""
    try:
        index = _index(check)
        direct = index.match(fn)
        if direct:
            return [direct]
        target = fn.func if type(fn) is functools.partial else fn
        if isinstance(target, types.MethodType):
            target = target.__func__
        if isinstance(target, types.FunctionType):
            scanner = _Scanner(index, _LiveEnv.of(target))
            scanner.follow(target)
        elif not isinstance(target, (types.BuiltinFunctionType, type)):  # an object with __call__
            cls = type(target)
            module = sys.modules.get(cls.__module__)
            scanner = _Scanner(index, _LiveEnv(getattr(module, "__dict__", {}), cls.__module__))
            scanner.follow(cls)
        else:  # a builtin or a class: nothing of the learner's to scan
            return Hits()
        return scanner.result()
    except (Exception, RecursionError):  # the scan must never cost the learner a verdict
        return []


def notebook_hits(check: object, sources: list[str], function_name: str) -> list[str]:
    """The forbidden names the notebook's `function_name` uses, by the static scan of the notebook's code
    cells (`sources`, in order), in the grader's process: no learner code runs."""
    try:
        env = _SourceEnv(sources)
        scanner = _Scanner(_index(check), env)
        scanner.use(env.lookup(function_name))
        return scanner.result()
    except RecursionError:  # a pathologically nested cell: the kernel's trace still counts
        return []


def watch(check: object) -> dict[str, Any]:
    """The runtime keys to trace for this check, as plain data (sent to the learner's kernel)."""
    index = _index(check)
    out: dict[str, Any] = {kind: sorted(keys) for kind, keys in index.watch.items()}
    if getattr(getattr(check, "forbidden", None), "allowed", None) is not None:
        out["record"] = True  # every ATen op and library call, for the allowlist (checks/allowed.py)
    return out


def trace_for(check: object) -> CallTrace:
    """A trace that records this check's forbidden calls (enter it around each call of the learner's function)."""
    return CallTrace(watch(check))


def trace_names(check: object, keys: object) -> list[str]:
    """The forbidden names behind a trace's keys; anything else (a forged or garbled key) is dropped."""
    if not isinstance(keys, list):
        return []
    names = _index(check).key_names()
    return merge([names[k] for k in keys[:1000] if isinstance(k, str) and k in names])


def found(check: object, static: Sequence[str], trace: CallTrace) -> list[str]:
    """The static scan's names, then the trace's (the learner's check: both come from this process)."""
    traced = trace_names(check, trace.hits)
    return merge(confirmed(static, traced, vouched=not trace.tampered), traced)


def confirmed(static: Sequence[str], traced: Sequence[str], vouched: bool) -> list[str]:
    """The static scan's names that stand: all of them, except a name found only as an attribute of some value
    (Hits.uncertain: `s.var` on the learner's own namedtuple) when a trace that vouches for what it saw did not
    see that call. The learner's own `.var` is then not torch's."""
    uncertain: frozenset[str] = getattr(static, "uncertain", frozenset())
    if not vouched:
        return list(static)
    return [n for n in static if n not in uncertain or n in traced]


def merge(*lists: Iterable[str] | None) -> list[str]:
    """The names of several lists, each once, in order of first appearance."""
    out: list[str] = []
    for names in lists:
        for name in names or ():
            if name not in out:
                out.append(name)
    return out


def forbidden_hint(check: object) -> str:
    return _index(check).hint
