"""Mutants of solutions/gradients.py: each is one bug a student plausibly writes."""

import torch

from grader.authoring.mutants import edit, mutant


edit("linear_regression_grad_double", within="linear_regression_grad",
     why="forgets the ½: returns twice the gradient",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new='return 2 * torch.einsum("...d,...->d", x, x @ w - y)')


edit("linear_regression_grad_sign", within="linear_regression_grad",
     why="sign flipped: uses (y − x·w)",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new='return torch.einsum("...d,...->d", x, y - x @ w)')


edit("linear_regression_grad_mean", within="linear_regression_grad",
     why="averages over the batch instead of summing",
     old='return torch.einsum("...d,...->d", x, residual)',
     new=('grad = torch.einsum("...d,...->d", x, residual)\n'
          "    return grad / x.shape[0] if x.dim() == 2 else grad"))


edit("linear_regression_grad_autograd", within="linear_regression_grad",
     why="uses autograd instead of the formula",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new=("with torch.enable_grad():\n"
          "        w = w.detach().requires_grad_(True)\n"
          "        loss = 0.5 * (x @ w - y).pow(2).sum()\n"
          "        return torch.autograd.grad(loss, w)[0]"))


edit("two_layer_grads_batch_mean", within="two_layer_grads",
     why="divides by the batch size B instead of all B·K entries of the mean",
     old="grad_h2 = 2 * h2 / h2.numel()",
     new="grad_h2 = 2 * h2 / h2.shape[0]")


edit("two_layer_grads_no_two", within="two_layer_grads",
     why="forgets the factor 2 of the square",
     old="grad_h2 = 2 * h2 / h2.numel()",
     new="grad_h2 = h2 / h2.numel()")


edit("two_layer_grads_swapped", within="two_layer_grads",
     why="returns (grad_w2, grad_w1): the wrong order",
     old="return grad_w1, grad_w2",
     new="return grad_w2, grad_w1")


edit("two_layer_grads_no_transpose", within="two_layer_grads",
     why="backpropagates into h1 with w2 where w2ᵀ is needed (right shapes when H == K)",
     old="grad_h1 = grad_h2 @ w2.T",
     new="grad_h1 = grad_h2 @ w2 if w2.shape[0] == w2.shape[1] else grad_h2 @ w2.T")


@mutant(replaces="two_layer_grads", why="uses autograd (torch.autograd.grad) instead of writing the matmuls", against="2a2a0e4ed49c")
def two_layer_grads_autograd(x, w1, w2):
    with torch.enable_grad():
        w1 = w1.detach().requires_grad_(True)
        w2 = w2.detach().requires_grad_(True)
        loss = (x @ w1 @ w2).pow(2).mean()
        return torch.autograd.grad(loss, (w1, w2))


edit("backward_no_transposes", within="MatmulFunction.backward",
     why="forgets the transposes: grad_a = grad_out @ b, grad_b = a @ grad_out",
     edits=[("grad_out @ b.T",
             "grad_out @ b"),
            ("a.T @ grad_out",
             "a @ grad_out")])


edit("backward_swapped", within="MatmulFunction.backward",
     why="returns (grad_b, grad_a): the wrong order",
     old="return grad_a, grad_b",
     new="return grad_b, grad_a")


edit("backward_grad_b_transposed", within="MatmulFunction.backward",
     why="computes grad_b as grad_outᵀ @ a (transposed)",
     old="a.T @ grad_out",
     new="grad_out.T @ a")


edit("backward_autograd", within="MatmulFunction.backward",
     why="lets autograd do the backward (torch.autograd.grad on a recomputed a @ b)",
     old=("grad_a = grad_out @ b.T if ctx.needs_input_grad[0] else None\n"
          "        grad_b = a.T @ grad_out if ctx.needs_input_grad[1] else None\n"
          "        return grad_a, grad_b"),
     new=("with torch.enable_grad():\n"
          "            a, b = a.detach().requires_grad_(True), b.detach().requires_grad_(True)\n"
          "            return torch.autograd.grad(a @ b, (a, b), grad_out)"))


# ---- breaking pass (2026-11-22) ----

# ---------------------------------------------------------------- linear_regression_grad

edit("bp_lr_sum0", within="linear_regression_grad",
     why="sums over dim 0, which for one example (d,) sums over d: returns a scalar",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new="return ((x @ w - y).unsqueeze(-1) * x).sum(0)")


edit("bp_lr_float32_accumulator", within="linear_regression_grad",
     why="accumulates into torch.zeros(d) (float32), losing float64 precision and dtype",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new=("xs = x.reshape(-1, x.shape[-1])\n"
          "    ys = y.reshape(-1)\n"
          "    grad = torch.zeros(x.shape[-1])\n"
          "    for i in range(xs.shape[0]):\n"
          "        grad += (xs[i] @ w - ys[i]) * xs[i]\n"
          "    return grad"))


edit("bp_lr_autograd", within="linear_regression_grad",
     why="uses autograd (a clone requiring grad, .backward()), against the rule",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new=("with torch.inference_mode(False), torch.enable_grad():\n"
          "        wc = w.clone().requires_grad_(True)\n"
          "        loss = 0.5 * ((x.clone() @ wc - y.clone()) ** 2).sum()\n"
          "        loss.backward()\n"
          "        return wc.grad.detach()"))


# ---------------------------------------------------------------- two_layer_grads

edit("bp_two_float32", within="two_layer_grads",
     why="computes in float32 and casts back: float64 precision lost",
     edits=[("h1 = x @ w1",
             ("dtype = w1.dtype\n"
              "    x, w1, w2 = x.float(), w1.float(), w2.float()\n"
              "    h1 = x @ w1")),
            ("return grad_w1, grad_w2",
             "return grad_w1.to(dtype), grad_w2.to(dtype)")])


@mutant(replaces="two_layer_grads", why="uses torch.autograd.grad on clones, against the rule (values right)", against="2a2a0e4ed49c")
def bp_two_autograd(x, w1, w2):
    with torch.inference_mode(False), torch.enable_grad():
        a = w1.clone().requires_grad_(True)
        b = w2.clone().requires_grad_(True)
        loss = ((x.clone() @ a @ b) ** 2).mean()
        ga, gb = torch.autograd.grad(loss, (a, b))
    return ga.detach(), gb.detach()


@mutant(replaces="two_layer_grads", why="uses torch.func.grad, against the rule (values right)", against="2a2a0e4ed49c")
def bp_two_func(x, w1, w2):
    from torch import func as tf
    with torch.inference_mode(False):
        return tf.grad(lambda a, b: ((x.clone() @ a @ b) ** 2).mean(), argnums=(0, 1))(w1.clone(), w2.clone())


# ---------------------------------------------------------------- MatmulFunction

edit("BpMatmulStash", within="MatmulFunction",
     why="stashes ctx.a = a instead of save_for_backward: an in-place change after forward silently corrupts the gradients",
     edits=[("ctx.save_for_backward(a, b)",
             "ctx.a, ctx.b = a, b"),
            ("a, b = ctx.saved_tensors",
             "a, b = ctx.a, ctx.b")])


edit("BpMatmulStashDetach", within="MatmulFunction",
     why="stashes detached views ctx.a = a.detach(): shares storage, so an in-place change corrupts the gradients",
     edits=[("ctx.save_for_backward(a, b)",
             "ctx.a, ctx.b = a.detach(), b.detach()"),
            ("a, b = ctx.saved_tensors",
             "a, b = ctx.a, ctx.b")])


edit("BpMatmulOnes", within="MatmulFunction",
     why="backward assumes grad_out is all ones (right only for .sum().backward())",
     old=("grad_a = grad_out @ b.T if ctx.needs_input_grad[0] else None\n"
          "        grad_b = a.T @ grad_out if ctx.needs_input_grad[1] else None\n"
          "        return grad_a, grad_b"),
     new=("ones = torch.ones_like(grad_out)\n"
          "        return ones @ b.T, a.T @ ones"))


edit("BpMatmulNeedsSwapped", within="MatmulFunction",
     why="needs_input_grad indices swapped: a None gradient where one is needed when only one input "
         "requires grad",
     edits=[("grad_a = grad_out @ b.T if ctx.needs_input_grad[0] else None",
            "grad_a = grad_out @ b.T if ctx.needs_input_grad[1] else None"),
           ("grad_b = a.T @ grad_out if ctx.needs_input_grad[1] else None",
            "grad_b = a.T @ grad_out if ctx.needs_input_grad[0] else None")])


edit("BpMatmulSingle", within="MatmulFunction",
     why="returns a bare tensor (not a pair) when b needs no gradient: autograd rejects it",
     old=("grad_a = grad_out @ b.T if ctx.needs_input_grad[0] else None\n"
          "        grad_b = a.T @ grad_out if ctx.needs_input_grad[1] else None\n"
          "        return grad_a, grad_b"),
     new=("if not ctx.needs_input_grad[1]:\n"
          "            return grad_out @ b.T\n"
          "        return grad_out @ b.T, a.T @ grad_out"))


edit("BpMatmulFloat32Backward", within="MatmulFunction",
     why="backward in float32, cast back: passes gradcheck's loose tolerance, not float64 precision",
     old=("grad_a = grad_out @ b.T if ctx.needs_input_grad[0] else None\n"
          "        grad_b = a.T @ grad_out if ctx.needs_input_grad[1] else None\n"
          "        return grad_a, grad_b"),
     new=("g = grad_out.float()\n"
          "        return (g @ b.float().T).to(a.dtype), (a.float().T @ g).to(b.dtype)"))


edit("BpMatmulAutograd", within="MatmulFunction",
     why="backward calls torch.autograd.grad on a @ b, against the rule (values right)",
     old=("grad_a = grad_out @ b.T if ctx.needs_input_grad[0] else None\n"
          "        grad_b = a.T @ grad_out if ctx.needs_input_grad[1] else None\n"
          "        return grad_a, grad_b"),
     new=("with torch.enable_grad():\n"
          "            a2 = a.detach().requires_grad_(True)\n"
          "            b2 = b.detach().requires_grad_(True)\n"
          "            return torch.autograd.grad(a2 @ b2, (a2, b2), grad_out)"))


edit("BpMatmulSaveData", within="MatmulFunction",
     why="save_for_backward(a.data, b.data): .data has its own version counter, so an in-place change after forward silently corrupts the gradients",
     old="ctx.save_for_backward(a, b)",
     new="ctx.save_for_backward(a.data, b.data)")


edit("BpMatmulHalfStash", within="MatmulFunction",
     why="saves a but keeps b as a ctx attribute: an in-place change of b after forward silently corrupts a's gradient",
     edits=[("ctx.save_for_backward(a, b)",
             ("ctx.save_for_backward(a)\n"
              "        ctx.b = b")),
            ("a, b = ctx.saved_tensors",
             ("(a,) = ctx.saved_tensors\n"
              "        b = ctx.b"))])


# -- third independent pass (2026-11-23): wrong code that passed before the tests checked it ------------

edit("lr_shape_detect", within="linear_regression_grad",
     why="single example detected by x.shape[0]==w.shape[0]: a batch with n == d is treated as one example",
     old='return torch.einsum("...d,...->d", x, residual)',
     new=("if x.shape[0] == w.shape[0]:\n"
          "        return residual.sum() * x.sum(0) if x.dim() == 2 else residual * x\n"
          "    return x.T @ residual"))


edit("lr_inplace_x", within="linear_regression_grad",
     why="modifies the caller's x in place (x.mul_) to save memory",
     old='return torch.einsum("...d,...->d", x, residual)',
     new=("if x.dim() == 1:\n"
          "        return x.mul_(residual)\n"
          "    return x.mul_(residual.unsqueeze(-1)).sum(0)"))


edit("lr_inplace_w", within="linear_regression_grad",
     why="modifies the caller's w in place (w.sub_ to reuse its buffer)",
     old=("residual = x @ w - y\n"
          '    return torch.einsum("...d,...->d", x, residual)'),
     new=("pred = x @ w\n"
          "    residual = pred - y\n"
          '    g = torch.einsum("...d,...->d", x, residual)\n'
          "    return w.zero_().add_(g)"))


edit("tl_t_inplace", within="two_layer_grads",
     why="transposes w2 in place (w2.t_() typo for w2.t()): corrupts the caller's w2",
     old="grad_h1 = grad_h2 @ w2.T",
     new="grad_h1 = grad_h2 @ w2.t_()")


edit("tl_inplace_x", within="two_layer_grads",
     why="scales the caller's x in place (x.mul_) to fold in 2/(B·K)",
     edits=[("grad_h2 = 2 * h2 / h2.numel()",
             "grad_h2 = h2"),
            ("grad_w2 = h1.T @ grad_h2",
             "grad_w2 = h1.T @ grad_h2 * (2 / h2.numel())"),
            ("grad_w1 = x.T @ grad_h1",
             "grad_w1 = x.mul_(2 / h2.numel()).T @ grad_h1")])


edit("tl_list", within="two_layer_grads",
     why="returns a list, not the tuple the docstring asks for",
     old="return grad_w1, grad_w2",
     new="return [grad_w1, grad_w2]")


edit("tl_alias_w1", within="two_layer_grads",
     why="matmul(..., out=w1): writes grad_w1 into the caller's w1 (overwrites the weights)",
     old="grad_w1 = x.T @ grad_h1",
     new="grad_w1 = torch.matmul(x.T, grad_h1, out=w1)")


edit("lr_out_x", within="linear_regression_grad",
     why="single example: x.mul_(residual) overwrites the caller's x and returns it",
     old='return torch.einsum("...d,...->d", x, residual)',
     new=("if x.dim() == 1:\n"
          "        return x.mul_(residual)\n"
          "    return x.T @ residual"))
