"""How the optimizer tests' tolerances were chosen: deviations from torch.optim, side by side.

For every run the graded optimizer tests make (public and hidden), and for extra seeds, this
prints the largest |implementation − torch.optim| over all parameters and snapshots for:

* the reference solution;
* *correct* alternative formulations the handout allows (they must stay well under the
  test's atol): AdamW's decoupled decay applied after the Adam update on the updated p,
  the bias corrections folded into the step size α_t = lr·√(1−β2^t)/(1−β1^t) with ε not
  corrected (the Adam paper's "efficient" form), both together, and out-of-place arithmetic;
* every mutant in tests/mutants/optimizers.py that replaces that optimizer's step (they must
  land well above it).

Each cell is the largest deviation over the snapshots and, in parentheses, the largest ratio
deviation / tolerance at the same snapshot (the Adam/AdamW tolerance grows with the steps taken):
a correct formulation must stay below 1, a mutant above 1 on at least the run that targets it.

Run: ``python bench/optimizers_tolerances.py [--seeds 0 1 2 3]``.  Instructor-side only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from grader.authoring.mutants import Mutant, build_target, load_mutants  # noqa: E402
from grader.boundary.target import Implementation  # noqa: E402
from tests.probes import optimizers as probes  # noqa: E402
from tests.probes._optimizers_setup import run  # noqa: E402
from tests.public.test_optimizers import tolerance  # noqa: E402

ADAM_LIKE_STEP = '''
@torch.no_grad()
def step(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["m"] = torch.zeros_like(p)
                state["v"] = torch.zeros_like(p)
            state["step"] += 1
            t = state["step"]
            g = p.grad + decay * p if L2 else p.grad
            if DECOUPLED and not AFTER:
                p -= lr * decay * p
            state["m"] = beta1 * state["m"] + (1 - beta1) * g
            state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
            if FOLDED:
                alpha = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                p -= alpha * state["m"] / (state["v"].sqrt() + eps)
            else:
                p -= lr * (state["m"] / (1 - beta1**t)) / ((state["v"] / (1 - beta2**t)).sqrt() + eps)
            if DECOUPLED and AFTER:
                p -= lr * decay * p
'''

OTHER_STEPS = {
    "SGD": '''
@torch.no_grad()
def step(self, closure=None):
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            d = p.grad
            if group["momentum"]:
                s = self.state[p]
                s["momentum_buffer"] = d.clone() if "momentum_buffer" not in s else group["momentum"] * s["momentum_buffer"] + d
                d = s["momentum_buffer"]
            p -= group["lr"] * d
''',
    "AdaGrad": '''
@torch.no_grad()
def step(self, closure=None):
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            s = self.state[p]
            s["sum"] = s.get("sum", torch.zeros_like(p)) + p.grad ** 2
            p -= group["lr"] * p.grad / (torch.sqrt(s["sum"]) + group["eps"])
''',
    "RMSProp": '''
@torch.no_grad()
def step(self, closure=None):
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            s = self.state[p]
            a = group["alpha"]
            s["square_avg"] = a * s.get("square_avg", torch.zeros_like(p)) + (1 - a) * p.grad ** 2
            p -= group["lr"] * p.grad / (torch.sqrt(s["square_avg"]) + group["eps"])
''',
}


def correct_variants() -> list[Mutant]:
    """Formulations the tests must accept, as Mutant objects (so they are applied the same way)."""
    variants = []
    for cls in ("Adam", "AdamW"):
        for after in (False, True) if cls == "AdamW" else (False,):
            for folded in (False, True):
                # bind the flags as keyword defaults so the method stays self-contained
                source = textwrap.dedent(ADAM_LIKE_STEP).strip().replace(
                    "def step(self, closure=None):",
                    f"def step(self, closure=None, L2={cls == 'Adam'}, DECOUPLED={cls == 'AdamW'}, "
                    f"AFTER={after}, FOLDED={folded}):")
                label = "out-of-place" + (", decay after the update" if after else "") + (", folded α_t" if folded else "")
                variants.append(Mutant("optimizers", f"{cls}.step", label, f"variant: {label}", source))
    for cls, body in OTHER_STEPS.items():
        variants.append(Mutant("optimizers", f"{cls}.step", "out-of-place", "variant: out-of-place",
                               textwrap.dedent(body).strip()))
    return variants


def all_cases() -> list[tuple[str, tuple]]:
    from tests.hidden import test_optimizers as hidden
    from tests.public import test_optimizers as public

    cases = [(f"public {t}", c) for t, cs in public.CASES.items() for c in cs]
    cases += [(f"hidden {t}", c) for t, cs in hidden.CASES.items() for c in cs]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3], help="extra seeds besides each case's own")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        impls: dict[str, list[tuple[str, Implementation]]] = {}
        for i, m in enumerate(correct_variants() + load_mutants(("optimizers",))):
            who = m.name if m.name.startswith("variant") else f"MUTANT {m.name}"
            impls.setdefault(m.replaces.split(".")[0], []).append((who, Implementation(build_target(m, Path(tmp) / f"t{i}"))))
        solution = Implementation(ROOT / "solutions")
        for label, (name, kwargs, groups, seed, steps, round_trip_at, kind) in all_cases():
            snapshots = [s for s in (1, 2, 5, 10, 20, 30, 50, 60, 100, 150, 200) if s <= steps]
            tolerances = torch.tensor([tolerance(kind, s) for s in snapshots])
            seeds = [seed] + [s for s in args.seeds if s != seed]
            print(f"\n{label}: {name} {kwargs} groups {groups}, {steps} steps, {kind} tolerance "
                  f"(after step 1: {tolerances[0]:.0e}, at most {tolerances.max():.0e}); seeds {seeds}")
            print(f"  {'':60s} " + " ".join(f"{'seed ' + str(s):>18s}" for s in seeds))
            print(f"  {'':60s} " + " ".join(f"{'max dev  (×tol)':>18s}" for _ in seeds))
            torch_cls = getattr(torch.optim, {"AdaGrad": "Adagrad", "RMSProp": "RMSprop"}.get(name, name))
            tkw = {k: (tuple(v) if k == "betas" else v) for k, v in kwargs.items()}
            wants = {s: run(lambda g: torch_cls(g, **tkw), groups, s, steps, snapshots, round_trip_at) for s in seeds}
            for who, impl in [("solution", solution)] + impls.get(name, []):
                cells, ratios = [], []
                for s in seeds:
                    try:
                        got = probes.trajectory(impl, name, groups, kwargs, s, steps, snapshots, round_trip_at)["snapshots"]
                        dev = (got - wants[s]).abs().amax(dim=1)
                        ratio = (dev / tolerances).max().item()
                        cells.append(f"{dev.max().item():9.2e} ({ratio:6.2g})")
                    except Exception as exc:  # noqa: BLE001
                        ratio = float("inf")
                        cells.append(f"{'raised ' + type(exc).__name__:>18s}")
                    ratios.append(ratio)
                if who.startswith(("solution", "variant")):
                    verdict = "passes" if max(ratios) <= 1 else "FAILS"
                else:
                    verdict = "caught" if min(ratios) > 1 else "not caught by this run"
                print(f"  {who:60.60s} " + " ".join(cells) + f"   {verdict}")


if __name__ == "__main__":
    main()
