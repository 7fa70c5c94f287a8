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


# ---- breaking pass (2026-11-22) ----

# ---------------------------------------------------------------- Linear.__init__

@mutant(replaces="Linear.__init__", why="std 1/input_dim instead of 1/sqrt(input_dim)")
def bp_linear_std_1_over_d(self, input_dim, output_dim):
    super().__init__()
    std = 1 / input_dim
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))


@mutant(replaces="Linear.__init__", why="σ from fan_in + fan_out (Xavier): 1/sqrt((in+out)/2)")
def bp_linear_xavier(self, input_dim, output_dim):
    super().__init__()
    std = math.sqrt(2.0 / (input_dim + output_dim))
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))


@mutant(replaces="Linear.__init__", why="clamps a normal to ±3σ instead of truncating: an atom of entries sits exactly at ±3σ")
def bp_linear_clamp(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter((torch.randn(input_dim, output_dim) * std).clamp(-3 * std, 3 * std))


@mutant(replaces="Linear.__init__", why="re-seeds inside __init__ (torch.manual_seed(0)): every layer of one shape identical, seeds ignored")
def bp_linear_reseed(self, input_dim, output_dim):
    super().__init__()
    torch.manual_seed(0)
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))


@mutant(replaces="Linear.__init__", why="draws from a private torch.Generator(): torch.manual_seed has no effect")
def bp_linear_own_generator(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    g = torch.Generator().manual_seed(1234)
    w = torch.randn(4 * input_dim * output_dim, generator=g) * std
    w = w[w.abs() <= 3 * std][: input_dim * output_dim]
    self.weight = nn.Parameter(w.reshape(input_dim, output_dim))


@mutant(replaces="Linear.__init__", why="weight stored (output_dim, input_dim) like torch.nn.Linear, forward x @ weight.T")
def bp_linear_torch_layout(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(output_dim, input_dim), std=std, a=-3 * std, b=3 * std))


@mutant(replaces="Linear.__init__", why="float64 weight (torch.empty(..., dtype=torch.float64))")
def bp_linear_float64(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim, dtype=torch.float64), std=std, a=-3 * std, b=3 * std))


# ---------------------------------------------------------------- Cruncher

@mutant(replaces="Cruncher.__init__", why="one Linear repeated num_layers times in the ModuleList: the layers are tied")
def bp_cruncher_tied(self, dim, num_layers):
    super().__init__()
    layer = Linear(dim, dim)
    self.layers = nn.ModuleList([layer] * num_layers)
    self.final = Linear(dim, 1)


@mutant(replaces="Cruncher.__init__", why="final registered before layers: state-dict order final.weight first")
def bp_cruncher_order(self, dim, num_layers):
    super().__init__()
    self.final = Linear(dim, 1)
    self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])


@mutant(replaces="Cruncher.forward", why="squeeze() drops the batch axis too: a batch of 1 gives a 0-d output")
def bp_cruncher_squeeze_all(self, x):
    for layer in self.layers:
        x = layer(x)
    return self.final(x).squeeze()


@mutant(replaces="Cruncher.forward", why="skips the last square layer (range(len - 1))")
def bp_cruncher_skip_last(self, x):
    for i in range(len(self.layers) - 1):
        x = self.layers[i](x)
    return self.final(x).squeeze(-1)


# ---------------------------------------------------------------- counting

@mutant(replaces="get_num_parameters", why="named_parameters(remove_duplicate=False): tied parameters counted twice")
def bp_count_dupes(model):
    return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))


@mutant(replaces="get_num_parameters", why="counts only Linear layers' weights (misses biases, embeddings, norms)")
def bp_count_linear_weights(model):
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, (nn.Linear, Linear)))


@mutant(replaces="get_num_parameters", why="returns a 0-d tensor instead of an int")
def bp_count_tensor(model):
    return torch.stack([torch.tensor(p.numel()) for p in model.parameters()]).sum()


@mutant(replaces="cruncher_memory_bytes", why="counts the model's input as an activation too: batch·dim·(num_layers + 1)")
def bp_mem_input_activation(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * (num_layers + 1))


@mutant(replaces="cruncher_memory_bytes", why="counts the final output (batch values) as an activation too")
def bp_mem_output_activation(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers + batch)


@mutant(replaces="cruncher_memory_bytes", why="unknown optimizer raises KeyError (dict lookup) instead of ValueError")
def bp_mem_keyerror(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers)


@mutant(replaces="cruncher_memory_bytes", why="sgd counted with a momentum buffer (1 state value)")
def bp_mem_sgd_momentum(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers)


@mutant(replaces="cruncher_memory_bytes", why="rmsprop counted with 2 state values like adam")
def bp_mem_rmsprop2(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 2, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers)


@mutant(replaces="cruncher_memory_bytes", why="accepts any capitalisation (optimizer.lower()): 'Adam' does not raise")
def bp_mem_lower(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    optimizer = optimizer.lower()
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers)


@mutant(replaces="cruncher_memory_bytes", why="default optimizer 'adam' instead of 'adagrad'")
def bp_mem_default_adam(batch, dim, num_layers, optimizer="adam"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers)


@mutant(replaces="cruncher_memory_bytes", why="computes in float32 tensors and converts with int(): inexact beyond 2**24")
def bp_mem_float32(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    p = torch.tensor(float(cruncher_num_parameters(dim, num_layers)))
    acts = torch.tensor(float(batch)) * dim * num_layers
    return int(4 * (p * (2 + state_values[optimizer]) + acts))


@mutant(replaces="Linear.__init__", why="nn.Parameter(..., requires_grad=False): a frozen weight that never trains")
def bp_linear_frozen(self, input_dim, output_dim):
    super().__init__()
    std = 1 / math.sqrt(input_dim)
    w = nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std)
    self.weight = nn.Parameter(w, requires_grad=False)


@mutant(replaces="get_num_parameters", why="counts only the parameters of submodules (parameters(recurse=False) per child): misses the model's own")
def bp_count_children_only(model):
    return sum(p.numel() for m in model.modules() if m is not model for p in m.parameters(recurse=False))


@mutant(replaces="get_num_parameters", why="multiplies the first two dimensions: wrong for 0-d and 1-d parameters")
def bp_count_2d(model):
    total = 0
    for p in model.parameters():
        total += p.shape[0] * p.shape[1] if p.dim() >= 2 else (p.shape[0] if p.dim() == 1 else 0)
    return total


# -- third independent pass (2026-11-23): wrong code that passed before the tests checked it ------------

@mutant(replaces="Linear.__init__", why="sets out-of-range entries to zero instead of redrawing them")
def lin_zero_outliers(self, input_dim, output_dim):
    super().__init__()
    s = 1 / math.sqrt(input_dim)
    w = torch.randn(input_dim, output_dim) * s
    w[w.abs() > 3 * s] = 0.0
    self.weight = nn.Parameter(w)


@mutant(replaces="Linear.__init__", why="fan-in off by one: σ = 1/√(input_dim + 1) (as if counting a bias)")
def lin_fanin_plus1(self, input_dim, output_dim):
    super().__init__()
    s = 1 / math.sqrt(input_dim + 1)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=s, a=-3 * s, b=3 * s))


@mutant(replaces="Linear.__init__", why="truncates at ±2.9σ (hand-rolled bound, slightly too tight)")
def lin_trunc29(self, input_dim, output_dim):
    super().__init__()
    s = 1 / math.sqrt(input_dim)
    self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=s, a=-2.9 * s, b=2.9 * s))


@mutant(replaces="Linear.forward", why="uses weight.data: no gradient reaches the parameter")
def linf_data(self, x):
    return x @ self.weight.data


@mutant(replaces="Linear.forward", why="uses weight.detach(): the parameter never trains")
def linf_detach(self, x):
    return x @ self.weight.detach()


@mutant(replaces="Cruncher.__init__", why="re-seeds each layer with torch.manual_seed(i) for reproducibility")
def cr_reseed(self, dim, num_layers):
    super().__init__()
    layers = []
    for i in range(num_layers):
        torch.manual_seed(i)
        layers.append(Linear(dim, dim))
    self.layers = nn.ModuleList(layers)
    self.final = Linear(dim, 1)


@mutant(replaces="Cruncher.forward", why="runs under torch.no_grad(): output carries no graph, the model cannot train")
def crf_nograd(self, x):
    with torch.no_grad():
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)


@mutant(replaces="get_num_parameters", why="functools.reduce without an initial value: crashes on a parameterless model")
def gnp_reduce(model):
    import functools
    return functools.reduce(lambda a, b: a + b, [p.numel() for p in model.parameters()])


@mutant(replaces="get_num_parameters", why="dedups by data_ptr(): distinct zero-size or storage-sharing parameters collapse")
def gnp_dataptr(model):
    seen = {}
    for p in model.parameters():
        seen[p.data_ptr()] = p.numel()
    return sum(seen.values())


@mutant(replaces="cruncher_memory_bytes", why="startswith('adam') → 2: 'adamax', 'adam_8bit' accepted instead of ValueError")
def cmb_startswith(batch, dim, num_layers, optimizer="adagrad"):
    if optimizer.startswith("adam"):
        k = 2
    elif optimizer in ("adagrad", "rmsprop"):
        k = 1
    elif optimizer == "sgd":
        k = 0
    else:
        raise ValueError(optimizer)
    p = cruncher_num_parameters(dim, num_layers)
    return FP32_BYTES * (2 * p + batch * dim * num_layers + k * p)


@mutant(replaces="cruncher_memory_bytes", why="substring membership test: '' or 'grad' pass the check, then KeyError")
def cmb_substring(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in "sgd adagrad rmsprop adam adamw":
        raise ValueError(optimizer)
    p = cruncher_num_parameters(dim, num_layers)
    return FP32_BYTES * (2 * p + batch * dim * num_layers + state_values[optimizer] * p)


@mutant(replaces="cruncher_memory_bytes", why="optimizer = optimizer or 'adagrad': '' (and None) silently mean AdaGrad")
def cmb_falsy(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    optimizer = optimizer or "adagrad"
    if optimizer not in state_values:
        raise ValueError(optimizer)
    p = cruncher_num_parameters(dim, num_layers)
    return FP32_BYTES * (2 * p + batch * dim * num_layers + state_values[optimizer] * p)


@mutant(replaces="cruncher_memory_bytes", why="strips whitespace: ' adam' accepted")
def cmb_strip(batch, dim, num_layers, optimizer="adagrad"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    optimizer = optimizer.strip()
    if optimizer not in state_values:
        raise ValueError(optimizer)
    p = cruncher_num_parameters(dim, num_layers)
    return FP32_BYTES * (2 * p + batch * dim * num_layers + state_values[optimizer] * p)


@mutant(replaces="Cruncher.__init__", why="torch.manual_seed(0) at the top of __init__: every Cruncher identical whatever the caller's seed")
def cr_seed0(self, dim, num_layers):
    super().__init__()
    torch.manual_seed(0)
    self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])
    self.final = Linear(dim, 1)


@mutant(replaces="get_num_parameters", why="dedups by data_ptr(): on a meta-device model every parameter has data_ptr 0")
def gnp_dataptr_meta(model):
    seen = {}
    for p in model.parameters():
        seen[p.data_ptr()] = p.numel()
    return sum(seen.values())
