"""The capacity plan is arithmetic on the stored measurement, and the instructors' page quotes it.

benchmarks/capacity.json holds what `python benchmarks/bench_capacity.py --measure` measured (one learner's
JupyterLab server and kernels through chapters 00-06); `plan()` derives the per-learner sizes and the machine counts.
These tests recompute the plan from the JSON by hand, check that the JSON covers every chapter the course ships, and
that every number in instructor/training_room.md is one the JSON or the plan holds (a number typed into the page
fails here). tests/test_deploy.py checks deploy/ against the same plan.
"""

import copy
import importlib.util
import io
import math
import re
import time
from contextlib import redirect_stdout

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("bench_capacity", ROOT / "benchmarks" / "bench_capacity.py")
bench_capacity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_capacity)

FIGURES = bench_capacity.load()
PLAN = bench_capacity.plan(FIGURES)
PAGE = ROOT / "instructor" / "training_room.md"


def test_the_measurement_covers_every_chapter_and_both_presets():
    chapters = [p.stem for p in sorted((ROOT / "chapters").glob("*.ipynb"))]
    assert set(FIGURES["presets"]) == {"quick", "smoke"}
    for name, preset in FIGURES["presets"].items():
        assert [c["chapter"] for c in preset["chapters"]] == chapters, f"{name}: measure again (--measure)"
        for c in preset["chapters"]:
            # PSS of a process tree is at most its summed RSS, and a chapter's kernel is part of the tree
            assert 0 < c["kernel_peak_pss_mib"] <= c["peak_pss_mib"] <= c["peak_rss_mib"], c
            assert c["cpu_s"] > 0 and c["wall_s"] > 0
        assert preset["peak_pss_mib"] == max(c["peak_pss_mib"] for c in preset["chapters"])
        assert 0 < preset["server_pss_mib"] < preset["peak_pss_mib"]
    quick = FIGURES["presets"]["quick"]
    assert quick["workers"]["count"] >= 1 and quick["workers"]["peak_pss_mib"] > 0, "chapter 06's sweep workers"
    machine = FIGURES["machine"]
    assert {"cpu_count", "memory_gib", "python", "torch", "load_before", "load_after", "contention"} <= set(machine)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", FIGURES["date"])


def test_the_plan_is_the_json_through_the_stated_arithmetic():
    quick = FIGURES["presets"]["quick"]
    workers = quick["workers"]
    node_workers = min(bench_capacity.CPU_LIMIT_CORES, workers["max_auto_workers"])  # one per core of the limit
    assert PLAN["sweep_workers"] == node_workers and PLAN["cpu_limit"] == bench_capacity.CPU_LIMIT_CORES
    peak = quick["peak_pss_mib"] + (node_workers - workers["count"]) * workers["peak_pss_mib"]
    mem = math.ceil(peak * bench_capacity.MEMORY_HEADROOM / 1024 * 4) / 4
    assert PLAN["mem_limit_gib"] == PLAN["mem_guarantee_gib"] == mem
    heaviest = max(quick["chapters"], key=lambda c: c["cpu_s"])
    cores_each = heaviest["cpu_s"] / bench_capacity.SPREAD_WINDOW_S
    assert PLAN["cpu_guarantee"] == math.ceil(cores_each * 10 - 1e-9) / 10
    usable_gib = bench_capacity.VM_MEMORY_GIB - bench_capacity.SYSTEM_RESERVE_GIB
    usable_cores = bench_capacity.VM_CORES - bench_capacity.SYSTEM_RESERVE_CORES
    assert PLAN["learners_per_vm_by_memory"] == int(usable_gib // mem)
    assert PLAN["learners_per_vm_by_cpu"] == int(usable_cores // PLAN["cpu_guarantee"])  # packed by guarantee
    per_vm = min(PLAN["learners_per_vm_by_memory"], PLAN["learners_per_vm_by_cpu"])
    assert PLAN["learners_per_vm"] == per_vm
    assert PLAN["nodes_for_cohort"] == -(-bench_capacity.COHORT // per_vm)
    assert PLAN["nodes_for_cohort"] * per_vm >= bench_capacity.COHORT > (PLAN["nodes_for_cohort"] - 1) * per_vm
    assert PLAN["tljh_vm_for_room"]["memory_gib"] >= bench_capacity.ROOM * mem
    one_kernel = quick["server_pss_mib"] + max(c["kernel_peak_pss_mib"] for c in quick["chapters"])
    extra_workers = (node_workers - workers["count"]) * workers["peak_pss_mib"]
    assert PLAN["peak_one_kernel_mib"] == round(one_kernel + extra_workers) < PLAN["peak_mib"]


def test_the_plan_follows_the_measurement():
    """A heavier learner gets a bigger limit and fewer neighbours: the plan reads the JSON, it does not hold numbers."""
    heavier = copy.deepcopy(FIGURES)
    heavier["presets"]["quick"]["peak_pss_mib"] *= 2
    for c in heavier["presets"]["quick"]["chapters"]:
        c["cpu_s"] *= 3
    changed = bench_capacity.plan(heavier)
    assert changed["mem_limit_gib"] > PLAN["mem_limit_gib"]
    assert changed["learners_per_vm_by_memory"] < PLAN["learners_per_vm_by_memory"]
    assert changed["cpu_guarantee"] > PLAN["cpu_guarantee"]
    assert changed["learners_per_vm_by_cpu"] < PLAN["learners_per_vm_by_cpu"]


def test_make_bench_prints_the_stored_plan_quickly():
    out = io.StringIO()
    start = time.monotonic()
    with redirect_stdout(out):
        assert bench_capacity.main([]) == 0
    assert time.monotonic() - start < 5, "without --measure the script only reads the JSON"
    text = out.getvalue()
    assert f"memory guarantee = limit = {PLAN['mem_limit_gib']} GiB" in text
    assert f"{PLAN['nodes_for_cohort']} nodes" in text


# --- the instructors' page ----------------------------------------------------------------------------------------
def _numbers(value) -> set:
    """Every number in a JSON value, as the page may write it."""
    found = set()
    if isinstance(value, dict):
        for v in value.values():
            found |= _numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            found |= _numbers(v)
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        found |= {f"{value:g}", str(value), str(round(value)), f"{value:.1f}"}
    elif isinstance(value, str):
        found |= set(re.findall(r"\d+(?:\.\d+)?", value))
    return found


def page_numbers(text: str) -> list:
    """Numbers in the page's prose and tables, leaving out names that carry digits (chapters, files, versions in
    code, URLs): what remains is a quantity a reader takes as measured or planned."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks: tested with the files they show
    text = re.sub(r"`[^`]*`", "", text)  # inline code: commands, file names
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"https?://\S+", "", text)
    text = re.sub(r"^\s*\d+\. ", "", text, flags=re.M)  # numbered steps
    text = re.sub(r"\b0[0-6](?:[–-]0[0-6])?\b", "", text)  # chapter numbers (00-06, 05–06)
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])", text)


@pytest.fixture(scope="module")
def page():
    return PAGE.read_text(encoding="utf-8")


def test_every_number_on_the_page_comes_from_the_measurement_or_the_plan(page):
    allowed = _numbers(FIGURES) | _numbers(PLAN)
    stray = sorted({n for n in page_numbers(page) if n not in allowed})
    assert not stray, f"numbers in instructor/training_room.md that neither capacity.json nor plan() holds: {stray}"


def test_the_page_quotes_the_plan(page):
    page = " ".join(page.split())  # the prose is wrapped: a phrase may span a line break
    p = PLAN
    quick = FIGURES["presets"]["quick"]
    for phrase in [
        f"{p['vm']['cores']} cores and {p['vm']['memory_gib']} GiB",
        f"{p['learners_per_vm']} learners per VM",
        f"{p['learners_per_vm_by_memory']} by memory",
        f"{p['learners_per_vm_by_cpu']} by CPU",
        f"{p['nodes_for_cohort']} nodes",
        f"{p['cohort']} learners",
        f"{p['mem_limit_gib']} GiB",
        f"CPU guarantee {p['cpu_guarantee']}",
        f"limit {p['cpu_limit']:g} cores",
        f"{p['peak_measured_mib']} MiB",
        f"{p['peak_mib']} MiB",
        f"{p['peak_one_kernel_mib']} MiB",
        f"chapter {p['heaviest_chapter'][:2]}, takes {p['heaviest_cpu_s']} CPU seconds",
        f"comes in chapter {max(quick['chapters'], key=lambda c: c['peak_pss_mib'])['chapter'][:2]}",
        f"{p['spread_window_s']} seconds",
        f"{round(quick['server_pss_mib'])} MiB",
        f"{p['gpu_estimate_mib']} MiB",
        f"{p['tljh_vm_for_room']['memory_gib']} GiB",
        f"{p['tljh_vm_for_room']['cores']} cores",
        f"torch {FIGURES['machine']['torch']}",
        FIGURES["date"],
    ]:
        assert phrase in page, f"instructor/training_room.md should say {phrase!r} (from the plan)"
    for c in quick["chapters"]:
        row = f"| {c['chapter'][:2]} | {c['peak_pss_mib']:.0f} | {c['kernel_peak_pss_mib']:.0f} | {c['cpu_s']:.1f} |"
        assert row in page, f"the measured table lacks {row}"


def test_the_page_is_linked_from_the_instructor_guide():
    assert "(training_room.md)" in (ROOT / "instructor" / "README.md").read_text(encoding="utf-8")
