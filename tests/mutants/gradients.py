"""Mutants of solutions/gradients.py: each is one bug a student plausibly writes."""

import torch

from grader.mutants import mutant


@mutant(replaces="linear_regression_grad", why="forgets the ½: returns twice the gradient")
def linear_regression_grad_double(x, w, y):
    return 2 * torch.einsum("...d,...->d", x, x @ w - y)


@mutant(replaces="linear_regression_grad", why="sign flipped: uses (y − x·w)")
def linear_regression_grad_sign(x, w, y):
    return torch.einsum("...d,...->d", x, y - x @ w)


@mutant(replaces="linear_regression_grad", why="averages over the batch instead of summing")
def linear_regression_grad_mean(x, w, y):
    residual = x @ w - y
    grad = torch.einsum("...d,...->d", x, residual)
    return grad / x.shape[0] if x.dim() == 2 else grad


@mutant(replaces="linear_regression_grad", why="uses autograd instead of the formula")
def linear_regression_grad_autograd(x, w, y):
    with torch.enable_grad():
        w = w.detach().requires_grad_(True)
        loss = 0.5 * (x @ w - y).pow(2).sum()
        return torch.autograd.grad(loss, w)[0]


@mutant(replaces="two_layer_grads", why="divides by the batch size B instead of all B·K entries of the mean")
def two_layer_grads_batch_mean(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    grad_h2 = 2 * h2 / h2.shape[0]
    return x.T @ (grad_h2 @ w2.T), h1.T @ grad_h2


@mutant(replaces="two_layer_grads", why="forgets the factor 2 of the square")
def two_layer_grads_no_two(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    grad_h2 = h2 / h2.numel()
    return x.T @ (grad_h2 @ w2.T), h1.T @ grad_h2


@mutant(replaces="two_layer_grads", why="returns (grad_w2, grad_w1): the wrong order")
def two_layer_grads_swapped(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    grad_h2 = 2 * h2 / h2.numel()
    return h1.T @ grad_h2, x.T @ (grad_h2 @ w2.T)


@mutant(replaces="two_layer_grads", why="backpropagates into h1 with w2 where w2ᵀ is needed (right shapes when H == K)")
def two_layer_grads_no_transpose(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    grad_h2 = 2 * h2 / h2.numel()
    grad_h1 = grad_h2 @ w2 if w2.shape[0] == w2.shape[1] else grad_h2 @ w2.T
    return x.T @ grad_h1, h1.T @ grad_h2


@mutant(replaces="two_layer_grads", why="uses autograd (torch.autograd.grad) instead of writing the matmuls")
def two_layer_grads_autograd(x, w1, w2):
    with torch.enable_grad():
        w1 = w1.detach().requires_grad_(True)
        w2 = w2.detach().requires_grad_(True)
        loss = (x @ w1 @ w2).pow(2).mean()
        return torch.autograd.grad(loss, (w1, w2))


@mutant(replaces="MatmulFunction.backward", why="forgets the transposes: grad_a = grad_out @ b, grad_b = a @ grad_out")
def backward_no_transposes(ctx, grad_out):
    a, b = ctx.saved_tensors
    return grad_out @ b, a @ grad_out


@mutant(replaces="MatmulFunction.backward", why="returns (grad_b, grad_a): the wrong order")
def backward_swapped(ctx, grad_out):
    a, b = ctx.saved_tensors
    return a.T @ grad_out, grad_out @ b.T


@mutant(replaces="MatmulFunction.backward", why="computes grad_b as grad_outᵀ @ a (transposed)")
def backward_grad_b_transposed(ctx, grad_out):
    a, b = ctx.saved_tensors
    return grad_out @ b.T, grad_out.T @ a


@mutant(replaces="MatmulFunction.backward", why="lets autograd do the backward (torch.autograd.grad on a recomputed a @ b)")
def backward_autograd(ctx, grad_out):
    a, b = ctx.saved_tensors
    with torch.enable_grad():
        a, b = a.detach().requires_grad_(True), b.detach().requires_grad_(True)
        return torch.autograd.grad(a @ b, (a, b), grad_out)


# ---- breaking pass (2026-11-22) ----

# ---------------------------------------------------------------- linear_regression_grad

@mutant(replaces="linear_regression_grad", why="sums over dim 0, which for one example (d,) sums over d: returns a scalar")
def bp_lr_sum0(x, w, y):
    return ((x @ w - y).unsqueeze(-1) * x).sum(0)


@mutant(replaces="linear_regression_grad", why="accumulates into torch.zeros(d) (float32), losing float64 precision and dtype")
def bp_lr_float32_accumulator(x, w, y):
    xs = x.reshape(-1, x.shape[-1])
    ys = y.reshape(-1)
    grad = torch.zeros(x.shape[-1])
    for i in range(xs.shape[0]):
        grad += (xs[i] @ w - ys[i]) * xs[i]
    return grad


@mutant(replaces="linear_regression_grad", why="uses autograd (a clone requiring grad, .backward()), against the rule")
def bp_lr_autograd(x, w, y):
    with torch.inference_mode(False), torch.enable_grad():
        wc = w.clone().requires_grad_(True)
        loss = 0.5 * ((x.clone() @ wc - y.clone()) ** 2).sum()
        loss.backward()
        return wc.grad.detach()


# ---------------------------------------------------------------- two_layer_grads

@mutant(replaces="two_layer_grads", why="computes in float32 and casts back: float64 precision lost")
def bp_two_float32(x, w1, w2):
    xf, w1f, w2f = x.float(), w1.float(), w2.float()
    h1 = xf @ w1f
    h2 = h1 @ w2f
    g = 2 * h2 / h2.numel()
    return (xf.T @ (g @ w2f.T)).to(w1.dtype), (h1.T @ g).to(w2.dtype)


@mutant(replaces="two_layer_grads", why="uses torch.autograd.grad on clones, against the rule (values right)")
def bp_two_autograd(x, w1, w2):
    with torch.inference_mode(False), torch.enable_grad():
        a = w1.clone().requires_grad_(True)
        b = w2.clone().requires_grad_(True)
        loss = ((x.clone() @ a @ b) ** 2).mean()
        ga, gb = torch.autograd.grad(loss, (a, b))
    return ga.detach(), gb.detach()


@mutant(replaces="two_layer_grads", why="uses torch.func.grad, against the rule (values right)")
def bp_two_func(x, w1, w2):
    from torch import func as tf
    with torch.inference_mode(False):
        return tf.grad(lambda a, b: ((x.clone() @ a @ b) ** 2).mean(), argnums=(0, 1))(w1.clone(), w2.clone())


# ---------------------------------------------------------------- MatmulFunction

@mutant(replaces="MatmulFunction", why="stashes ctx.a = a instead of save_for_backward: an in-place change after forward silently corrupts the gradients")
class BpMatmulStash(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.a, ctx.b = a, b
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out @ ctx.b.T, ctx.a.T @ grad_out


@mutant(replaces="MatmulFunction", why="stashes detached views ctx.a = a.detach(): shares storage, so an in-place change corrupts the gradients")
class BpMatmulStashDetach(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.a, ctx.b = a.detach(), b.detach()
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out @ ctx.b.T, ctx.a.T @ grad_out


@mutant(replaces="MatmulFunction", why="backward assumes grad_out is all ones (right only for .sum().backward())")
class BpMatmulOnes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        ones = torch.ones_like(grad_out)
        return ones @ b.T, a.T @ ones


@mutant(replaces="MatmulFunction", why="needs_input_grad indices swapped: a None gradient where one is needed when only one input requires grad")
class BpMatmulNeedsSwapped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        grad_a = grad_out @ b.T if ctx.needs_input_grad[1] else None
        grad_b = a.T @ grad_out if ctx.needs_input_grad[0] else None
        return grad_a, grad_b


@mutant(replaces="MatmulFunction", why="returns a bare tensor (not a pair) when b needs no gradient: autograd rejects it")
class BpMatmulSingle(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        if not ctx.needs_input_grad[1]:
            return grad_out @ b.T
        return grad_out @ b.T, a.T @ grad_out


@mutant(replaces="MatmulFunction", why="backward in float32, cast back: passes gradcheck's loose tolerance, not float64 precision")
class BpMatmulFloat32Backward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        g = grad_out.float()
        return (g @ b.float().T).to(a.dtype), (a.float().T @ g).to(b.dtype)


@mutant(replaces="MatmulFunction", why="backward calls torch.autograd.grad on a @ b, against the rule (values right)")
class BpMatmulAutograd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        with torch.enable_grad():
            a2 = a.detach().requires_grad_(True)
            b2 = b.detach().requires_grad_(True)
            return torch.autograd.grad(a2 @ b2, (a2, b2), grad_out)


@mutant(replaces="MatmulFunction", why="save_for_backward(a.data, b.data): .data has its own version counter, so an in-place change after forward silently corrupts the gradients")
class BpMatmulSaveData(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a.data, b.data)
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return grad_out @ b.T, a.T @ grad_out


@mutant(replaces="MatmulFunction", why="saves a but keeps b as a ctx attribute: an in-place change of b after forward silently corrupts a's gradient")
class BpMatmulHalfStash(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a)
        ctx.b = b
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        (a,) = ctx.saved_tensors
        return grad_out @ ctx.b.T, a.T @ grad_out


# -- third independent pass (2026-11-23): wrong code that passed before the tests checked it ------------

@mutant(replaces="linear_regression_grad", why="single example detected by x.shape[0]==w.shape[0]: a batch with n == d is treated as one example")
def lr_shape_detect(x, w, y):
    residual = x @ w - y
    if x.shape[0] == w.shape[0]:
        return residual.sum() * x.sum(0) if x.dim() == 2 else residual * x
    return x.T @ residual


@mutant(replaces="linear_regression_grad", why="modifies the caller's x in place (x.mul_) to save memory")
def lr_inplace_x(x, w, y):
    residual = x @ w - y
    if x.dim() == 1:
        return x.mul_(residual)
    return x.mul_(residual.unsqueeze(-1)).sum(0)


@mutant(replaces="linear_regression_grad", why="modifies the caller's w in place (w.sub_ to reuse its buffer)")
def lr_inplace_w(x, w, y):
    pred = x @ w
    residual = pred - y
    g = torch.einsum("...d,...->d", x, residual)
    return w.zero_().add_(g)


@mutant(replaces="two_layer_grads", why="transposes w2 in place (w2.t_() typo for w2.t()): corrupts the caller's w2")
def tl_t_inplace(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    g2 = 2 * h2 / h2.numel()
    gw2 = h1.T @ g2
    gh1 = g2 @ w2.t_()
    return x.T @ gh1, gw2


@mutant(replaces="two_layer_grads", why="scales the caller's x in place (x.mul_) to fold in 2/(B·K)")
def tl_inplace_x(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    n = h2.numel()
    g2 = h2
    gw2 = h1.T @ g2 * (2 / n)
    gh1 = g2 @ w2.T
    return x.mul_(2 / n).T @ gh1, gw2


@mutant(replaces="two_layer_grads", why="returns a list, not the tuple the docstring asks for")
def tl_list(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    g2 = 2 * h2 / h2.numel()
    return [x.T @ (g2 @ w2.T), h1.T @ g2]


@mutant(replaces="two_layer_grads", why="matmul(..., out=w1): writes grad_w1 into the caller's w1 (overwrites the weights)")
def tl_alias_w1(x, w1, w2):
    h1 = x @ w1
    h2 = h1 @ w2
    g2 = 2 * h2 / h2.numel()
    gw2 = h1.T @ g2
    gw1 = torch.matmul(x.T, g2 @ w2.T, out=w1)
    return gw1, gw2


@mutant(replaces="linear_regression_grad", why="single example: x.mul_(residual) overwrites the caller's x and returns it")
def lr_out_x(x, w, y):
    residual = x @ w - y
    if x.dim() == 1:
        return x.mul_(residual)
    return x.T @ residual
