"""Matmul throughput and MFU, bf16 (fp16 on a GPU without bf16 tensor cores) vs fp32, side by side.

    python bench/flops_mfu.py [--target solutions|assignment|PATH] [--sizes 1024 2048 4096 8192] [--trials 20]

For each size n it times an (n × n) @ (n × n) matmul in float32 and in bfloat16 with the
target's `flops.time_matmul`, converts to TFLOP/s with `flops.matmul_flops`, divides by the
target's `flops.get_promised_flop_per_sec` for this GPU (dense datasheet peak) and prints
the MFU of each dtype and the bf16/fp32 speed ratio.  The GPU tests expect MFU ≥ 0.5 for a
large bf16 matmul (0.25 on the power-capped T4 and L4) and bf16 at least 2× faster than fp32.  On a
GPU without bfloat16 tensor cores (compute capability below 8.0: Colab's T4) it measures float16
instead, as the GPU tests do (`tests/probes/_gpu.py`).

Without CUDA there is nothing to measure: it says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=None, help="implementation: solutions, assignment or a folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args(argv)

    if not torch.cuda.is_available():
        print("flops_mfu: no CUDA device here; this benchmark measures GPU matmul throughput. "
              "Run it on a GPU machine.")
        return 0

    from grader.boundary.target import Implementation, resolve_target
    from tests.probes._gpu import tensor_core_dtype

    flops = Implementation(resolve_target(args.target)).flops
    name = torch.cuda.get_device_name()
    half = getattr(torch, tensor_core_dtype(torch.cuda.get_device_capability()))
    tag = "bf16" if half == torch.bfloat16 else "fp16"
    peaks = {}
    for dtype in (torch.float32, half):
        try:
            peaks[dtype] = flops.get_promised_flop_per_sec(name, dtype)
        except ValueError:
            peaks[dtype] = float("nan")
    print(f"device: {name}; promised dense peaks: fp32 {peaks[torch.float32] / 1e12:.1f} TFLOP/s, "
          f"{tag} {peaks[half] / 1e12:.1f} TFLOP/s; torch {torch.__version__}; "
          f"TF32 for float32 matmuls: {torch.backends.cuda.matmul.allow_tf32}")
    print(f"{'n':>6} {'fp32 ms':>9} {'fp32 TF/s':>10} {'fp32 MFU':>9} {tag + ' ms':>9} {tag + ' TF/s':>10} "
          f"{tag + ' MFU':>9} {tag + '/fp32 speed':>16}")
    g = torch.Generator(device="cuda").manual_seed(0)
    for n in args.sizes:
        work = flops.matmul_flops((n, n), (n, n))
        row = {}
        for dtype in (torch.float32, half):
            a = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
            b = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
            seconds = flops.time_matmul(a, b, trials=args.trials)
            row[dtype] = (seconds, work / seconds, flops.mfu(work, seconds, peaks[dtype]))
            del a, b
        (s32, f32, m32), (s16, f16, m16) = row[torch.float32], row[half]
        print(f"{n:>6} {s32 * 1e3:>9.3f} {f32 / 1e12:>10.1f} {m32:>9.2f} {s16 * 1e3:>9.3f} {f16 / 1e12:>10.1f} "
              f"{m16:>9.2f} {s32 / s16:>15.1f}×")
    torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
