"""The course's lock: one universal resolution, exported for pip and conda, and checked without installing.

`make lock` runs `python tools/lock.py`, which regenerates, from pyproject.toml:

    uv.lock               `uv lock`: one resolution for every supported Python (from its lowest patch release up)
                          and every supported platform (Linux x86_64 and aarch64, macOS arm64), with the hash and
                          size of every wheel. Why uv: its lock is universal (pip-tools and `pip freeze` lock only
                          the machine they run on), it splits a package by marker when one version cannot serve
                          every Python (soupsieve needs Python >= 3.11.5 since 4.x: 3.11.0-3.11.4 get 2.10), and
                          `required-environments` makes it fail when a platform lacks a wheel.
    requirements.txt      uv.lock exported for pip, with hashes: what `make` installs. On Linux this is PyTorch's
                          default build from PyPI, the CUDA one, with the NVIDIA libraries it needs.
    requirements-cpu.txt  the same minus torch and the packages only its CUDA build needs: `make TORCH=cpu` installs
                          it, then torch==2.13.0+cpu from PyTorch's CPU wheel index.
    environment.yml       the same pins for conda users.

The functions below read uv.lock as data, so tests/test_lock.py can prove, offline, that every target
(Python version x platform) gets a complete set of wheels, and that the exports agree with the lock.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import compatible_tags, cpython_tags, mac_platforms
from packaging.utils import canonicalize_name, parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "course-utils"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# torch itself is installed on its own on the CPU path (its CPU build lives on PyTorch's index, not on PyPI).
TORCH = "torch"


# ----------------------------------------------------------------------------------------------------------
# the targets the README supports
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """One machine a learner may have: a platform and a Python version."""

    system: str  # "linux" or "darwin" (sys.platform)
    machine: str  # platform.machine(): x86_64, aarch64, arm64
    python: str  # full version, e.g. "3.11.0"

    @property
    def name(self):
        return f"{self.system}-{self.machine}-py{self.python}"

    def marker_environment(self):
        major, minor, _ = self.python.split(".")
        return {
            "implementation_name": "cpython",
            "implementation_version": self.python,
            "os_name": "posix",
            "platform_machine": self.machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": {"linux": "Linux", "darwin": "Darwin"}[self.system],
            "platform_version": "",
            "python_full_version": self.python,
            "python_version": f"{major}.{minor}",
            "sys_platform": self.system,
        }

    def tags(self):
        """The wheel tags pip accepts on this target, best first (the oldest OS the README supports)."""
        major, minor, _ = (int(p) for p in self.python.split("."))
        if self.system == "linux":
            # glibc 2.28 (Debian 10, Ubuntu 20.04 have 2.28 / 2.31): PyTorch's own wheels need manylinux_2_28.
            platforms = [f"manylinux_2_{m}_{self.machine}" for m in range(MIN_GLIBC[1], 4, -1)]
            legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}  # PEP 600's older names
            platforms += [f"{name}_{self.machine}" for glibc, name in legacy.items()]
            platforms += [f"linux_{self.machine}"]
        else:
            platforms = list(mac_platforms(MIN_MACOS, self.machine))
        interpreter = f"cp{major}{minor}"
        return list(cpython_tags((major, minor), [interpreter], platforms)) + list(
            compatible_tags((major, minor), interpreter, platforms)
        )


MIN_GLIBC = (2, 28)
MIN_MACOS = (14, 0)  # PyTorch 2.13's macOS wheels are macosx_14_0_arm64 (no Intel Mac wheels since 2.3)
PLATFORMS = [("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64")]


def requires_python():
    """requires-python from pyproject.toml: the one place that names the supported Python versions."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]


def supported_pythons():
    return SpecifierSet(requires_python())


def python_probes(spec: SpecifierSet):
    """The Python versions worth checking: each supported minor's .0 release, every patch release where the lock
    splits (a marker on python_full_version), the one after it, and a late patch release of each minor."""
    lock = load_lock()
    splits = set()
    for text in lock.get("resolution-markers", []):
        splits.update(re.findall(r"python_full_version\s*[<>=!]=?\s*'([0-9.]+)'", text))
    candidates = set()
    for minor in range(11, 20):
        for patch in (0, 30):
            candidates.add(f"3.{minor}.{patch}")
    for version in splits:
        major, minor, patch = (int(p) for p in version.split("."))
        candidates.update({f"{major}.{minor}.{patch}", f"{major}.{minor}.{max(patch - 1, 0)}"})
    return sorted((v for v in candidates if spec.contains(v)), key=lambda v: tuple(map(int, v.split("."))))


def targets():
    return [Target(system, machine, py) for system, machine in PLATFORMS for py in python_probes(supported_pythons())]


# ----------------------------------------------------------------------------------------------------------
# reading uv.lock
# ----------------------------------------------------------------------------------------------------------
def load_lock(path=None):
    return tomllib.loads(Path(path or ROOT / "uv.lock").read_text())


def _key(name, version):
    return canonicalize_name(name), version


def packages_by_key(lock):
    return {_key(p["name"], p["version"]): p for p in lock["package"]}


def _resolve(lock, dep, parent_marker_env):
    """The (name, version) a dependency entry points at: entries name a version only when the lock holds several."""
    name = canonicalize_name(dep["name"])
    if "version" in dep:
        return name, dep["version"]
    versions = [p["version"] for p in lock["package"] if canonicalize_name(p["name"]) == name]
    assert len(versions) == 1, f"{name}: several versions in the lock but the dependency does not say which"
    return name, versions[0]


def installed_set(lock, env, groups=("dev",), skip_edges=lambda parent, dep: False):
    """Walk the lock from the project as pip would on a machine with marker environment `env`:
    the set of (name, version) installed. `skip_edges(parent_name, dep)` prunes edges (the CPU variant)."""
    packages = packages_by_key(lock)
    root = next(p for p in lock["package"] if p["name"] == PROJECT)
    todo = [(root, None)]
    seen = set()
    while todo:
        package, extras = todo.pop()
        edges = list(package.get("dependencies", []))
        if package is root:
            for group in groups:
                edges += package.get("dev-dependencies", {}).get(group, [])
        for extra in extras or ():
            edges += package.get("optional-dependencies", {}).get(extra, [])
        for dep in edges:
            if "marker" in dep and not Marker(dep["marker"]).evaluate(env):
                continue
            if skip_edges(package["name"], dep):
                continue
            key = _resolve(lock, dep, env)
            extras_wanted = tuple(dep.get("extra", ()))
            if (key, extras_wanted) in seen:
                continue
            seen.add((key, extras_wanted))
            todo.append((packages[key], extras_wanted))
    return {key for key, _ in seen}


def best_wheel(package, tags):
    """The wheel pip would pick for these tags (the first tag, in preference order, that a wheel carries)."""
    rank = {tag: i for i, tag in enumerate(tags)}
    best = None
    for wheel in package.get("wheels", []):
        filename = wheel["url"].rsplit("/", 1)[-1]
        _, _, _, wheel_tags = parse_wheel_filename(filename)
        score = min((rank[t] for t in wheel_tags if t in rank), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, wheel)
    return best[1] if best else None


def is_cuda_only_edge(parent, dep):
    """torch's dependencies that only its CUDA build has (the CPU build's metadata lists none of them)."""
    return canonicalize_name(parent) == TORCH and "marker" in dep


def cuda_only_packages(lock):
    """Packages in the lock that nothing but torch's CUDA build needs, on any target."""
    full, cpu = set(), set()
    for target in targets():
        env = target.marker_environment()
        full |= {name for name, _ in installed_set(lock, env)}
        cpu |= {name for name, _ in installed_set(lock, env, skip_edges=is_cuda_only_edge)}
    return sorted(full - cpu)


# ----------------------------------------------------------------------------------------------------------
# the exports
# ----------------------------------------------------------------------------------------------------------
def requirement_lines(text):
    """The requirements of a pip requirements file, each joined onto one line, without comments and hashes."""
    joined = re.sub(r"\\\n", " ", text)
    lines = (line.split("#", 1)[0].strip() for line in joined.splitlines())
    return [re.sub(r"\s+--hash=\S+", "", line).strip() for line in lines if line and not line.startswith("-")]


def pinned_for(requirements_text, env):
    """(name, version) that `pip install -r` would install from an exported file on a machine with `env`."""
    result = set()
    for line in requirement_lines(requirements_text):
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(env):
            (spec,) = req.specifier
            result.add((canonicalize_name(req.name), spec.version))
    return result


def export_command(cpu=False, lock=None):
    command = [
        sys.executable,
        "-m",
        "uv",
        "export",
        "--frozen",
        "--format",
        "requirements-txt",
        "--all-groups",
        "--no-emit-project",
        "--no-header",
    ]
    if cpu:
        for name in [TORCH, *cuda_only_packages(lock or load_lock())]:
            command += ["--no-emit-package", name]
    return command


EXPORT_HEADERS = {
    False: (
        "# Generated by `make lock` (tools/lock.py) from uv.lock: do not edit by hand; edit pyproject.toml instead.\n"
        "# Every supported Python and platform, with hashes: `make` installs it with pip --require-hashes.\n"
        "# On Linux, torch is PyPI's default build, the CUDA one, with the NVIDIA libraries listed below.\n"
    ),
    True: (
        "# Generated by `make lock` (tools/lock.py) from uv.lock: do not edit by hand; edit pyproject.toml instead.\n"
        "# The CPU-only set for Linux (`make TORCH=cpu`): requirements.txt without torch and without the packages "
        "only\n"
        "# its CUDA build needs. torch comes next, on its own, from PyTorch's CPU wheel index:\n"
        f"#   pip install --no-deps --index-url {CPU_INDEX} torch==2.13.0+cpu\n"
    ),
}


def export(cpu=False, lock=None):
    body = subprocess.run(export_command(cpu, lock), cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return EXPORT_HEADERS[cpu] + body


def environment_yml(requirements_text, requires_python):
    """environment.yml for conda users: the same exact pins (with their markers), without hashes."""
    body = "\n".join(f"      - {line}" for line in requirement_lines(requirements_text))
    python = requires_python.replace(" ", "")
    return (
        "# Generated by `make lock` (tools/lock.py) from requirements.txt: do not edit by hand.\n"
        "# conda env create -f environment.yml && conda activate normalization-course && pip install -e . --no-deps\n"
        "# On Linux this installs PyTorch's CUDA build; for the CPU-only build see the README (TORCH=cpu).\n"
        "name: normalization-course\n"
        "channels:\n"
        "  - conda-forge\n"
        "dependencies:\n"
        f"  - python{python}\n"
        "  - pip\n"
        "  - pip:\n"
        f"{body}\n"
    )


def torch_version(lock=None):
    (version,) = {p["version"] for p in (lock or load_lock())["package"] if p["name"] == TORCH}
    return version


# ----------------------------------------------------------------------------------------------------------
# download sizes (the README quotes them; tests/test_lock.py keeps the quote honest)
# ----------------------------------------------------------------------------------------------------------
def download_bytes(lock, target, cpu=False):
    """Bytes of wheels pip downloads from the lock on a fresh machine (the CPU path: without torch's own wheel)."""
    env = target.marker_environment()
    skip = is_cuda_only_edge if cpu else (lambda parent, dep: False)
    packages = packages_by_key(lock)
    tags = target.tags()
    total = {}
    for key in installed_set(lock, env, skip_edges=skip):
        if cpu and key[0] == TORCH:
            continue
        wheel = best_wheel(packages[key], tags)
        total[key[0]] = wheel["size"] if wheel else 0
    return total


def main():
    subprocess.run([sys.executable, "-m", "uv", "lock"], cwd=ROOT, check=True)
    lock = load_lock()
    default = export(cpu=False, lock=lock)
    (ROOT / "requirements.txt").write_text(default)
    (ROOT / "requirements-cpu.txt").write_text(export(cpu=True, lock=lock))
    (ROOT / "environment.yml").write_text(environment_yml(default, requires_python()))
    print("uv.lock, requirements.txt, requirements-cpu.txt and environment.yml written")
    target = Target("linux", "x86_64", "3.11.0")
    full, cpu = download_bytes(lock, target), download_bytes(lock, target, cpu=True)
    print(
        f"downloads on {target.name}: default {sum(full.values()) / 1e9:.2f} GB "
        f"(torch {full[TORCH] / 1e9:.2f} GB), CPU path without torch {sum(cpu.values()) / 1e9:.2f} GB"
    )


if __name__ == "__main__":
    main()
