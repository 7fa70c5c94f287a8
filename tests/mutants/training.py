"""Mutants of solutions/training.py: each is one bug a student plausibly writes."""

import os

import torch
import torch.nn.functional as F

from grader.mutants import mutant


@mutant(replaces="train", why="never clears the gradients: every step adds to the last one's")
def train_no_zero_grad(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                       mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="zero_grad() without set_to_none: the gradient tensors stay allocated between steps")
def train_zero_fill(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                    mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        if mixed_precision:
            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            optimizer.zero_grad(set_to_none=False)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        losses.append(float(loss))
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="clears the gradients between backward and step: the optimizer never moves")
def train_zero_grad_late(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                         mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.zero_grad(set_to_none=True)
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="draws a fresh batch for the loss after drawing one for logging: two get_batch calls per step")
def train_two_batches(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                      mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        get_batch()
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="loads the checkpoint but starts counting from 0 again: the resumed run is too long")
def train_resume_from_zero(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                           mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    if checkpoint_path and os.path.exists(checkpoint_path):
        load_checkpoint(checkpoint_path, model, optimizer)
    losses = []
    for step in range(num_steps):
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="saves the index of the step just done as the iteration: the resumed run repeats a step")
def train_saves_step_index(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                           mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step, checkpoint_path)
    return losses


@mutant(replaces="train", why="checkpoints when step % every == 0 (before the step's update is counted)")
def train_checkpoint_off_by_one(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                                mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and step % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="checkpoints with torch.save of the model alone: the optimizer state and generators are lost")
def train_saves_model_only(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                           mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = 0
    if checkpoint_path and os.path.exists(checkpoint_path):
        saved = torch.load(checkpoint_path, weights_only=True)
        model.load_state_dict(saved["model"])
        start = saved["iteration"]
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            torch.save({"model": model.state_dict(), "iteration": step + 1}, checkpoint_path)
    return losses


@mutant(replaces="train", why="sums the squared errors instead of averaging them")
def train_sum_loss(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                   mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device), reduction="sum")
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="ignores mixed_precision: every step runs in float32")
def train_ignores_mixed_precision(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                                  mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="records the loss of the batch after the update (a second forward pass)")
def train_loss_after_step(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                          mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("bad arguments")
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad(set_to_none=True)
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            losses.append(F.mse_loss(model(x), y).item())
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="no argument checks: a negative number of steps silently trains nothing")
def train_no_checks(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                    mixed_precision=False, device="cpu"):
    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        if mixed_precision:
            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        losses.append(float(loss))
        if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="step_flops", why="counts the full 4·B·P backward: autograd skips the input gradient of the first layer")
def step_flops_full_backward(batch, dim, num_layers):
    params = cruncher_num_parameters(dim, num_layers)
    return {"forward": 2 * batch * params, "backward": 4 * batch * params, "total": 6 * batch * params,
            "six_bp": 6 * batch * params}


@mutant(replaces="step_flops", why="subtracts a dim x dim first layer even when there are no square layers")
def step_flops_square_first(batch, dim, num_layers):
    params = cruncher_num_parameters(dim, num_layers)
    forward, backward = 2 * batch * params, 4 * batch * params - 2 * batch * dim * dim
    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 6 * batch * params}


@mutant(replaces="step_flops", why="one FLOP per weight per example in the forward pass (forgets the add)")
def step_flops_no_factor_two(batch, dim, num_layers):
    params = cruncher_num_parameters(dim, num_layers)
    first = dim * dim if num_layers > 0 else dim
    forward, backward = batch * params, 2 * batch * params - batch * first
    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 3 * batch * params}


@mutant(replaces="step_flops", why="P counts only the square layers (forgets final)")
def step_flops_no_final(batch, dim, num_layers):
    params = num_layers * dim * dim
    first = dim * dim if num_layers > 0 else dim
    forward, backward = 2 * batch * params, 4 * batch * params - 2 * batch * first
    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 6 * batch * params}


@mutant(replaces="weight_bytes", why="assumes 4 bytes per value whatever the dtype")
def weight_bytes_always_fp32(rows, cols, dtype):
    return rows * cols * 4


@mutant(replaces="flops_delivered", why="counts minutes, not seconds, in a day")
def flops_delivered_minutes(num_gpus, days, flop_per_sec, mfu=1.0):
    return float(num_gpus * flop_per_sec * mfu * days * 24 * 60)


@mutant(replaces="flops_delivered", why="ignores the MFU")
def flops_delivered_no_mfu(num_gpus, days, flop_per_sec, mfu=1.0):
    return float(num_gpus * flop_per_sec * days * 24 * 60 * 60)


@mutant(replaces="elementwise_flops", why="ignores ops_per_element")
def elementwise_flops_one_op(rows, cols, ops_per_element=1):
    return rows * cols
