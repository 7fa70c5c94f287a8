"""Correct variants of solutions/training.py: other formulations the handout allows."""

import os

import torch
import torch.nn.functional as F

from grader.authoring.mutants import variant


@variant(replaces="train", why="zero_grad() with torch's default (set_to_none=True), loss via detach().item(), "
                              "resume checked with os.path.isfile")
def train_while_loop(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                  mixed_precision=False, device="cpu"):
    if num_steps < 0:
        raise ValueError("num_steps must be >= 0")
    if checkpoint_every < 0:
        raise ValueError("checkpoint_every must be >= 0")
    step = 0
    if checkpoint_path is not None and os.path.isfile(checkpoint_path):
        step = load_checkpoint(checkpoint_path, model, optimizer)
    history = []
    while step < num_steps:
        x, y = (t.to(device) for t in get_batch())
        if mixed_precision:
            history.append(float(mixed_precision_step(model, optimizer, F.mse_loss, x, y)))
        else:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            history.append(loss.detach().item())
        step += 1
        if checkpoint_path is not None and checkpoint_every and step % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step, checkpoint_path)
    return history


@variant(replaces="step_flops", why="sums 2·B·d_in·d_out per layer and skips the first layer's input gradient")
def step_flops_per_layer(batch, dim, num_layers):
    shapes = [(dim, dim)] * num_layers + [(dim, 1)]
    forward = sum(2 * batch * i * o for i, o in shapes)
    backward = sum(4 * batch * i * o for i, o in shapes) - 2 * batch * shapes[0][0] * shapes[0][1]
    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 3 * forward}


@variant(replaces="weight_bytes", why="element size from an empty tensor")
def weight_bytes_element_size(rows, cols, dtype):
    return rows * cols * torch.empty((), dtype=dtype).element_size()


@variant(replaces="flops_delivered", why="seconds as 86400 per day, multiplied in another order")
def flops_delivered_reordered(num_gpus, days, flop_per_sec, mfu=1.0):
    return days * 86400.0 * flop_per_sec * num_gpus * mfu


# ---- independent breaking pass (BREAK_NEW.md, 2026-11-22): variants ----


@variant(replaces="train", why="bk: while-loop, pathlib is_file, set grads to None by hand, float(loss), non_blocking copies")
def train_bk_while_loop(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0, mixed_precision=False, device="cpu"):
    import pathlib
    if num_steps < 0:
        raise ValueError("num_steps must be >= 0")
    if checkpoint_every < 0:
        raise ValueError("checkpoint_every must be >= 0")
    step = 0
    if checkpoint_path is not None and pathlib.Path(checkpoint_path).is_file():
        step = load_checkpoint(checkpoint_path, model, optimizer)
    out = []
    while step < num_steps:
        batch = get_batch()
        x = batch[0].to(device, non_blocking=True)
        y = batch[1].to(device, non_blocking=True)
        if mixed_precision:
            value = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            value = loss
        out.append(float(value))
        step += 1
        if checkpoint_path is not None and checkpoint_every and step % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step, checkpoint_path)
    return out


@variant(replaces="train", why="bk: mixed precision inlined exactly as mixed_precision_step does it (autocast on x's device, bf16)")
def train_bk_inline_autocast(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0, mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("negative")
    device = torch.device(device)
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.isfile(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = (t.to(device) for t in get_batch())
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=mixed_precision):
            loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@variant(replaces="step_flops", why="bk: sums per layer: 2·B·din·dout forward, 4·B·din·dout backward except 2·B·din·dout for the first")
def step_flops_bk_per_layer(batch, dim, num_layers):
    shapes = [(dim, dim)] * num_layers + [(dim, 1)]
    forward = sum(2 * batch * i * o for i, o in shapes)
    backward = sum((2 if k == 0 else 4) * batch * i * o for k, (i, o) in enumerate(shapes))
    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 3 * forward}


@variant(replaces="weight_bytes", why="bk: element_size of an empty tensor of that dtype")
def weight_bytes_bk_element_size(rows, cols, dtype):
    return int(torch.empty((), dtype=dtype).element_size()) * rows * cols


@variant(replaces="flops_delivered", why="bk: seconds first, another float multiplication order (differs in the last bits)")
def flops_delivered_bk_order(num_gpus, days, flop_per_sec, mfu=1.0):
    seconds = days * 86400.0
    return seconds * mfu * flop_per_sec * num_gpus


@variant(replaces="elementwise_flops", why="bk: counts through a product of the shape")
def elementwise_flops_bk_prod(rows, cols, ops_per_element=1):
    import math
    return int(math.prod((rows, cols, ops_per_element)))


# Breaking pass 3 (session 5).

@variant(replaces="step_flops", why="closed forms: backward = 2*forward - 2*B*first, six_bp = 3*forward")
def bk5_step_flops_closed(batch, dim, num_layers):
    forward = 2 * batch * (num_layers * dim * dim + dim)
    first = dim * (dim if num_layers else 1)
    backward = 2 * forward - 2 * batch * first
    return dict(forward=forward, backward=backward, total=forward + backward, six_bp=3 * forward)
