"""How many learners a machine serves: one learner measured, then a room's plan derived from the measurement.

    python benchmarks/bench_capacity.py              # print the stored figures and the plan (a second)
    python benchmarks/bench_capacity.py --measure    # measure again and rewrite benchmarks/capacity.json

What a JupyterHub gives each learner is a single-user server: `jupyter lab` (or `jupyterhub-singleuser`, the same
server) plus one kernel per open notebook, plus whatever those kernels start (chapter 06's sweep trains its runs in
worker processes). `--measure` starts exactly that: the venv's `jupyter lab` on a loopback port, then, chapter after
chapter, a notebook session through the server's REST API (POST /api/sessions, as JupyterLab does when a learner
opens a notebook), and executes the chapter's code cells in order in that kernel (jupyter_client, on the kernel's
connection file). A learner who moves on leaves the previous chapter's kernel running (closing a tab does not stop
its kernel), so the kernels stay up until the end, as they would in the pod.

A thread samples the whole process tree twice a second:

* memory as PSS (proportional set size: a page shared by n processes counts 1/n in each), summed over the tree. That
  is what a container's memory cgroup charges: torch's libraries, mapped by the server's kernels and by every sweep
  worker, count once, where summed RSS would count them once per process. Summed RSS is stored too (an upper bound).
* CPU time, user + system, of every process of the tree (and of the children they have reaped), per chapter. CPU
  time, not wall time: the wall time depends on how busy the machine is (the JSON says how loaded it was).

Each chapter runs once per preset: ``quick`` (the CPU preset of chapters 05-06, the one the stored outputs use) and
``smoke`` (the GPU preset's code, mixed precision included, at a tiny size on the CPU; its memory is not the gpu
preset's). The gpu preset itself can be measured only where CUDA is: `--measure --presets gpu` on a GPU machine.
Here (no GPU) its GPU memory is estimated instead (`estimate_gpu_memory`: parameters, gradients, AdamW's two
moments, and the tensors autograd saves for the backward pass of one training step at the gpu preset's size, counted
on the CPU under bf16 autocast). The CUDA context and the allocator's cache come on top and are not estimated.

A full `--measure` (both presets, chapters 00-06 each) takes `measure_seconds` of the JSON's wall time (more on a busy
machine). `plan()` turns the figures into the numbers deploy/ and instructor/training_room.md use; the tests check
that those files quote them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAPACITY_JSON = ROOT / "benchmarks" / "capacity.json"
CHAPTERS = sorted((ROOT / "chapters").glob("0[0-6]_*.ipynb"))
PRESETS = ("quick", "smoke")
SAMPLE_EVERY_S = 0.5
MIB = 1024 * 1024

# ----------------------------------------------------------------------------------------------------
# the plan's inputs that are not measured: the machine and the room (each one stated in the instructors' page)
# ----------------------------------------------------------------------------------------------------
VM_CORES = 16
VM_MEMORY_GIB = 64
# Kept free on each VM or node for the operating system, the hub, its proxy (TLJH) or the kubelet and system pods
# (Kubernetes): the VM's memory and cores the learners can use are the rest.
SYSTEM_RESERVE_GIB = 4
SYSTEM_RESERVE_CORES = 1
# A memory limit is the measured peak times this headroom, rounded up to a quarter GiB: the measurement is one
# learner's run of the chapters as shipped; a learner who re-runs a sweep or opens an exercise beside its chapter
# holds more.
MEMORY_HEADROOM = 1.25
# The concurrency assumption of the CPU plan. A class moves in step: the instructor introduces a chapter, then the
# room runs it. Not every learner reaches the same training cell in the same second, but they do reach it within a few
# minutes of each other. The plan assumes that the CPU time of a whole chapter, for every learner in the room, is
# spent within SPREAD_WINDOW_S seconds: a room's learners run a chapter's cells within 10 minutes of each other. With
# N learners the cores must then deliver N x (the heaviest chapter's CPU time) within that window.
SPREAD_WINDOW_S = 600
COHORT = 300  # the Kubernetes plan: nodes for a cohort this size
ROOM = 100  # what one TLJH VM is planned for at most (deploy/tljh)
# A learner's CPU limit, in cores: what the chapters are written and timed for (a laptop's two cores; the measuring
# machine has two). It also sets chapter 06's sweep workers: one per core the container may use, at most
# MAX_AUTO_WORKERS (course_utils.pool.usable_cpus reads the CPU limit from the container's cgroup), so the memory
# plan counts that many workers.
CPU_LIMIT_CORES = 2
GPU_CHAPTERS = ("05", "06")


# ----------------------------------------------------------------------------------------------------
# the plan: pure arithmetic on the stored figures
# ----------------------------------------------------------------------------------------------------
def _quarter_gib_up(mib: float) -> float:
    """`mib` in GiB, rounded up to a multiple of 0.25."""
    return math.ceil(mib / 1024 * 4) / 4


def _tenth_up(x: float) -> float:
    return math.ceil(round(x * 10, 6)) / 10


def sweep_workers(preset: dict, cores: int = CPU_LIMIT_CORES) -> int:
    """How many sweep workers chapter 06 starts in a container limited to `cores` cores (one per core, at most the
    measured `max_auto_workers`)."""
    return min(cores, preset["workers"]["max_auto_workers"])


def learner_peak_mib(preset: dict, cores: int = CPU_LIMIT_CORES) -> float:
    """A learner's peak memory (PSS of the whole tree, MiB) in a container limited to `cores` cores: the measured
    peak, plus the sweep workers that container would start beyond those this machine started, each at the largest
    worker peak measured. A little more than they would hold: a worker's PSS includes its share of the libraries it
    maps with the other processes, which more workers share among more processes."""
    workers = preset["workers"]
    extra = max(0, sweep_workers(preset, cores) - workers["count"]) * workers["peak_pss_mib"]
    return preset["peak_pss_mib"] + extra


def plan(figures: dict) -> dict:
    """The capacity plan from the measured figures (the JSON): every number deploy/ and the instructors' page quote.

    Memory: a learner's limit is the measured peak (CPU preset; chapter 06's sweep workers counted as a container
    limited to CPU_LIMIT_CORES would start them) times MEMORY_HEADROOM, rounded up to 0.25 GiB. The guarantee is the
    same: memory cannot be taken back from a running kernel, so a guarantee below the peak lets a node run out and a
    kernel die. CPU: the guarantee is the share of a core one learner needs while the room runs the heaviest chapter
    within SPREAD_WINDOW_S (its CPU time over the window), rounded up to a tenth; the limit is CPU_LIMIT_CORES, the
    cores the chapters are timed for, on which chapter 06's sweep runs one worker per core. Learners per VM: the
    fewer of what the memory and the cores allow, after the system's reserve. One TLJH VM for a room of ROOM: that
    many learners' limits plus the reserve.
    """
    quick = figures["presets"]["quick"]
    peak = learner_peak_mib(quick)
    mem_limit_gib = _quarter_gib_up(peak * MEMORY_HEADROOM)
    heaviest = max(quick["chapters"], key=lambda c: c["cpu_s"])
    # the average cores one learner asks for while the room runs the heaviest chapter within the window
    cores_per_learner = heaviest["cpu_s"] / SPREAD_WINDOW_S
    cpu_guarantee = _tenth_up(cores_per_learner)
    # the limit: the cores the chapters are timed for, which also caps the sweep's workers
    cpu_limit = float(min(VM_CORES - SYSTEM_RESERVE_CORES, CPU_LIMIT_CORES))
    usable_gib = VM_MEMORY_GIB - SYSTEM_RESERVE_GIB
    usable_cores = VM_CORES - SYSTEM_RESERVE_CORES
    by_memory = math.floor(usable_gib / mem_limit_gib)
    by_cpu = math.floor(usable_cores / cpu_guarantee)  # Kubernetes and TLJH pack learners by their guarantee
    per_vm = min(by_memory, by_cpu)
    tljh_vm = {
        "memory_gib": math.ceil(ROOM * mem_limit_gib + SYSTEM_RESERVE_GIB),
        "cores": math.ceil(round(ROOM * cpu_guarantee + SYSTEM_RESERVE_CORES, 6)),
    }
    gpu = figures["gpu_estimate"]
    return {
        "vm": {"cores": VM_CORES, "memory_gib": VM_MEMORY_GIB},
        "reserve": {"cores": SYSTEM_RESERVE_CORES, "memory_gib": SYSTEM_RESERVE_GIB},
        "peak_mib": round(peak),
        "peak_measured_mib": round(quick["peak_pss_mib"]),
        # informational: the peak if learners shut each chapter's kernel down before opening the next
        "peak_one_kernel_mib": round(
            quick["server_pss_mib"]
            + max(c["kernel_peak_pss_mib"] for c in quick["chapters"])
            + learner_peak_mib(quick)
            - quick["peak_pss_mib"]
        ),
        "memory_headroom": MEMORY_HEADROOM,
        "mem_limit_gib": mem_limit_gib,
        "mem_guarantee_gib": mem_limit_gib,
        "heaviest_chapter": heaviest["chapter"],
        "heaviest_cpu_s": round(heaviest["cpu_s"]),
        "spread_window_s": SPREAD_WINDOW_S,
        "cpu_guarantee": cpu_guarantee,
        "cpu_limit": cpu_limit,
        "sweep_workers": sweep_workers(quick),
        "learners_per_vm_by_memory": by_memory,
        "learners_per_vm_by_cpu": by_cpu,
        "learners_per_vm": per_vm,
        "bound": "memory" if by_memory <= by_cpu else "cpu",
        "room": ROOM,
        "tljh_vm_for_room": tljh_vm,
        "cohort": COHORT,
        "nodes_for_cohort": math.ceil(COHORT / per_vm),
        "gpu_chapters": list(GPU_CHAPTERS),
        "gpu_estimate_mib": math.ceil(gpu["total_mib"]),
        "gpu_params": gpu["params"],
    }


def format_plan(figures: dict) -> str:
    p = plan(figures)
    m = figures["machine"]
    lines = [
        f"measured {figures['date']} on {m['cpu_count']} cores, {m['memory_gib']} GiB, torch {m['torch']}, "
        f"Python {m['python']} (load average {m['load_before']} before, {m['load_after']} after)",
        "",
        "one learner, chapters 00-06 in order, every kernel left running (PSS of server + kernels + sweep workers):",
    ]
    for name, preset in figures["presets"].items():
        lines.append(
            f"  preset {name:5s}  peak {preset['peak_pss_mib']:6.0f} MiB (summed RSS {preset['peak_rss_mib']:6.0f})"
            f"   server alone {preset['server_pss_mib']:4.0f} MiB   CPU {preset['cpu_s']:5.0f} s"
        )
        for c in preset["chapters"]:
            lines.append(
                f"    {c['chapter']:26s} peak {c['peak_pss_mib']:6.0f} MiB  kernel {c['kernel_peak_pss_mib']:6.0f} MiB"
                f"  kernel at rest {c['kernel_end_pss_mib']:6.0f} MiB  CPU {c['cpu_s']:5.1f} s"
                f"  wall {c['wall_s']:5.1f} s"
            )
        w = preset["workers"]
        lines.append(f"    sweep workers: {w['count']} at once here, each at most {w['peak_pss_mib']:.0f} MiB")
    gpu = figures["gpu_estimate"]
    lines += [
        f"gpu preset (estimated, not measured): {gpu['params']} parameters, {gpu['total_mib']:.0f} MiB of GPU memory "
        f"per training run ({gpu['note']})",
        "",
        f"plan for a {p['vm']['cores']}-core, {p['vm']['memory_gib']} GiB VM ({p['reserve']['cores']} core and "
        f"{p['reserve']['memory_gib']} GiB kept for the system):",
        f"  peak per learner {p['peak_mib']} MiB (with {p['sweep_workers']} "
        f"sweep workers) -> memory guarantee = limit = {p['mem_limit_gib']} GiB (x{p['memory_headroom']} headroom)",
        f"  heaviest chapter {p['heaviest_chapter']}: {p['heaviest_cpu_s']} CPU s, spread over {p['spread_window_s']} s"
        f" -> CPU guarantee {p['cpu_guarantee']}, limit {p['cpu_limit']}",
        f"  learners per VM: {p['learners_per_vm_by_memory']} by memory, {p['learners_per_vm_by_cpu']} by CPU "
        f"-> {p['learners_per_vm']} ({p['bound']}-bound)",
        f"  TLJH for a room of {p['room']}: one VM of {p['tljh_vm_for_room']['cores']} cores and "
        f"{p['tljh_vm_for_room']['memory_gib']} GiB; Kubernetes for a cohort of {p['cohort']}: "
        f"{p['nodes_for_cohort']} nodes",
        f"  GPU profile (chapters {', '.join(p['gpu_chapters'])}): nvidia.com/gpu 1, about {p['gpu_estimate_mib']} MiB"
        " of GPU memory per run plus the CUDA context",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------
# the measurement
# ----------------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TreeSampler(threading.Thread):
    """Samples the process tree under `root_pid` every SAMPLE_EVERY_S seconds; `mark()` starts a new window whose
    peaks `window()` returns. Per window, each a maximum over the samples (so over processes alive at the same
    moment): the tree's PSS and RSS; the PSS of each kernel's subtree (a kernel is a child of the server; its subtree
    holds the sweep workers it spawned); the number of sweep workers alive at once, and one worker's PSS."""

    def __init__(self, root_pid: int):
        super().__init__(daemon=True)
        import psutil

        self.psutil = psutil
        self.root = psutil.Process(root_pid)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.mark()

    def mark(self):
        with self.lock:
            self.peak = {"pss": 0.0, "rss": 0.0, "workers": 0, "worker_pss": 0.0}
            self.kernel_peak: dict = {}  # kernel pid -> peak PSS of its subtree, MiB

    def window(self) -> dict:
        with self.lock:
            return {**self.peak, "kernels": dict(self.kernel_peak)}

    def sample(self):
        psutil = self.psutil
        procs = {}  # pid -> (PSS MiB, RSS MiB, parent pid, is a multiprocessing worker)
        for proc in [self.root, *self.root.children(recursive=True)]:
            try:
                info = proc.memory_full_info()
                procs[proc.pid] = (
                    info.pss / MIB,
                    info.rss / MIB,
                    proc.ppid(),
                    "spawn_main" in " ".join(proc.cmdline()),
                )
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        subtree: dict = {}
        for pid, (pss, _, parent, _) in procs.items():
            while parent in procs and parent != self.root.pid:  # climb to the server's child: the kernel
                pid, parent = parent, procs[parent][2]
            if parent == self.root.pid:
                subtree[pid] = subtree.get(pid, 0.0) + pss
        workers = [pss for pss, _, _, worker in procs.values() if worker]
        with self.lock:
            self.peak["pss"] = max(self.peak["pss"], sum(p[0] for p in procs.values()))
            self.peak["rss"] = max(self.peak["rss"], sum(p[1] for p in procs.values()))
            self.peak["workers"] = max(self.peak["workers"], len(workers))
            self.peak["worker_pss"] = max([self.peak["worker_pss"], *workers])
            for pid, pss in subtree.items():
                self.kernel_peak[pid] = max(self.kernel_peak.get(pid, 0.0), pss)

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(SAMPLE_EVERY_S)


def _tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of `pid`, of its live descendants, and of the children it has reaped."""
    import psutil

    total = 0.0
    root = psutil.Process(pid)
    for proc in [root, *root.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _pss_mib(pid: int) -> float:
    import psutil

    root = psutil.Process(pid)
    return sum(p.memory_full_info().pss for p in [root, *root.children(recursive=True)]) / MIB


class LabServer:
    """The venv's `jupyter lab` on a loopback port with a known token and private Jupyter folders."""

    def __init__(self, preset: str, workdir: Path):
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.runtime = workdir / "runtime"
        env = {k: v for k, v in os.environ.items() if k not in ("COURSE_RUN_CACHE", "JUPYTER_CONFIG_PATH")}
        env.update(
            JUPYTER_TOKEN=self.token,
            JUPYTER_CONFIG_DIR=str(workdir / "config"),
            JUPYTER_DATA_DIR=str(workdir / "data"),
            JUPYTER_RUNTIME_DIR=str(self.runtime),
            JUPYTER_CONFIG_PATH=str(ROOT / "tools" / "lab_settings" / "en"),
            COURSE_PRESET=preset,
            PYTHONUNBUFFERED="1",
        )
        if preset != "gpu":
            env["COURSE_DEVICE"] = "cpu"
        self.log = open(workdir / "lab.log", "w")  # closed in stop()
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "jupyter"),
                "lab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                f"--ServerApp.root_dir={ROOT}",
                *(["--allow-root"] if os.geteuid() == 0 else []),  # as `make lab` does in a container
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if self.request("GET", "/api/status")["started"]:
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"jupyter lab did not start; see {workdir / 'lab.log'}")

    def request(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=60) as response:
            text = response.read()
        return json.loads(text) if text and response.headers.get_content_type() == "application/json" else text

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


def _run_chapter(lab: LabServer, notebook: Path, timeout: float) -> tuple:
    """Open `notebook` as JupyterLab does (a session, hence a kernel, in the notebook's folder) and execute its code
    cells in order; returns (kernel pid, wall seconds). Raises on the first cell that fails."""
    import nbformat
    from jupyter_client import BlockingKernelClient

    rel = notebook.relative_to(ROOT).as_posix()
    session = lab.request(
        "POST", "/api/sessions", {"path": rel, "name": notebook.name, "type": "notebook", "kernel": {"name": "python3"}}
    )
    kernel_id = session["kernel"]["id"]
    client = BlockingKernelClient()
    client.load_connection_file(str(lab.runtime / f"kernel-{kernel_id}.json"))
    client.start_channels()
    try:
        _wait_for_kernel(lab, client, kernel_id)
        pid_reply = client.execute_interactive("import os; print(os.getpid())", timeout=60, output_hook=_keep)
        kernel_pid = int(_keep.last.strip())
        assert pid_reply["content"]["status"] == "ok"
        start = time.monotonic()
        for cell in nbformat.read(str(notebook), as_version=4).cells:
            if cell.cell_type != "code":
                continue
            reply = client.execute_interactive(cell.source, timeout=timeout, output_hook=_keep)
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"{rel}: a cell failed: {reply['content'].get('ename')}: {_keep.last[-2000:]}")
        return kernel_pid, time.monotonic() - start
    finally:
        client.stop_channels()


def _wait_for_kernel(lab: LabServer, client, kernel_id: str, timeout: float = 180):
    """Until the kernel answers kernel_info. On a loaded machine its heartbeat can lag behind its start, and
    jupyter_client then reports a kernel that is only slow as dead: ask again until `timeout`, while the server
    still lists it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.wait_for_ready(timeout=30)
            return
        except (RuntimeError, TimeoutError):
            lab.request("GET", f"/api/kernels/{kernel_id}")  # raises (404) when the kernel is really gone
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _keep(msg):
    """output_hook: keeps the last stream text or traceback (to find the kernel's pid, and to report a failure)."""
    content = msg.get("content", {})
    if msg["msg_type"] == "stream":
        _keep.last = content.get("text", "")
    elif msg["msg_type"] == "error":
        _keep.last = "\n".join(content.get("traceback", []))


_keep.last = ""


def measure_preset(preset: str, timeout: float = 1800) -> dict:
    with tempfile.TemporaryDirectory(prefix="capacity-") as tmp:
        lab = LabServer(preset, Path(tmp))
        sampler = TreeSampler(lab.process.pid)
        sampler.start()
        try:
            lab.request("GET", "/lab")  # the page a learner's browser loads first
            time.sleep(2 * SAMPLE_EVERY_S)
            server_pss = sampler.window()["pss"]
            lab_cpu0 = _tree_cpu_s(lab.process.pid)
            chapters, workers_peak, workers_count = [], 0.0, 0
            for notebook in CHAPTERS:
                sampler.mark()
                cpu0 = _tree_cpu_s(lab.process.pid)
                kernel_pid, wall = _run_chapter(lab, notebook, timeout)
                cpu = _tree_cpu_s(lab.process.pid) - cpu0
                time.sleep(2 * SAMPLE_EVERY_S)
                win = sampler.window()
                workers_peak = max(workers_peak, win["worker_pss"])
                workers_count = max(workers_count, win["workers"])
                chapters.append(
                    {
                        "chapter": notebook.stem,
                        "wall_s": round(wall, 1),
                        "cpu_s": round(cpu, 1),
                        "peak_pss_mib": round(win["pss"], 1),
                        "peak_rss_mib": round(win["rss"], 1),
                        "kernel_peak_pss_mib": round(win["kernels"].get(kernel_pid, 0.0), 1),
                        "kernel_end_pss_mib": round(_pss_mib(kernel_pid), 1),
                        "sweep_workers": win["workers"],
                    }
                )
                print(f"  {preset} {chapters[-1]}", flush=True)
            total_cpu = _tree_cpu_s(lab.process.pid) - lab_cpu0
        finally:
            sampler.stop.set()
            sampler.join()
            lab.stop()
    from course_utils.pool import MAX_AUTO_WORKERS

    return {
        "server_pss_mib": round(server_pss, 1),
        "peak_pss_mib": round(max(c["peak_pss_mib"] for c in chapters), 1),
        "peak_rss_mib": round(max(c["peak_rss_mib"] for c in chapters), 1),
        "cpu_s": round(total_cpu, 1),
        "workers": {
            "count": workers_count,
            "peak_pss_mib": round(workers_peak, 1),
            "max_auto_workers": MAX_AUTO_WORKERS,
        },
        "chapters": chapters,
    }


def estimate_gpu_memory() -> dict:
    """The gpu preset's GPU memory per training run, estimated on the CPU: float32 weights, gradients and AdamW's two
    moments (16 bytes per parameter), plus the bytes of the tensors autograd keeps for the backward pass of one
    training step (batch and block of the preset, under bf16 autocast, each storage counted once), for the largest
    model of chapters 05-06's sweeps (every variant and recipe)."""
    import torch

    from course_utils.experiments import EXTRA_VARIANTS, VARIANTS, build_run
    from course_utils.model import TinyGPT
    from course_utils.recipes import RECIPES
    from course_utils.training import autocast

    worst = None
    for variant in [*VARIANTS, *EXTRA_VARIANTS, *RECIPES]:
        model_cfg, train_cfg, corpus = build_run("gpu", variant, 1e-3)
        torch.manual_seed(0)
        model = TinyGPT(model_cfg)
        params = sum(p.numel() for p in model.parameters())
        idx = torch.randint(0, model_cfg.vocab_size, (train_cfg.batch_size, train_cfg.block_size))
        storages: dict = {}

        def pack(t, storages=storages):
            if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter):
                storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast("cpu", amp=True):
            logits = model(idx)
            loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), idx.flatten())
        loss.backward()
        activations = sum(storages.values()) / MIB
        state = params * 16 / MIB
        if worst is None or state + activations > worst["total_mib"]:
            worst = {
                "variant": variant,
                "params": params,
                "weights_grads_adam_mib": round(state, 1),
                "saved_activations_mib": round(activations, 1),
                "total_mib": round(state + activations, 1),
                "batch": [train_cfg.batch_size, train_cfg.block_size],
            }
    worst["note"] = "estimated on the CPU; the CUDA context and the caching allocator's reserve are not included"
    return worst


def measure(presets=PRESETS) -> dict:
    import psutil
    import torch

    start = time.monotonic()
    load_before = [round(x, 2) for x in os.getloadavg()]
    figures = {
        "date": datetime.date.today().isoformat(),
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 1024**3, 1),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "load_before": load_before,
        },
        "method": "benchmarks/bench_capacity.py --measure (its docstring)",
        "presets": {},
    }
    for preset in presets:
        print(f"measuring preset {preset} ...", flush=True)
        figures["presets"][preset] = measure_preset(preset)
    figures["gpu_estimate"] = estimate_gpu_memory()
    figures["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    figures["machine"]["contention"] = (
        "other jobs shared the cores during the run (load averages above): wall times are inflated, CPU times much less"
        if max(load_before) > 0.5 * (os.cpu_count() or 1)
        else "the machine was otherwise idle"
    )
    figures["measure_seconds"] = round(time.monotonic() - start)
    return figures


def load(path: Path = CAPACITY_JSON) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", action="store_true", help="measure again and rewrite the JSON")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), help="with --measure (gpu needs CUDA)")
    parser.add_argument("--out", type=Path, default=CAPACITY_JSON)
    args = parser.parse_args(argv)
    if args.measure:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped: shut the server and its kernels down too
        figures = measure(tuple(args.presets))
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    print(format_plan(load(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
