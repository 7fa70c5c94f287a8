"""Correct but different formulations of solutions/gradients.py: every graded test must pass them."""

import torch

from grader.authoring.mutants import variant


@variant(replaces="linear_regression_grad", why="flattens to a batch of rows and uses X.T @ r")
def lr_reshape(x, w, y):
    xs = x.reshape(-1, x.shape[-1])
    return xs.T @ (xs @ w - y.reshape(-1))


@variant(replaces="linear_regression_grad", why="broadcasts residual·x (elementwise products), then sums the batch axis")
def lr_broadcast(x, w, y):
    r = (x * w).sum(-1) - y
    g = r.unsqueeze(-1) * x
    return g if g.dim() == 1 else g.sum(0)


@variant(replaces="linear_regression_grad", why="torch.mv / scalar times vector, one branch per case")
def lr_branches(x, w, y):
    if x.dim() == 1:
        return (torch.dot(x, w) - y) * x
    return torch.mv(x.t(), torch.mv(x, w) - y)


@variant(replaces="two_layer_grads", why="einsum, with the 2/(B·K) factor applied at the end")
def two_einsum(x, w1, w2):
    B, K = x.shape[0], w2.shape[1]
    h1 = torch.einsum("bd,dh->bh", x, w1)
    h2 = torch.einsum("bh,hk->bk", h1, w2)
    gw2 = torch.einsum("bh,bk->hk", h1, h2) * (2.0 / (B * K))
    gw1 = torch.einsum("bd,bk,hk->dh", x, h2, w2) * (2.0 / (B * K))
    return gw1, gw2


@variant(replaces="two_layer_grads", why="reuses MatmulFunction.backward's formulas through a helper nested in the body")
def two_helper(x, w1, w2):
    def matmul_backward(a, b, g):
        return g @ b.mT, a.mT @ g

    h1 = torch.matmul(x, w1)
    h2 = torch.matmul(h1, w2)
    g2 = h2 * (2 / (h2.shape[0] * h2.shape[1]))
    g1, gw2 = matmul_backward(h1, w2, g2)
    _, gw1 = matmul_backward(x, w1, g1)
    return gw1, gw2


@variant(replaces="MatmulFunction", why="torch.mm and .t(), always both gradients, grad_b as (grad_outᵀ a)ᵀ")
class MatmulMm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.mm(a, b)

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return torch.mm(grad_out, b.t()), torch.mm(grad_out.t(), a).t()


@variant(replaces="MatmulFunction", why="saves the transposed views a.mT, b.mT through save_for_backward")
class MatmulSaveT(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a.mT, b.mT)
        return torch.matmul(a, b)

    @staticmethod
    def backward(ctx, grad_out):
        at, bt = ctx.saved_tensors
        grad_a = grad_out @ bt if ctx.needs_input_grad[0] else None
        grad_b = at @ grad_out if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


@variant(replaces="MatmulFunction", why="saves private copies (clone) with save_for_backward: gradients stay those at forward time")
class MatmulSaveClones(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a.detach().clone(), b.detach().clone())
        return a @ b

    @staticmethod
    def backward(ctx, grad_out):
        a, b = ctx.saved_tensors
        return grad_out @ b.T, a.T @ grad_out
