"""What chapter 05's stability lab costs: the quick sweep's wall time, TinyGPT's overhead, and GPU throughput.

    python benchmarks/bench_sweep.py                  # all three parts (the GPU part is skipped without CUDA)
    python benchmarks/bench_sweep.py --no-sweep       # only the step-time ratio (and the GPU part)

1. **Quick sweep** (CPU): the wall time of the chapter's `stability_sweep` on the quick preset (4 variants x
   its learning-rate grid), as the chapter runs it.
2. **Overhead of TinyGPT**: the training-step time (forward, backward, AdamW) of `TinyGPT` with per-head QK-Norm
   against `PlainGPT` (benchmarks/plain_gpt.py), a plain torch model of exactly the same math (same weights, same
   logits: the script checks it) written without config switches, probes or helper classes. Both are timed round
   by round, interleaved, on the same batches; the ratio of the medians should be at most 1.10.
3. **GPU** (only with CUDA): tokens per second of a training step of the gpu preset's model in bf16 autocast,
   and the wall time of the gpu preset's whole sweep. Without CUDA it prints why it is skipped.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

try:
    from course_utils import experiments
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from course_utils import experiments

from course_utils.model import TinyGPT, lm_loss
from course_utils.training import autocast

sys.path.insert(0, str(Path(__file__).resolve().parent))  # plain_gpt.py, next to this script
from plain_gpt import PlainGPT, copy_weights

__all__ = ["step_time_ratio", "quick_sweep_time", "gpu_plan", "gpu_benchmark", "main"]

RATIO_TARGET = 1.10


def _models(preset: str = "quick", seed: int = 0):
    model_cfg, train_cfg, corpus = experiments.build_run(preset, "qk_norm", 1e-3, seed)
    torch.manual_seed(seed)
    tiny = TinyGPT(model_cfg)
    plain = PlainGPT(
        model_cfg.vocab_size, model_cfg.d_model, model_cfg.n_layer, model_cfg.n_head, model_cfg.block_size, qk_norm=True
    )
    copy_weights(tiny, plain)
    return tiny, plain, train_cfg, corpus


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_time_ratio(
    rounds: int = 40, warmup: int = 5, preset: str = "quick", device="cpu", threads: int | None = 1, seed: int = 0
) -> dict:
    """Median training-step time of TinyGPT and PlainGPT (same math, same weights), interleaved; and their ratio."""
    device = torch.device(device)
    before = torch.get_num_threads()
    if threads and device.type == "cpu":
        torch.set_num_threads(threads)
    try:
        tiny, plain, cfg, corpus = _models(preset, seed)
        tiny, plain = tiny.to(device), plain.to(device)
        probe = torch.randint(0, corpus.vocab_size, (2, cfg.block_size), device=device)
        with torch.no_grad():
            same = float((tiny(probe) - plain(probe)).abs().max())
        if same > 1e-4:
            raise AssertionError(f"PlainGPT does not compute TinyGPT's logits (max difference {same:.1e})")
        opts = {
            name: torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.95))
            for name, m in (("TinyGPT", tiny), ("PlainGPT", plain))
        }
        models = {"TinyGPT": tiny, "PlainGPT": plain}
        g = torch.Generator().manual_seed(seed)
        times = {name: [] for name in models}
        for r in range(warmup + rounds):
            x, y = corpus.batch("train", cfg.batch_size, cfg.block_size, g)
            x, y = x.to(device), y.to(device)
            order = list(models) if r % 2 == 0 else list(reversed(models))  # alternate who goes first
            for name in order:
                model, opt = models[name], opts[name]
                _sync(device)
                start = time.perf_counter()
                with autocast(device, cfg.amp):
                    loss = lm_loss(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                _sync(device)
                if r >= warmup:
                    times[name].append(time.perf_counter() - start)
        seconds = {name: statistics.median(ts) for name, ts in times.items()}
        return {
            "seconds": seconds,
            "ratio": seconds["TinyGPT"] / seconds["PlainGPT"],
            "rounds": rounds,
            "max_logit_difference": same,
            "device": str(device),
            "threads": torch.get_num_threads(),
            "tokens_per_step": cfg.batch_size * cfg.block_size,
        }
    finally:
        torch.set_num_threads(before)


def quick_sweep_time(lrs=None, variants=tuple(experiments.VARIANTS)) -> dict:
    """Wall time of the chapter's quick sweep on the CPU (no progress bars)."""
    spec = experiments.resolve_preset("quick")
    lrs = list(spec.lrs if lrs is None else lrs)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = experiments.stability_sweep(lrs, variants=variants, preset="quick", device="cpu", progress=False)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "runs": len(result),
        "per_run": seconds / len(result),
        "result": result,
    }


def gpu_plan() -> dict:
    """What the GPU part measures, built on any device (the tests check it on the CPU)."""
    model_cfg, train_cfg, corpus = experiments.build_run("gpu", "qk_norm", 1e-3)
    spec = experiments.PRESETS["gpu"]
    return {
        "model": model_cfg,
        "train": train_cfg,
        "vocab": corpus.vocab_size,
        "tokens_per_step": train_cfg.batch_size * train_cfg.block_size,
        "sweep_runs": len(spec.lrs) * len(experiments.VARIANTS),
    }


def gpu_benchmark(steps: int = 100, sweep: bool = True) -> dict:
    """Tokens per second of the gpu preset's training step (bf16 autocast) and the gpu sweep's wall time.

    Without CUDA returns {"skipped": reason} and measures nothing.
    """
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA GPU found (torch.cuda.is_available() is False): the GPU part needs one"}
    device = torch.device("cuda")
    plan = gpu_plan()
    torch.manual_seed(0)
    model = TinyGPT(plan["model"]).to(device)
    cfg, corpus = plan["train"], experiments._corpus(experiments.PRESETS["gpu"].n_sentences)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
    g = torch.Generator().manual_seed(0)

    def step():
        x, y = corpus.batch("train", cfg.batch_size, cfg.block_size, g)
        with autocast(device, True):
            loss = lm_loss(model(x.to(device)), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    seconds = time.perf_counter() - start
    out = {
        "device": torch.cuda.get_device_name(0),
        "tokens_per_second": steps * plan["tokens_per_step"] / seconds,
        "step_ms": 1e3 * seconds / steps,
    }
    if sweep:
        start = time.perf_counter()
        result = experiments.stability_sweep(None, variants=tuple(experiments.VARIANTS), preset="gpu", progress=False)
        out["sweep_seconds"] = time.perf_counter() - start
        out["sweep_runs"] = len(result)
        out["sweep"] = result
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-sweep", action="store_true", help="skip the quick sweep's wall time")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--no-gpu-sweep", action="store_true", help="on CUDA, time only the training step")
    args = parser.parse_args(argv)

    if not args.no_sweep:
        quick = quick_sweep_time()
        print(
            f"quick sweep on CPU: {quick['runs']} runs in {quick['seconds']:.1f} s wall, {quick['cpu_seconds']:.1f} "
            "s of CPU "
            f"time ({quick['per_run']:.2f} s per run; torch threads during the sweep: "
            f"{experiments.PRESETS['quick'].threads}; on a busy machine the wall time exceeds the CPU time)"
        )
        sens = quick["result"].sensitivity()
        print("  LR sensitivity: " + ", ".join(f"{v} {s:.2f}" for v, s in sens.items()))

    ratio = step_time_ratio(rounds=args.rounds)
    sec = ratio["seconds"]
    verdict = "within" if ratio["ratio"] <= RATIO_TARGET else "ABOVE"
    print(
        f"training step, quick preset's model with QK-Norm ({ratio['tokens_per_step']} tokens, {ratio['device']}, "
        f"{ratio['threads']} thread(s), median of {ratio['rounds']} interleaved rounds):"
    )
    print(
        f"  TinyGPT {sec['TinyGPT'] * 1e3:.2f} ms | PlainGPT {sec['PlainGPT'] * 1e3:.2f} ms | "
        f"ratio {ratio['ratio']:.3f} ({verdict} the target {RATIO_TARGET:.2f}); largest logit difference between "
        f"the two models {ratio['max_logit_difference']:.1e}"
    )

    gpu = gpu_benchmark(sweep=not args.no_gpu_sweep)
    if "skipped" in gpu:
        print(
            f"GPU part skipped: {gpu['skipped']}. Plan: {gpu_plan()['tokens_per_step']} tokens per step, "
            f"{gpu_plan()['sweep_runs']} runs in the gpu sweep."
        )
    else:
        print(
            f"GPU ({gpu['device']}): {gpu['tokens_per_second']:,.0f} tokens/s ({gpu['step_ms']:.1f} ms per step, bf16)"
        )
        if "sweep_seconds" in gpu:
            print(f"  gpu preset sweep: {gpu['sweep_runs']} runs in {gpu['sweep_seconds']:.1f} s")
            print("  LR sensitivity: " + ", ".join(f"{v} {s:.2f}" for v, s in gpu["sweep"].sensitivity().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
