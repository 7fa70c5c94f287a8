"""Mutants of solutions/memory.py: each is one bug a student plausibly writes."""

import torch

from grader.mutants import mutant


@mutant(replaces="storage_bytes", why="counts the view's own elements instead of the storage it pins")
def storage_bytes_of_view(x):
    return x.numel() * x.element_size()


@mutant(replaces="get_memory_usage", why="assumes 4 bytes per element whatever the dtype")
def get_memory_usage_fp32(x):
    return x.numel() * 4


@mutant(replaces="float_format", why="bfloat16 given float16's exponent/mantissa split")
def float_format_bf16_like_fp16(dtype):
    formats = {torch.float64: (1, 11, 52), torch.float32: (1, 8, 23), torch.float16: (1, 5, 10),
               torch.bfloat16: (1, 5, 10), torch.float8_e4m3fn: (1, 4, 3), torch.float8_e5m2: (1, 5, 2)}
    if dtype not in formats:
        raise ValueError(dtype)
    return formats[dtype]


@mutant(replaces="float_format", why="returns None instead of raising for a non-float dtype")
def float_format_no_error(dtype):
    info = torch.finfo(dtype) if dtype.is_floating_point else None
    if info is None:
        return None
    mantissa = {64: 52, 32: 23, 16: 10 if dtype == torch.float16 else 7, 8: 3 if "e4m3" in str(dtype) else 2}[info.bits]
    return (1, info.bits - 1 - mantissa, mantissa)


@mutant(replaces="rounds_to_zero", why="treats everything below the smallest *normal* number as zero (ignores subnormals)")
def rounds_to_zero_no_subnormals(value, dtype):
    return value != 0.0 and abs(value) < torch.finfo(dtype).tiny


@mutant(replaces="bytes_per_parameter", why="forgets the fp32 master copy in mixed precision")
def bytes_per_parameter_no_master(optimizer, mixed_precision=False):
    state = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}[optimizer] * 4
    return (2 + 2 + state) if mixed_precision else (4 + 4 + state)


@mutant(replaces="bytes_per_parameter", why="counts Adam's state as one value per parameter")
def bytes_per_parameter_adam_one_moment(optimizer, mixed_precision=False):
    state = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 1, "adamw": 1}[optimizer] * 4
    return (2 + 2 + 4 + state) if mixed_precision else (4 + 4 + state)


@mutant(replaces="max_trainable_parameters", why="forgets that the state is spread over all GPUs")
def max_trainable_parameters_one_gpu(gpu_bytes, num_gpus, bytes_per_param):
    return gpu_bytes / bytes_per_param
