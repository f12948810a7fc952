"""The pins live in requirements.txt; environment.yml must mirror them exactly."""
import re

import yaml

from conftest import ROOT


def requirement_pins():
    lines = (l.split("#", 1)[0].strip() for l in (ROOT / "requirements.txt").read_text().splitlines())
    return [l for l in lines if l]


def test_every_requirement_is_an_exact_pin():
    for line in requirement_pins():
        assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][A-Za-z0-9_.+\-]*", line), f"not an exact pin: {line!r}"


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    assert "torch==2.13.0" in requirement_pins()


def test_environment_yml_mirrors_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pip_section == requirement_pins(), "run `make environment.yml` after changing requirements.txt"
    assert "python=3.11" in env["dependencies"]


def test_no_package_is_pinned_twice():
    names = [l.split("==")[0].lower().replace("_", "-") for l in requirement_pins()]
    assert len(names) == len(set(names))


def test_setup_is_up_to_date_after_bootstrap():
    """`make` reinstalls only when requirements.txt or pyproject.toml is newer than the install stamp."""
    import shutil
    import subprocess

    if not (ROOT / ".venv" / ".course-installed").exists() or shutil.which("make") is None:
        import pytest

        pytest.skip("not running from a `make`-bootstrapped checkout")
    result = subprocess.run(["make", "-q", "setup"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, "make would reinstall .venv although the pins did not change"
    dry = subprocess.run(["make", "-n", "setup"], cwd=ROOT, capture_output=True, text=True)
    assert "pip install" not in dry.stdout
