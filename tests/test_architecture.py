"""docs/architecture.md stays true: its table of dependency levels is recomputed from the code.

The map tells a newcomer which module may import which: a module imports only from lower levels, so there are no
loops. This test parses the module-level imports of every `course_utils/**/*.py` (those at the top of a file; not
the ones inside functions or under `if TYPE_CHECKING:`), gives each module 1 + the largest level of what it
imports (0 for none), and compares the result with the table, module by module. A new module, or a new import that
moves one, fails here until the table says so.
"""

from __future__ import annotations

import ast
import re
from functools import cache

from conftest import ROOT

PACKAGE = ROOT / "course_utils"
MAP = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| (\d+) \| (.+) \|$", re.M)
NAME = re.compile(r"`([\w.]+)`(?:\s*…\s*`([\w.]+)`)?")  # `checks.ex01` … `checks.ex05` is a range


def module_name(path) -> str:
    """course_utils/checks/ex01.py -> "checks.ex01"; a package's __init__.py -> the package ("checks")."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, object]:
    found = {module_name(p): p for p in PACKAGE.rglob("*.py") if "locale" not in p.parts}
    found.pop("", None)  # course_utils/__init__.py: importing the package itself loads nothing
    return found


def top_level_imports(path, name: str, known) -> set[str]:
    """The course_utils modules that `path` (module `name`) imports at its top level."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package[: len(package) - (node.level - 1)]
        target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        for alias in node.names:  # `from . import ex02` names a module; `from .core import Case` a module's member
            sub = f"{target}.{alias.name}" if target else alias.name
            found.add(sub if sub in known else target)
    found.discard("")
    return found & set(known)


@cache
def computed_levels() -> dict[str, int]:
    known = modules()
    imports = {name: top_level_imports(path, name, known) for name, path in known.items()}
    levels: dict[str, int] = {}

    def level(name: str, seen: tuple = ()) -> int:
        assert name not in seen, f"import loop: {' -> '.join((*seen, name))}"
        if name not in levels:
            levels[name] = 1 + max((level(d, (*seen, name)) for d in imports[name]), default=-1)
        return levels[name]

    for name in known:
        level(name)
    return levels


def documented_levels() -> dict[str, int]:
    levels = {}
    for number, cells in ROW.findall(MAP.read_text(encoding="utf-8")):
        for first, last in NAME.findall(re.sub(r"\([^)]*\)", "", cells)):  # a remark in brackets names no row
            names = [first]
            if last:
                stem, a, b = re.fullmatch(r"(.*?)(\d+)", first).group(1), first[-2:], last[-2:]
                names = [f"{stem}{k:0{len(a)}d}" for k in range(int(a), int(b) + 1)]
            for name in names:
                assert name not in levels, f"{name} is in the table twice"
                levels[name] = int(number)
    return levels


def test_the_map_lists_every_module_at_its_level():
    computed, documented = computed_levels(), documented_levels()
    assert len(computed) > 40
    missing = sorted(set(computed) - set(documented))
    stale = sorted(set(documented) - set(computed))
    moved = {m: f"{documented[m]} in the map, {computed[m]} in the code" for m in set(computed) & set(documented)}
    moved = {m: why for m, why in sorted(moved.items()) if documented[m] != computed[m]}
    assert (missing, stale, moved) == ([], [], {}), "update the table in docs/architecture.md"


def test_the_levels_are_computed_from_imports():
    """The parser on known facts, so that the comparison above cannot pass by reading nothing."""
    levels = computed_levels()
    assert levels["i18n"] == 0
    assert levels["quiz"] > levels["questions"] > levels["checks.questions"] > levels["i18n"]
    assert levels["checks.ex06"] > levels["checks.ex02"]  # ex06 reuses ex02's check
    assert top_level_imports(PACKAGE / "checks" / "ex06.py", "checks.ex06", modules()) >= {"checks.ex02"}
