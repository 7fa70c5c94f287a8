"""Optimizers from scratch: SGD (with momentum), AdaGrad, RMSProp, Adam and AdamW.

An optimizer turns gradients into parameter updates, and most of them keep *state* per
parameter (a momentum buffer, a running average of squared gradients, ...).  That state is
what makes training memory-hungry: AdamW keeps two fp32 values per parameter, 8 bytes on top
of the parameter and its gradient.  Here you write the five classic optimizers as
``torch.optim.Optimizer`` subclasses that produce *exactly* torch.optim's updates.

How a ``torch.optim.Optimizer`` subclass works (the base class does the bookkeeping):

* ``super().__init__(params, defaults)`` takes the parameters (an iterable of tensors, or of
  dicts ``{"params": [...], "lr": ..., ...}``: *parameter groups*) and a dict of default
  hyperparameters.  It builds ``self.param_groups``: a list of dicts, each with a
  ``"params"`` list and every hyperparameter, where a group's own value (e.g. its own
  ``"lr"``) wins over the default.  Use the argument names as the keys of ``defaults``
  (``"lr"``, ``"momentum"``, ``"eps"``, ``"alpha"``, ``"betas"``, ``"weight_decay"``) so that a
  group can override any of them, as with torch.optim.
* ``self.state`` is a ``defaultdict(dict)``: ``self.state[p]`` is the state dict of parameter
  ``p`` (empty until you fill it).  Keep **all** per-parameter state there (tensors such as
  moment estimates, and the step count), never in attributes of the optimizer: then
  ``state_dict()`` / ``load_state_dict()`` save and restore it, and training resumed from a
  checkpoint continues exactly as if it had never stopped.
* ``step()`` loops over ``self.param_groups`` and their ``"params"``, reads each group's
  hyperparameters *at every step* (a schedule may change ``param_groups[i]["lr"]`` between
  steps), and updates parameters *in place* (``p.add_``, ``p.mul_``, ``p.addcdiv_``...); it is
  decorated with ``@torch.no_grad()`` so the updates are not recorded by autograd.  Skip every
  parameter whose ``p.grad is None`` on this step (it took no part in the loss, now or ever):
  no update, no state, not even weight decay, and its step count does not advance.  Create a
  parameter's state on its first gradient (lazily), with ``torch.zeros_like(p)`` (p's shape,
  dtype and device; parameters may have any shape, 0-d included).  Never modify ``p.grad``.
* ``step(closure)``: if a closure (a function that recomputes the loss) is passed, call it
  inside ``with torch.enable_grad():`` before updating and return its value; else return None.

Rule: subclass ``torch.optim.Optimizer`` and use nothing else from ``torch.optim`` (none of
torch.optim's optimizers, no ``torch.optim._functional`` or ``torch.optim.adamw.adamw``-style
update functions, no ``_single_tensor_*`` / ``_multi_tensor_*`` / ``_fused_*`` kernels), and
none of the dynamic lookups that could hide such a name (``getattr``, ``setattr``, ``eval``,
``exec``, ``compile``, ``globals``, ``vars``, ``__dict__``, ``sys.modules``,
``importlib``, ``__import__``...), nor torch's private internals (any ``torch._...`` name,
``torch._foreach_*`` included).  It holds for the whole program your optimizer runs: each class's code,
every function of your submission it reaches (in any file) and the module-level code of
those files; it is checked by reading that code and, while your ``step()`` runs, by
tripwires on torch.optim's update functions.  The rule is a gate: breaking it fails that
optimizer's tests, whatever the trajectory.  Plain tensor operations only.

Where the lecture differs: the tests follow torch.optim, whose formulas and defaults are the
ones graded (each class names its torch equivalent).  The lecture's AdaGrad puts ε *inside*
the square root, ``√(s + ε)``, with ε = 1e-5, and names its state ``g2``; here ε is added
outside, ``√s + ε``, with torch's default 1e-10, and the state is ``"sum"``.  The lecture's
SGD uses lr = 0.01; here the default is torch's 1e-3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

#: What an optimizer accepts as parameters: tensors, or parameter-group dicts.
Params = Iterable[torch.Tensor] | Iterable[dict[str, Any]]
#: An optional closure that re-evaluates the model and returns the loss.
Closure = Callable[[], torch.Tensor | float] | None


class SGD(torch.optim.Optimizer):
    """Stochastic gradient descent with (heavy-ball) momentum.

    For each parameter ``p`` with a gradient ``g = p.grad``, with its group's learning rate
    ``lr`` and momentum ``μ``:

        μ == 0:   p ← p − lr · g                                   (no state at all)
        μ > 0:    b ← g                 on p's first step,
                  b ← μ · b + g          on every later step,
                  p ← p − lr · b

    The momentum buffer ``b`` is per-parameter state: ``self.state[p]["momentum_buffer"]``, a
    tensor shaped like ``p`` (created on p's first gradient; none at all when μ = 0).  Note that the gradient enters ``b`` with weight 1, not
    ``(1 − μ)``: this is ``torch.optim.SGD(params, lr, momentum)`` with ``dampening=0``,
    ``nesterov=False``, ``weight_decay=0``, and must match it update for update.
    """

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0.0) -> None:
        """Set up the parameter groups.

        Args:
            params: tensors, or parameter-group dicts (each may set its own ``lr``/``momentum``).
            lr: learning rate ≥ 0 (torch.optim.SGD's default, 1e-3, not the lecture's 0.01).
            momentum: μ ≥ 0; 0 means plain SGD without a momentum buffer.

        Raises:
            ValueError: if ``lr < 0`` or ``momentum < 0``.
        """
        # YOUR CODE HERE
        raise NotImplementedError()

    @torch.no_grad()
    def step(self, closure: Closure = None) -> torch.Tensor | float | None:
        """Apply one update to every parameter that has a gradient; return the closure's loss or None."""
        # YOUR CODE HERE
        raise NotImplementedError()


class AdaGrad(torch.optim.Optimizer):
    """AdaGrad: a per-coordinate learning rate that shrinks with the gradients seen so far.

    For each parameter ``p`` with a gradient ``g``, elementwise, with the group's ``lr`` and ``ε``:

        s ← s + g²                       (s starts at 0: the *sum* of all squared gradients)
        p ← p − lr · g / (√s + ε)

    ``s`` is per-parameter state, ``self.state[p]["sum"]``, a tensor shaped like ``p``.  Note
    where ε goes: outside the square root.  This is ``torch.optim.Adagrad(params, lr, eps=eps)``
    with ``lr_decay=0``, ``weight_decay=0``, ``initial_accumulator_value=0``, and the tests
    follow it, not the lecture (whose AdaGrad has ``√(s + ε)`` with ε = 1e-5 and state ``g2``).
    """

    def __init__(self, params: Params, lr: float = 1e-2, eps: float = 1e-10) -> None:
        """Set up the parameter groups.

        Args:
            params: tensors, or parameter-group dicts (each may set its own ``lr``/``eps``).
            lr: learning rate (torch.optim.Adagrad's default, 1e-2).
            eps: ε ≥ 0, added to √s to avoid dividing by zero (default 1e-10, as torch; not the
                lecture's 1e-5).

        Raises:
            ValueError: if ``lr < 0`` or ``eps < 0``.
        """
        # YOUR CODE HERE
        raise NotImplementedError()

    @torch.no_grad()
    def step(self, closure: Closure = None) -> torch.Tensor | float | None:
        """Apply one update to every parameter that has a gradient; return the closure's loss or None."""
        # YOUR CODE HERE
        raise NotImplementedError()


class RMSProp(torch.optim.Optimizer):
    """RMSProp: AdaGrad with an exponential moving *average* of squared gradients instead of a sum.

    For each parameter ``p`` with a gradient ``g``, elementwise, with the group's ``lr``,
    smoothing constant ``α`` and ``ε``:

        v ← α · v + (1 − α) · g²          (v starts at 0)
        p ← p − lr · g / (√v + ε)

    ``v`` is per-parameter state, ``self.state[p]["square_avg"]``, a tensor shaped like ``p``.
    There is no bias correction (so the first steps are large: after one step √v = √(1−α)·|g|).
    This is ``torch.optim.RMSprop(params, lr, alpha, eps)`` with ``centered=False``,
    ``momentum=0``, ``weight_decay=0``.
    """

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8) -> None:
        """Set up the parameter groups.

        Args:
            params: tensors, or parameter-group dicts (each may set its own ``lr``/``alpha``/``eps``).
            lr: learning rate (torch.optim.RMSprop's default, 1e-2).
            alpha: α in [0, 1): how much of the old average is kept each step.
            eps: ε, added to √v (outside the square root).

        Raises:
            ValueError: if ``lr < 0``, ``eps < 0`` or α is not in [0, 1).
        """
        # YOUR CODE HERE
        raise NotImplementedError()

    @torch.no_grad()
    def step(self, closure: Closure = None) -> torch.Tensor | float | None:
        """Apply one update to every parameter that has a gradient; return the closure's loss or None."""
        # YOUR CODE HERE
        raise NotImplementedError()


class Adam(torch.optim.Optimizer):
    """Adam, with optional L2 regularisation folded into the gradient.

    For each parameter ``p`` with a gradient, elementwise, with the group's ``lr``,
    ``(β1, β2)``, ``ε`` and weight decay ``λ``; ``t`` counts *this parameter's* steps (1 on its
    first update):

        g ← p.grad + λ · p                 (L2 regularisation: the decay goes *into* the gradient)
        m ← β1 · m + (1 − β1) · g          (first moment, starts at 0)
        v ← β2 · v + (1 − β2) · g²         (second moment, starts at 0)
        m̂ ← m / (1 − β1^t)                 (bias correction: undo the pull towards 0)
        v̂ ← v / (1 − β2^t)
        p ← p − lr · m̂ / (√v̂ + ε)

    Do not modify ``p.grad`` itself.  State per parameter: ``self.state[p]`` holds
    ``"step"`` (t: a Python int, or a 0-d tensor as torch.optim keeps it: either is fine),
    ``"exp_avg"`` (m) and ``"exp_avg_sq"`` (v), tensors shaped like ``p`` (torch.optim's names;
    other key names work too, the tests check what the state holds, not what it is called).  This is ``torch.optim.Adam(params, lr, betas, eps, weight_decay)``.  Because λ
    goes through the moment estimates, the decay is rescaled by √v̂ like any gradient; that is
    why AdamW (below) exists.
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        """Set up the parameter groups.

        Args:
            params: tensors, or parameter-group dicts (each may set any hyperparameter below).
            lr: learning rate (default 1e-3, as torch).
            betas: (β1, β2), each in [0, 1) (default (0.9, 0.999)).
            eps: ε, added to √v̂ (default 1e-8).
            weight_decay: λ ≥ 0, the L2 coefficient (default 0).

        Raises:
            ValueError: if ``lr < 0``, ``eps < 0``, ``weight_decay < 0`` or a β is not in [0, 1).
        """
        # YOUR CODE HERE
        raise NotImplementedError()

    @torch.no_grad()
    def step(self, closure: Closure = None) -> torch.Tensor | float | None:
        """Apply one update to every parameter that has a gradient; return the closure's loss or None."""
        # YOUR CODE HERE
        raise NotImplementedError()


class AdamW(torch.optim.Optimizer):
    """AdamW: Adam with *decoupled* weight decay (Loshchilov & Hutter).

    Exactly Adam's update on the raw gradient ``g = p.grad`` (no λ·p added to it), plus a
    decay of the parameter itself that is scaled by the learning rate but *not* by the
    adaptive denominator:

        p ← p − lr · λ · p                 (decoupled decay)
        m ← β1 · m + (1 − β1) · g
        v ← β2 · v + (1 − β2) · g²
        m̂ ← m / (1 − β1^t),   v̂ ← v / (1 − β2^t)
        p ← p − lr · m̂ / (√v̂ + ε)

    ``t`` counts this parameter's steps (1 on its first update).  Either order of the decay
    is accepted: applied first (as above, torch's order) or after the Adam update
    (``p ← p − lr·λ·p`` on the updated ``p``); the two differ by a term of order lr²·λ.
    So is the equivalent form with the bias corrections folded into the step size,
    ``α_t = lr · √(1 − β2^t) / (1 − β1^t)``, ``p ← p − α_t · m / (√v + ε)``.
    A parameter whose ``p.grad is None`` is not decayed either.

    State per parameter, as Adam: ``"step"`` (a Python int or a 0-d tensor), ``"exp_avg"``,
    ``"exp_avg_sq"``: two fp32 tensors shaped like ``p``, i.e. 8 bytes per parameter, the "AdamW = 16 bytes per
    parameter" of the memory table (4 param + 4 grad + 8 state).  This is
    ``torch.optim.AdamW(params, lr, betas, eps, weight_decay)``.
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2) -> None:
        """Set up the parameter groups.

        Args:
            params: tensors, or parameter-group dicts (each may set any hyperparameter below;
                e.g. a group of biases and norms with ``"weight_decay": 0.0``).
            lr: learning rate (default 1e-3, as torch).
            betas: (β1, β2), each in [0, 1) (default (0.9, 0.999)).
            eps: ε, added to √v̂ (default 1e-8).
            weight_decay: λ ≥ 0, the decoupled decay coefficient (default 1e-2, as torch).

        Raises:
            ValueError: if ``lr < 0``, ``eps < 0``, ``weight_decay < 0`` or a β is not in [0, 1).
        """
        # YOUR CODE HERE
        raise NotImplementedError()

    @torch.no_grad()
    def step(self, closure: Closure = None) -> torch.Tensor | float | None:
        """Apply one update to every parameter that has a gradient; return the closure's loss or None."""
        # YOUR CODE HERE
        raise NotImplementedError()


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Return the bytes taken by the tensors in an optimizer's per-parameter state.

    Sum ``numel × element size`` over every tensor value in ``optimizer.state`` (a dict from
    parameter to that parameter's state dict).  Values that are not tensors (e.g. a step
    count kept as a Python int) take no tensor memory and count 0.  A step count kept as a
    0-dimensional tensor, as torch.optim does, *is* a tensor and counts (4 bytes in float32).
    Parameters and gradients are not optimizer state and do not count.

    Memory table check: after a step of your AdamW on fp32 parameters with N elements in all
    (every one with a gradient), this is 2 · 4 · N = 8N bytes (the two moments; a Python int
    step counts 0, a 0-d tensor step its 4 bytes per parameter tensor); for torch.optim.AdamW
    it is 8N + 4 per parameter tensor (its tensor steps).  Plain SGD (no momentum) keeps nothing: 0.  Must work for any
    ``torch.optim.Optimizer``, yours or torch's.

    Args:
        optimizer: any ``torch.optim.Optimizer``.

    Returns:
        ``int`` bytes.
    """
    # YOUR CODE HERE
    raise NotImplementedError()
