"""Mutants of solutions/mixed_precision.py: each is one bug a student plausibly writes."""

import torch

from grader.authoring.mutants import edit, mutant


edit("step_without_autocast", within="mixed_precision_step",
     why="runs the forward outside autocast (plain fp32 training)",
     old=("with torch.autocast(device_type=x.device.type, dtype=dtype):\n"
          "        loss = loss_fn(model(x), y)"),
     new="loss = loss_fn(model(x), y)")


edit("step_casts_model", within="mixed_precision_step",
     why="casts the model to the 16-bit dtype, then autocasts (16-bit params, grads, state)",
     old="    optimizer.zero_grad()",
     new=("    model.to(dtype)\n"
          "    optimizer.zero_grad()"))


edit("step_loss_outside_autocast", within="mixed_precision_step",
     why="autocast around the model only; the loss is computed outside it",
     old="loss = loss_fn(model(x), y)",
     new=("out = model(x)\n"
          "    loss = loss_fn(out, y)"))


edit("step_cuda_autocast_only", within="mixed_precision_step",
     why="hard-codes autocast('cuda'): on a CPU tensor autocast is disabled",
     old="with torch.autocast(device_type=x.device.type, dtype=dtype):",
     new='with torch.autocast(device_type="cuda", dtype=dtype):')


edit("step_ignores_dtype", within="mixed_precision_step",
     why="ignores the dtype argument (always bfloat16)",
     old="with torch.autocast(device_type=x.device.type, dtype=dtype):",
     new="with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):")


edit("step_no_zero_grad", within="mixed_precision_step",
     why="never zeroes the gradients: they accumulate across steps",
     old="    optimizer.zero_grad()\n",
     new="")


edit("step_zero_grad_after", within="mixed_precision_step",
     why="zeroes the gradients after the step (p.grad is None when it returns)",
     edits=[("    optimizer.zero_grad()\n", ""),
           ("optimizer.step()",
            ("optimizer.step()\n"
            "    optimizer.zero_grad()"))])


edit("step_returns_tensor", within="mixed_precision_step",
     why="returns the loss tensor instead of a Python float",
     old="return loss.item()",
     new="return loss.detach()")


edit("scaled_backward_unscaled", within="scaled_fp16_step",
     why="backward on the unscaled loss: float16 gradients underflow to zero",
     old="scaler.scale(loss).backward()",
     new="loss.backward()")


edit("scaled_optimizer_step", within="scaled_fp16_step",
     why="scales the loss but calls optimizer.step() directly (scaled gradients, no skip)",
     old=("scaler.step(optimizer)\n"
          "    scaler.update()"),
     new="optimizer.step()")


edit("scaled_unscale_then_step", within="scaled_fp16_step",
     why="unscales, then optimizer.step() itself: right gradients, but an inf step is not skipped",
     old="scaler.step(optimizer)",
     new=("scaler.unscale_(optimizer)\n"
          "    optimizer.step()"))


edit("scaled_no_update", within="scaled_fp16_step",
     why="forgets scaler.update(): the scale never drops after an overflow",
     old="    scaler.update()\n",
     new="")


edit("scaled_bf16", within="scaled_fp16_step",
     why="autocasts to bfloat16 in the scaled float16 step",
     old="with torch.autocast(device_type=x.device.type, dtype=torch.float16):",
     new="with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):")


edit("scaled_returns_scaled_loss", within="scaled_fp16_step",
     why="returns the scaled loss",
     edits=[("scaler.scale(loss).backward()",
            ("scaled = scaler.scale(loss)\n"
            "    scaled.backward()")),
           ("return loss.item()", "return scaled.item()")])


edit("bytes_no_master", within="mixed_precision_bytes_per_parameter",
     why="forgets the fp32 master copy of the parameters (2+2+8)",
     old=("bf16, fp32 = 2, 4\n"
          "    return bf16 + bf16 + fp32 + 2 * fp32"),
     new="return 2 + 2 + 8")


edit("bytes_halved", within="mixed_precision_bytes_per_parameter",
     why="assumes 16-bit training halves fp32 AdamW's 16 bytes",
     old=("bf16, fp32 = 2, 4\n"
          "    return bf16 + bf16 + fp32 + 2 * fp32"),
     new="return 8")


# ======== breaking pass 2026-11-22 (written from the handout/docstrings, before reading the tests)

# ---------------------------------------------------------------- mixed_precision_step

edit("mp_zero_grad_last", within="mixed_precision_step",
     why="zero_grad after the step: p.grad is None when the function returns",
     edits=[("    optimizer.zero_grad()\n", ""),
           ("optimizer.step()",
            ("optimizer.step()\n"
            "    optimizer.zero_grad()"))])


edit("mp_no_zero_grad", within="mixed_precision_step",
     why="never clears gradients: they accumulate across steps",
     old="    optimizer.zero_grad()\n",
     new="")


edit("mp_zero_grad_keep_zeros", within="mixed_precision_step",
     why="zero_grad(set_to_none=False): a parameter unused this step gets a zero grad and AdamW still "
         "decays/moves it",
     old="optimizer.zero_grad()",
     new="optimizer.zero_grad(set_to_none=False)")


edit("mp_model_cast", within="mixed_precision_step",
     why="casts the model to the 16-bit dtype: parameters, grads and state are no longer float32",
     edits=[("    optimizer.zero_grad()",
            ("    model.to(dtype)\n"
            "    optimizer.zero_grad()")),
           (("with torch.autocast(device_type=x.device.type, dtype=dtype):\n"
            "        loss = loss_fn(model(x), y)"),
            "loss = loss_fn(model(x.to(dtype)), y.to(dtype))")])


edit("mp_input_cast", within="mixed_precision_step",
     why="casts the inputs to the 16-bit dtype before the forward (wrong when x meets an fp32 op first)",
     old="loss = loss_fn(model(x), y)",
     new="loss = loss_fn(model(x.to(dtype)), y)")


edit("mp_loss_outside", within="mixed_precision_step",
     why="computes the loss outside the autocast block",
     old="loss = loss_fn(model(x), y)",
     new=("out = model(x)\n"
          "    loss = loss_fn(out.float(), y)"))


edit("mp_cuda_only", within="mixed_precision_step",
     why="hard-codes device_type='cuda': on CPU autocast is disabled and matmuls run fp32",
     edits=[("    optimizer.zero_grad()",
            ("    import warnings\n"
            "    optimizer.zero_grad()")),
           (("with torch.autocast(device_type=x.device.type, dtype=dtype):\n"
            "        loss = loss_fn(model(x), y)"),
            ("with warnings.catch_warnings():\n"
            '        warnings.simplefilter("ignore")\n'
            '        with torch.autocast(device_type="cuda", dtype=dtype):\n'
            "            loss = loss_fn(model(x), y)"))])


edit("mp_ignores_dtype", within="mixed_precision_step",
     why="ignores the dtype argument: always bfloat16",
     old="with torch.autocast(device_type=x.device.type, dtype=dtype):",
     new="with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):")


edit("mp_returns_tensor", within="mixed_precision_step",
     why="returns the loss tensor, not a Python float",
     old="return loss.item()",
     new="return loss.detach()")


edit("mp_clips", within="mixed_precision_step",
     why="clips the gradient norm to 1.0 before the step (a habit from training loops)",
     old="loss.backward()",
     new=("loss.backward()\n"
          "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"))


edit("mp_loss_after_step", within="mixed_precision_step",
     why="returns the loss recomputed after the update instead of this step's loss",
     old="return loss.item()",
     new=("with torch.no_grad(), torch.autocast(device_type=x.device.type, dtype=dtype):\n"
          "        return loss_fn(model(x), y).item()"))


edit("mp_model_float", within="mixed_precision_step",
     why="model.float() 'to keep fp32 master weights': recasts parameters of other dtypes",
     old="    optimizer.zero_grad()",
     new=("    model.float()\n"
          "    optimizer.zero_grad()"))


edit("mp_loss_outside_nocast", within="mixed_precision_step",
     why="only the model call is under autocast and the loss is taken on the 16-bit output (no fp32 loss)",
     old="loss = loss_fn(model(x), y)",
     new=("out = model(x)\n"
          "    loss = loss_fn(out, y.to(out.dtype))"))


edit("mp_divides_batch", within="mixed_precision_step",
     why="averages the loss over the batch once more (divides by batch size)",
     old="loss.backward()",
     new="(loss / x.shape[0]).backward()")


# ---------------------------------------------------------------- scaled_fp16_step

edit("sc_double_step", within="scaled_fp16_step",
     why="calls optimizer.step() after scaler.step(): two updates, and a skipped step is not skipped",
     old="scaler.step(optimizer)",
     new=("scaler.step(optimizer)\n"
          "    optimizer.step()"))


edit("sc_unscale_then_optimizer_step", within="scaled_fp16_step",
     why="unscales then calls optimizer.step() directly: steps on inf/nan gradients",
     old="scaler.step(optimizer)",
     new=("scaler.unscale_(optimizer)\n"
          "    optimizer.step()"))


edit("sc_no_update", within="scaled_fp16_step",
     why="forgets scaler.update(): the scale never shrinks or grows",
     old="    scaler.update()\n",
     new="")


edit("sc_returns_scaled", within="scaled_fp16_step",
     why="returns the scaled loss",
     edits=[("scaler.scale(loss).backward()",
            ("scaled = scaler.scale(loss)\n"
            "    scaled.backward()")),
           ("return loss.item()", "return scaled.item()")])


edit("sc_unscaled_backward", within="scaled_fp16_step",
     why="backward on the unscaled loss: float16 gradients underflow, and step divides them by S",
     old="scaler.scale(loss).backward()",
     new="loss.backward()")


edit("sc_bf16", within="scaled_fp16_step",
     why="autocasts to bfloat16 instead of float16",
     old="with torch.autocast(device_type=x.device.type, dtype=torch.float16):",
     new="with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):")


edit("sc_no_zero_grad", within="scaled_fp16_step",
     why="never clears gradients: a skipped step's inf gradients poison every later step",
     old="    optimizer.zero_grad()\n",
     new="")


edit("sc_zero_grad_last", within="scaled_fp16_step",
     why="zero_grad at the end: p.grad no longer holds the unscaled gradient on return",
     edits=[("    optimizer.zero_grad()\n", ""),
           ("scaler.update()",
            ("scaler.update()\n"
            "    optimizer.zero_grad()"))])


edit("sc_own_scaler", within="scaled_fp16_step",
     why="makes its own GradScaler: the caller's scale never changes",
     old="optimizer.zero_grad()",
     new=("scaler = torch.amp.GradScaler(x.device.type)\n"
          "    optimizer.zero_grad()"))


edit("sc_clips", within="scaled_fp16_step",
     why="unscales and clips the gradient norm to 1.0 before scaler.step",
     old="scaler.scale(loss).backward()",
     new=("scaler.scale(loss).backward()\n"
          "    scaler.unscale_(optimizer)\n"
          "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"))


edit("sc_divides_by_new_scale", within="scaled_fp16_step",
     why="returns scaled loss / scale read after update(): wrong whenever the scale changed this step",
     edits=[("scaler.scale(loss).backward()",
            ("scaled = scaler.scale(loss)\n"
            "    scaled.backward()")),
           ("return loss.item()", "return scaled.item() / scaler.get_scale()")])


edit("sc_manual_fixed_scale", within="scaled_fp16_step",
     why="manual loss scaling that skips on a non-finite loss only and keeps S fixed (no halving, no growth)",
     old=("scaler.scale(loss).backward()\n"
          "    scaler.step(optimizer)\n"
          "    scaler.update()"),
     new=("import math\n"
          "\n"
          "    s = scaler.get_scale()\n"
          "    (loss * s).backward()\n"
          "    if math.isfinite(loss.item()):\n"
          "        for group in optimizer.param_groups:\n"
          '            for p in group["params"]:\n'
          "                if p.grad is not None:\n"
          "                    p.grad.div_(s)\n"
          "        optimizer.step()"))


edit("sc_zero_grad_keep_zeros", within="scaled_fp16_step",
     why="zero_grad(set_to_none=False): an unused parameter gets a zero grad and is decayed/moved",
     old="optimizer.zero_grad()",
     new="optimizer.zero_grad(set_to_none=False)")


edit("sc_loss_outside", within="scaled_fp16_step",
     why="loss computed outside autocast on the float16 output",
     old="loss = loss_fn(model(x), y)",
     new=("out = model(x)\n"
          "    loss = loss_fn(out.float(), y)"))


# ---------------------------------------------------------------- bytes

edit("bytes_no_master_copy", within="mixed_precision_bytes_per_parameter",
     why="forgets the fp32 master copy: 2 + 2 + 8",
     old=("bf16, fp32 = 2, 4\n"
          "    return bf16 + bf16 + fp32 + 2 * fp32"),
     new="return 2 + 2 + 8")


edit("bytes_fp32_grad", within="mixed_precision_bytes_per_parameter",
     why="counts the gradient in fp32: 2 + 4 + 4 + 8",
     old=("bf16, fp32 = 2, 4\n"
          "    return bf16 + bf16 + fp32 + 2 * fp32"),
     new="return 2 + 4 + 4 + 8")


edit("bytes_float", within="mixed_precision_bytes_per_parameter",
     why="returns a float",
     old=("bf16, fp32 = 2, 4\n"
          "    return bf16 + bf16 + fp32 + 2 * fp32"),
     new="return 16.0")


edit("mp_target_cast", within="mixed_precision_step",
     why="casts the targets to the autocast dtype too: the loss compares against rounded targets",
     old="loss = loss_fn(model(x), y)",
     new="loss = loss_fn(model(x), y.to(dtype))")


edit("sc_early_return_nonfinite", within="scaled_fp16_step",
     why="returns early when the loss is not finite, without scaler.step/update: the scale is not halved",
     old="loss = loss_fn(model(x), y)",
     new=("loss = loss_fn(model(x), y)\n"
          "    if not torch.isfinite(loss):\n"
          "        return loss.item()"))


# -- every default and every case the docstrings name (issue 30) --------------------------------------

@mutant(replaces="mixed_precision_step", why="i30: dtype defaults to float16, not bfloat16", against="68f67ab6c37a")
def i30_mp_default_float16(model, optimizer, loss_fn, x, y, dtype=torch.float16):
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


edit("i30_mp_eval_mode", within="mixed_precision_step",
     why="i30: switches the model to eval mode: no dropout in the training step, and eval mode after it",
     old="    optimizer.zero_grad()\n", new="    model.eval()\n    optimizer.zero_grad()\n")
edit("i30_mp_train_mode", within="mixed_precision_step",
     why="i30: switches the model to training mode: a caller's eval-mode model gets dropout and stays in training mode",
     old="    optimizer.zero_grad()\n", new="    model.train()\n    optimizer.zero_grad()\n")
edit("i30_mp_autocast_left_on", within="mixed_precision_step",
     why="i30: enters autocast without a with block and never leaves it: autocast stays on after the step",
     old=("    with torch.autocast(device_type=x.device.type, dtype=dtype):\n"
          "        loss = loss_fn(model(x), y)\n"),
     new=("    torch.autocast(device_type=x.device.type, dtype=dtype).__enter__()\n"
          "    loss = loss_fn(model(x), y)\n"))
edit("i30_sc_eval_mode", within="scaled_fp16_step",
     why="i30: switches the model to eval mode: no dropout in the scaled step, and eval mode after it",
     old="    optimizer.zero_grad()\n", new="    model.eval()\n    optimizer.zero_grad()\n")
