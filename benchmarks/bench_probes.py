"""Do the probes cost anything when they are off? Time TinyGPT against a plain model with the same math.

    python benchmarks/bench_probes.py                         # 4 layers, width 128, batch 16 x 64, CPU
    python benchmarks/bench_probes.py --layers 6 --rounds 40

TinyGPT carries opt-in probes (course_utils.probes: gradient hooks, forward hooks, the attention
layers' `record` switch). Off, they should cost nothing: the hooks are removed when a probe's `with`
block ends, and an attention layer that records nothing takes torch's fused kernel. To check, the
same training step (forward, backward, AdamW update) is timed on

* **plain**: `PlainGPT` (benchmarks/plain_gpt.py), a minimal Pre-LN GPT without any probe machinery, and
* **probes off**: TinyGPT with the same weights, after every probe has been switched on and off once,
* **probes on** (for scale): TinyGPT inside all three probes at once,

round by round, interleaved (a noisy neighbour slows all three alike); each round's time is divided by
the plain model's time in the same round, and the median of those ratios is printed beside the median
times. The ratio probes-off / plain should be at most 1.05. The script first checks that the two models
compute the same logits, so the comparison is between equal math. On a busy machine, rerun it: a
neighbour's burst can still move one run's ratio by a few percent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

try:
    from course_utils.model import GPTConfig, TinyGPT, lm_loss
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from course_utils.model import GPTConfig, TinyGPT, lm_loss
from course_utils.probes import AttentionProbe, GradNormProbe, HiddenNormProbe

sys.path.insert(0, str(Path(__file__).resolve().parent))  # plain_gpt.py, next to this script
from plain_gpt import PlainGPT, copy_weights

__all__ = ["measure_probe_overhead", "main"]

TARGET = 1.05


class _AllProbes:
    def __init__(self, model):
        self.probes = [GradNormProbe(model), HiddenNormProbe(model), AttentionProbe(model)]

    def __enter__(self):
        for p in self.probes:
            p.__enter__()
        return self

    def __exit__(self, *exc):
        for p in reversed(self.probes):
            p.__exit__(*exc)


def _step(model, opt, x, y):
    loss = lm_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def measure_probe_overhead(
    n_layer=4, d_model=128, n_head=4, batch=16, seq=64, rounds=30, warmup=3, vocab=64, seed=0
) -> dict:
    """Median seconds per training step of the plain model, TinyGPT with probes off, and with probes on."""
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=vocab, block_size=seq, n_layer=n_layer, n_head=n_head, d_model=d_model)
    tiny = TinyGPT(cfg)
    plain = copy_weights(tiny, PlainGPT(vocab, d_model, n_layer, n_head, seq))
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randint(0, vocab, (batch, seq), generator=g), torch.randint(0, vocab, (batch, seq), generator=g)
    with torch.no_grad():
        max_diff = float((tiny(x) - plain(x)).abs().max())
    if max_diff > 1e-4:
        raise AssertionError(f"PlainGPT and TinyGPT disagree by {max_diff:.1e}: the comparison would be unfair")

    with _AllProbes(tiny):  # switch every probe on and off once: what stays behind must cost nothing
        _step(tiny, torch.optim.AdamW(tiny.parameters(), lr=0.0), x, y)
    leftovers = sum(len(m._forward_hooks) for m in tiny.modules()) + sum(
        bool(p._backward_hooks) for p in tiny.parameters()
    )
    if leftovers or any(layer.record for layer in tiny.attention_layers()):
        raise AssertionError("a probe left a hook or a record switch behind")

    opts = {
        "plain": torch.optim.AdamW(plain.parameters(), lr=1e-4),
        "probes off": torch.optim.AdamW(tiny.parameters(), lr=1e-4),
    }
    opts["probes on"] = opts["probes off"]
    calls = {
        "plain": lambda: _step(plain, opts["plain"], x, y),
        "probes off": lambda: _step(tiny, opts["probes off"], x, y),
    }

    def with_probes():
        with _AllProbes(tiny):
            _step(tiny, opts["probes on"], x, y)

    calls["probes on"] = with_probes
    times = {name: [] for name in calls}
    for _ in range(warmup):
        for fn in calls.values():
            fn()
    for _ in range(rounds):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(t) for name, t in times.items()}
    # the ratio of each round's pair, then the median over rounds: a slow round slows both members of its pair
    paired = {name: statistics.median(a / b for a, b in zip(t, times["plain"])) for name, t in times.items()}
    return {
        "config": f"{n_layer} layers, width {d_model}, {n_head} heads, batch {batch} x {seq}",
        "threads": torch.get_num_threads(),
        "rounds": rounds,
        "max_logit_diff": max_diff,
        "seconds": seconds,
        "ratios": paired,
        "ratio_off": paired["probes off"],
        "ratio_on": paired["probes on"],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args(argv)
    r = measure_probe_overhead(args.layers, args.width, 4, args.batch, args.seq, args.rounds)
    print(f"training step of a {r['config']} (CPU, {r['threads']} threads, median of {r['rounds']} interleaved rounds)")
    print(f"same logits: max difference {r['max_logit_diff']:.1e}")
    print(f"{'model':>12s} | {'ms / step':>9s} | ratio to plain (median over rounds of the paired ratio)")
    for name, s in r["seconds"].items():
        print(f"{name:>12s} | {1000 * s:9.2f} | {r['ratios'][name]:.3f}")
    verdict = "OK" if r["ratio_off"] <= TARGET else "ABOVE TARGET"
    print(f"probes off / plain = {r['ratio_off']:.3f} (target <= {TARGET}): {verdict}")
    return r


if __name__ == "__main__":
    main()
