"""Correct but different formulations of solutions/mixed_precision.py: every graded test must pass them."""

import torch

from grader.authoring.mutants import variant

@variant(replaces="mixed_precision_step", why="model.zero_grad(), torch.amp.autocast positional args, float(loss)")
def mp_variant_model_zero_grad(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    model.zero_grad()
    with torch.amp.autocast(x.device.type, dtype):
        out = model(x)
        loss = loss_fn(out, y)
    loss.backward()
    optimizer.step()
    return float(loss)


@variant(replaces="mixed_precision_step", why="sets p.grad = None by hand; autocast device from str(x.device)")
def mp_variant_manual_none(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None
    with torch.autocast(str(x.device).split(":")[0], dtype=dtype, cache_enabled=False):
        loss = loss_fn(model(x), y)
    value = loss.detach().item()
    loss.backward()
    optimizer.step()
    return value


@variant(replaces="mixed_precision_step", why="zero_grad(set_to_none=True) explicitly, backward via torch.autograd.backward")
def mp_variant_autograd(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=dtype, enabled=True):
        loss = loss_fn(model(x), y)
    torch.autograd.backward(loss)
    optimizer.step()
    return loss.item()


@variant(replaces="scaled_fp16_step", why="explicit scaler.unscale_ before scaler.step; torch.half")
def sc_variant_unscale_first(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.half):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach())


@variant(replaces="scaled_fp16_step", why="model.zero_grad(); keeps the loss value before backward")
def sc_variant_model_zero_grad(model, optimizer, loss_fn, x, y, scaler):
    model.zero_grad(set_to_none=True)
    with torch.amp.autocast(device_type=x.device.type, dtype=torch.float16):
        out = model(x)
        loss = loss_fn(out, y)
    value = loss.item()
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return value


@variant(replaces="mixed_precision_bytes_per_parameter", why="named constants, sum of a list")
def bytes_variant():
    parts = [2, 2, 4, 4, 4]
    return int(sum(parts))


@variant(replaces="mixed_precision_step", why="zero_grad after the forward, just before backward (same gradients)")
def mp_variant_zero_grad_late(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        out = model(x)
        loss = loss_fn(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@variant(replaces="scaled_fp16_step", why="returns scaled loss / the scale read before update() (exact: S is a power of 2)")
def sc_variant_divide_old_scale(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    s = scaler.get_scale()
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return scaled.item() / s
