"""Print the LayerNorm vs RMSNorm cost ratios side by side (the measurement lives in course_utils.norm_cost).

python benchmarks/bench_norm_cost.py                       # (8, 512, 768) float32 on CPU
python benchmarks/bench_norm_cost.py --shape 4 1024 4096 --rounds 40
"""

from __future__ import annotations

import argparse
import sys

import torch

from course_utils.norm_cost import aten_ops, format_report, measure_norm_cost, norm_calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs="+", default=[8, 512, 768])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64", "float16", "bfloat16"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args(argv)
    result = measure_norm_cost(tuple(args.shape), getattr(torch, args.dtype), args.device, args.rounds)
    print(format_report(result))
    x = torch.randn(2, args.shape[-1], dtype=getattr(torch, args.dtype), device=args.device)
    print(
        "ATen operators per call (a fused kernel is one; each full-size step of a chain reads and writes the tensor):"
    )
    for name, fn in norm_calls(x).items():
        print(f"  {name:17s} {' -> '.join(aten_ops(fn))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
