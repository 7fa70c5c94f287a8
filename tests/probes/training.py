"""Probes for the `training` module.

The loop is tested with pieces the trusted side knows (`tests/probes/_training_parts.py`): the
lecture's deep linear model written with torch ops (Cruncher's state-dict keys), loaded with
initial weights the trusted side chose, torch.optim's SGD/AdamW, and stand-ins for the
student's save_checkpoint, load_checkpoint and mixed_precision_step that record how `train`
called them.  So a bug in another module (or an accepted variant there) costs points in that
module only.  The batches come from `_synthetic_batches`: x drawn from torch's global generator,
y = x @ w_true.  The probes return what the code produced (losses, final weights, the calls
recorded, observations made by hooks), never whether it is right.  The GPU probes (memory,
MFU) still train the student's own Cruncher with the student's own optimizers: their point is
the lecture's accounting of those pieces.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import torch

from tests.probes._training_parts import kit_model, kit_optimizer, stand_ins


class _Killed(Exception):
    """Raised by the batch source to interrupt a run (a preempted job)."""


def _synthetic_batches(w_true: torch.Tensor, batch: int, kill_at: int | None = None,
                       device: str = "cpu"):
    calls = {"n": 0}

    def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
        if kill_at is not None and calls["n"] == kill_at:
            raise _Killed(f"killed before step {kill_at}")
        calls["n"] += 1
        x = torch.randn(batch, w_true.shape[0])
        return x, x @ w_true

    return get_batch, calls


def _model(impl, init: dict[str, torch.Tensor], dim: int, num_layers: int, device: str = "cpu"):
    model = impl.cruncher.Cruncher(dim, num_layers)
    model.load_state_dict({k: v.clone() for k, v in init.items()})
    return model.to(device)


def _optimizer(impl, model, name: str, lr: float):
    cls = {"sgd": impl.optimizers.SGD, "adamw": impl.optimizers.AdamW}[name]
    return cls(model.parameters(), lr=lr)


def _state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}


def run(impl, init, w_true, dim, num_layers, batch, steps, optimizer="sgd", lr=0.01, seed=0,
        mixed_precision=None, device=None, stale_grads=False, checkpoint_every=0):
    """Train once without interruption: the losses, the final weights, whether every gradient
    was None when each forward pass began (zero_grad(set_to_none=True)), and the calls made to
    the stand-ins (`steps` calls of mixed_precision_step when `mixed_precision`).
    `mixed_precision` and `device` of None are not passed (train's defaults: False, "cpu").
    `stale_grads`: the model arrives holding gradients of an earlier backward pass (drawn from
    a private generator), which the first step must not add to its own.  `checkpoint_every`: passed
    on, with no checkpoint path (nothing may be saved)."""
    model = kit_model(init, dim, num_layers, device or "cpu")
    opt = kit_optimizer(model, optimizer, lr)
    if stale_grads:
        g = torch.Generator().manual_seed(12345)
        xs = torch.randn(3, dim, generator=g).to(device or "cpu")
        model(xs).pow(2).sum().backward()
    grads_none: list[bool] = []
    model.register_forward_pre_hook(lambda m, args: grads_none.append(all(p.grad is None for p in m.parameters())))
    torch.manual_seed(seed)
    get_batch, calls = _synthetic_batches(w_true, batch)
    with stand_ins(impl) as seen:
        given = {"mixed_precision": mixed_precision, "device": device, "checkpoint_every": checkpoint_every or None}
        losses = impl.training.train(model, opt, get_batch, steps, **{k: v for k, v in given.items() if v is not None})
    return {"losses": losses, "state": _state(model), "grads_none": grads_none, "batches": calls["n"],
            "calls": seen.log}


def resume(impl, init, other_init, w_true, dim, num_layers, batch, steps, every, kill_at, optimizer="adamw",
           lr=0.01, seed=0, other_seed=7919, path_kind="str", rerun=False, resume_every=None, mixed_precision=False,
           rerun_every=0):
    """Uninterrupted run; then a run killed before step `kill_at` and resumed by a fresh model and
    optimizer (other weights, other generator state) from the last checkpoint.  Returns both
    loss histories, both final weights, and the steps the resumed call ran.  `rerun`: then
    once more with the same path and checkpoint_every=`rerun_every` (0; None: not given, train's
    default), so resume, never save: its losses and whether the checkpoint file's bytes stayed the
    same.  `resume_every`: the resumed call's
    checkpoint_every, if not `every` (the cadence counts the steps done, not this call's steps).
    `mixed_precision`: every train call with it (the checkpoints must follow the same cadence)."""
    folder = tempfile.mkdtemp()
    seen = None
    try:
        with stand_ins(impl) as seen:
            return _resume(impl, folder, init, other_init, w_true, dim, num_layers, batch, steps, every, kill_at,
                           optimizer, lr, seed, other_seed, path_kind, rerun, resume_every, seen,
                           {"mixed_precision": True} if mixed_precision else {}, rerun_every)
    except Exception:
        if seen is not None and seen.problems:  # the loop used the checkpoint functions wrongly: say how
            return {"problems": seen.problems, "calls": seen.log}
        raise
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def _resume(impl, folder, init, other_init, w_true, dim, num_layers, batch, steps, every, kill_at, optimizer, lr,
            seed, other_seed, path_kind, rerun, resume_every, seen, mp, rerun_every):
    import pathlib

    model = kit_model(init, dim, num_layers)
    opt = kit_optimizer(model, optimizer, lr)
    torch.manual_seed(seed)
    get_batch, _ = _synthetic_batches(w_true, batch)
    full = impl.training.train(model, opt, get_batch, steps, **mp)
    full_state = _state(model)
    uninterrupted_calls = list(seen.log)

    path: Any = os.path.join(folder, "run.pt")
    if path_kind == "path":
        path = pathlib.Path(path)
    model = kit_model(init, dim, num_layers)
    opt = kit_optimizer(model, optimizer, lr)
    torch.manual_seed(seed)
    get_batch, _ = _synthetic_batches(w_true, batch, kill_at=kill_at)
    killed = None
    try:
        impl.training.train(model, opt, get_batch, steps, checkpoint_path=path, checkpoint_every=every, **mp)
    except _Killed as exc:
        killed = str(exc)
    killed_calls = seen.log[len(uninterrupted_calls):]
    torch.manual_seed(other_seed)  # the new process: other generator state, other weights
    model = kit_model(other_init, dim, num_layers)
    opt = kit_optimizer(model, optimizer, lr)
    get_batch, calls = _synthetic_batches(w_true, batch)
    resumed = impl.training.train(model, opt, get_batch, steps, checkpoint_path=path,
                                  checkpoint_every=every if resume_every is None else resume_every, **mp)
    out = {"full": full, "full_state": full_state, "killed": killed, "resumed": resumed,
           "resumed_state": _state(model), "resumed_batches": calls["n"],
           "files": sorted(os.listdir(folder)), "calls": {"uninterrupted": uninterrupted_calls,
                                                          "killed": killed_calls,
                                                          "resumed": seen.log[len(uninterrupted_calls) + len(killed_calls):]}}
    if rerun:
        with open(path, "rb") as f:
            before = f.read()
        torch.manual_seed(other_seed + 1)
        model = kit_model(other_init, dim, num_layers)
        opt = kit_optimizer(model, optimizer, lr)
        get_batch, calls = _synthetic_batches(w_true, batch)
        every_given = {} if rerun_every is None else {"checkpoint_every": rerun_every}
        out["rerun"] = impl.training.train(model, opt, get_batch, steps, checkpoint_path=path, **every_given, **mp)
        with open(path, "rb") as f:
            out["rerun_checkpoint_unchanged"] = f.read() == before
    return out


def step_flops(impl, cases):
    with stand_ins(impl):  # (its cruncher_num_parameters a stand-in: cruncher's own tests judge the student's)
        return [impl.training.step_flops(*case) for case in cases]


def napkin(impl, weights, deliveries, elementwise):
    """weight_bytes for (rows, cols, dtype-name) cases, flops_delivered and elementwise_flops cases."""
    from tests.probes._tensors import dtype_of

    return {"weight_bytes": [impl.training.weight_bytes(r, c, dtype_of(d)) for r, c, d in weights],
            "flops_delivered": [impl.training.flops_delivered(*case) for case in deliveries],
            "elementwise_flops": [impl.training.elementwise_flops(*case) for case in elementwise]}


def bad_steps(impl, num_steps, checkpoint_every):
    model = kit_model({"layers.0.weight": torch.eye(4), "final.weight": torch.ones(4, 1)}, 4, 1)
    opt = kit_optimizer(model, "sgd", 0.1)
    get_batch, _ = _synthetic_batches(torch.ones(4), 2)
    with stand_ins(impl):
        return impl.training.train(model, opt, get_batch, num_steps, checkpoint_every=checkpoint_every)


def _warm_up_cublas() -> None:
    """cuBLAS takes its workspaces from torch's allocator on a process's first matmuls (forward and
    backward; tens of MiB on an H100): where no GPU test ran before in this process, they would
    count as the training's memory.  Taken here, before the baseline."""
    x = torch.ones(64, 64, device="cuda", requires_grad=True)
    (x @ x).sum().backward()
    with torch.no_grad():
        torch.addmm(x, x, x)


def cuda_memory(impl, init, w_true, dim, num_layers, batch, steps, lr=1e-3):
    """Peak CUDA memory allocated while building and training the model with the student's AdamW."""
    _warm_up_cublas()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    model = _model(impl, init, dim, num_layers, "cuda")
    opt = _optimizer(impl, model, "adamw", lr)
    torch.manual_seed(0)
    get_batch, _ = _synthetic_batches(w_true, batch)
    impl.training.train(model, opt, get_batch, steps, device="cuda")
    torch.cuda.synchronize()
    return {"base": base, "peak": torch.cuda.max_memory_allocated()}


def mfu(impl, init, w_true, dim, num_layers, batch, steps=None):
    """step_mfu on the GPU; `steps` None: neither num_steps nor device given (the defaults, 10 and "cuda")."""
    model = _model(impl, init, dim, num_layers, "cuda")
    opt = _optimizer(impl, model, "sgd", 1e-4)
    torch.manual_seed(0)
    get_batch, calls = _synthetic_batches(w_true, batch)
    given = () if steps is None else (steps, "cuda")
    report = impl.training.step_mfu(model, opt, get_batch, batch, dim, num_layers, *given)
    return {"report": report, "device_name": torch.cuda.get_device_name(), "batches": calls["n"]}
