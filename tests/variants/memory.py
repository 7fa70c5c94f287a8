"""Correct but different formulations of solutions/memory.py: each must pass every graded test."""

import math

import torch

from grader.authoring.mutants import variant


@variant(replaces="get_memory_usage", why="math.prod over the shape times dtype.itemsize")
def usage_prod_itemsize(x):
    import math
    return math.prod(x.shape) * x.dtype.itemsize


@variant(replaces="storage_bytes", why="untyped_storage().size() is the byte count too")
def storage_size(x):
    return x.untyped_storage().size()


@variant(replaces="float_format", why="bits and eps from finfo, restricted to the six supported dtypes")
def format_finfo_restricted(dtype):
    import math
    supported = (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2)
    if dtype not in supported:
        raise ValueError(f"unsupported {dtype}")
    info = torch.finfo(dtype)
    m = int(round(-math.log2(info.eps)))
    return (1, info.bits - 1 - m, m)


@variant(replaces="rounds_to_zero", why="the closed form: |v| <= half the smallest subnormal (a tie goes to the even 0)")
def rtz_closed_form(value, dtype):
    import math
    if value == 0.0:
        return False
    if dtype == torch.float8_e8m0fnu:
        return False  # no zero to round to
    mant = {torch.float64: 52, torch.float32: 23, torch.float16: 10, torch.bfloat16: 7, torch.float8_e4m3fn: 3,
            torch.float8_e5m2: 2, torch.float8_e4m3fnuz: 3, torch.float8_e5m2fnuz: 2}[dtype]
    smallest = math.ldexp(torch.finfo(dtype).tiny, -mant)
    return abs(value) <= smallest / 2


@variant(replaces="rounds_to_zero", why="converts with torch.tensor(value, dtype=dtype) directly")
def rtz_direct(value, dtype):
    return value != 0.0 and torch.tensor(value, dtype=dtype).item() == 0.0


@variant(replaces="max_trainable_parameters", why="bytes per GPU over bytes per parameter, times GPUs")
def napkin_reordered(gpu_bytes, num_gpus, bytes_per_param):
    return float(gpu_bytes / bytes_per_param * num_gpus)


@variant(replaces="storage_bytes", why="the (deprecated) typed storage: its size times the element size")
def storage_typed(x):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return x.storage().size() * x.element_size()


@variant(replaces="float_format", why="a table keyed by the dtype's name")
def format_by_name(dtype):
    table = {"float64": (1, 11, 52), "float32": (1, 8, 23), "float16": (1, 5, 10), "bfloat16": (1, 8, 7),
             "float8_e4m3fn": (1, 4, 3), "float8_e5m2": (1, 5, 2)}
    name = str(dtype).removeprefix("torch.")
    if name not in table:
        raise ValueError(f"unsupported dtype {dtype}")
    return table[name]


@variant(replaces="get_memory_usage", why="Tensor.nbytes")
def usage_nbytes(x):
    return x.nbytes


@variant(replaces="storage_bytes", why="len() of the untyped storage (its bytes)")
def storage_len(x):
    return len(x.untyped_storage())


# ---- breaking pass 2 (independent eyes) ----
@variant(replaces="get_memory_usage", why="Tensor.nbytes")
def usage_nbytes_b2(x):
    return x.nbytes


@variant(replaces="get_memory_usage", why="math.prod of the shape times dtype.itemsize")
def usage_prod_itemsize_b2(x):
    import math

    return math.prod(x.shape) * x.dtype.itemsize


@variant(replaces="get_memory_usage", why="a dense copy's storage: clone() of a non-dense tensor is contiguous")
def usage_clone_storage(x):
    return x.detach().clone().untyped_storage().nbytes()


@variant(replaces="storage_bytes", why="len() of the untyped storage (bytes)")
def storage_len_b2(x):
    return len(x.untyped_storage())


@variant(replaces="float_format", why="finfo-derived counts (as ints) after a membership check")
def format_finfo_ints(dtype):
    import math

    if dtype not in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
        raise ValueError(f"unsupported {dtype}")
    info = torch.finfo(dtype)
    mantissa = round(-math.log2(info.eps))
    return (1, info.bits - 1 - mantissa, mantissa)


@variant(replaces="float_format", why="table keyed by the dtype's name")
def format_by_name_b2(dtype):
    table = {"float64": (1, 11, 52), "float32": (1, 8, 23), "float16": (1, 5, 10), "bfloat16": (1, 8, 7),
             "float8_e4m3fn": (1, 4, 3), "float8_e5m2": (1, 5, 2)}
    name = str(dtype).removeprefix("torch.")
    if name not in table:
        raise ValueError(f"unsupported {dtype}")
    return table[name]


@variant(replaces="rounds_to_zero", why="exact closed form |v| <= s/2 with the true smallest subnormal of every float type")
def rtz_exact_closed_form(value, dtype):
    if value == 0.0 or dtype == torch.float8_e8m0fnu:
        return False
    if dtype == torch.float8_e5m2fnuz:
        s = 2.0**-17
    else:
        info = torch.finfo(dtype)
        s = info.tiny * info.eps
    return abs(value) <= s / 2


@variant(replaces="rounds_to_zero", why="a 1-element float64 tensor converted, compared with torch.eq")
def rtz_full_eq(value, dtype):
    if value == 0.0:
        return False
    stored = torch.full((1,), value, dtype=torch.float64).to(dtype)
    return bool(torch.eq(stored.to(torch.float64), 0.0).all())


@variant(replaces="bytes_per_parameter", why="closed forms 4*(2+n) and 2*2 + 4*(1+n)")
def bpp_closed_forms(optimizer, mixed_precision=False):
    n = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}.get(optimizer)
    if n is None:
        raise ValueError(f"unknown optimizer {optimizer}")
    return 2 * 2 + 4 * (1 + n) if mixed_precision else 4 * (2 + n)


@variant(replaces="max_trainable_parameters", why="divides one GPU's bytes first, then multiplies by the GPU count")
def napkin_per_gpu_first(gpu_bytes, num_gpus, bytes_per_param):
    return gpu_bytes / bytes_per_param * num_gpus
