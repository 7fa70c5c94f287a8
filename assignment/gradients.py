"""Backward by hand: the gradients autograd computes, written out as matrix products.

For ``y = x @ w`` with an upstream gradient ``g = dL/dy`` (same shape as y), the chain rule
gives two matmuls, each as costly as the forward one:

    dL/dx = g @ w.T        dL/dw = x.T @ g

That is all backpropagation through a chain of matmuls is.  This module makes you write it,
then check it against autograd and ``torch.autograd.gradcheck``.

Rule for `linear_regression_grad` and `two_layer_grads`: compute with explicit tensor
operations only.  They must not use autograd in any form: no ``.backward()``, no
``torch.autograd`` (``grad``, ``backward``, ``functional``), no ``torch.func``/functorch, no
``requires_grad``/``requires_grad_``/``enable_grad``, and none of the dynamic escapes
``getattr``, ``eval``, ``exec``, ``__import__``, ``importlib``, ``globals``, ``vars``,
``compile``.  The rule holds for the whole program that runs: the tests read the function,
every function of your files it calls and your modules' top-level code (an
``if __name__ == "__main__":`` self-test block is exempt; ``torch.autograd.Function`` and
``torch.autograd.function``'s helpers, for MatmulFunction, are of course allowed), and
they also watch, while your function runs, whether autograd's entry points
(``torch.autograd.grad``/``backward``, ``torch.func``) are called.  A rule only takes points away from a test your code otherwise passes.  The
functions are also run under ``torch.inference_mode()``, where autograd cannot record anything.
"""

from __future__ import annotations

from typing import Any

import torch


def linear_regression_grad(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return the gradient with respect to `w` of the squared error ``½ Σ_i (x_i · w − y_i)²``.

    One example: x and w of shape (d,), y a 0-d tensor (the target).  The prediction is the
    dot product x · w, the loss ½(x · w − y)², and its gradient

        dL/dw = (x · w − y) · x          (shape (d,)).

    The lecture's check: x = [1, 2, 3], w = [1, 1, 1], y = 5 gives x · w = 6 and
    dL/dw = (6 − 5) · [1, 2, 3] = [1, 2, 3].

    A batch: x of shape (n, d), y of shape (n,), and the loss is the **sum** over the n
    examples (not the mean), so the gradient is Σ_i (x_i · w − y_i) x_i = xᵀ (x w − y).

    No autograd (see the module docstring): compute the formula.  Leave x, w and y as they were
    (no in-place operations on them).

    Args:
        x: inputs, shape (d,) or (n, d).
        w: weights, shape (d,).
        y: targets, shape () or (n,) to match x.

    Returns:
        dL/dw, a tensor of shape (d,) and w's dtype.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


def two_layer_grads(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (dL/dw1, dL/dw2) for ``L = mean((x @ w1 @ w2) ** 2)``, without autograd.

    Shapes: x (B, D), w1 (D, H), w2 (H, K).  Forward: h1 = x @ w1 (B, H), h2 = h1 @ w2
    (B, K), L = mean of h2's B·K squared entries.  Backward, step by step:

        dL/dh2 = 2 · h2 / (B · K)                   (B, K)   the mean is over all B·K entries
        dL/dw2 = h1ᵀ @ dL/dh2                       (H, K)
        dL/dh1 = dL/dh2 @ w2ᵀ                       (B, H)
        dL/dw1 = xᵀ @ dL/dh1                        (D, H)

    The result must equal what ``L.backward()`` leaves in ``w1.grad`` and ``w2.grad``
    (up to floating-point rounding).  x's gradient is not needed.

    No autograd (see the module docstring): write the matmuls.  Leave x, w1 and w2 as they were
    (no in-place operations on them, no ``out=`` into them).

    Args:
        x: (B, D) inputs.
        w1: (D, H) first weight matrix.
        w2: (H, K) second weight matrix.

    Returns:
        A tuple ``(grad_w1, grad_w2)`` of tensors shaped like w1 and w2, in their dtype.
    """
    # YOUR CODE HERE
    raise NotImplementedError()


class MatmulFunction(torch.autograd.Function):
    """``a @ b`` for 2-D a (m, n) and b (n, p), as an autograd Function with a hand-written backward.

    ``MatmulFunction.apply(a, b)`` must behave like ``a @ b`` in the forward pass and, when
    autograd calls `backward` with the upstream gradient ``grad_out = dL/d(a @ b)`` (m, p),
    return ``(dL/da, dL/db) = (grad_out @ bᵀ, aᵀ @ grad_out)``.

    `forward` must save what `backward` needs with ``ctx.save_for_backward(...)`` and read it
    back from ``ctx.saved_tensors``: then, if a or b is modified in place between forward and
    backward (an optimizer step, ``x.add_(...)``), autograd raises a RuntimeError ("modified by
    an inplace operation") instead of silently computing gradients from the new values, which is
    what a tensor kept as ``ctx.a = a`` (or ``a.data``, ``a.detach()``) gives.  `backward` must
    compute the gradients with explicit matmuls: it must not call autograd itself (no
    ``torch.autograd``, ``.backward()``, ``enable_grad``, ``requires_grad_``; checked by reading
    your code and what it calls).  You may return ``None`` for an input whose gradient is not
    needed (``ctx.needs_input_grad``), or compute both.

    The tests compare, in float64 (to 1e-9 relative), your output with ``a @ b`` and your
    gradients with those autograd gives for ``a @ b``: for a random upstream gradient and for
    every one-hot upstream gradient (the whole Jacobian), square and non-square shapes, with
    both inputs or only one requiring a gradient, and with an input modified in place after
    forward.  ``torch.autograd.gradcheck(MatmulFunction.apply, (a, b))`` on float64 inputs
    (finite differences) is a good check to run yourself.
    """

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # YOUR CODE HERE
        raise NotImplementedError()

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        # YOUR CODE HERE
        raise NotImplementedError()
