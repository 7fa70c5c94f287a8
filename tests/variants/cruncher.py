"""Correct but different formulations of solutions/cruncher.py: every graded test must pass them."""

import math

import torch
from torch import nn

from grader.authoring.mutants import variant


@variant(replaces="Linear.__init__", why="standard truncated normal on [-3, 3], then scaled by σ")
def linear_scaled_standard(self, input_dim, output_dim):
    super().__init__()
    w = nn.init.trunc_normal_(torch.empty(input_dim, output_dim), mean=0.0, std=1.0, a=-3.0, b=3.0)
    self.weight = nn.Parameter(w / math.sqrt(input_dim))


@variant(replaces="Linear.__init__", why="rejection sampling from torch.randn until every entry is within 3σ")
def linear_rejection(self, input_dim, output_dim):
    super().__init__()
    w = torch.randn(input_dim, output_dim)
    bad = w.abs() > 3
    while bad.any():
        w[bad] = torch.randn(int(bad.sum()))
        bad = w.abs() > 3
    self.weight = nn.Parameter(w / math.sqrt(input_dim))


@variant(replaces="Linear.__init__", why="register_parameter, trunc_normal_ with positional arguments, then scaled in place")
def linear_register_positional(self, input_dim, output_dim):
    super().__init__()
    sigma = input_dim ** -0.5
    w = torch.empty(input_dim, output_dim)
    nn.init.trunc_normal_(w, 0.0, 1.0, -3.0, 3.0)
    self.register_parameter("weight", nn.Parameter(w.mul_(sigma)))


@variant(replaces="Linear.forward", why="torch.matmul / einsum instead of @")
def linear_forward_einsum(self, x):
    return torch.einsum("...i,io->...o", x, self.weight)


@variant(replaces="Cruncher.forward", why="indexes the size-1 axis away ([..., 0]) and calls forward explicitly")
def cruncher_forward_index(self, x):
    h = x
    for i in range(len(self.layers)):
        h = self.layers[i].forward(h)
    return self.final(h)[..., 0]


@variant(replaces="Cruncher.forward", why="functools.reduce over the layers, then view(-1)")
def cruncher_forward_reduce(self, x):
    import functools
    h = functools.reduce(lambda acc, layer: layer(acc), self.layers, x)
    return self.final(h).view(-1)


@variant(replaces="get_num_parameters", why="math.prod of each parameter's shape, deduplicated by id over named_parameters")
def count_prod(model):
    seen = {}
    for _, p in model.named_parameters(remove_duplicate=False):
        seen[id(p)] = p
    return sum(math.prod(p.shape) for p in seen.values())


@variant(replaces="cruncher_memory_bytes", why="through memory.bytes_per_parameter plus 4 bytes per activation")
def memory_via_bytes_per_parameter(batch, dim, num_layers, optimizer="adagrad"):
    from .memory import bytes_per_parameter
    return cruncher_num_parameters(dim, num_layers) * bytes_per_parameter(optimizer) + 4 * batch * dim * num_layers


@variant(replaces="Cruncher.__init__", why="layers as an nn.Sequential of the Linear layers (the same state-dict keys)")
def ok_cruncher_sequential(self, dim, num_layers):
    super().__init__()
    self.layers = nn.Sequential(*[Linear(dim, dim) for _ in range(num_layers)])
    self.final = Linear(dim, 1)
