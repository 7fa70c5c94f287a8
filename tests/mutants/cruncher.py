"""Mutants of solutions/cruncher.py: each is one bug a student plausibly writes."""

from grader.authoring.mutants import edit, mutant
from tests.mutants import reference_default

OPTIMIZER = reference_default("cruncher_memory_bytes", "optimizer")  # its default optimizer


edit("linear_std_one", within="Linear.__init__",
     why="std 1 (torch.randn): the output scale grows with √fan_in per layer",
     old=("std = 1 / math.sqrt(input_dim)\n"
          "        self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=1.0, a=-3.0, b=3.0))")


edit("linear_std_inverse", within="Linear.__init__",
     why="std 1/fan_in instead of 1/√fan_in",
     old="std = 1 / math.sqrt(input_dim)",
     new="std = 1 / input_dim")


edit("linear_std_fan_out", within="Linear.__init__",
     why="std 1/√fan_out instead of 1/√fan_in",
     old="std = 1 / math.sqrt(input_dim)",
     new="std = 1 / math.sqrt(output_dim)")


edit("linear_no_truncation", within="Linear.__init__",
     why="no truncation: a plain normal with std 1/√fan_in",
     old=("std = 1 / math.sqrt(input_dim)\n"
          "        self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter(torch.randn(input_dim, output_dim) / math.sqrt(input_dim))")


edit("linear_truncation_absolute", within="Linear.__init__",
     why="truncates at ±3 (absolute) instead of ±3σ: in effect no truncation",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3.0, b=3.0))")


edit("linear_truncation_two_sigma", within="Linear.__init__",
     why="truncates at ±2σ (trunc_normal_'s default cut-offs scaled): std 0.88σ",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-2 * std, b=2 * std))")


edit("linear_uniform", within="Linear.__init__",
     why="uniform entries with the right std (no normal shape, nothing beyond 1.73σ)",
     edits=[("std = 1 / math.sqrt(input_dim)", "bound = math.sqrt(3 / input_dim)"),
           (("self.weight = nn.Parameter(\n"
            "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
            "self.weight = nn.Parameter(torch.empty(input_dim, output_dim).uniform_(-bound, bound))")])


edit("linear_not_parameter", within="Linear.__init__",
     why="a plain tensor attribute, not an nn.Parameter (invisible to parameters())",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std)")


edit("LinearTransposed", within="Linear",
     why="torch.nn.Linear's layout: weight of shape (out, in), forward x @ weight.T",
     edits=[(("self.weight = nn.Parameter(\n"
            "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
            "self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(output_dim, input_dim), std=std, a=-3 * std, b=3 * std))"),
           ("return x @ self.weight", "return x @ self.weight.T")])


edit("cruncher_no_squeeze", within="Cruncher.forward",
     why="forgets to squeeze: output of shape (batch, 1)",
     old="return self.final(x).squeeze(-1)",
     new="return self.final(x)")


edit("cruncher_relu", within="Cruncher.forward",
     why="puts a ReLU between the layers (the Cruncher is linear)",
     old="x = layer(x)",
     new="x = torch.relu(layer(x))")


edit("cruncher_python_list", within="Cruncher.__init__",
     why="keeps the layers in a Python list: not registered, missing from state_dict()",
     old="self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])",
     new="self.layers = [Linear(dim, dim) for _ in range(num_layers)]")


edit("cruncher_one_layer_short", within="Cruncher.__init__",
     why="creates num_layers - 1 square layers (off by one)",
     old="self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])",
     new="self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(max(num_layers - 1, 0))])")


edit("get_num_parameters_state_dict", within="get_num_parameters",
     why="counts the state dict: buffers included, tied weights twice",
     old="return sum(p.numel() for p in model.parameters())",
     new="return sum(v.numel() for v in model.state_dict().values())")


edit("get_num_parameters_trainable", within="get_num_parameters",
     why="counts only trainable parameters (requires_grad)",
     old="return sum(p.numel() for p in model.parameters())",
     new="return sum(p.numel() for p in model.parameters() if p.requires_grad)")


edit("cruncher_num_parameters_no_final", within="cruncher_num_parameters",
     why="forgets the final (dim × 1) layer",
     old="return num_layers * dim * dim + dim",
     new="return num_layers * dim * dim")


edit("cruncher_memory_no_activations", within="cruncher_memory_bytes",
     why="forgets the activations",
     old="activations = batch * dim * num_layers",
     new="activations = 0")


edit("cruncher_memory_one_state", within="cruncher_memory_bytes",
     why="one optimizer state value per parameter whatever the optimizer",
     old="state_values[optimizer] * params",
     new="params")


edit("cruncher_memory_values", within="cruncher_memory_bytes",
     why="returns the number of values, not bytes (forgets × 4)",
     old="return FP32_BYTES * (params + activations + params + state_values[optimizer] * params)",
     new="return params + activations + params + state_values[optimizer] * params")


edit("cruncher_memory_no_error", within="cruncher_memory_bytes",
     why="treats an unknown optimizer like AdaGrad instead of raising",
     edits=[(("    if optimizer not in state_values:\n"
              '        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")\n'),
             ""),
            ("state_values[optimizer] * params",
             "state_values.get(optimizer, 1) * params")])


# ---- breaking pass (2026-11-22) ----

# ---------------------------------------------------------------- Linear.__init__

edit("bp_linear_std_1_over_d", within="Linear.__init__",
     why="std 1/input_dim instead of 1/sqrt(input_dim)",
     old="std = 1 / math.sqrt(input_dim)",
     new="std = 1 / input_dim")


edit("bp_linear_xavier", within="Linear.__init__",
     why="σ from fan_in + fan_out (Xavier): 1/sqrt((in+out)/2)",
     old="std = 1 / math.sqrt(input_dim)",
     new="std = math.sqrt(2.0 / (input_dim + output_dim))")


edit("bp_linear_clamp", within="Linear.__init__",
     why="clamps a normal to ±3σ instead of truncating: an atom of entries sits exactly at ±3σ",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter((torch.randn(input_dim, output_dim) * std).clamp(-3 * std, 3 * std))")


edit("bp_linear_reseed", within="Linear.__init__",
     why="re-seeds inside __init__ (torch.manual_seed(0)): every layer of one shape identical, seeds "
         "ignored",
     old="super().__init__()",
     new=("super().__init__()\n"
          "        torch.manual_seed(0)"))


edit("bp_linear_own_generator", within="Linear.__init__",
     why="draws from a private torch.Generator(): torch.manual_seed has no effect",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new=("g = torch.Generator().manual_seed(1234)\n"
          "        w = torch.randn(4 * input_dim * output_dim, generator=g) * std\n"
          "        w = w[w.abs() <= 3 * std][: input_dim * output_dim]\n"
          "        self.weight = nn.Parameter(w.reshape(input_dim, output_dim))"))


edit("bp_linear_torch_layout", within="Linear.__init__",
     why="weight stored (output_dim, input_dim) like torch.nn.Linear, forward x @ weight.T",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(output_dim, input_dim), std=std, a=-3 * std, b=3 * std))")


edit("bp_linear_float64", within="Linear.__init__",
     why="float64 weight (torch.empty(..., dtype=torch.float64))",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new="self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim, dtype=torch.float64), std=std, a=-3 * std, b=3 * std))")


# ---------------------------------------------------------------- Cruncher

edit("bp_cruncher_tied", within="Cruncher.__init__",
     why="one Linear repeated num_layers times in the ModuleList: the layers are tied",
     old="self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])",
     new=("layer = Linear(dim, dim)\n"
          "        self.layers = nn.ModuleList([layer] * num_layers)"))


edit("bp_cruncher_order", within="Cruncher.__init__",
     why="final registered before layers: state-dict order final.weight first",
     edits=[(("\n"
            "        self.final = Linear(dim, 1)"),
            ""),
           ("super().__init__()",
            ("super().__init__()\n"
            "        self.final = Linear(dim, 1)"))])


edit("bp_cruncher_squeeze_all", within="Cruncher.forward",
     why="squeeze() drops the batch axis too: a batch of 1 gives a 0-d output",
     old="return self.final(x).squeeze(-1)",
     new="return self.final(x).squeeze()")


edit("bp_cruncher_skip_last", within="Cruncher.forward",
     why="skips the last square layer (range(len - 1))",
     old=("for layer in self.layers:\n"
          "            x = layer(x)"),
     new=("for i in range(len(self.layers) - 1):\n"
          "            x = self.layers[i](x)"))


# ---------------------------------------------------------------- counting

edit("bp_count_dupes", within="get_num_parameters",
     why="named_parameters(remove_duplicate=False): tied parameters counted twice",
     old="return sum(p.numel() for p in model.parameters())",
     new="return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))")


edit("bp_count_linear_weights", within="get_num_parameters",
     why="counts only Linear layers' weights (misses biases, embeddings, norms)",
     old="return sum(p.numel() for p in model.parameters())",
     new="return sum(m.weight.numel() for m in model.modules() if isinstance(m, (nn.Linear, Linear)))")


edit("bp_count_tensor", within="get_num_parameters",
     why="returns a 0-d tensor instead of an int",
     old="return sum(p.numel() for p in model.parameters())",
     new="return torch.stack([torch.tensor(p.numel()) for p in model.parameters()]).sum()")


edit("bp_mem_input_activation", within="cruncher_memory_bytes",
     why="counts the model's input as an activation too: batch·dim·(num_layers + 1)",
     edits=[('raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")',
            "raise ValueError(optimizer)"),
           (("activations = batch * dim * num_layers\n"
            "    return FP32_BYTES * (params + activations + params + state_values[optimizer] * params)"),
            "return 4 * (params * (2 + state_values[optimizer]) + batch * dim * (num_layers + 1))")])


edit("bp_mem_output_activation", within="cruncher_memory_bytes",
     why="counts the final output (batch values) as an activation too",
     edits=[('raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")',
            "raise ValueError(optimizer)"),
           (("activations = batch * dim * num_layers\n"
            "    return FP32_BYTES * (params + activations + params + state_values[optimizer] * params)"),
            "return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers + batch)")])


edit("bp_mem_keyerror", within="cruncher_memory_bytes",
     why="unknown optimizer raises KeyError (dict lookup) instead of ValueError",
     old=("    if optimizer not in state_values:\n"
          '        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")\n'),
     new="")


edit("bp_mem_sgd_momentum", within="cruncher_memory_bytes",
     why="sgd counted with a momentum buffer (1 state value)",
     old='"sgd": 0',
     new='"sgd": 1')


edit("bp_mem_rmsprop2", within="cruncher_memory_bytes",
     why="rmsprop counted with 2 state values like adam",
     old='"rmsprop": 1',
     new='"rmsprop": 2')


edit("bp_mem_lower", within="cruncher_memory_bytes",
     why="accepts any capitalisation (optimizer.lower()): 'Adam' does not raise",
     old="if optimizer not in state_values:",
     new=("optimizer = optimizer.lower()\n"
          "    if optimizer not in state_values:"))


@mutant(replaces="cruncher_memory_bytes", why="default optimizer 'adam' instead of 'adagrad'", against="6cd73e853c05")
def bp_mem_default_adam(batch, dim, num_layers, optimizer="adam"):
    state_values = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
    if optimizer not in state_values:
        raise ValueError(optimizer)
    params = cruncher_num_parameters(dim, num_layers)
    return 4 * (params * (2 + state_values[optimizer]) + batch * dim * num_layers)


edit("bp_mem_float32", within="cruncher_memory_bytes",
     why="computes in float32 tensors and converts with int(): inexact beyond 2**24",
     edits=[("params = cruncher_num_parameters(dim, num_layers)",
             "params = torch.tensor(float(cruncher_num_parameters(dim, num_layers)))"),
            ("activations = batch * dim * num_layers",
             "activations = torch.tensor(float(batch)) * dim * num_layers"),
            ("return FP32_BYTES * (params + activations + params + state_values[optimizer] * params)",
             "return int(FP32_BYTES * (params + activations + params + state_values[optimizer] * params))")])


edit("bp_linear_frozen", within="Linear.__init__",
     why="nn.Parameter(..., requires_grad=False): a frozen weight that never trains",
     old=("self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new=("w = nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std)\n"
          "        self.weight = nn.Parameter(w, requires_grad=False)"))


edit("bp_count_children_only", within="get_num_parameters",
     why="counts only the parameters of submodules (parameters(recurse=False) per child): misses the "
         "model's own",
     old="return sum(p.numel() for p in model.parameters())",
     new="return sum(p.numel() for m in model.modules() if m is not model for p in m.parameters(recurse=False))")


edit("bp_count_2d", within="get_num_parameters",
     why="multiplies the first two dimensions: wrong for 0-d and 1-d parameters",
     old="return sum(p.numel() for p in model.parameters())",
     new=("total = 0\n"
          "    for p in model.parameters():\n"
          "        total += p.shape[0] * p.shape[1] if p.dim() >= 2 else (p.shape[0] if p.dim() == 1 else 0)\n"
          "    return total"))


# -- third independent pass (2026-11-23): wrong code that passed before the tests checked it ------------

edit("lin_zero_outliers", within="Linear.__init__",
     why="sets out-of-range entries to zero instead of redrawing them",
     old=("std = 1 / math.sqrt(input_dim)\n"
          "        self.weight = nn.Parameter(\n"
          "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
     new=("s = 1 / math.sqrt(input_dim)\n"
          "        w = torch.randn(input_dim, output_dim) * s\n"
          "        w[w.abs() > 3 * s] = 0.0\n"
          "        self.weight = nn.Parameter(w)"))


edit("lin_fanin_plus1", within="Linear.__init__",
     why="fan-in off by one: σ = 1/√(input_dim + 1) (as if counting a bias)",
     edits=[("std = 1 / math.sqrt(input_dim)", "s = 1 / math.sqrt(input_dim + 1)"),
           (("self.weight = nn.Parameter(\n"
            "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
            "self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=s, a=-3 * s, b=3 * s))")])


edit("lin_trunc29", within="Linear.__init__",
     why="truncates at ±2.9σ (hand-rolled bound, slightly too tight)",
     edits=[("std = 1 / math.sqrt(input_dim)", "s = 1 / math.sqrt(input_dim)"),
           (("self.weight = nn.Parameter(\n"
            "            nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=std, a=-3 * std, b=3 * std))"),
            "self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(input_dim, output_dim), std=s, a=-2.9 * s, b=2.9 * s))")])


edit("linf_data", within="Linear.forward",
     why="uses weight.data: no gradient reaches the parameter",
     old="return x @ self.weight",
     new="return x @ self.weight.data")


edit("linf_detach", within="Linear.forward",
     why="uses weight.detach(): the parameter never trains",
     old="return x @ self.weight",
     new="return x @ self.weight.detach()")


edit("cr_reseed", within="Cruncher.__init__",
     why="re-seeds each layer with torch.manual_seed(i) for reproducibility",
     old="self.layers = nn.ModuleList([Linear(dim, dim) for _ in range(num_layers)])",
     new=("layers = []\n"
          "        for i in range(num_layers):\n"
          "            torch.manual_seed(i)\n"
          "            layers.append(Linear(dim, dim))\n"
          "        self.layers = nn.ModuleList(layers)"))


edit("crf_nograd", within="Cruncher.forward",
     why="runs under torch.no_grad(): output carries no graph, the model cannot train",
     old=("for layer in self.layers:\n"
          "            x = layer(x)\n"
          "        return self.final(x).squeeze(-1)"),
     new=("with torch.no_grad():\n"
          "            for layer in self.layers:\n"
          "                x = layer(x)\n"
          "            return self.final(x).squeeze(-1)"))


edit("gnp_reduce", within="get_num_parameters",
     why="functools.reduce without an initial value: crashes on a parameterless model",
     old="return sum(p.numel() for p in model.parameters())",
     new=("import functools\n"
          "    return functools.reduce(lambda a, b: a + b, [p.numel() for p in model.parameters()])"))


edit("gnp_dataptr", within="get_num_parameters",
     why="dedups by data_ptr(): distinct zero-size or storage-sharing parameters collapse",
     old="return sum(p.numel() for p in model.parameters())",
     new=("seen = {}\n"
          "    for p in model.parameters():\n"
          "        seen[p.data_ptr()] = p.numel()\n"
          "    return sum(seen.values())"))


edit("cmb_startswith", within="cruncher_memory_bytes",
     why="startswith('adam') → 2: 'adamax', 'adam_8bit' accepted instead of ValueError",
     old="if optimizer not in state_values:",
     new=('if optimizer.startswith("adam"):\n'
          '        optimizer = "adam"\n'
          "    if optimizer not in state_values:"))


edit("cmb_substring", within="cruncher_memory_bytes",
     why="substring membership test: '' or 'grad' pass the check, then KeyError",
     old="if optimizer not in state_values:",
     new='if optimizer not in "sgd adagrad rmsprop adam adamw":')


edit("cmb_falsy", within="cruncher_memory_bytes",
     why="optimizer = optimizer or <the default>: '' (and None) silently mean the default optimizer",
     old="if optimizer not in state_values:",
     new=(f"optimizer = optimizer or {OPTIMIZER!r}\n"
          "    if optimizer not in state_values:"))


edit("cmb_strip", within="cruncher_memory_bytes",
     why="strips whitespace: ' adam' accepted",
     old="if optimizer not in state_values:",
     new=("optimizer = optimizer.strip()\n"
          "    if optimizer not in state_values:"))


edit("cr_seed0", within="Cruncher.__init__",
     why="torch.manual_seed(0) at the top of __init__: every Cruncher identical whatever the caller's seed",
     old="super().__init__()",
     new=("super().__init__()\n"
          "        torch.manual_seed(0)"))


edit("gnp_dataptr_meta", within="get_num_parameters",
     why="dedups by data_ptr(): on a meta-device model every parameter has data_ptr 0",
     old="return sum(p.numel() for p in model.parameters())",
     new=("seen = {}\n"
          "    for p in model.parameters():\n"
          "        seen[p.data_ptr()] = p.numel()\n"
          "    return sum(seen.values())"))
