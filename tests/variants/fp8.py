"""Correct variants of solutions/fp8.py."""

import torch

from grader.authoring.mutants import variant


@variant(replaces="fp8_quantize", why="handles the zero and empty cases with early returns, clamps with minimum/maximum")
def fp8_quantize_branches(x, dtype=torch.float8_e4m3fn):
    if dtype not in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise ValueError(f"unsupported dtype {dtype}")
    info = torch.finfo(dtype)
    xf = x.to(torch.float32)
    if xf.numel() == 0 or not xf.abs().max() > 0:
        return xf.to(dtype), torch.tensor(1.0, device=x.device)
    scale = xf.abs().amax() / info.max
    scaled = torch.minimum(torch.maximum(xf / scale, torch.tensor(info.min)), torch.tensor(info.max))
    return scaled.to(dtype), scale


@variant(replaces="fp8_error_bound", why="computes the scale directly and the two terms with where")
def fp8_error_bound_where(x, dtype=torch.float8_e4m3fn):
    info = torch.finfo(dtype)
    xf = x.float().abs()
    amax = xf.max() if xf.numel() else torch.zeros(())
    scale = amax / info.max if amax > 0 else torch.ones(())
    floor = scale * info.smallest_normal * info.eps / 2
    rel = xf * info.eps / 2
    return torch.where(rel > floor, rel, floor.expand_as(rel))


# ---- independent breaking pass (BREAK_NEW.md, 2026-11-22): variants ----


@variant(replaces="fp8_quantize", why="bk: Python branch for the zero/empty case, torch.amax on the native dtype (abs/max are exact), clamp(min=, max=)")
def fp8_quantize_bk_branchy(x, dtype=torch.float8_e4m3fn):
    if dtype not in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise ValueError("dtype must be float8_e4m3fn or float8_e5m2")
    top = torch.finfo(dtype).max
    if x.numel() == 0:
        return torch.empty(x.shape, dtype=dtype, device=x.device), torch.ones((), dtype=torch.float32, device=x.device)
    amax = torch.amax(x.abs()).to(torch.float32)
    if amax.item() == 0:
        scale = torch.tensor(1.0, dtype=torch.float32, device=x.device)
    else:
        scale = amax / torch.tensor(top, dtype=torch.float32, device=x.device)
    q = torch.clamp(x.float() / scale, min=-top, max=top).to(dtype)
    return q, scale


@variant(replaces="fp8_dequantize", why="bk: torch.mul on the float32 copy, then .to(dtype)")
def fp8_dequantize_bk_mul(q, scale, dtype=torch.float32):
    return torch.mul(q.float(), scale.float()).to(dtype=dtype)


@variant(replaces="fp8_error_bound", why="bk: the two cases as a torch.where on |x|/scale >= tiny (equal to the max)")
def fp8_error_bound_bk_piecewise(x, dtype=torch.float8_e4m3fn):
    _, scale = fp8_quantize(x, dtype)
    info = torch.finfo(dtype)
    ax = x.float().abs()
    normal = ax / scale >= info.smallest_normal
    return torch.where(normal, ax * (info.eps / 2), (scale * info.smallest_normal * info.eps / 2).expand_as(ax)).float()


@variant(replaces="fp8_error_bound", why="bk: recomputes the scale itself and uses finfo.tiny and clamp(min=)")
def fp8_error_bound_bk_inline_scale(x, dtype=torch.float8_e4m3fn):
    info = torch.finfo(dtype)
    ax = x.to(torch.float32).abs()
    amax = ax.max() if ax.numel() else torch.zeros((), device=x.device)
    scale = amax / info.max if amax > 0 else torch.ones((), device=x.device)
    floor = scale * (info.tiny * info.eps / 2)
    return torch.maximum(ax * (info.eps / 2), floor)


@variant(replaces="fp8_matmul", why="bk: makes qb column-major via b.t() quantised then .t() (same values, same layout)")
def fp8_matmul_bk_transpose_first(a, b):
    qa, sa = fp8_quantize(a.contiguous(), torch.float8_e4m3fn)
    qbt, sb = fp8_quantize(b.t().contiguous(), torch.float8_e4m3fn)
    return torch._scaled_mm(qa, qbt.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


# ---- second breaking pass (BREAK5.md, session 5) ----


@variant(replaces="fp8_quantize", why="b5: scale from a Python float quotient (double rounding of a quotient is innocuous)")
def b5_q_python_scale(x, dtype=torch.float8_e4m3fn):
    if dtype not in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise ValueError("bad dtype")
    top = torch.finfo(dtype).max
    x32 = x.detach().to(torch.float32)
    amax = float(x32.abs().max()) if x32.numel() else 0.0
    scale = torch.tensor(amax / top if amax > 0 else 1.0, dtype=torch.float32, device=x.device)
    q = torch.clamp(x32 / scale, min=-top, max=top).to(dtype)
    return q, scale


@variant(replaces="fp8_quantize", why="b5: x / scale in x's dtype for float64 input (promotes, more precise), float32 otherwise")
def b5_q_f64_division(x, dtype=torch.float8_e4m3fn):
    if dtype not in FP8_FORMATS:
        raise ValueError("bad dtype")
    top = torch.finfo(dtype).max
    xw = x if x.dtype == torch.float64 else x.to(torch.float32)
    amax = x.to(torch.float32).abs().max() if x.numel() else torch.zeros((), device=x.device)
    scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))
    q = (xw / scale).clamp(-top, top).to(dtype)
    return q, scale
