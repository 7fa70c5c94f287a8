"""Correct variants of solutions/training.py: other formulations the handout allows."""

import os

import torch
import torch.nn.functional as F

from grader.mutants import variant


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
