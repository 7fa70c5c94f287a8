"""Mutants of solutions/memory.py: each is one bug a student plausibly writes."""

import torch

from grader.authoring.mutants import edit, mutant


edit("storage_bytes_of_view", within="storage_bytes",
     why="counts the view's own elements instead of the storage it pins",
     old="return x.untyped_storage().nbytes()",
     new="return x.numel() * x.element_size()")


edit("get_memory_usage_fp32", within="get_memory_usage",
     why="assumes 4 bytes per element whatever the dtype",
     old="return x.numel() * x.element_size()",
     new="return x.numel() * 4")


edit("float_format_bf16_like_fp16", within="float_format",
     why="bfloat16 given float16's exponent/mantissa split",
     old="torch.bfloat16: (1, 8, 7),",
     new="torch.bfloat16: (1, 5, 10),")


edit("float_format_no_error", within="float_format",
     why="returns None instead of raising for a non-float dtype",
     old='raise ValueError(f"no floating-point format table entry for {dtype}")',
     new="return None")


edit("rounds_to_zero_no_subnormals", within="rounds_to_zero",
     why="treats everything below the smallest *normal* number as zero (ignores subnormals)",
     old="return bool(stored.item() == 0.0)",
     new="return abs(value) < torch.finfo(dtype).tiny")


edit("bytes_per_parameter_no_master", within="bytes_per_parameter",
     why="forgets the fp32 master copy in mixed precision",
     old="return BF16_BYTES + BF16_BYTES + FP32_BYTES + state",
     new="return BF16_BYTES + BF16_BYTES + state")


edit("bytes_per_parameter_adam_one_moment", within="bytes_per_parameter",
     why="counts Adam's state as one value per parameter",
     old='"adam": 2, "adamw": 2',
     new='"adam": 1, "adamw": 1')


edit("max_trainable_parameters_one_gpu", within="max_trainable_parameters",
     why="forgets that the state is spread over all GPUs",
     old="return gpu_bytes * num_gpus / bytes_per_param",
     new="return gpu_bytes / bytes_per_param")


# ---- breaking pass, 2026-11-22 (written before reading the tests) ----


edit("usage_counts_storage", within="get_memory_usage",
     why="counts the storage a view pins instead of the view's own elements",
     old="return x.numel() * x.element_size()",
     new="return x.untyped_storage().nbytes()")


edit("usage_reduce_no_initial", within="get_memory_usage",
     why="reduce over the shape without an initial value: crashes on a 0-d tensor",
     old="return x.numel() * x.element_size()",
     new=("import functools\n"
          "    return functools.reduce(lambda a, b: a * b, x.shape) * x.element_size()"))


edit("usage_bits_from_info", within="get_memory_usage",
     why="bits from finfo/iinfo: bool (and complex) dtypes are not handled",
     old="return x.numel() * x.element_size()",
     new=("info = torch.finfo(x.dtype) if x.dtype.is_floating_point else torch.iinfo(x.dtype)\n"
          "    return x.numel() * info.bits // 8"))


edit("usage_view_flat", within="get_memory_usage",
     why="x.view(-1) to count: raises on a non-viewable (transposed) tensor",
     old="return x.numel() * x.element_size()",
     new="return x.view(-1).shape[0] * x.element_size()")


edit("storage_via_base", within="storage_bytes",
     why="follows ._base: a detach()ed slice or from_numpy tensor has no _base",
     old="return x.untyped_storage().nbytes()",
     new=("root = x._base if x._base is not None else x\n"
          "    return root.numel() * root.element_size()"))


edit("storage_extent", within="storage_bytes",
     why="the extent the view reaches (offset + last element), not the storage size",
     old="return x.untyped_storage().nbytes()",
     new=("if x.numel() == 0:\n"
          "        return 0\n"
          "    last = x.storage_offset() + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))\n"
          "    return (last + 1) * x.element_size()"))


edit("storage_contig_shortcut", within="storage_bytes",
     why="elements x element size when contiguous: wrong for a contiguous slice big[:2]",
     old="    return x.untyped_storage().nbytes()",
     new=("    if x.is_contiguous():\n"
          "        return x.numel() * x.element_size()\n"
          "    return x.untyped_storage().nbytes()"))


@mutant(replaces="float_format", why="derived from finfo for any float dtype: the fnuz/e8m0 float8 types do not raise", against="464e9304bbb6")
def format_from_finfo(dtype):
    import math
    if not dtype.is_floating_point:
        raise ValueError(dtype)
    info = torch.finfo(dtype)
    m = round(-math.log2(info.eps))
    return (1, info.bits - 1 - m, m)


@mutant(replaces="float_format", why="parses float8_eXmY from the name: accepts the fnuz variants", against="464e9304bbb6")
def format_from_name(dtype):
    table = {torch.float64: (1, 11, 52), torch.float32: (1, 8, 23), torch.float16: (1, 5, 10),
             torch.bfloat16: (1, 8, 7)}
    if dtype in table:
        return table[dtype]
    name = str(dtype).removeprefix("torch.")
    if name.startswith("float8_e") and "m" in name:
        e, m = name[len("float8_e"):].split("m", 1)
        return (1, int(e), int(m[0]))
    raise ValueError(dtype)


edit("format_float8_swapped", within="float_format",
     why="e4m3 read backwards: float8_e4m3fn and float8_e5m2 swapped",
     edits=[("torch.float8_e4m3fn: (1, 4, 3),",
             "torch.float8_e4m3fn: (1, 5, 2),"),
            ("torch.float8_e5m2: (1, 5, 2),",
             "torch.float8_e5m2: (1, 4, 3),")])


edit("format_int_typeerror", within="float_format",
     why="torch.finfo's TypeError escapes for integer dtypes instead of ValueError",
     edits=[("    formats = {",
            ("    info = torch.finfo(dtype)\n"
            "    formats = {")),
           ('raise ValueError(f"no floating-point format table entry for {dtype}")',
            'raise ValueError(f"{dtype} {info.bits}")')])


edit("rtz_below_tiny", within="rounds_to_zero",
     why="below the smallest NORMAL counts as zero: subnormals treated as lost",
     old="return bool(stored.item() == 0.0)",
     new="return abs(value) < torch.finfo(dtype).tiny")


edit("rtz_below_subnormal", within="rounds_to_zero",
     why="below the smallest subnormal counts as zero: values in (s/2, s) round up to s",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new=("m = {torch.float64: 52, torch.float32: 23, torch.float16: 10, torch.bfloat16: 7}.get(dtype)\n"
          "    if m is None:\n"
          "        return bool(torch.tensor(value, dtype=torch.float64).to(dtype).item() == 0.0)\n"
          "    return abs(value) < torch.finfo(dtype).tiny * 2.0 ** -m"))


edit("rtz_half_not_zero", within="rounds_to_zero",
     why="strictly below half the smallest subnormal: the exact half ties to even, i.e. to 0",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new=("m = {torch.float64: 52, torch.float32: 23, torch.float16: 10, torch.bfloat16: 7}.get(dtype)\n"
          "    if m is None:\n"
          "        return bool(torch.tensor(value, dtype=torch.float64).to(dtype).item() == 0.0)\n"
          "    return abs(value) < torch.finfo(dtype).tiny * 2.0 ** -m / 2"))


edit("rtz_via_float32", within="rounds_to_zero",
     why="torch.tensor(value) is float32 first: a float64 subnormal like 1e-320 is lost",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new="return bool(torch.tensor(value).to(dtype).item() == 0.0)")


edit("rtz_zero_true", within="rounds_to_zero",
     why="0.0 reported as rounding to zero",
     old=("    if value == 0.0:\n"
          "        return False\n"),
     new="")


edit("rtz_signed", within="rounds_to_zero",
     why="compares the signed value: every negative value 'rounds to zero'",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new="return value <= torch.finfo(dtype).tiny * torch.finfo(dtype).eps / 2")


edit("bpp_no_master", within="bytes_per_parameter",
     why="mixed precision forgets the fp32 master copy",
     old="return BF16_BYTES + BF16_BYTES + FP32_BYTES + state",
     new="return BF16_BYTES + BF16_BYTES + state")


edit("bpp_unknown_default", within="bytes_per_parameter",
     why="unknown names fall back to sgd instead of raising ValueError",
     edits=[(("    if optimizer not in state_values:\n"
              '        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {sorted(state_values)}")\n'),
             ""),
            ("state = state_values[optimizer] * FP32_BYTES",
             "state = state_values.get(optimizer, 0) * FP32_BYTES")])


edit("napkin_floor", within="max_trainable_parameters",
     why="floor division: drops the fraction",
     old="return gpu_bytes * num_gpus / bytes_per_param",
     new="return float(gpu_bytes * num_gpus // bytes_per_param)")


# ---- second round (after reading the tests) ----


edit("format_keyerror", within="float_format",
     why="a table lookup that lets KeyError escape for unsupported float types",
     old="if dtype not in formats:",
     new="if not dtype.is_floating_point:")


edit("rtz_closed_form_finfo", within="rounds_to_zero",
     why="closed form from finfo's eps for every type: e8m0fnu has no zero (and e5m2fnuz's eps is not "
         "2**-M)",
     edits=[("    if value == 0.0:",
            ("    import math\n"
            "    if value == 0.0:")),
           ("stored = torch.tensor(value, dtype=torch.float64).to(dtype)", "info = torch.finfo(dtype)"),
           ("return bool(stored.item() == 0.0)",
            "return abs(value) <= math.ldexp(info.tiny, -round(-math.log2(info.eps))) / 2")])


edit("rtz_float32_tie_up", within="rounds_to_zero",
     why="converts through float32 for the low-precision types only, float64 directly: wrong for float32's "
         "own subnormal tie",
     edits=[("stored = torch.tensor(value, dtype=torch.float64).to(dtype)",
            ("if dtype == torch.float32:\n"
            "        return abs(value) < 2.0 ** -150")),
           ("return bool(stored.item() == 0.0)",
            "return bool(torch.tensor(value, dtype=torch.float64).to(dtype).item() == 0.0)")])


# ---- breaking pass 2 (independent eyes) ----
edit("usage_complex_via_finfo", within="get_memory_usage",
     why="bool special-cased, other dtypes via finfo bits: complex64 counted as 4 bytes (finfo gives the "
         "real part)",
     old="return x.numel() * x.element_size()",
     new=("if x.dtype == torch.bool:\n"
          "        return x.numel()\n"
          "    if x.dtype.is_floating_point or x.dtype.is_complex:\n"
          "        return x.numel() * torch.finfo(x.dtype).bits // 8\n"
          "    return x.numel() * torch.iinfo(x.dtype).bits // 8"))


edit("usage_numpy_nbytes", within="get_memory_usage",
     why="numpy's nbytes: numpy has no bfloat16/float8, so those tensors raise",
     old="return x.numel() * x.element_size()",
     new="return int(x.detach().cpu().numpy().nbytes)")


edit("usage_contiguous_storage", within="get_memory_usage",
     why="storage of x.contiguous(): a slice that is already contiguous keeps the whole storage",
     old="return x.numel() * x.element_size()",
     new="return x.contiguous().untyped_storage().nbytes()")


edit("usage_tensor_prod", within="get_memory_usage",
     why="prod of torch.tensor(x.shape): a 0-d tensor gives a float (torch.tensor(()) is float32)",
     old="return x.numel() * x.element_size()",
     new="return torch.tensor(x.shape).prod().item() * x.element_size()")


edit("usage_stride_span", within="get_memory_usage",
     why="the memory span the strides cover: wrong for expanded (stride 0) and stepped views",
     old="return x.numel() * x.element_size()",
     new=("if x.numel() == 0:\n"
          "        return 0\n"
          "    span = 1 + sum((n - 1) * abs(s) for n, s in zip(x.shape, x.stride()))\n"
          "    return span * x.element_size()"))


edit("storage_minus_offset", within="storage_bytes",
     why="storage from the view's first element on: subtracts the storage offset",
     old="return x.untyped_storage().nbytes()",
     new="return x.untyped_storage().nbytes() - x.storage_offset() * x.element_size()")


edit("storage_size_times_elsize", within="storage_bytes",
     why="untyped_storage().size() is already bytes; multiplying by element_size counts 4x for float32",
     old="return x.untyped_storage().nbytes()",
     new="return x.untyped_storage().size() * x.element_size()")


edit("storage_typed_elements", within="storage_bytes",
     why="typed storage size is in elements, not bytes",
     old="return x.untyped_storage().nbytes()",
     new="return x.untyped_storage().nbytes() // x.element_size()")


edit("storage_of_contiguous", within="storage_bytes",
     why="x.contiguous() first: a stepped slice or an expanded tensor is copied into its own storage",
     old="return x.untyped_storage().nbytes()",
     new="return x.contiguous().untyped_storage().nbytes()")


edit("storage_empty_zero", within="storage_bytes",
     why="an empty tensor pins nothing: big[5:5] still keeps big's storage",
     old="    return x.untyped_storage().nbytes()",
     new=("    if x.numel() == 0:\n"
          "        return 0\n"
          "    return x.untyped_storage().nbytes()"))


edit("format_float_counts", within="float_format",
     why="returns floats (23.0) not ints for the exponent and mantissa bits",
     old="return formats[dtype]",
     new=("sign, exponent, mantissa = formats[dtype]\n"
          "    return sign, float(exponent), float(mantissa)"))


edit("format_complex_as_real", within="float_format",
     why="complex dtypes answered with their real part's format instead of raising",
     edits=[("    formats = {",
            ("    if dtype.is_complex:\n"
            "        dtype = dtype.to_real()\n"
            "    formats = {")),
           ('raise ValueError(f"no floating-point format table entry for {dtype}")',
            'raise ValueError(f"unsupported {dtype}")')])


edit("rtz_round_quotient", within="rounds_to_zero",
     why="round(|v|/s) == 0: half-to-even is right, but |v|/s overflows to inf for large float64 values",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new=("if dtype == torch.float8_e8m0fnu:\n"
          "        return False\n"
          "    info = torch.finfo(dtype)\n"
          "    s = 2.0**-17 if dtype == torch.float8_e5m2fnuz else info.tiny * info.eps\n"
          "    return round(abs(value) / s) == 0"))


edit("rtz_from_float_format", within="rounds_to_zero",
     why="closed form from float_format's bit counts: raises ValueError for the fnuz and e8m0 float8 types",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new=("_, e, m = float_format(dtype)\n"
          "    s = 2.0 ** (2 - 2 ** (e - 1) - m)\n"
          "    return abs(value) <= s / 2"))


edit("rtz_tensor_result", within="rounds_to_zero",
     why="returns a 0-d bool tensor, not a Python bool",
     old=("stored = torch.tensor(value, dtype=torch.float64).to(dtype)\n"
          "    return bool(stored.item() == 0.0)"),
     new="return torch.tensor(value, dtype=torch.float64).to(dtype) == 0")


edit("rtz_fnuz_eps", within="rounds_to_zero",
     why="closed form handles e8m0 but trusts finfo(float8_e5m2fnuz).eps (0.125): its s comes out half too "
         "small",
     edits=[("if value == 0.0:", "if value == 0.0 or dtype == torch.float8_e8m0fnu:"),
           ("stored = torch.tensor(value, dtype=torch.float64).to(dtype)", "info = torch.finfo(dtype)"),
           ("return bool(stored.item() == 0.0)", "return abs(value) <= info.tiny * info.eps / 2")])


edit("bpp_state_bf16", within="bytes_per_parameter",
     why="mixed precision keeps the optimizer state in bf16 too",
     old="state = state_values[optimizer] * FP32_BYTES",
     new="state = state_values[optimizer] * (BF16_BYTES if mixed_precision else FP32_BYTES)")


edit("bpp_sgd_momentum", within="bytes_per_parameter",
     why="SGD counted with a momentum buffer",
     old='"sgd": 0',
     new='"sgd": 1')


edit("bpp_float_bytes", within="bytes_per_parameter",
     why="bytes from finfo(...).bits / 8: returns a float",
     old="state = state_values[optimizer] * FP32_BYTES",
     new="state = state_values[optimizer] * torch.finfo(torch.float32).bits / 8")


edit("bpp_mixed_no_check", within="bytes_per_parameter",
     why="the name is only checked on the fp32 path: an unknown optimizer with mixed_precision=True returns 8",
     edits=[("if optimizer not in state_values:",
             "if optimizer not in state_values and not mixed_precision:"),
            ("state = state_values[optimizer] * FP32_BYTES",
             "state = state_values.get(optimizer, 0) * FP32_BYTES")])


edit("bpp_rmsprop_two", within="bytes_per_parameter",
     why="RMSprop counted with two state values (square average and momentum)",
     old='"rmsprop": 1',
     new='"rmsprop": 2')


edit("bpp_mixed_fp32_grads", within="bytes_per_parameter",
     why="mixed precision keeps fp32 gradients: only the parameters are bf16",
     old="return BF16_BYTES + BF16_BYTES + FP32_BYTES + state",
     new="return BF16_BYTES + FP32_BYTES + FP32_BYTES + state")


edit("napkin_int_when_exact", within="max_trainable_parameters",
     why="returns an int when the division is exact",
     old="return gpu_bytes * num_gpus / bytes_per_param",
     new=("total = gpu_bytes * num_gpus / bytes_per_param\n"
          "    return int(total) if float(total).is_integer() else total"))
