"""Mutants of solutions/mixed_precision.py: each is one bug a student plausibly writes."""

import torch

from grader.mutants import mutant


@mutant(replaces="mixed_precision_step", why="runs the forward outside autocast (plain fp32 training)")
def step_without_autocast(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="casts the model to the 16-bit dtype, then autocasts (16-bit params, grads, state)")
def step_casts_model(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    model.to(dtype)
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="autocast around the model only; the loss is computed outside it")
def step_loss_outside_autocast(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        out = model(x)
    loss = loss_fn(out, y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="hard-codes autocast('cuda'): on a CPU tensor autocast is disabled")
def step_cuda_autocast_only(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda", dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="ignores the dtype argument (always bfloat16)")
def step_ignores_dtype(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="never zeroes the gradients: they accumulate across steps")
def step_no_zero_grad(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="zeroes the gradients after the step (p.grad is None when it returns)")
def step_zero_grad_after(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="returns the loss tensor instead of a Python float")
def step_returns_tensor(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@mutant(replaces="scaled_fp16_step", why="backward on the unscaled loss: float16 gradients underflow to zero")
def scaled_backward_unscaled(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="scales the loss but calls optimizer.step() directly (scaled gradients, no skip)")
def scaled_optimizer_step(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="unscales, then optimizer.step() itself: right gradients, but an inf step is not skipped")
def scaled_unscale_then_step(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    optimizer.step()
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="forgets scaler.update(): the scale never drops after an overflow")
def scaled_no_update(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="autocasts to bfloat16 in the scaled float16 step")
def scaled_bf16(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="returns the scaled loss")
def scaled_returns_scaled_loss(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return scaled.item()


@mutant(replaces="mixed_precision_bytes_per_parameter", why="forgets the fp32 master copy of the parameters (2+2+8)")
def bytes_no_master():
    return 2 + 2 + 8


@mutant(replaces="mixed_precision_bytes_per_parameter", why="assumes 16-bit training halves fp32 AdamW's 16 bytes")
def bytes_halved():
    return 8
