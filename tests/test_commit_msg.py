"""tools/commit_msg.py (the commit message's shape) and .pre-commit-config.yaml, whose hooks run it and the checks
that CI would run anyway, with the tools locked in .venv."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import commit_msg

CONFIG = ROOT / ".pre-commit-config.yaml"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Fix the grader's timeout\n\nThe kernel took 30 s on a cold cache.\n", []),
        ("Fix the grader's timeout\n", []),
        ("Fix it\n# Please enter the commit message for your changes.\n#\n", []),
        ("x" * 72 + "\n", []),
        ("x" * 73 + "\n\nwhy\n", ["the subject is 73 characters; keep it to 72 and put the why in the body"]),
        ("Fix the grader\nbecause the kernel was slow\n", ["the second line must be blank"]),
        ("\n\nbody only\n", ["the subject line is empty"]),
        ("# only comments\n", ["the subject line is empty"]),
    ],
)
def test_the_message_shape(message, expected):
    found = commit_msg.problems(message)
    assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected)), found


def test_the_command_line(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text("Short subject\n\nThe why.\n")
    bad.write_text(
        "A subject line that goes on and on, explaining the why as well, instead of leaving it for the body\n"
    )
    run = lambda path: subprocess.run(
        [sys.executable, str(ROOT / "tools" / "commit_msg.py"), str(path)], capture_output=True, text=True
    )
    assert run(good).returncode == 0
    result = run(bad)
    assert result.returncode == 1 and "keep it to 72" in result.stderr


def test_every_hook_runs_a_locked_tool_of_the_venv_and_the_checks_ci_runs():
    config = yaml.safe_load(CONFIG.read_text())
    assert set(config["default_install_hook_types"]) == {"pre-commit", "commit-msg"}
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert [repo["repo"] for repo in config["repos"]] == ["local"]  # nothing to download
    for hook in hooks.values():
        assert hook["language"] == "system"
        program, *args = shlex.split(hook["entry"])
        assert program.startswith(".venv/bin/"), hook["id"]
        scripts = [a for a in args if a.endswith(".py")]
        assert all((ROOT / s).is_file() for s in scripts), hook["id"]
    entries = " | ".join(hook["entry"] for hook in hooks.values())
    for command in (
        "ruff check",
        "ruff format --check",
        "mypy course_utils",
        "translate.py check",
        "catalog.py --check",
    ):
        assert command in entries, command
    assert hooks["commit-message"]["stages"] == ["commit-msg"] and "commit_msg.py" in hooks["commit-message"]["entry"]
    # the Makefile's lint target runs the same type check
    assert "mypy course_utils" in (ROOT / "Makefile").read_text()


def test_the_configuration_is_valid_for_pre_commit():
    result = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "pre-commit"), "validate-config", str(CONFIG)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
