"""deploy/ and binder/ agree with the capacity plan, with the lock and with each other.

The plan is benchmarks/bench_capacity.py's `plan()` of the measurement stored in benchmarks/capacity.json: the
Zero to JupyterHub values and the TLJH recipe must quote its per-learner memory and CPU. The nbgitpuller link that
both use as the default URL must be one nbgitpuller's handler accepts and must open chapter 00 of the pulled copy.
The binder/ files must give the image the lock's CPU set (no copy of it) and the JupyterLab settings `make lab` uses.
Nothing here builds an image or starts a hub: tests/test_capacity.py covers the measurement and the plan.
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from traitlets.config import Config

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import lock  # tools/ is not a package: on sys.path above

spec = importlib.util.spec_from_file_location("bench_capacity", ROOT / "benchmarks" / "bench_capacity.py")
bench_capacity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_capacity)

PLAN = bench_capacity.plan(bench_capacity.load())
VALUES = yaml.safe_load((ROOT / "deploy" / "z2jh" / "values.yaml").read_text(encoding="utf-8"))
TLJH_INSTALL = ROOT / "deploy" / "tljh" / "install.sh"
TLJH_CONFIG = ROOT / "deploy" / "tljh" / "jupyterhub_config.d" / "course.py"
BINDER = ROOT / "binder"
WELCOME = "chapters/00_welcome.ipynb"


def tljh_config() -> Config:
    """deploy/tljh/jupyterhub_config.d/course.py run as JupyterHub runs a config file: with get_config()."""
    config = Config()
    exec(compile(TLJH_CONFIG.read_text(encoding="utf-8"), str(TLJH_CONFIG), "exec"), {"get_config": lambda: config})
    return config


def lock_version(name: str, requirements: str = "requirements-cpu.txt") -> str:
    text = (ROOT / requirements).read_text(encoding="utf-8")
    return re.search(rf"^{re.escape(name)}==([^ ;\\]+)", text, re.M).group(1)


# --- the plan's numbers --------------------------------------------------------------------------------------------
def test_z2jh_gives_each_learner_the_plans_memory_and_cpu():
    single = VALUES["singleuser"]
    assert single["memory"] == {"guarantee": f"{PLAN['mem_guarantee_gib']}G", "limit": f"{PLAN['mem_limit_gib']}G"}
    assert single["cpu"] == {"guarantee": PLAN["cpu_guarantee"], "limit": PLAN["cpu_limit"]}
    # KubeSpawner reads "G" as GiB (1024**3), the unit of the plan
    assert PLAN["mem_guarantee_gib"] <= PLAN["mem_limit_gib"] and PLAN["cpu_guarantee"] <= PLAN["cpu_limit"]


def test_z2jh_has_a_gpu_profile_and_culls_idle_servers():
    profiles = VALUES["singleuser"]["profileList"]
    assert [p.get("default", False) for p in profiles] == [True, False], "the CPU profile is the default"
    gpu = profiles[1]["kubespawner_override"]
    assert gpu["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    assert gpu["image"].endswith("-cuda") and gpu["image"].startswith(VALUES["singleuser"]["image"]["name"] + ":")
    for chapter in PLAN["gpu_chapters"]:
        assert chapter in profiles[1]["display_name"]
    assert VALUES["cull"]["enabled"] is True and VALUES["cull"]["timeout"] > VALUES["cull"]["every"] > 0
    assert VALUES["singleuser"]["notebookDir"] == "/home/jovyan"


def test_tljh_sets_the_plans_limits_and_the_culler():
    script = TLJH_INSTALL.read_text(encoding="utf-8")
    settings = dict(re.findall(r"^tljh-config set (\S+) (\S+)$", script, re.M))
    assert settings["limits.memory"] == f"{PLAN['mem_limit_gib']}G"
    assert float(settings["limits.cpu"]) == PLAN["cpu_limit"]
    assert settings["services.cull.enabled"] == "true"
    assert settings["services.cull.timeout"] == str(VALUES["cull"]["timeout"])  # the same policy as on Kubernetes
    assert script.rstrip().endswith("tljh-config reload")
    assert subprocess.run(["bash", "-n", str(TLJH_INSTALL)], capture_output=True).returncode == 0
    assert os.access(TLJH_INSTALL, os.X_OK)


def test_tljh_installs_the_lock_the_way_make_does():
    script = TLJH_INSTALL.read_text(encoding="utf-8")
    assert "pip install --no-cache-dir --require-hashes -r requirements-cpu.txt" in script
    assert '--index-url https://download.pytorch.org/whl/cpu "torch==${torch_version}+cpu"' in script
    assert "pip check" in script
    # TLJH and binder/postBuild read torch's version from requirements.txt with the same sed: it must be the lock's
    torch_sed = "sed -n 's/^torch==\\([^ ;]*\\).*/\\1/p' requirements.txt"
    assert torch_sed in script and torch_sed in (BINDER / "postBuild").read_text(encoding="utf-8")
    version = subprocess.run(["bash", "-c", torch_sed], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert version.strip() == lock.torch_version()


# --- the nbgitpuller link ------------------------------------------------------------------------------------------
def test_the_default_url_is_an_nbgitpuller_link_that_opens_chapter_00():
    url = VALUES["singleuser"]["defaultUrl"]
    parts = urlsplit(url)
    assert parts.path == "/git-pull" and not parts.scheme and not parts.netloc, url
    query = {k: v[0] for k, v in parse_qs(parts.query, strict_parsing=True).items()}
    assert set(query) == {"repo", "branch", "targetpath", "urlpath"}, query
    repo = urlsplit(query["repo"])
    assert repo.scheme == "https" and repo.netloc and repo.path.count("/") == 2, query["repo"]
    assert re.fullmatch(r"[A-Za-z0-9._/-]+", query["branch"])
    assert query["urlpath"] == f"lab/tree/{query['targetpath']}/{WELCOME}"
    assert (ROOT / WELCOME).is_file()
    # the query is percent-encoded: the inner URL's own / and : do not leak into the outer one
    assert "://" not in parts.query and "%2F" in parts.query


def test_tljh_and_the_instructors_page_use_the_same_link():
    url = VALUES["singleuser"]["defaultUrl"]
    config = tljh_config()
    assert config.Spawner.default_url == url
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    script = TLJH_INSTALL.read_text(encoding="utf-8")
    assert f'COURSE_REPO="${{COURSE_REPO:-{query["repo"]}}}"' in script
    assert f'COURSE_BRANCH="${{COURSE_BRANCH:-{query["branch"]}}}"' in script
    page = (ROOT / "instructor" / "training_room.md").read_text(encoding="utf-8")
    assert f"https://hub.example.org/hub/user-redirect{url}" in page


def test_tljh_points_jupyterlab_at_the_course_language_settings():
    env = tljh_config().Spawner.environment.get_value({})  # the config's update() applied to an empty environment
    path = Path(env["JUPYTER_CONFIG_PATH"])
    assert path.parts[:3] == ("/", "srv", "normalization-course")
    assert (
        ROOT / path.relative_to("/srv/normalization-course") / "labconfig" / "default_setting_overrides.json"
    ).is_file()


# --- binder/ -------------------------------------------------------------------------------------------------------
def test_binder_requirements_are_the_locks_cpu_set_by_reference():
    lines = [
        line.strip()
        for line in (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines == ["-r ../requirements-cpu.txt"], lines
    # pip resolves a nested -r against the including file's folder
    assert (BINDER / "../requirements-cpu.txt").resolve() == (ROOT / "requirements-cpu.txt").resolve()
    # torch's CPU build is not on PyPI: postBuild installs it, and the CPU set must not pin PyPI's (CUDA) torch
    assert not re.search(r"^torch==", (ROOT / "requirements-cpu.txt").read_text(encoding="utf-8"), re.M)


def test_binder_python_is_a_supported_one_and_the_measured_one():
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(\d+\.\d+)", runtime)
    assert match, f"repo2docker reads python-X.Y: {runtime!r}"
    requires = re.search(r'^requires-python\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert match.group(1) + ".0" in SpecifierSet(requires)
    measured = bench_capacity.load()["machine"]["python"]
    assert measured.startswith(match.group(1) + "."), "the image should run the Python the capacity was measured on"


def test_binder_post_build_installs_torch_cpu_and_the_course():
    post = (BINDER / "postBuild").read_text(encoding="utf-8")
    assert post.startswith("#!/bin/bash\n") and "set -euo pipefail" in post
    assert '--index-url https://download.pytorch.org/whl/cpu "torch==${torch_version}+cpu"' in post
    assert "--no-deps --no-build-isolation -e ." in post and post.rstrip().endswith("pip check")
    for name in ("postBuild", "start"):
        assert os.access(BINDER / name, os.X_OK), f"repo2docker runs binder/{name}: it must be executable"
        assert subprocess.run(["bash", "-n", str(BINDER / name)], capture_output=True).returncode == 0


@pytest.mark.parametrize("language", ["en", "ja", None, "fr"])
def test_binder_start_points_jupyterlab_at_the_editions_settings(language):
    env = {"PATH": os.environ["PATH"], "REPO_DIR": str(ROOT), "JUPYTER_CONFIG_PATH": "/elsewhere"}
    if language:
        env["COURSE_LAB_LANGUAGE"] = language
    out = subprocess.run(
        ["bash", str(BINDER / "start"), "sh", "-c", 'echo "$JUPYTER_CONFIG_PATH"'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    expected = "ja" if language == "ja" else "en"  # an unknown language falls back to English
    first, rest = out.split(":", 1)
    assert first == str(ROOT / "tools" / "lab_settings" / expected) and rest == "/elsewhere"
    assert (Path(first) / "labconfig" / "default_setting_overrides.json").is_file()


def test_the_gpu_image_swaps_in_the_locks_cuda_torch():
    docker = (ROOT / "deploy" / "gpu" / "Dockerfile").read_text(encoding="utf-8")
    run = docker[docker.index("RUN ") :]
    assert run.index("pip uninstall --yes --quiet torch") < run.index("--require-hashes -r /tmp/requirements.txt")
    assert "COPY requirements.txt /tmp/requirements.txt" in docker
    assert lock_version("torch", "requirements.txt")  # the full lock has torch (the CUDA build on Linux)


def test_the_hub_version_the_values_name_is_the_locks():
    text = (ROOT / "deploy" / "z2jh" / "values.yaml").read_text(encoding="utf-8")
    assert f"jupyterhub, {lock_version('jupyterhub')})" in text
