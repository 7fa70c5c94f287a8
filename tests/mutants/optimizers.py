"""Mutants of solutions/optimizers.py: each is one bug a student plausibly writes.

Each replaces one method (``Class.method``) or function; the bodies may use the solution
module's imports (math, torch).  The deviation of each from torch.optim on the public test's
runs is printed by ``python bench/optimizers_tolerances.py``.
"""

import torch

from grader.authoring.mutants import edit, mutant


edit("adamw_no_bias_correction", within="AdamW.step",
     why="AdamW without bias correction (uses m and v instead of m̂ and v̂)",
     old=("denom = (v.sqrt() / math.sqrt(1.0 - beta2**t)).add_(eps)\n"
          "                p.addcdiv_(m, denom, value=-lr / (1.0 - beta1**t))"),
     new="p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)")


edit("adamw_is_adam_l2", within="AdamW.step",
     why="Adam with L2 passed off as AdamW: λ·p added to the gradient, no decoupled decay",
     edits=[("g = p.grad\n",
             "g = p.grad.add(p, alpha=decay)\n"),
            ("                p.mul_(1.0 - lr * decay)\n",
             "")])


edit("adamw_decay_not_scaled_by_lr", within="AdamW.step",
     why="decoupled decay not scaled by the learning rate: p ← p − λ·p",
     edits=[("                p.mul_(1.0 - lr * decay)\n",
             ""),
            ("p.addcdiv_(m, denom, value=-lr / (1.0 - beta1**t))",
             ("p.addcdiv_(m, denom, value=-lr / (1.0 - beta1**t))\n"
              "                p.mul_(1.0 - decay)"))])


edit("adamw_ignores_group_lr", within="AdamW.step",
     why="uses the default lr for every parameter group (ignores a group's own lr)",
     old='group["lr"], group["betas"]',
     new='self.defaults["lr"], group["betas"]')


edit("adamw_step_count_attribute", within="AdamW.step",
     why="keeps the step count in an attribute of the optimizer, not in self.state (lost by a state_dict round trip: bias correction restarts)",
     edits=[("for group in self.param_groups:",
             ('self.t = getattr(self, "t", 0) + 1\n'
              "        for group in self.param_groups:")),
            ('                    state["step"] = 0\n',
             ""),
            (('state["step"] += 1\n'
              '                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]'),
             't, m, v = self.t, state["exp_avg"], state["exp_avg_sq"]')])


edit("adamw_none_grad_as_zero", within="AdamW.step",
     why="treats a missing gradient as zero: decays (and keeps state for) unused parameters",
     old=("                if p.grad is None:\n"
          "                    continue\n"
          "                g = p.grad\n"),
     new="                g = p.grad if p.grad is not None else torch.zeros_like(p)\n")


edit("adamw_bias_correction_off_by_one", within="AdamW.step",
     why="bias corrections one step ahead: 1 − β^(t+1) instead of 1 − β^t",
     old='t, m, v = state["step"], state["exp_avg"]',
     new='t, m, v = state["step"] + 1, state["exp_avg"]')


edit("adamw_ignores_group_decay", within="AdamW.step",
     why="uses the default weight_decay for every group (ignores a group's own weight_decay)",
     old='group["eps"], group["weight_decay"]',
     new='group["eps"], self.defaults["weight_decay"]')


edit("adam_decoupled_decay", within="Adam.step",
     why="Adam applies weight decay decoupled (as AdamW) instead of as L2 in the gradient",
     old="g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)",
     new=("g = p.grad\n"
          "                p.mul_(1.0 - lr * decay)"))


edit("adam_no_l2", within="Adam.step",
     why="Adam ignores weight_decay (no L2 term in the gradient)",
     old="g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)",
     new="g = p.grad")


edit("adagrad_no_accumulation", within="AdaGrad.step",
     why="AdaGrad without accumulation: s ← g² instead of s ← s + g²",
     old="s.addcmul_(g, g)",
     new="s.copy_(g * g)")


edit("adagrad_mean_of_squares", within="AdaGrad.step",
     why="AdaGrad averages the squared gradients (RMSProp-like) instead of summing them",
     edits=[('                    state["sum"] = torch.zeros_like(p)\n',
             ('                    state["sum"] = torch.zeros_like(p)\n'
              '                    state["n"] = 0\n'
              '                state["n"] += 1\n')),
            ("p.addcdiv_(g, s.sqrt().add_(eps), value=-lr)",
             'p.addcdiv_(g, (s / state["n"]).sqrt().add_(eps), value=-lr)')])


edit("adagrad_eps_inside_sqrt", within="AdaGrad.step",
     why="ε inside the square root: √(s + ε)",
     old="s.sqrt().add_(eps)",
     new="(s + eps).sqrt()")


edit("rmsprop_eps_inside_sqrt", within="RMSProp.step",
     why="ε inside the square root: √(v + ε)",
     old="v.sqrt().add_(eps)",
     new="(v + eps).sqrt()")


edit("rmsprop_sum", within="RMSProp.step",
     why="RMSProp sums instead of averaging: v ← α·v + g² (no 1 − α)",
     old="v.mul_(alpha).addcmul_(g, g, value=1.0 - alpha)",
     new="v.mul_(alpha).addcmul_(g, g)")


edit("rmsprop_alpha_swapped", within="RMSProp.step",
     why="RMSProp with α and 1 − α swapped: v ← (1−α)·v + α·g²",
     old="v.mul_(alpha).addcmul_(g, g, value=1.0 - alpha)",
     new="v.mul_(1.0 - alpha).addcmul_(g, g, value=alpha)")


edit("sgd_dampened_momentum", within="SGD.step",
     why="momentum with dampening: b ← μ·b + (1 − μ)·g",
     edits=[('state["momentum_buffer"] = update.clone()',
             'state["momentum_buffer"] = (1.0 - momentum) * update'),
            ('state["momentum_buffer"].mul_(momentum).add_(update)',
             'state["momentum_buffer"].mul_(momentum).add_(update, alpha=1.0 - momentum)')])


edit("sgd_buffer_attribute", within="SGD.step",
     why="momentum buffers kept in a dict attribute keyed by id(p), not in self.state (lost by a state_dict round trip)",
     edits=[("for group in self.param_groups:",
             ('if not hasattr(self, "buffers"):\n'
              "            self.buffers = {}\n"
              "        for group in self.param_groups:")),
            ("state = self.state[p]",
             "state = self.buffers.setdefault(id(p), {})")])


edit("state_numel", within="optimizer_state_bytes",
     why="counts elements instead of bytes",
     old=("return sum(value.numel() * value.element_size()\n"
          "               for state in optimizer.state.values() for value in state.values()\n"
          "               if isinstance(value, torch.Tensor))"),
     new="return sum(v.numel() for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor))")


edit("state_plus_params", within="optimizer_state_bytes",
     why="adds the parameters' own memory to the optimizer state",
     old=("return sum(value.numel() * value.element_size()\n"
          "               for state in optimizer.state.values() for value in state.values()\n"
          "               if isinstance(value, torch.Tensor))"),
     new=("state = sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values()\n"
          "                if isinstance(v, torch.Tensor))\n"
          '    params = sum(p.numel() * p.element_size() for g in optimizer.param_groups for p in g["params"])\n'
          "    return state + params"))


edit("state_skips_scalars", within="optimizer_state_bytes",
     why="skips 0-d tensors (torch.optim's tensor step counts are state too)",
     old=("return sum(value.numel() * value.element_size()\n"
          "               for state in optimizer.state.values() for value in state.values()\n"
          "               if isinstance(value, torch.Tensor))"),
     new=("return sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values()\n"
          "               if isinstance(v, torch.Tensor) and v.dim() > 0)"))


# ---- breaking pass (2026-11-22, written before reading the tests) ----
# ---------------------------------------------------------------- SGD

edit("brk_sgd_buffer_aliases_grad", within="SGD.step",
     why="momentum buffer aliases p.grad (no clone): zero_grad(set_to_none=False) zeroes it",
     old='state["momentum_buffer"] = update.clone()',
     new='state["momentum_buffer"] = update')


@mutant(replaces="SGD.__init__", why="the lecture's default learning rate 0.01 instead of torch's 1e-3", against="1f4ea975d161")
def brk_sgd_lecture_default_lr(self, params, lr=0.01, momentum=0.0):
    if lr < 0.0:
        raise ValueError(f"invalid learning rate {lr}")
    if momentum < 0.0:
        raise ValueError(f"invalid momentum {momentum}")
    super().__init__(params, {"lr": lr, "momentum": momentum})


edit("brk_sgd_momentum_from_defaults", within="SGD.step",
     why="momentum read from self.defaults: a group's own momentum is ignored",
     old='lr, momentum = group["lr"], group["momentum"]',
     new='lr, momentum = group["lr"], self.defaults["momentum"]')


edit("brk_sgd_state_without_momentum", within="SGD.step",
     why="keeps a zero momentum buffer even when momentum is 0 (state where there should be none)",
     edits=[("update = p.grad", "state = self.state[p]"),
           (("if momentum != 0.0:\n"
            "                    state = self.state[p]\n"
            '                    if "momentum_buffer" not in state:\n'
            '                        state["momentum_buffer"] = update.clone()\n'
            "                    else:\n"
            '                        state["momentum_buffer"].mul_(momentum).add_(update)\n'
            '                    update = state["momentum_buffer"]'),
            ('if "momentum_buffer" not in state:\n'
            '                    state["momentum_buffer"] = p.grad.clone()\n'
            "                else:\n"
            '                    state["momentum_buffer"].mul_(momentum).add_(p.grad)')),
           ("p.add_(update, alpha=-lr)", 'p.add_(state["momentum_buffer"], alpha=-lr)')])


edit("brk_sgd_lr_attribute", within="SGD.__init__",
     why="lr captured in an attribute at construction: later changes to param_groups[i]['lr'] ignored",
     old='super().__init__(params, {"lr": lr, "momentum": momentum})',
     new=('super().__init__(params, {"lr": lr, "momentum": momentum})\n'
          "        for group in self.param_groups:\n"
          '            group["params"] = list(group["params"])\n'
          '        lrs = [g["lr"] for g in self.param_groups]\n'
          "\n"
          "        def step(closure=None):\n"
          "            with torch.no_grad():\n"
          "                loss = None\n"
          "                if closure is not None:\n"
          "                    with torch.enable_grad():\n"
          "                        loss = closure()\n"
          "                for group, lr0 in zip(self.param_groups, lrs):\n"
          '                    for p in group["params"]:\n'
          "                        if p.grad is None:\n"
          "                            continue\n"
          "                        update = p.grad\n"
          '                        if group["momentum"] != 0.0:\n'
          "                            state = self.state[p]\n"
          '                            if "momentum_buffer" not in state:\n'
          '                                state["momentum_buffer"] = update.clone()\n'
          "                            else:\n"
          '                                state["momentum_buffer"].mul_(group["momentum"]).add_(update)\n'
          '                            update = state["momentum_buffer"]\n'
          "                        p.add_(update, alpha=-lr0)\n"
          "                return loss\n"
          "        self.step = step"))


edit("brk_sgd_rejects_zero_lr", within="SGD.__init__",
     why="rejects lr == 0 (lr <= 0), a valid learning rate (e.g. a warm-up start)",
     old="if lr < 0.0:",
     new="if lr <= 0.0:")


# ---------------------------------------------------------------- AdaGrad

edit("brk_adagrad_eps_inside_sqrt", within="AdaGrad.step",
     why="the lecture's AdaGrad: eps inside the square root, sqrt(s + eps)",
     old="p.addcdiv_(g, s.sqrt().add_(eps), value=-lr)",
     new="p.addcdiv_(g, (s + eps).sqrt(), value=-lr)")


@mutant(replaces="AdaGrad.__init__", why="the lecture's default eps 1e-5 instead of torch's 1e-10", against="41853dec5951")
def brk_adagrad_lecture_eps(self, params, lr=1e-2, eps=1e-5):
    if lr < 0.0:
        raise ValueError(f"invalid learning rate {lr}")
    if eps < 0.0:
        raise ValueError(f"invalid epsilon {eps}")
    super().__init__(params, {"lr": lr, "eps": eps})


edit("brk_adagrad_zeros_star_shape", within="AdaGrad.step",
     why="state created with torch.zeros(*p.shape): breaks on a 0-d parameter",
     old='state["sum"] = torch.zeros_like(p)',
     new='state["sum"] = torch.zeros(*p.shape, dtype=p.dtype, device=p.device)')


edit("brk_adagrad_eps_from_defaults", within="AdaGrad.step",
     why="eps read from self.defaults: a group's own eps is ignored",
     old='lr, eps = group["lr"], group["eps"]',
     new='lr, eps = group["lr"], self.defaults["eps"]')


# ---------------------------------------------------------------- RMSProp

edit("brk_rmsprop_eps_inside_sqrt", within="RMSProp.step",
     why="eps inside the square root: sqrt(v + eps)",
     old="p.addcdiv_(g, v.sqrt().add_(eps), value=-lr)",
     new="p.addcdiv_(g, (v + eps).sqrt(), value=-lr)")


edit("brk_rmsprop_alpha_from_defaults", within="RMSProp.step",
     why="alpha read from self.defaults: a group's own alpha is ignored",
     old='lr, alpha, eps = group["lr"], group["alpha"], group["eps"]',
     new='lr, alpha, eps = group["lr"], self.defaults["alpha"], group["eps"]')


edit("brk_rmsprop_clips_grad", within="RMSProp.step",
     why="clips the gradient norm to 1 before the update (a 'stability' extra torch does not do)",
     old="g = p.grad",
     new=("g = p.grad\n"
          "                n = g.norm()\n"
          "                if n > 1.0:\n"
          "                    g = g / n"))


edit("brk_rmsprop_rejects_alpha0", within="RMSProp.__init__",
     why="rejects alpha == 0 (0 < alpha < 1), which the docstring allows",
     old="if not 0.0 <= alpha < 1.0:",
     new="if not 0.0 < alpha < 1.0:")


# ---------------------------------------------------------------- Adam

edit("brk_adam_global_step", within="Adam.step",
     why="one global step count for the bias corrections: wrong for a parameter that skipped steps (grad "
         "None)",
     edits=[('            lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]',
            ('            group["t"] = group.get("t", 0) + 1\n'
            '            t = group["t"]\n'
            '            lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]')),
           ('state["step"] += 1', 'state["step"] = t'),
           ('t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]',
            'm, v = state["exp_avg"], state["exp_avg_sq"]')])


edit("brk_adam_counts_none_steps", within="Adam.step",
     why="the step count advances on steps where the gradient is None (state made before the None check)",
     edits=[(("                if p.grad is None:\n"
            "                    continue\n"
            "                g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)\n"),
            ""),
           ('state["step"] += 1',
            ('state["step"] += 1\n'
            "                if p.grad is None:\n"
            "                    continue\n"
            "                g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)"))])


edit("brk_adam_modifies_grad", within="Adam.step",
     why="L2 term added to p.grad in place: modifies the gradient the caller sees",
     old="g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)",
     new=("g = p.grad\n"
          "                if decay != 0.0:\n"
          "                    g.add_(p, alpha=decay)"))


edit("brk_adam_eps_inside_sqrt", within="Adam.step",
     why="eps inside the square root of v-hat: sqrt(v_hat + eps)",
     old="denom = (v.sqrt() / math.sqrt(1.0 - beta2**t)).add_(eps)",
     new="denom = (v / (1.0 - beta2**t) + eps).sqrt()")


edit("brk_adam_betas_from_defaults", within="Adam.step",
     why="betas read from self.defaults: a group's own betas are ignored",
     old='lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]',
     new='lr, (beta1, beta2), eps, decay = group["lr"], self.defaults["betas"], group["eps"], group["weight_decay"]')


edit("brk_adam_fp32_state", within="Adam.step",
     why="moment state allocated as float32 torch.zeros(p.shape): wrong dtype for float64 parameters",
     edits=[('state["exp_avg"] = torch.zeros_like(p)',
            'state["exp_avg"] = torch.zeros(p.shape, device=p.device)'),
           ('state["exp_avg_sq"] = torch.zeros_like(p)',
            'state["exp_avg_sq"] = torch.zeros(p.shape, device=p.device)')])


edit("brk_adam_accepts_beta_one", within="Adam.__init__",
     why="accepts beta == 1 (0 <= b <= 1): the bias correction then divides by zero",
     old="if not all(0.0 <= b < 1.0 for b in betas):",
     new="if not all(0.0 <= b <= 1.0 for b in betas):")


edit("brk_adam_closure_after", within="Adam.step",
     why="closure called after the update: returns the loss of the new parameters",
     edits=[(("        loss = None\n"
              "        if closure is not None:\n"
              "            with torch.enable_grad():\n"
              "                loss = closure()\n"),
             ""),
            ("        return loss",
             ("        loss = None\n"
              "        if closure is not None:\n"
              "            with torch.enable_grad():\n"
              "                loss = closure()\n"
              "        return loss"))])


# ---------------------------------------------------------------- AdamW

edit("brk_adamw_decay_from_defaults", within="AdamW.step",
     why="weight decay read from self.defaults: a no-decay group (biases) is still decayed",
     old='lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]',
     new='lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], self.defaults["weight_decay"]')


edit("brk_adamw_cached_decay_lr", within="AdamW.step",
     why="decay uses the lr of the first step (cached in state): a changed lr does not rescale it",
     edits=[('state["exp_avg_sq"] = torch.zeros_like(p)',
            ('state["exp_avg_sq"] = torch.zeros_like(p)\n'
            '                    state["shrink"] = 1.0 - lr * decay')),
           ("p.mul_(1.0 - lr * decay)", 'p.mul_(state["shrink"])')])


@mutant(replaces="AdamW.__init__", why="Adam's default weight_decay 0 instead of AdamW's 1e-2", against="a06c3afd6ce5")
def brk_adamw_default_decay_zero(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
        raise ValueError(f"invalid hyperparameters lr={lr}, eps={eps}, weight_decay={weight_decay}")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"invalid betas {betas}")
    super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})


edit("brk_adamw_step_attribute", within="AdamW.step",
     why="global step count kept on the optimizer object: lost by a state_dict round trip, wrong with "
         "skipped steps",
     edits=[("loss = closure()",
            ("loss = closure()\n"
            '        if not hasattr(self, "_t"):\n'
            "            self._t = 0\n"
            "        self._t += 1\n"
            "        t = self._t")),
           (('state["step"] += 1\n'
            '                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]'),
            ('state["step"] = t\n'
            '                m, v = state["exp_avg"], state["exp_avg_sq"]'))])


# ---------------------------------------------------------------- optimizer_state_bytes

edit("brk_state_bytes_fp32", within="optimizer_state_bytes",
     why="assumes 4 bytes per state element whatever the dtype",
     old="return sum(value.numel() * value.element_size()",
     new="return sum(value.numel() * 4")


edit("brk_state_bytes_skips_scalars", within="optimizer_state_bytes",
     why="skips 0-d tensors (torch's tensor step counts)",
     old="if isinstance(value, torch.Tensor))",
     new="if isinstance(value, torch.Tensor) and value.dim() > 0)")


edit("brk_state_bytes_first_group", within="optimizer_state_bytes",
     why="counts only the params of the first param group",
     old=("return sum(value.numel() * value.element_size()\n"
          "               for state in optimizer.state.values() for value in state.values()\n"
          "               if isinstance(value, torch.Tensor))"),
     new=("total = 0\n"
          '    for p in optimizer.param_groups[0]["params"]:\n'
          "        for value in optimizer.state.get(p, {}).values():\n"
          "            if isinstance(value, torch.Tensor):\n"
          "                total += value.numel() * value.element_size()\n"
          "    return total"))


# ---- the torch.optim rule: correct trajectories, but through torch.optim's own update code ----

@mutant(replaces="SGD.step", why="delegates the update to torch.optim.sgd.sgd (torch's functional SGD)", against="cc305fb49a50")
@torch.no_grad()
def brk_sgd_functional(self, closure=None):
    from torch.optim.sgd import sgd
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        momentum = group["momentum"]
        bufs = [self.state[p].get("momentum_buffer") if momentum != 0.0 else None for p in params]
        sgd(params, [p.grad for p in params], bufs, weight_decay=0.0, momentum=momentum, lr=group["lr"],
            dampening=0.0, nesterov=False, maximize=False, foreach=False)
        if momentum != 0.0:
            for p, b in zip(params, bufs):
                self.state[p]["momentum_buffer"] = b
    return loss


@mutant(replaces="AdamW.step", why="delegates the update to torch.optim.adamw.adamw (torch's functional AdamW)", against="161afdbfda51")
@torch.no_grad()
def brk_adamw_functional(self, closure=None):
    import torch.optim.adamw as functional
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = torch.tensor(0.0)
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
        beta1, beta2 = group["betas"]
        functional.adamw(params, [p.grad for p in params], [self.state[p]["exp_avg"] for p in params],
                         [self.state[p]["exp_avg_sq"] for p in params], [], [self.state[p]["step"] for p in params],
                         foreach=False, amsgrad=False, beta1=beta1, beta2=beta2, lr=group["lr"],
                         weight_decay=group["weight_decay"], eps=group["eps"], maximize=False)
    return loss


@mutant(replaces="AdaGrad.step", why="calls torch.optim.adagrad's single-tensor kernel (imported under another name)", against="0651755930ba")
@torch.no_grad()
def brk_adagrad_kernel(self, closure=None):
    import torch as T
    from torch.optim import adagrad as kernels
    loss = None
    if closure is not None:
        with T.enable_grad():
            loss = closure()
    for group in self.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        for p in params:
            state = self.state[p]
            if not state:
                state["step"] = T.tensor(0.0)
                state["sum"] = T.zeros_like(p)
        kernels._single_tensor_adagrad(
            params, [p.grad for p in params], [self.state[p]["sum"] for p in params],
            [self.state[p]["step"] for p in params], grad_scale=None, found_inf=None, lr=group["lr"],
            weight_decay=0.0, lr_decay=0.0, eps=group["eps"], has_sparse_grad=False, maximize=False,
            differentiable=False, has_complex=False)
    return loss


# ---- more breaking-pass mutants (defaults from other libraries, dtype, eager state) ----

edit("brk_adagrad_tf_accumulator", within="AdaGrad.step",
     why="TensorFlow's initial accumulator 0.1 instead of 0",
     old='state["sum"] = torch.zeros_like(p)',
     new='state["sum"] = torch.full_like(p, 0.1)')


@mutant(replaces="RMSProp.__init__", why="Hinton's lecture default alpha 0.9 instead of torch's 0.99", against="d0dde02a7f09")
def brk_rmsprop_default_alpha(self, params, lr=1e-2, alpha=0.9, eps=1e-8):
    if lr < 0.0:
        raise ValueError(f"invalid learning rate {lr}")
    if eps < 0.0:
        raise ValueError(f"invalid epsilon {eps}")
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"invalid alpha {alpha}")
    super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps})


@mutant(replaces="Adam.__init__", why="Keras' default eps 1e-7 instead of torch's 1e-8", against="55a445a5a6ec")
def brk_adam_keras_eps(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-7, weight_decay=0.0):
    if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
        raise ValueError(f"invalid hyperparameters lr={lr}, eps={eps}, weight_decay={weight_decay}")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"invalid betas {betas}")
    super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})


edit("brk_sgd_fp32_buffer", within="SGD.step",
     why="momentum buffer allocated as float32 zeros whatever the parameter's dtype",
     old=('state["momentum_buffer"] = update.clone()\n'
          "                    else:\n"
          '                        state["momentum_buffer"].mul_(momentum).add_(update)'),
     new=('state["momentum_buffer"] = torch.zeros(p.shape, device=p.device)\n'
          '                    state["momentum_buffer"].mul_(momentum).add_(update)'))


edit("brk_adagrad_eager_state", within="AdaGrad.__init__",
     why="creates every parameter's state eagerly in __init__ (as torch.optim.Adagrad does): state for "
         "parameters that never get a gradient",
     old='super().__init__(params, {"lr": lr, "eps": eps})',
     new=('super().__init__(params, {"lr": lr, "eps": eps})\n'
          "        for group in self.param_groups:\n"
          '            for p in group["params"]:\n'
          '                self.state[p]["sum"] = torch.zeros_like(p)'))


edit("brk_rmsprop_init_g2", within="RMSProp.step",
     why="square_avg starts at g² on the first step (no (1 − α) on the first term)",
     old=('state["square_avg"] = torch.zeros_like(p)\n'
          '                v = state["square_avg"]\n'
          "                v.mul_(alpha).addcmul_(g, g, value=1.0 - alpha)\n"
          "                p.addcdiv_(g, v.sqrt().add_(eps), value=-lr)"),
     new=('state["square_avg"] = g * g\n'
          "                else:\n"
          '                    state["square_avg"].mul_(alpha).addcmul_(g, g, value=1.0 - alpha)\n'
          '                p.addcdiv_(g, state["square_avg"].sqrt().add_(eps), value=-lr)'))


edit("brk_adamw_eps_attribute", within="AdamW.__init__",
     why="eps kept in an attribute at construction and used for every group (a group's own eps ignored)",
     old='super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})',
     new=('super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})\n'
          "        for group in self.param_groups:\n"
          '            group["eps"] = eps'))


# Breaking pass 3 (session 5): written from the handout, the stubs and the solution only; the ones the
# suite missed (all-zero gradients skipped, momentum >= 1 rejected) are caught by the scenario's zero
# gradients and the hidden boundary cases.  (Its state-key-name and tensor-step-count "bugs",
# g2 included, are correct formulations since 0.6: tests/variants/optimizers.py.)

edit("bk5_sgd_skip_zero_grad", within="SGD.step",
     why="skips parameters whose gradient is all zeros (momentum must still carry them)",
     old="if p.grad is None:",
     new="if p.grad is None or not p.grad.any():")


edit("bk5_sgd_coast_without_grad", within="SGD.step",
     why="a parameter without gradient this step keeps coasting on its momentum buffer",
     edits=[('for p in group["params"]:',
            ('for p in group["params"]:\n'
            "                state = self.state[p]")),
           ("if p.grad is None:",
            ("if p.grad is None:\n"
            '                    if momentum != 0.0 and "momentum_buffer" in state:\n'
            '                        buf = state["momentum_buffer"].mul_(momentum)\n'
            "                        p.add_(buf, alpha=-lr)")),
           ("                    state = self.state[p]\n", "")])


edit("bk5_sgd_closure_twice", within="SGD.step",
     why="calls the closure twice (once to check, once to use)",
     old="                loss = closure()",
     new=("                closure()\n"
          "                loss = closure()"))


edit("bk5_sgd_momentum_below_one", within="SGD.__init__",
     why="requires momentum < 1, but any momentum >= 0 is valid (as torch)",
     old="if momentum < 0.0:",
     new="if not 0.0 <= momentum < 1.0:")


edit("bk5_adagrad_state_fp32", within="AdaGrad.step",
     why="state made with torch.zeros(p.shape): float32 for float64 parameters",
     old='state["sum"] = torch.zeros_like(p)',
     new='state["sum"] = torch.zeros(p.shape, device=p.device)')


edit("bk5_adagrad_rejects_eps0", within="AdaGrad.__init__",
     why="rejects eps = 0 (eps <= 0), a valid boundary",
     old="if eps < 0.0:",
     new="if eps <= 0.0:")


@mutant(replaces="AdaGrad.__init__", why="lr default 1e-3 (SGD's/Adam's) instead of torch Adagrad's 1e-2", against="41853dec5951")
def bk5_adagrad_lr_default(self, params, lr=1e-3, eps=1e-10):
    if lr < 0.0:
        raise ValueError(f"invalid learning rate {lr}")
    if eps < 0.0:
        raise ValueError(f"invalid epsilon {eps}")
    super().__init__(params, {"lr": lr, "eps": eps})


edit("bk5_adagrad_negative_eps", within="AdaGrad.__init__",
     why="no check on eps: a negative eps is accepted",
     old=("        if eps < 0.0:\n"
          '            raise ValueError(f"invalid epsilon {eps}")\n'),
     new="")


edit("bk5_rmsprop_state_fp32", within="RMSProp.step",
     why="state made with torch.zeros(p.shape): float32 for float64 parameters",
     old='state["square_avg"] = torch.zeros_like(p)',
     new='state["square_avg"] = torch.zeros(p.shape, device=p.device)')


edit("bk5_rmsprop_closure_after", within="RMSProp.step",
     why="calls the closure after the update (returns the post-update loss, updates with stale grads)",
     edits=[(("        loss = None\n"
              "        if closure is not None:\n"
              "            with torch.enable_grad():\n"
              "                loss = closure()\n"),
             ""),
            ("        return loss",
             ("        loss = None\n"
              "        if closure is not None:\n"
              "            with torch.enable_grad():\n"
              "                loss = closure()\n"
              "        return loss"))])


edit("bk5_rmsprop_alpha_one", within="RMSProp.__init__",
     why="alpha = 1 accepted (0 <= alpha <= 1)",
     old="if not 0.0 <= alpha < 1.0:",
     new="if not 0.0 <= alpha <= 1.0:")


@mutant(replaces="RMSProp.__init__", why="default eps 1e-10 copied from AdaGrad instead of 1e-8", against="d0dde02a7f09")
def bk5_rmsprop_eps_default(self, params, lr=1e-2, alpha=0.99, eps=1e-10):
    if lr < 0.0:
        raise ValueError(f"invalid learning rate {lr}")
    if eps < 0.0:
        raise ValueError(f"invalid epsilon {eps}")
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"invalid alpha {alpha}")
    super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps})


edit("bk5_adam_skip_zero_grad", within="Adam.step",
     why="skips parameters whose gradient is all zeros (moments must still decay, p still moves)",
     old="if p.grad is None:",
     new="if p.grad is None or not p.grad.any():")


edit("bk5_adam_decay_from_defaults", within="Adam.step",
     why="reads weight_decay from self.defaults: a group's own decay is ignored",
     old='lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]',
     new='lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], self.defaults["weight_decay"]')


edit("bk5_adam_beta2_unchecked", within="Adam.__init__",
     why="validates only betas[0]: beta2 = 1 accepted",
     edits=[('raise ValueError(f"invalid hyperparameters lr={lr}, eps={eps}, weight_decay={weight_decay}")',
            'raise ValueError("invalid hyperparameters")'),
           ("if not all(0.0 <= b < 1.0 for b in betas):", "if not 0.0 <= betas[0] < 1.0:")])


edit("bk5_adam_beta0_rejected", within="Adam.__init__",
     why="rejects beta = 0 (0 < beta < 1), a valid boundary",
     edits=[('raise ValueError(f"invalid hyperparameters lr={lr}, eps={eps}, weight_decay={weight_decay}")',
            'raise ValueError("invalid hyperparameters")'),
           ("if not all(0.0 <= b < 1.0 for b in betas):", "if not all(0.0 < b < 1.0 for b in betas):")])


edit("bk5_adamw_decay_default_lr", within="AdamW.step",
     why="decoupled decay uses the initial lr from self.defaults (a schedule's lr ignored for the decay)",
     old="p.mul_(1.0 - lr * decay)",
     new='p.mul_(1.0 - self.defaults["lr"] * decay)')


edit("bk5_adamw_state_fp32", within="AdamW.step",
     why="moments made with torch.zeros(p.shape): float32 for float64 parameters",
     edits=[('state["exp_avg"] = torch.zeros_like(p)',
            'state["exp_avg"] = torch.zeros(p.shape, device=p.device)'),
           ('state["exp_avg_sq"] = torch.zeros_like(p)',
            'state["exp_avg_sq"] = torch.zeros(p.shape, device=p.device)')])


edit("bk5_adamw_decay_stateful_none", within="AdamW.step",
     why="decays every parameter of the group, even one whose grad is None on this step (once it has state)",
     old="                    continue",
     new=("                    if self.state[p]:\n"
          "                        p.mul_(1.0 - lr * decay)\n"
          "                    continue"))


edit("bk5_adamw_bc2_offbyone", within="AdamW.step",
     why="bias corrections with the step count taken before the increment, +1 only in beta1's",
     old="denom = (v.sqrt() / math.sqrt(1.0 - beta2**t)).add_(eps)",
     new="denom = (v.sqrt() / math.sqrt(1.0 - beta2 ** (t + 1))).add_(eps)")


edit("bk5_adamw_negative_decay", within="AdamW.__init__",
     why="no check on weight_decay: a negative decay is accepted",
     old=("if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:\n"
          '            raise ValueError(f"invalid hyperparameters lr={lr}, eps={eps}, weight_decay={weight_decay}")'),
     new=("if lr < 0.0 or eps < 0.0:\n"
          '            raise ValueError("invalid hyperparameters")'))


edit("bk5_adamw_rejects_eps0", within="AdamW.__init__",
     why="rejects eps = 0 (eps <= 0), a valid boundary",
     old=("if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:\n"
          '            raise ValueError(f"invalid hyperparameters lr={lr}, eps={eps}, weight_decay={weight_decay}")'),
     new=("if lr < 0.0 or eps <= 0.0 or weight_decay < 0.0:\n"
          '            raise ValueError("invalid hyperparameters")'))


edit("bk5_adamw_skip_zero_grad", within="AdamW.step",
     why="skips parameters whose gradient is all zeros (moments must still decay, p still moves and decays)",
     old="if p.grad is None:",
     new="if p.grad is None or torch.count_nonzero(p.grad) == 0:")


edit("bk5_state_bytes_int8", within="optimizer_state_bytes",
     why="counts a Python-int step as 8 bytes",
     old=("return sum(value.numel() * value.element_size()\n"
          "               for state in optimizer.state.values() for value in state.values()\n"
          "               if isinstance(value, torch.Tensor))"),
     new=("total = 0\n"
          "    for s in optimizer.state.values():\n"
          "        for v in s.values():\n"
          "            if isinstance(v, torch.Tensor):\n"
          "                total += v.numel() * v.element_size()\n"
          "            elif isinstance(v, (int, float)):\n"
          "                total += 8\n"
          "    return total"))


# -- every default and every case the docstrings name (issue 30) --------------------------------------

edit("i30_sgd_step_returns_zero", within="SGD.step",
     why="i30: step() without a closure returns 0.0, not None",
     old="        loss = None\n", new="        loss = 0.0\n")


@mutant(replaces="SGD.__init__", why="i30: momentum defaults to 0.9 (a common choice), not torch's 0", against="1f4ea975d161")
def i30_sgd_default_momentum(self, params, lr=1e-3, momentum=0.9):
    if lr < 0.0:
        raise ValueError(f"invalid learning rate {lr}")
    if momentum < 0.0:
        raise ValueError(f"invalid momentum {momentum}")
    super().__init__(params, {"lr": lr, "momentum": momentum})


@mutant(replaces="RMSProp.__init__", why="i30: lr defaults to 1e-3 (Adam's), not torch.optim.RMSprop's 1e-2", against="d0dde02a7f09")
def i30_rmsprop_default_lr(self, params, lr=1e-3, alpha=0.99, eps=1e-8):
    if lr < 0.0 or eps < 0.0 or not 0.0 <= alpha < 1.0:
        raise ValueError("invalid hyperparameters")
    super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps})


@mutant(replaces="Adam.__init__", why="i30: betas default to (0.9, 0.99), not torch's (0.9, 0.999)", against="55a445a5a6ec")
def i30_adam_default_betas(self, params, lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.0):
    if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
        raise ValueError("invalid hyperparameters")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"invalid betas {betas}")
    super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})


@mutant(replaces="Adam.__init__", why="i30: weight_decay defaults to AdamW's 1e-2, not Adam's 0", against="55a445a5a6ec")
def i30_adam_default_decay(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
        raise ValueError("invalid hyperparameters")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"invalid betas {betas}")
    super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})


@mutant(replaces="AdamW.__init__", why="i30: lr defaults to 1e-2, not torch's 1e-3", against="a06c3afd6ce5")
def i30_adamw_default_lr(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
        raise ValueError("invalid hyperparameters")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"invalid betas {betas}")
    super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})


@mutant(replaces="AdamW.__init__", why="i30: eps defaults to 1e-6, not torch's 1e-8", against="a06c3afd6ce5")
def i30_adamw_default_eps(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=1e-2):
    if lr < 0.0 or eps < 0.0 or weight_decay < 0.0:
        raise ValueError("invalid hyperparameters")
    if not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"invalid betas {betas}")
    super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})
