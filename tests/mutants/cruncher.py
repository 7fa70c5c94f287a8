"""Mutants of solutions/cruncher.py: each is one bug a student plausibly writes."""

import math

import torch
from torch import nn

from grader.mutants import mutant


@mutant(replaces="Linear.__init__", why="std 1 (torch.randn): the output scale grows with √fan_in per layer")
def linear_std_one(self, input_dim, output_dim):
    super().__init__()
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=1.0, a=-3.0, b=3.0))


@mutant(replaces="Linear.__init__", why="std 1/fan_in instead of 1/√fan_in")
def linear_std_inverse(self, input_dim, output_dim):
    super().__init__()
    std = 1 / input_dim
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))


@mutant(replaces="Linear.__init__", why="std 1/√fan_out instead of 1/√fan_in")
def linear_std_fan_out(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(output_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))


@mutant(replaces="Linear.__init__", why="no truncation: a plain normal with std 1/√fan_in")
def linear_no_truncation(self, input_dim, output_dim):
    super().__init__()
    self.weight = nn.Parameter(torch.randn(input_dim, output_dim) / math.sqrt(input_dim))


@mutant(replaces="Linear.__init__", why="truncates at ±3 (absolute) instead of ±3σ: in effect no truncation")
def linear_truncation_absolute(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3.0, b=3.0))


@mutant(replaces="Linear.__init__", why="truncates at ±2σ (trunc_normal_'s default cut-offs scaled): std 0.88σ")
def linear_truncation_two_sigma(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-2 * std, b=2 * std))


@mutant(replaces="Linear.__init__", why="uniform entries with the right std (no normal shape, nothing beyond 1.73σ)")
def linear_uniform(self, input_dim, output_dim):
    super().__init__()
    bound = math.sqrt(3 / input_dim)
    self.weight = nn.Parameter(torch.empty(input_dim, output_dim).uniform_(-bound, bound))


@mutant(replaces="Linear.__init__", why="a plain tensor attribute, not an nn.Parameter (invisible to parameters())")
def linear_not_parameter(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std)


@mutant(replaces="Linear", why="torch.nn.Linear's layout: weight of shape (out, in), forward x @ weight.T")
class LinearTransposed(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        std = 1 / math.sqrt(input_dim)
        self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(output_dim, input_dim), std=std, a=-3 * std, b=3 * std))

    def forward(self, x):
        return x @ self.weight.T


@mutant(replaces="Cruncher.forward", why="forgets to squeeze: output of shape (batch, 1)")
def cruncher_no_squeeze(self, x):
    for layer in self.layers:
        x = layer(x)
    return self.final(x)


@mutant(replaces="Cruncher.forward", why="puts a ReLU between the layers (the Cruncher is linear)")
def cruncher_relu(self, x):
    for layer in self.layers:
        x = torch.relu(layer(x))
    return self.final(x).squeeze(-1)


@mutant(replaces="Cruncher.__init__", why="keeps the layers in a Python list: not registered, missing from state_dict()")
def cruncher_python_list(self, dim, num_layers):
    super().__init__()
    self.layers = [Linear(dim, dim) for _ in range(num_layers)]
    self.final = Linear(dim, 1)


@mutant(replaces="Cruncher.__init__", why="creates num_layers - 1 square layers (off by one)")
def cruncher_one_layer_short(self, dim, num_layers):
    super().__init__()
    self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(max(num_layers - 1, 0))])
    self.final = Linear(dim, 1)


@mutant(replaces="get_num_parameters", why="counts the state dict: buffers included, tied weights twice")
def get_num_parameters_state_dict(model):
    return sum(v.numel() for v in model.state_dict().values())


@mutant(replaces="get_num_parameters", why="counts only trainable parameters (requires_grad)")
def get_num_parameters_trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@mutant(replaces="cruncher_num_parameters", why="forgets the final (dim × 1) layer")
def cruncher_num_parameters_no_final(dim, num_layers):
    return num_layers * dim * dim


@mutant(replaces="cruncher_memory_bytes", why="forgets the activations")
def cruncher_memory_no_activations(batch, dim, num_layers, optimizer="adagrad"):
    state = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    params = num_layers * dim * dim + dim
    return 4 * (params + params + state * params)


@mutant(replaces="cruncher_memory_bytes", why="one optimizer state value per parameter whatever the optimizer")
def cruncher_memory_one_state(batch, dim, num_layers, optimizer="adagrad"):
    if optimizer not in ("sgd", "adagrad", "rmsprop", "adam", "adamw"):
        raise ValueError(optimizer)
    params = num_layers * dim * dim + dim
    return 4 * (params + batch * dim * num_layers + params + params)


@mutant(replaces="cruncher_memory_bytes", why="returns the number of values, not bytes (forgets × 4)")
def cruncher_memory_values(batch, dim, num_layers, optimizer="adagrad"):
    state = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer]
    params = num_layers * dim * dim + dim
    return params + batch * dim * num_layers + params + state * params


@mutant(replaces="cruncher_memory_bytes", why="treats an unknown optimizer like AdaGrad instead of raising")
def cruncher_memory_no_error(batch, dim, num_layers, optimizer="adagrad"):
    state = {"sgd": 0, "adam": 2, "adamw": 2}.get(optimizer, 1)
    params = num_layers * dim * dim + dim
    return 4 * (params + batch * dim * num_layers + params + state * params)
