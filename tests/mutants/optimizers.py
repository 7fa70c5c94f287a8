"""Mutants of solutions/optimizers.py: each is one bug a student plausibly writes.

Each replaces one method (``Class.method``) or function; the bodies may use the solution
module's imports (math, torch).  The deviation of each from torch.optim on the public test's
runs is printed by ``python bench/optimizers_tolerances.py``.
"""

import math

import torch

from grader.mutants import mutant


@mutant(replaces="AdamW.step", why="AdamW without bias correction (uses m and v instead of m̂ and v̂)")
def adamw_no_bias_correction(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            state["step"] += 1
            m, v = state["exp_avg"], state["exp_avg_sq"]
            with torch.no_grad():
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)


@mutant(replaces="AdamW.step", why="Adam with L2 passed off as AdamW: λ·p added to the gradient, no decoupled decay")
def adamw_is_adam_l2(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                g = p.grad + decay * p
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(g, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                m_hat, v_hat = m / (1.0 - beta1**t), v / (1.0 - beta2**t)
                p.sub_(lr * m_hat / (v_hat.sqrt() + eps))


@mutant(replaces="AdamW.step", why="decoupled decay not scaled by the learning rate: p ← p − λ·p")
def adamw_decay_not_scaled_by_lr(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                m_hat, v_hat = m / (1.0 - beta1**t), v / (1.0 - beta2**t)
                p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
                p.sub_(decay * p)


@mutant(replaces="AdamW.step", why="uses the default lr for every parameter group (ignores a group's own lr)")
def adamw_ignores_group_lr(self, closure=None):
    lr = self.defaults["lr"]
    for group in self.param_groups:
        (beta1, beta2), eps, decay = group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


@mutant(replaces="AdamW.step", why="keeps the step count in an attribute of the optimizer, not in self.state "
                                   "(lost by a state_dict round trip: bias correction restarts)")
def adamw_step_count_attribute(self, closure=None):
    if not hasattr(self, "t"):
        self.t = 0
    self.t += 1
    t = self.t
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


@mutant(replaces="AdamW.step", why="treats a missing gradient as zero: decays (and keeps state for) unused parameters")
def adamw_none_grad_as_zero(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            with torch.no_grad():
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(g, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


@mutant(replaces="AdamW.step", why="bias corrections one step ahead: 1 − β^(t+1) instead of 1 − β^t")
def adamw_bias_correction_off_by_one(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                t, m, v = state["step"] + 1, state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1 ** (t + 1))) / ((v / (1.0 - beta2 ** (t + 1))).sqrt() + eps))


@mutant(replaces="AdamW.step", why="uses the default weight_decay for every group (ignores a group's own weight_decay)")
def adamw_ignores_group_decay(self, closure=None):
    decay = self.defaults["weight_decay"]
    for group in self.param_groups:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


@mutant(replaces="Adam.step", why="Adam applies weight decay decoupled (as AdamW) instead of as L2 in the gradient")
def adam_decoupled_decay(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1.0 - lr * decay)
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


@mutant(replaces="Adam.step", why="Adam ignores weight_decay (no L2 term in the gradient)")
def adam_no_l2(self, closure=None):
    for group in self.param_groups:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                p.sub_(lr * (m / (1.0 - beta1**t)) / ((v / (1.0 - beta2**t)).sqrt() + eps))


@mutant(replaces="AdaGrad.step", why="AdaGrad without accumulation: s ← g² instead of s ← s + g²")
def adagrad_no_accumulation(self, closure=None):
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                state["sum"] = p.grad * p.grad
                p.sub_(group["lr"] * p.grad / (state["sum"].sqrt() + group["eps"]))


@mutant(replaces="AdaGrad.step", why="AdaGrad averages the squared gradients (RMSProp-like) instead of summing them")
def adagrad_mean_of_squares(self, closure=None):
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["sum"] = torch.zeros_like(p)
                    state["n"] = 0
                state["n"] += 1
                state["sum"].add_(p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / ((state["sum"] / state["n"]).sqrt() + group["eps"]))


@mutant(replaces="AdaGrad.step", why="ε inside the square root: √(s + ε)")
def adagrad_eps_inside_sqrt(self, closure=None):
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["sum"] = torch.zeros_like(p)
                state["sum"].addcmul_(p.grad, p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"] + group["eps"]).sqrt())


@mutant(replaces="RMSProp.step", why="ε inside the square root: √(v + ε)")
def rmsprop_eps_inside_sqrt(self, closure=None):
    for group in self.param_groups:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                v = state["square_avg"]
                v.mul_(alpha).addcmul_(p.grad, p.grad, value=1.0 - alpha)
                p.sub_(lr * p.grad / (v + eps).sqrt())


@mutant(replaces="RMSProp.step", why="RMSProp sums instead of averaging: v ← α·v + g² (no 1 − α)")
def rmsprop_sum(self, closure=None):
    for group in self.param_groups:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                v = state["square_avg"]
                v.mul_(alpha).add_(p.grad * p.grad)
                p.sub_(lr * p.grad / (v.sqrt() + eps))


@mutant(replaces="RMSProp.step", why="RMSProp with α and 1 − α swapped: v ← (1−α)·v + α·g²")
def rmsprop_alpha_swapped(self, closure=None):
    for group in self.param_groups:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                v = state["square_avg"]
                v.mul_(1.0 - alpha).add_(alpha * p.grad * p.grad)
                p.sub_(lr * p.grad / (v.sqrt() + eps))


@mutant(replaces="SGD.step", why="momentum with dampening: b ← μ·b + (1 − μ)·g")
def sgd_dampened_momentum(self, closure=None):
    for group in self.param_groups:
        lr, mu = group["lr"], group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                if mu == 0.0:
                    p.sub_(lr * p.grad)
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                b = state["momentum_buffer"]
                b.mul_(mu).add_((1.0 - mu) * p.grad)
                p.sub_(lr * b)


@mutant(replaces="SGD.step", why="momentum buffers kept in a dict attribute keyed by id(p), not in self.state (lost by a state_dict round trip)")
def sgd_buffer_attribute(self, closure=None):
    if not hasattr(self, "buffers"):
        self.buffers = {}
    for group in self.param_groups:
        lr, mu = group["lr"], group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            with torch.no_grad():
                if mu == 0.0:
                    p.sub_(lr * p.grad)
                    continue
                if id(p) not in self.buffers:
                    self.buffers[id(p)] = p.grad.clone()
                else:
                    self.buffers[id(p)].mul_(mu).add_(p.grad)
                p.sub_(lr * self.buffers[id(p)])


@mutant(replaces="optimizer_state_bytes", why="counts elements instead of bytes")
def state_numel(optimizer):
    return sum(v.numel() for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor))


@mutant(replaces="optimizer_state_bytes", why="adds the parameters' own memory to the optimizer state")
def state_plus_params(optimizer):
    state = sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values()
                if isinstance(v, torch.Tensor))
    params = sum(p.numel() * p.element_size() for g in optimizer.param_groups for p in g["params"])
    return state + params


@mutant(replaces="optimizer_state_bytes", why="skips 0-d tensors (torch.optim's tensor step counts are state too)")
def state_skips_scalars(optimizer):
    return sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values()
               if isinstance(v, torch.Tensor) and v.dim() > 0)
