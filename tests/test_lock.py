"""The lock is exact on every platform and Python the README supports, and everything agrees with it.

Proved offline, without installing: uv.lock records every wheel (name, hash, size), so a walk of its dependency
graph with a target machine's markers and wheel tags shows what pip would install there (tools/lock.py).
"""

import os
import re
import subprocess
import sys

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import check_python
import lock

LOCK = lock.load_lock()
TARGETS = lock.targets()
README = (ROOT / "README.md").read_text()


def gb(n_bytes):
    return n_bytes / 1e9


# --- Python versions: one place (pyproject), everyone agrees ---------------------------------------------------
def test_the_supported_pythons_are_named_in_one_place_and_everyone_agrees():
    spec = lock.requires_python()
    assert spec == ">=3.11,<3.14"
    assert SpecifierSet(LOCK["requires-python"]) == SpecifierSet(spec), "run `make lock`"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert f"python{spec}" in env["dependencies"], "run `make lock`"
    _, low, high = check_python.supported_range((ROOT / "pyproject.toml").read_text())
    assert SpecifierSet(f">={low[0]}.{low[1]},<{high[0]}.{high[1]}") == SpecifierSet(spec)
    assert "Python 3.11, 3.12 or 3.13" in README


@pytest.mark.parametrize(
    "version, verdict",
    [
        ((3, 10, 13), "too old"),
        ((3, 11, 0), None),
        ((3, 11, 2), None),
        ((3, 13, 9), None),
        ((3, 14, 0), "newer"),
        ((2, 7, 18), "too old"),
    ],
)
def test_check_python_names_the_fix_for_a_python_out_of_range(version, verdict):
    spec, low, high = check_python.supported_range((ROOT / "pyproject.toml").read_text())
    message = check_python.problem(version, low, high, spec, "/usr/bin/python3")
    if verdict is None:
        assert message is None
    else:
        assert verdict in message and "3.11, 3.12, 3.13" in message and "make lab PYTHON=python3." in message


def test_check_python_runs_on_an_old_interpreter_and_fails_with_one_sentence(tmp_path):
    """Its job is to talk to the wrong Python, so it must not need a new one (pyenv holds 3.10 on the dev box)."""
    old = [
        p
        for p in (os.path.expanduser("~/.pyenv/versions/3.10.13/bin/python"), "/usr/bin/python3.10")
        if os.path.exists(p)
    ]
    if not old:
        pytest.skip("no Python 3.10 on this machine")
    result = subprocess.run([old[0], str(ROOT / "tools" / "check_python.py")], capture_output=True, text=True)
    assert result.returncode == 1
    assert "is too old for this course" in result.stderr and "Traceback" not in result.stderr


# --- the lock covers every platform and Python ----------------------------------------------------------------
def test_the_lock_names_every_supported_platform():
    assert set(LOCK["supported-markers"]) == {"sys_platform == 'linux'", "sys_platform == 'darwin'"}
    required = set(LOCK["required-markers"])
    for system, machine in lock.PLATFORMS:
        assert f"platform_machine == '{machine}' and sys_platform == '{system}'" in required


def test_the_probed_pythons_start_at_the_lowest_patch_release_and_cover_every_split():
    probes = lock.python_probes(lock.supported_pythons())
    assert {"3.11.0", "3.12.0", "3.13.0"} <= set(probes)
    assert "3.11.4" in probes and "3.11.5" in probes  # soupsieve 4.x needs 3.11.5: the lock splits there
    assert not any(v.startswith(("3.10.", "3.14.")) for v in probes)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_every_package_has_a_wheel_for_every_target(target):
    packages = lock.packages_by_key(LOCK)
    installed = lock.installed_set(LOCK, target.marker_environment())
    names = {name for name, _ in installed}
    assert {"torch", "numpy", "jupyterlab", "ipykernel", "nbval", "pytest", "ruff", "pyyaml"} <= names
    assert len(names) == len(installed), "two versions of one package would be installed"
    tags = target.tags()
    no_wheel = sorted(name for name, version in installed if lock.best_wheel(packages[(name, version)], tags) is None)
    assert not no_wheel, f"{target.name}: no wheel for {no_wheel}"
    cuda = {name for name in names if name.startswith(("nvidia-", "cuda-")) or name == "triton"}
    assert bool(cuda) == (target.system == "linux")


def test_the_lowest_patch_release_gets_what_it_can_run():
    """soupsieve 4.1.3 requires Python >= 3.11.5 (Debian 12's Python is 3.11.2): the lock gives older ones 2.10."""
    soupsieve = {
        py: {
            v
            for n, v in lock.installed_set(LOCK, lock.Target("linux", "x86_64", py).marker_environment())
            if n == "soupsieve"
        }
        for py in ("3.11.0", "3.11.2", "3.11.5", "3.13.0")
    }
    assert soupsieve == {"3.11.0": {"2.10"}, "3.11.2": {"2.10"}, "3.11.5": {"4.1.3"}, "3.13.0": {"4.1.3"}}


def test_the_wheel_tag_check_can_fail():
    """A target the lock was not made for (Windows, an Intel Mac) finds packages without wheels."""
    packages = lock.packages_by_key(LOCK)
    intel_mac = lock.Target("darwin", "x86_64", "3.11.0")
    torch = next(p for p in packages.values() if p["name"] == "torch")
    assert lock.best_wheel(torch, intel_mac.tags()) is None
    assert lock.best_wheel(torch, lock.Target("darwin", "arm64", "3.11.0").tags()) is not None


# --- the exports agree with the lock ----------------------------------------------------------------------------
def uv(*args, tmp_path):
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "uv", *args], cwd=ROOT, capture_output=True, text=True, env=env)


def test_the_lock_is_up_to_date_with_pyproject(tmp_path):
    result = uv("lock", "--check", "--offline", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr + "\nrun `make lock`"


@pytest.mark.parametrize("cpu", [False, True], ids=["requirements.txt", "requirements-cpu.txt"])
def test_the_pip_exports_are_regenerated_from_the_lock_byte_for_byte(cpu):
    name = "requirements-cpu.txt" if cpu else "requirements.txt"
    assert (ROOT / name).read_text() == lock.export(cpu=cpu, lock=LOCK), f"{name} is stale: run `make lock`"


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_pip_installs_exactly_the_locked_set_on_every_target(target):
    env = target.marker_environment()
    expected = lock.installed_set(LOCK, env)
    assert lock.pinned_for((ROOT / "requirements.txt").read_text(), env) == expected
    cpu = lock.pinned_for((ROOT / "requirements-cpu.txt").read_text(), env)
    expected_cpu = {k for k in lock.installed_set(LOCK, env, skip_edges=lock.is_cuda_only_edge) if k[0] != "torch"}
    assert cpu == expected_cpu
    assert not any(name.startswith(("nvidia-", "cuda-")) or name in ("triton", "torch") for name, _ in cpu)


def test_every_exported_requirement_is_an_exact_pin_with_hashes():
    for name in ("requirements.txt", "requirements-cpu.txt"):
        entries = []
        for line in (ROOT / name).read_text().splitlines():
            if re.match(r"[a-z0-9]", line):
                entries.append(line)
            elif entries and not line.lstrip().startswith("#"):
                entries[-1] += line
        assert len(entries) > 100
        for entry in entries:
            head = entry.split()[0]
            assert re.fullmatch(r"[a-z0-9_.\-]+==[0-9][A-Za-z0-9_.+\-]*", head), f"{name}: not an exact pin: {head}"
            assert "--hash=sha256:" in entry, f"{name}: {head} has no hash"


def test_environment_yml_mirrors_the_lock():
    expected = lock.environment_yml((ROOT / "requirements.txt").read_text(), lock.requires_python())
    assert (ROOT / "environment.yml").read_text() == expected, "run `make lock`"


def test_torch_is_the_version_the_stored_outputs_were_made_with():
    assert lock.torch_version(LOCK) == "2.13.0"
    assert "torch==2.13.0" in (ROOT / "pyproject.toml").read_text()
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import setup_venv
    finally:
        sys.path.pop(0)
    assert setup_venv.torch_version(ROOT / "requirements.txt") == "2.13.0"  # the CPU path installs 2.13.0+cpu
    assert 'f"torch=={version}+cpu"' in (ROOT / "tools" / "setup_venv.py").read_text()


# --- the README's download sizes come from the lock ---------------------------------------------------------------
def readme_size(label):
    match = re.search(r"\| " + re.escape(label) + r" \|[^|\n]*\|\s*about ([0-9.]+) GB", README)
    assert match, f"README: no size for {label!r}"
    return float(match.group(1))


@pytest.mark.parametrize(
    "label, system, machine, cpu",
    [
        ("Linux x86_64 with an NVIDIA driver (or `TORCH=cuda`)", "linux", "x86_64", False),
        ("Linux aarch64 with an NVIDIA driver (or `TORCH=cuda`)", "linux", "aarch64", False),
        ("macOS arm64", "darwin", "arm64", False),
        ("Linux without an NVIDIA driver (or `TORCH=cpu`)", "linux", "x86_64", True),
    ],
)
def test_the_readme_download_sizes_match_the_lock(label, system, machine, cpu):
    sizes = lock.download_bytes(LOCK, lock.Target(system, machine, "3.11.0"), cpu=cpu)
    total = gb(sum(sizes.values()))
    if cpu:
        total += 0.19  # torch 2.13.0+cpu for Linux x86_64 (191.8 MB), which is not in uv.lock (see tools/lock.py)
    assert abs(readme_size(label) - total) < 0.051, f"{label}: the lock says {total:.2f} GB"


# --- the bootstrap ---------------------------------------------------------------------------------------------
def test_setup_is_up_to_date_after_bootstrap():
    """`make` reinstalls only when the lock or pyproject.toml is newer than the install stamp."""
    import shutil

    stamps = list((ROOT / ".venv").glob(".course-installed-*"))
    if not stamps or shutil.which("make") is None:
        pytest.skip("not running from a `make`-bootstrapped checkout")
    result = subprocess.run(["make", "-q", "setup"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, "make would reinstall .venv although the lock did not change"
    dry = subprocess.run(["make", "-n", "setup"], cwd=ROOT, capture_output=True, text=True)
    assert "pip" not in dry.stdout


def test_a_bad_torch_switch_is_refused_with_a_sentence():
    result = subprocess.run(["make", "-n", "setup", "TORCH=cuda12"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0 and "TORCH must be `auto`, `cpu` or `cuda`" in result.stderr
