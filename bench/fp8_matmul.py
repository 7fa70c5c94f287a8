"""fp8 against bf16 matmul throughput and error, measured side by side in one run.

    python bench/fp8_matmul.py [--target solutions|assignment|PATH] [--sizes 2048 4096 8192] [--trials 20]

For each size n it times the target's `fp8.fp8_matmul` (quantise both operands to e4m3, then
`torch._scaled_mm`) and a plain bf16 `a @ b` with CUDA events, and prints TFLOP/s of each,
the fp8/bf16 speed ratio, and both results' relative error against the float32 product.
Quantising costs two passes over the operands, so the speed-up grows with n; the error of
e4m3 (3 mantissa bits) is around a few percent, bf16's a fraction of a percent.

Needs a GPU with fp8 tensor cores (compute capability 8.9+: H100, H200, L4, L40S); otherwise
it says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402


def _time(fn, trials: int) -> float:
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(trials):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=None, help="implementation: solutions, assignment or a folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9):
        print("fp8_matmul: needs a CUDA GPU with fp8 tensor cores (compute capability 8.9+); nothing to measure here.")
        return 0

    from grader.boundary.target import Implementation, resolve_target

    fp8 = Implementation(resolve_target(args.target)).fp8
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print(f"{'n':>6} {'bf16 ms':>9} {'bf16 TF/s':>10} {'fp8 ms':>9} {'fp8 TF/s':>10} {'fp8/bf16 speed':>15} "
          f"{'bf16 rel err':>13} {'fp8 rel err':>12}")
    g = torch.Generator(device="cuda").manual_seed(0)
    for n in args.sizes:
        a = torch.randn(n, n, device="cuda", generator=g)
        b = torch.randn(n, n, device="cuda", generator=g)
        exact = a @ b
        a16, b16 = a.bfloat16(), b.bfloat16()
        s16 = _time(lambda: a16 @ b16, args.trials)
        s8 = _time(lambda: fp8.fp8_matmul(a, b), args.trials)
        e16 = ((a16 @ b16).float() - exact).norm() / exact.norm()
        e8 = (fp8.fp8_matmul(a, b).float() - exact).norm() / exact.norm()
        work = 2 * n**3
        print(f"{n:>6} {s16 * 1e3:>9.3f} {work / s16 / 1e12:>10.1f} {s8 * 1e3:>9.3f} {work / s8 / 1e12:>10.1f} "
              f"{s16 / s8:>14.2f}x {e16.item():>13.4f} {e8.item():>12.4f}")
        del a, b, exact, a16, b16
    torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
