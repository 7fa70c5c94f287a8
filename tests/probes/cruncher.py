"""Probes for the `cruncher` module.

`_torch_model` builds small torch.nn models (no student code) on both sides of the boundary, so
`get_num_parameters` is checked on models whose count the test can take from torch itself.
"""

from __future__ import annotations

import torch
from torch import nn


def _x(shape: list[int], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _torch_model(kind: str) -> nn.Module:
    torch.manual_seed(0)
    if kind == "mlp_batchnorm_frozen":
        model = nn.Sequential(nn.Linear(10, 20), nn.BatchNorm1d(20), nn.ReLU(), nn.Linear(20, 5, bias=False))
        model[0].requires_grad_(False)  # frozen parameters still count
        return model
    if kind == "tied":
        class Tied(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(50, 8)
                self.unembed = nn.Linear(8, 50, bias=False)
                self.unembed.weight = self.embed.weight  # one tensor, two names
                self.norm = nn.LayerNorm(8)
        return Tied()
    if kind == "no_linear_first":
        class Mixed(nn.Module):
            """Not a stack of Linears: an embedding first, a 0-d parameter on the root module, a
            ParameterList, one block used twice (its parameters shared), a frozen norm and a buffer."""

            def __init__(self) -> None:
                super().__init__()
                self.scale = nn.Parameter(torch.tensor(1.0))
                self.embed = nn.Embedding(30, 6)
                block = nn.Sequential(nn.LayerNorm(6), nn.Linear(6, 6))
                self.blocks = nn.ModuleList([block, nn.GELU(), block])
                self.extra = nn.ParameterList([nn.Parameter(torch.zeros(2, 3)), nn.Parameter(torch.ones(5))])
                self.norm = nn.BatchNorm1d(6)
                self.norm.requires_grad_(False)
                self.register_buffer("mask", torch.ones(6, 6))
        return Mixed()
    if kind == "no_parameters":
        return nn.Sequential(nn.ReLU(), nn.Flatten())
    if kind == "meta":  # built without memory: every parameter's data_ptr() is 0
        with torch.device("meta"):
            return nn.Sequential(nn.Linear(10, 20), nn.Linear(20, 20), nn.Linear(20, 3))
    if kind == "conv":
        return nn.Sequential(nn.Conv2d(3, 4, kernel_size=3), nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(4 * 6 * 6, 7))
    raise ValueError(f"unknown model {kind!r}")


def linear_weights(impl, input_dim, output_dim, seeds):
    """For each seed: the weight after torch.manual_seed(seed); Linear(input_dim, output_dim)."""
    out = []
    for seed in seeds:
        torch.manual_seed(seed)
        layer = impl.cruncher.Linear(input_dim, output_dim)
        weight = layer.weight
        out.append({
            "weight": weight.detach().clone(),
            "is_parameter": isinstance(weight, nn.Parameter),
            "requires_grad": bool(weight.requires_grad),
            "parameters": [name for name, _ in layer.named_parameters()],
            "buffers": [name for name, _ in layer.named_buffers()],
        })
    return out


def linear_forward(impl, input_dim, output_dim, lead, seed):
    torch.manual_seed(seed)
    layer = impl.cruncher.Linear(input_dim, output_dim)
    x = _x([*lead, input_dim], seed + 1)
    return [layer.weight.detach().clone(), x, layer(x).detach().clone()]


def cruncher_state(impl, dim, num_layers, seed=0):
    torch.manual_seed(seed)
    model = impl.cruncher.Cruncher(dim, num_layers)
    state = model.state_dict()
    return {"keys": list(state.keys()), "shapes": {k: list(v.shape) for k, v in state.items()},
            "parameters": [name for name, _ in model.named_parameters()]}


def cruncher_forward(impl, dim, num_layers, batch, seed=0):
    """(state dict as plain tensors, x, model(x))."""
    torch.manual_seed(seed)
    model = impl.cruncher.Cruncher(dim, num_layers)
    x = _x([batch, dim], seed + 1)
    with torch.no_grad():
        y = model(x)
    return [{k: v.detach().clone() for k, v in model.state_dict().items()}, x, y.detach().clone()]


def cruncher_outputs(impl, dims, num_layers, batch, seeds):
    """For each dim, for each seed: a fresh Cruncher(dim, num_layers)'s outputs on N(0, 1) inputs."""
    result = []
    for dim in dims:
        per_seed = []
        for seed in seeds:
            torch.manual_seed(seed)
            model = impl.cruncher.Cruncher(dim, num_layers)
            with torch.no_grad():
                per_seed.append(model(_x([batch, dim], 1000 + seed)).detach().clone())
        result.append(per_seed)
    return result


def num_parameters_torch(impl, kinds):
    return [impl.cruncher.get_num_parameters(_torch_model(kind)) for kind in kinds]


def num_parameters_cruncher(impl, cases):
    return [impl.cruncher.get_num_parameters(impl.cruncher.Cruncher(dim, layers)) for dim, layers in cases]


def cruncher_num_parameters(impl, cases):
    return [impl.cruncher.cruncher_num_parameters(dim, layers) for dim, layers in cases]


def cruncher_memory_bytes(impl, cases):
    return [impl.cruncher.cruncher_memory_bytes(batch, dim, layers, optimizer=opt) for batch, dim, layers, opt in cases]


def cruncher_memory_bytes_one(impl, batch, dim, num_layers, optimizer):
    return impl.cruncher.cruncher_memory_bytes(batch, dim, num_layers, optimizer=optimizer)


def cruncher_memory_bytes_default(impl, batch, dim, num_layers):
    """cruncher_memory_bytes called without the optimizer argument."""
    return impl.cruncher.cruncher_memory_bytes(batch, dim, num_layers)


def cruncher_gradients(impl, dim, num_layers, batch, seed):
    """A fresh Cruncher's state, x, a seeded upstream gradient g, and each parameter's .grad after
    model(x).backward(g) (None where none arrived); what went wrong, as data, if backward could not run."""
    torch.manual_seed(seed)
    model = impl.cruncher.Cruncher(dim, num_layers)
    x, upstream = _x([batch, dim], seed + 1), _x([batch], seed + 2)
    y = model(x)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if not (isinstance(y, torch.Tensor) and y.requires_grad):
        return {"state": state, "x": x, "upstream": upstream, "grads": None,
                "why": "the output does not require a gradient"}
    y.backward(upstream)
    grads = {name: None if p.grad is None else p.grad.detach().clone() for name, p in model.named_parameters()}
    return {"state": state, "x": x, "upstream": upstream, "grads": grads, "why": ""}
