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
