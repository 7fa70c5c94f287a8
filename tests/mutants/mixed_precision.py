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


# ======== breaking pass 2026-11-22 (written from the handout/docstrings, before reading the tests)

# ---------------------------------------------------------------- mixed_precision_step

@mutant(replaces="mixed_precision_step", why="zero_grad after the step: p.grad is None when the function returns")
def mp_zero_grad_last(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="never clears gradients: they accumulate across steps")
def mp_no_zero_grad(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="zero_grad(set_to_none=False): a parameter unused this step gets a zero grad and AdamW still decays/moves it")
def mp_zero_grad_keep_zeros(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad(set_to_none=False)
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="casts the model to the 16-bit dtype: parameters, grads and state are no longer float32")
def mp_model_cast(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    model.to(dtype)
    optimizer.zero_grad()
    loss = loss_fn(model(x.to(dtype)), y.to(dtype))
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="casts the inputs to the 16-bit dtype before the forward (wrong when x meets an fp32 op first)")
def mp_input_cast(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x.to(dtype)), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="computes the loss outside the autocast block")
def mp_loss_outside(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        out = model(x)
    loss = loss_fn(out.float(), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="hard-codes device_type='cuda': on CPU autocast is disabled and matmuls run fp32")
def mp_cuda_only(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    import warnings
    optimizer.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autocast(device_type="cuda", dtype=dtype):
            loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="ignores the dtype argument: always bfloat16")
def mp_ignores_dtype(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="returns the loss tensor, not a Python float")
def mp_returns_tensor(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


@mutant(replaces="mixed_precision_step", why="clips the gradient norm to 1.0 before the step (a habit from training loops)")
def mp_clips(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="returns the loss recomputed after the update instead of this step's loss")
def mp_loss_after_step(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    with torch.no_grad(), torch.autocast(device_type=x.device.type, dtype=dtype):
        return loss_fn(model(x), y).item()


@mutant(replaces="mixed_precision_step", why="model.float() 'to keep fp32 master weights': recasts parameters of other dtypes")
def mp_model_float(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    model.float()
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="only the model call is under autocast and the loss is taken on the 16-bit output (no fp32 loss)")
def mp_loss_outside_nocast(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        out = model(x)
    loss = loss_fn(out, y.to(out.dtype))
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="mixed_precision_step", why="averages the loss over the batch once more (divides by batch size)")
def mp_divides_batch(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    (loss / x.shape[0]).backward()
    optimizer.step()
    return loss.item()


# ---------------------------------------------------------------- scaled_fp16_step

@mutant(replaces="scaled_fp16_step", why="calls optimizer.step() after scaler.step(): two updates, and a skipped step is not skipped")
def sc_double_step(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    optimizer.step()
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="unscales then calls optimizer.step() directly: steps on inf/nan gradients")
def sc_unscale_then_optimizer_step(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    optimizer.step()
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="forgets scaler.update(): the scale never shrinks or grows")
def sc_no_update(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="returns the scaled loss")
def sc_returns_scaled(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return scaled.item()


@mutant(replaces="scaled_fp16_step", why="backward on the unscaled loss: float16 gradients underflow, and step divides them by S")
def sc_unscaled_backward(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="autocasts to bfloat16 instead of float16")
def sc_bf16(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="never clears gradients: a skipped step's inf gradients poison every later step")
def sc_no_zero_grad(model, optimizer, loss_fn, x, y, scaler):
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="zero_grad at the end: p.grad no longer holds the unscaled gradient on return")
def sc_zero_grad_last(model, optimizer, loss_fn, x, y, scaler):
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="makes its own GradScaler: the caller's scale never changes")
def sc_own_scaler(model, optimizer, loss_fn, x, y, scaler):
    own = torch.amp.GradScaler(x.device.type)
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    own.scale(loss).backward()
    own.step(optimizer)
    own.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="unscales and clips the gradient norm to 1.0 before scaler.step")
def sc_clips(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="returns scaled loss / scale read after update(): wrong whenever the scale changed this step")
def sc_divides_by_new_scale(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
    return scaled.item() / scaler.get_scale()


@mutant(replaces="scaled_fp16_step", why="manual loss scaling that skips on a non-finite loss only and keeps S fixed (no halving, no growth)")
def sc_manual_fixed_scale(model, optimizer, loss_fn, x, y, scaler):
    import math
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    s = scaler.get_scale()
    (loss * s).backward()
    if math.isfinite(loss.item()):
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.div_(s)
        optimizer.step()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="zero_grad(set_to_none=False): an unused parameter gets a zero grad and is decayed/moved")
def sc_zero_grad_keep_zeros(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad(set_to_none=False)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="loss computed outside autocast on the float16 output")
def sc_loss_outside(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        out = model(x)
    loss = loss_fn(out.float(), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


# ---------------------------------------------------------------- bytes

@mutant(replaces="mixed_precision_bytes_per_parameter", why="forgets the fp32 master copy: 2 + 2 + 8")
def bytes_no_master_copy():
    return 2 + 2 + 8


@mutant(replaces="mixed_precision_bytes_per_parameter", why="counts the gradient in fp32: 2 + 4 + 4 + 8")
def bytes_fp32_grad():
    return 2 + 4 + 4 + 8


@mutant(replaces="mixed_precision_bytes_per_parameter", why="returns a float")
def bytes_float():
    return 16.0


@mutant(replaces="mixed_precision_step", why="casts the targets to the autocast dtype too: the loss compares against rounded targets")
def mp_target_cast(model, optimizer, loss_fn, x, y, dtype=torch.bfloat16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y.to(dtype))
    loss.backward()
    optimizer.step()
    return loss.item()


@mutant(replaces="scaled_fp16_step", why="returns early when the loss is not finite, without scaler.step/update: the scale is not halved")
def sc_early_return_nonfinite(model, optimizer, loss_fn, x, y, scaler):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = loss_fn(model(x), y)
    if not torch.isfinite(loss):
        return loss.item()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
