"""Is this Python one the course supports? `make` runs it with $(PYTHON) before it creates .venv.

It reads `requires-python` from pyproject.toml, the one place that names the supported versions, and prints one
sentence naming the fix when the interpreter is too old, too new, or cannot create a virtual environment.
Written for any Python (even 2.7), since its job is to talk to the wrong one.
"""
from __future__ import print_function

import os
import re
import sys

PYPROJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyproject.toml")


def supported_range(text):
    """(lowest, first unsupported) as (major, minor) tuples, from requires-python = ">=3.11,<3.14"."""
    spec = re.search(r'^requires-python\s*=\s*"([^"]+)"', text, re.M).group(1)
    low = re.search(r">=\s*(\d+)\.(\d+)", spec)
    high = re.search(r"<\s*(\d+)\.(\d+)", spec)
    return spec, (int(low.group(1)), int(low.group(2))), (int(high.group(1)), int(high.group(2)))


def problem(version, low, high, spec, executable):
    """One sentence naming the fix, or None when this Python is supported."""
    names = ", ".join("%d.%d" % (low[0], m) for m in range(low[1], high[1]))
    found = "%d.%d.%d" % tuple(version[:3])
    fix = ("install one of them (python.org, `brew install python@%d.%d`, `sudo apt install python%d.%d`, or pyenv) "
           "and run the same command with it, for example `make lab PYTHON=python%d.%d`."
           % (high[0], high[1] - 1, low[0], low[1], high[0], high[1] - 1))
    if tuple(version[:2]) < low:
        return "Python %s (%s) is too old for this course, which supports Python %s; %s" % (found, executable, names, fix)
    if tuple(version[:2]) >= high:
        return ("Python %s (%s) is newer than this course supports (Python %s, where PyTorch and every pinned package "
                "have wheels); %s" % (found, executable, names, fix))
    return None


def main():
    with open(PYPROJECT) as handle:
        spec, low, high = supported_range(handle.read())
    message = problem(sys.version_info, low, high, spec, sys.executable)
    if message is None:
        try:
            import ensurepip  # noqa: F401  (Debian and Ubuntu ship venv's pip bootstrap in a separate package)
            import venv  # noqa: F401
        except ImportError:
            message = ("Python %d.%d (%s) cannot create a virtual environment: install its venv module "
                       "(Debian/Ubuntu: `sudo apt install python%d.%d-venv`) and run the command again."
                       % (sys.version_info[0], sys.version_info[1], sys.executable, sys.version_info[0],
                          sys.version_info[1]))
    if message:
        print("\n*** " + message + "\n", file=sys.stderr)
        sys.exit(1)
    print("Python %d.%d.%d: supported (%s)" % (tuple(sys.version_info[:3]) + (spec,)))


if __name__ == "__main__":
    main()
