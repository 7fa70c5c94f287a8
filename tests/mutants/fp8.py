"""Mutants of solutions/fp8.py: each is one bug a student plausibly writes."""

import torch

from grader.mutants import mutant


@mutant(replaces="fp8_quantize", why="uses the e4m3 maximum (448) for both formats")
def fp8_quantize_one_max(x, dtype=torch.float8_e4m3fn):
    if dtype not in FP8_FORMATS:
        raise ValueError("not an fp8 format")
    amax = x.float().abs().max() if x.numel() else torch.zeros(())
    scale = amax / 448.0 if amax > 0 else torch.ones(())
    return (x.float() / scale).clamp(-448, 448).to(dtype), scale


@mutant(replaces="fp8_quantize", why="amax over the signed values (x.max()), not their magnitudes")
def fp8_quantize_signed_max(x, dtype=torch.float8_e4m3fn):
    if dtype not in FP8_FORMATS:
        raise ValueError("not an fp8 format")
    top = torch.finfo(dtype).max
    amax = x.float().max() if x.numel() else torch.zeros(())
    scale = amax / top if amax > 0 else torch.ones(())
    return (x.float() / scale).clamp(-top, top).to(dtype), scale


@mutant(replaces="fp8_quantize", why="divides by zero for an all-zero tensor (NaN scale)")
def fp8_quantize_zero_scale(x, dtype=torch.float8_e4m3fn):
    if dtype not in FP8_FORMATS:
        raise ValueError("not an fp8 format")
    top = torch.finfo(dtype).max
    scale = x.float().abs().max() / top
    return (x.float() / scale).clamp(-top, top).to(dtype), scale


@mutant(replaces="fp8_quantize", why="scales in the input's dtype (bfloat16 scale arithmetic loses bits)")
def fp8_quantize_native_dtype(x, dtype=torch.float8_e4m3fn):
    if dtype not in FP8_FORMATS:
        raise ValueError("not an fp8 format")
    top = torch.finfo(dtype).max
    amax = x.abs().max() if x.numel() else torch.zeros((), dtype=x.dtype)
    scale = amax / top if amax > 0 else torch.ones((), dtype=x.dtype)
    return (x / scale).clamp(-top, top).to(dtype), scale.float()


@mutant(replaces="fp8_quantize", why="divides x in place: the caller's tensor is changed")
def fp8_quantize_in_place(x, dtype=torch.float8_e4m3fn):
    if dtype not in FP8_FORMATS:
        raise ValueError("not an fp8 format")
    top = torch.finfo(dtype).max
    amax = x.float().abs().max() if x.numel() else torch.zeros(())
    scale = amax / top if amax > 0 else torch.ones(())
    if x.dtype == torch.float32:
        return x.div_(scale).clamp_(-top, top).to(dtype), scale
    return (x.float() / scale).clamp(-top, top).to(dtype), scale


@mutant(replaces="fp8_quantize", why="accepts any dtype without a ValueError")
def fp8_quantize_no_check(x, dtype=torch.float8_e4m3fn):
    top = torch.finfo(dtype).max
    amax = x.float().abs().max() if x.numel() else torch.zeros(())
    scale = amax / top if amax > 0 else torch.ones(())
    return (x.float() / scale).clamp(-top, top).to(dtype), scale


@mutant(replaces="fp8_dequantize", why="returns float32 whatever dtype is asked for")
def fp8_dequantize_always_fp32(q, scale, dtype=torch.float32):
    return q.to(torch.float32) * scale


@mutant(replaces="fp8_dequantize", why="divides by the scale instead of multiplying")
def fp8_dequantize_divides(q, scale, dtype=torch.float32):
    return (q.to(torch.float32) / scale).to(dtype)


@mutant(replaces="fp8_dequantize", why="multiplies in the output dtype (bfloat16 rounding of the scale first)")
def fp8_dequantize_low_precision(q, scale, dtype=torch.float32):
    return q.to(dtype) * scale.to(dtype)


@mutant(replaces="fp8_error_bound", why="a full gap instead of half a gap")
def fp8_error_bound_full_gap(x, dtype=torch.float8_e4m3fn):
    _, scale = fp8_quantize(x, dtype)
    info = torch.finfo(dtype)
    return torch.maximum(x.float().abs() * info.eps, scale * info.smallest_normal * info.eps)


@mutant(replaces="fp8_error_bound", why="forgets the subnormal floor: zero bound for x = 0")
def fp8_error_bound_no_floor(x, dtype=torch.float8_e4m3fn):
    return x.float().abs() * (torch.finfo(dtype).eps / 2)


@mutant(replaces="fp8_error_bound", why="floor without the scale (in the scaled domain, not x's)")
def fp8_error_bound_unscaled_floor(x, dtype=torch.float8_e4m3fn):
    info = torch.finfo(dtype)
    return torch.maximum(x.float().abs() * (info.eps / 2), torch.tensor(info.smallest_normal * info.eps / 2))


@mutant(replaces="fp8_error_bound", why="uses e4m3's eps for both formats")
def fp8_error_bound_one_eps(x, dtype=torch.float8_e4m3fn):
    _, scale = fp8_quantize(x, dtype)
    info = torch.finfo(dtype)
    return torch.maximum(x.float().abs() * (0.125 / 2), scale * (info.smallest_normal * 0.125 / 2))


@mutant(replaces="fp8_matmul", why="quantises b as e5m2 (less precision than the test's e4m3)")
def fp8_matmul_e5m2(a, b):
    qa, sa = fp8_quantize(a.contiguous())
    qb, sb = fp8_quantize(b, torch.float8_e5m2)
    qa2 = (fp8_dequantize(qb, sb)).to(a.device)
    return (fp8_dequantize(qa, sa) @ qa2).to(torch.bfloat16)


@mutant(replaces="fp8_matmul", why="forgets the scales (multiplies the raw fp8 values)")
def fp8_matmul_no_scales(a, b):
    qa, sa = fp8_quantize(a.contiguous())
    qb, sb = fp8_quantize(b)
    one = torch.ones((), device=a.device)
    return torch._scaled_mm(qa, qb.t().contiguous().t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
