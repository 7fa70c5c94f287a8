"""Correct variants of solutions/optimizers.py: formulations the handout allows, which every
graded test must accept (`grader validate` proves it)."""

import math

import torch

from grader.authoring.mutants import variant


@variant(replaces="SGD.step", why="momentum buffer starts at zeros, then b = mu*b + g on every step (b = g on the first)")
@torch.no_grad()
def var_sgd_zero_buffer(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["momentum"] == 0.0:
                p.sub_(group["lr"] * p.grad)
                continue
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p)
            b = state["momentum_buffer"]
            b.mul_(group["momentum"]).add_(p.grad)
            p.sub_(group["lr"] * b)
    return loss


@variant(replaces="AdaGrad.step", why="out-of-place arithmetic, the state tensor replaced each step")
@torch.no_grad()
def var_adagrad_out_of_place(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            s = state.get("sum", torch.zeros_like(p)) + p.grad * p.grad
            state["sum"] = s
            p.copy_(p - group["lr"] * p.grad / (torch.sqrt(s) + group["eps"]))
    return loss


@variant(replaces="RMSProp.step", why="moving average via lerp: v <- v + (1 - alpha) (g^2 - v)")
@torch.no_grad()
def var_rmsprop_lerp(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["square_avg"] = torch.zeros_like(p)
            v = state["square_avg"]
            v.lerp_(p.grad * p.grad, 1.0 - group["alpha"])
            p.sub_(group["lr"] * p.grad / (v.sqrt() + group["eps"]))
    return loss


@variant(replaces="Adam.step", why="bias corrections folded into the step size alpha_t, eps uncorrected")
@torch.no_grad()
def var_adam_folded(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad + group["weight_decay"] * p
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["step"] += 1
            t = state["step"]
            state["exp_avg"] = beta1 * state["exp_avg"] + (1 - beta1) * g
            state["exp_avg_sq"] = beta2 * state["exp_avg_sq"] + (1 - beta2) * g * g
            alpha_t = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
            p -= alpha_t * state["exp_avg"] / (state["exp_avg_sq"].sqrt() + group["eps"])
    return loss


@variant(replaces="AdamW.step", why="decoupled decay applied after the Adam update, bias-corrected moments computed explicitly")
@torch.no_grad()
def var_adamw_decay_after(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        beta1, beta2 = group["betas"]
        lr = group["lr"]
        for p in group["params"]:
            if p.grad is None:
                continue
            st = self.state[p]
            if "step" not in st:
                st["step"], st["exp_avg"], st["exp_avg_sq"] = 0, torch.zeros_like(p), torch.zeros_like(p)
            st["step"] += 1
            t = st["step"]
            st["exp_avg"].lerp_(p.grad, 1 - beta1)
            st["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad.square())
            m_hat = st["exp_avg"] / (1 - beta1**t)
            v_hat = st["exp_avg_sq"] / (1 - beta2**t)
            p.sub_(lr * m_hat / (v_hat.sqrt() + group["eps"]))
            p.sub_(lr * group["weight_decay"] * p)
    return loss


@variant(replaces="optimizer_state_bytes", why="uses Tensor.nbytes, iterating the state dict's items")
def var_state_bytes_nbytes(optimizer):
    total = 0
    for _, per_param in optimizer.state.items():
        for v in per_param.values():
            if torch.is_tensor(v):
                total += int(v.nbytes)
    return total


@variant(replaces="SGD.step", why="hyperparameters looked up per parameter, update p.data in place, buffer via torch.clone")
@torch.no_grad()
def var_sgd_data(self, closure=None):
    loss = closure_loss = None
    if closure is not None:
        with torch.enable_grad():
            closure_loss = closure()
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            d_p = p.grad
            if group["momentum"] > 0:
                buf = self.state[p].get("momentum_buffer")
                if buf is None:
                    buf = self.state[p]["momentum_buffer"] = torch.clone(d_p).detach()
                else:
                    buf.mul_(group["momentum"]).add_(d_p)
                d_p = buf
            p.data.add_(d_p, alpha=-group["lr"])
    loss = closure_loss
    return loss


# Breaking pass 3 (session 5).

@variant(replaces="Adam.step", why="the literal formula, out of place: m_hat, v_hat as new tensors")
@torch.no_grad()
def bk5_adam_literal(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        b1, b2 = group["betas"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad
            if group["weight_decay"]:
                g = g + group["weight_decay"] * p
            st = self.state[p]
            if "step" not in st:
                st.update(step=0, exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
            st["step"] += 1
            st["exp_avg"] = b1 * st["exp_avg"] + (1 - b1) * g
            st["exp_avg_sq"] = b2 * st["exp_avg_sq"] + (1 - b2) * g ** 2
            m_hat = st["exp_avg"] / (1 - b1 ** st["step"])
            v_hat = st["exp_avg_sq"] / (1 - b2 ** st["step"])
            p -= group["lr"] * m_hat / (torch.sqrt(v_hat) + group["eps"])
    return loss


@variant(replaces="optimizer_state_bytes", why="walks state_dict()['state'] and asks each storage for its bytes")
def bk5_state_bytes_storage(optimizer):
    total = 0
    for s in optimizer.state_dict()["state"].values():
        for v in s.values():
            if torch.is_tensor(v):
                total += v.untyped_storage().nbytes()
    return int(total)


@variant(replaces="Adam.step", why="step count kept as a float32 0-d tensor, as torch.optim keeps it")
@torch.no_grad()
def ok_adam_tensor_step(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)
            state = self.state[p]
            if not state:
                state["step"] = torch.tensor(0.0)
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            state["step"] += 1
            t = int(state["step"].item())
            m, v = state["exp_avg"], state["exp_avg_sq"]
            m.mul_(beta1).add_(g, alpha=1.0 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
            denom = (v.sqrt() / math.sqrt(1.0 - beta2**t)).add_(eps)
            p.addcdiv_(m, denom, value=-lr / (1.0 - beta1**t))
    return loss


@variant(replaces="Adam.step", why="state under its own key names m / v / t (not torch.optim's)")
@torch.no_grad()
def ok_adam_state_names(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        lr, (beta1, beta2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad if decay == 0.0 else p.grad.add(p, alpha=decay)
            state = self.state[p]
            if not state:
                state["t"] = 0
                state["m"] = torch.zeros_like(p)
                state["v"] = torch.zeros_like(p)
            state["t"] += 1
            t, m, v = state["t"], state["m"], state["v"]
            m.mul_(beta1).add_(g, alpha=1.0 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
            denom = (v.sqrt() / math.sqrt(1.0 - beta2**t)).add_(eps)
            p.addcdiv_(m, denom, value=-lr / (1.0 - beta1**t))
    return loss


@variant(replaces="AdaGrad.step", why="state under the lecture's name g2 (not torch.optim's sum)")
@torch.no_grad()
def ok_adagrad_state_g2(self, closure=None):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    for group in self.param_groups:
        lr, eps = group["lr"], group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad
            state = self.state[p]
            if "g2" not in state:
                state["g2"] = torch.zeros_like(p)
            s = state["g2"]
            s.addcmul_(g, g)
            p.addcdiv_(g, s.sqrt().add_(eps), value=-lr)
    return loss
