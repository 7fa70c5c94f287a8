"""Mixed precision: bf16 compute, fp32 state.

Matrix multiplies are where the FLOPs are, and tensor cores run them several times faster in
bfloat16 than in float32.  Mixed-precision training keeps every *stored* training value in
float32 (the parameters, their gradients, the optimizer's state) and lets `torch.autocast`
run the matmuls of the forward pass in a 16-bit format: each autocast-eligible op casts its
inputs to 16 bits on the fly, and the backward pass produces float32 gradients for the
float32 parameters.  float16 has a narrow range, so small gradients underflow to zero; a
*loss scaler* multiplies the loss before the backward pass and divides the gradients after it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def mixed_precision_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: LossFn,
                         x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> float:
    """Do one training step with the forward pass and the loss under autocast; return the loss.

    In order:

    1. ``optimizer.zero_grad()``: clear the previous step's gradients first, so that after
       this function returns every ``p.grad`` holds exactly this step's gradient (callers
       inspect it: gradient norms, clipping, logging).  Keep its default
       ``set_to_none=True``: a parameter that this step's forward does not use then has
       ``p.grad`` None and the optimizer skips it (a zero gradient would still move it
       through momentum or weight decay);
    2. under ``torch.autocast(device_type=x.device.type, dtype=dtype)``: ``out = model(x)``
       and ``loss = loss_fn(out, y)``.  Autocast runs matmuls (``nn.Linear``, ``@``) in
       ``dtype``; which ops it keeps in float32 depends on the device: on CUDA softmax,
       layer_norm, sums and the losses run in float32; on CPU a shorter list does (the
       losses, ``mse_loss``, ``cross_entropy``, ..., are on it), and softmax, layer_norm or
       a sum of a bf16 matmul's output come out bf16;
    3. outside the autocast block: ``loss.backward()`` then ``optimizer.step()``.  Do nothing
       else to the gradients (no clipping, no rescaling).

    Never cast the model, the inputs or the targets yourself (no ``model.to(torch.bfloat16)``,
    no ``.half()``, no ``model.float()``): every parameter keeps its dtype (a float32 model's
    parameters, gradients and optimizer state all stay float32), and only the computations
    inside the forward pass are 16-bit; the model may do float32 work on ``x`` before its
    first matmul.  Work on whatever device ``x`` is on (CPU autocast supports bfloat16 and
    float16 too).

    Leave the model's mode as the caller set it: no ``model.train()``, no ``model.eval()``.  The
    forward pass runs in that mode (in training mode dropout is on, drawing its masks from torch's
    generator; in eval mode it is off), and the model is still in it when the step returns; so is
    autocast (on inside the block only).

    Args:
        model: a model on ``x``'s device, usually all float32 (parameters of other dtypes
            keep theirs).
        optimizer: an optimizer over ``model``'s parameters.
        loss_fn: ``loss_fn(model(x), y)`` returns a scalar tensor.
        x: the inputs; ``x.device.type`` ("cpu", "cuda") picks the autocast device.
        y: the targets.
        dtype: the autocast compute dtype, ``torch.bfloat16`` (default) or ``torch.float16``.

    Returns:
        The loss as a Python ``float`` (``loss.item()``).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def scaled_fp16_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: LossFn,
                     x: torch.Tensor, y: torch.Tensor, scaler: torch.amp.GradScaler) -> float:
    """Do one float16 training step with loss scaling; return the (unscaled) loss.

    float16 has 5 exponent bits: its smallest positive number is 2^-24 ≈ 6e-8, so gradients
    of at most half that (2^-25 ≈ 3e-8) become exactly 0 in the float16 parts of the backward
    pass and the step does nothing.  Loss scaling multiplies the loss by a large factor S
    before ``backward()`` (every gradient is S times larger, out of the underflow zone), then
    divides the gradients by S before the optimizer uses them.  If S was too large and some
    gradient overflowed to inf/nan (which can happen while the loss itself is finite), the
    step is skipped and S is halved.
    ``torch.amp.GradScaler`` does the bookkeeping; use it exactly like this:

    1. ``optimizer.zero_grad()``;
    2. under ``torch.autocast(device_type=x.device.type, dtype=torch.float16)``:
       ``loss = loss_fn(model(x), y)``;
    3. ``scaler.scale(loss).backward()``: backward on the *scaled* loss;
    4. ``scaler.step(optimizer)``: unscales the gradients in place (``p.grad`` then holds
       the true gradient), and calls ``optimizer.step()`` only if they are all finite;
       never call ``optimizer.step()`` yourself;
    5. ``scaler.update()``: halves S after a skipped step, doubles it after
       ``growth_interval`` good steps in a row (2000 by default; the caller picks it).

    Nothing else happens to the gradients in between (no clipping).  As in
    `mixed_precision_step`, every parameter keeps its dtype (a float32 model, its gradients
    and the optimizer's state stay float32), ``optimizer.zero_grad()`` keeps its default
    ``set_to_none=True``, the inputs are never cast, and the model's mode is the caller's (no
    ``model.train()`` or ``model.eval()``: dropout is on in training mode).

    Args:
        model, optimizer, loss_fn, x, y: as in `mixed_precision_step`.
        scaler: a ``torch.amp.GradScaler`` for ``x``'s device type, owned by the caller (it
            carries S from step to step).

    Returns:
        The loss as a Python ``float``: the loss itself, not the scaled loss (it is inf or nan
        when the forward pass overflowed).
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def mixed_precision_bytes_per_parameter() -> int:
    """Return the bytes per parameter that mixed-precision training with AdamW keeps.

    Count what is stored per parameter: the 16-bit (bf16) copy of the parameter used in the
    matmuls (2 bytes), its 16-bit gradient (2), the float32 *master copy* of the parameter
    that the optimizer updates (4: a bf16 parameter cannot absorb updates much smaller than
    itself: 7 stored mantissa bits, 8 significant bits with the implicit leading 1), and
    AdamW's two float32 moments (4 + 4).  Compare with 16 bytes
    for plain float32 AdamW (4 + 4 + 8): mixed precision does not save parameter memory; it
    saves activation memory and time.

    Returns:
        An ``int``.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
