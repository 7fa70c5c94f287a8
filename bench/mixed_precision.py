"""Mixed precision's speed-up, measured side by side: `mixed_precision_step` in bf16 against the
same training step in plain fp32, on the same MLP, in one run.

Speed is not graded (timed unit tests are flaky); this prints the ratio instead.  On an H100
a wide MLP's bf16 step should be several times faster than its fp32 step (bf16 tensor cores
against fp32 CUDA cores); on a CPU the ratio depends on whether the CPU has bf16 matmul
instructions (AMX, AVX512-BF16) and can be below 1.

Run: ``python bench/mixed_precision.py [--target solutions|assignment|PATH] [--device cuda]
[--width 4096 --layers 4 --batch 8192 --steps 20]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from grader.boundary.target import Implementation, resolve_target  # noqa: E402


def mlp(width: int, layers: int, device: str) -> nn.Module:
    blocks: list[nn.Module] = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*blocks, nn.Linear(width, 1)).to(device)


def fp32_step(model, optimizer, loss_fn, x, y) -> float:
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def seconds_per_step(step, model, optimizer, x, y, steps: int, warmup: int = 3) -> float:
    loss_fn = nn.functional.mse_loss
    for _ in range(warmup):
        step(model, optimizer, loss_fn, x, y)
    if x.device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step(model, optimizer, loss_fn, x, y)  # .item() inside synchronises every step
    if x.device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=None)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    width = args.width or (4096 if cuda else 512)
    batch = args.batch or (8192 if cuda else 256)

    impl = Implementation(resolve_target(args.target))
    torch.manual_seed(0)
    x = torch.randn(batch, width, device=args.device)
    y = torch.randn(batch, 1, device=args.device)
    model = mlp(width, args.layers, args.device)
    state = {k: v.clone() for k, v in model.state_dict().items()}

    times = {}
    for name, step in (("fp32", fp32_step), ("bf16 autocast", impl.mixed_precision.mixed_precision_step)):
        model.load_state_dict(state)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        times[name] = seconds_per_step(step, model, optimizer, x, y, args.steps)

    device = torch.cuda.get_device_name() if cuda else "CPU"
    print(f"{device}: MLP width {width}, {args.layers} layers, batch {batch}, {args.steps} timed steps")
    for name, seconds in times.items():
        print(f"  {name:>14}: {seconds * 1e3:8.2f} ms/step")
    print(f"  speed-up of bf16 autocast over fp32: {times['fp32'] / times['bf16 autocast']:.2f}x")


if __name__ == "__main__":
    main()
