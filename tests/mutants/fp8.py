"""Mutants of solutions/fp8.py: each is one bug a student plausibly writes."""

import torch

from grader.authoring.mutants import edit, mutant


edit("fp8_quantize_one_max", within="fp8_quantize",
     why="uses the e4m3 maximum (448) for both formats",
     old="top = torch.finfo(dtype).max",
     new="top = 448.0")


edit("fp8_quantize_signed_max", within="fp8_quantize",
     why="amax over the signed values (x.max()), not their magnitudes",
     old="amax = x32.abs().max()",
     new="amax = x32.max()")


edit("fp8_quantize_zero_scale", within="fp8_quantize",
     why="divides by zero for an all-zero tensor (NaN scale)",
     old="scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))",
     new="scale = amax / top")


edit("fp8_quantize_native_dtype", within="fp8_quantize",
     why="scales in the input's dtype (bfloat16 scale arithmetic loses bits)",
     edits=[("x32 = x.to(torch.float32)",
             "x32 = x"),
            ("return q, scale",
             "return q, scale.float()")])


edit("fp8_quantize_in_place", within="fp8_quantize",
     why="divides x in place: the caller's tensor is changed",
     old="q = (x32 / scale).clamp(-top, top).to(dtype)",
     new="q = x32.div_(scale).clamp_(-top, top).to(dtype)")


edit("fp8_quantize_no_check", within="fp8_quantize",
     why="accepts any dtype without a ValueError",
     old=("    if dtype not in FP8_FORMATS:\n"
          '        raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")\n'),
     new="")


edit("fp8_dequantize_always_fp32", within="fp8_dequantize",
     why="returns float32 whatever dtype is asked for",
     old="return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)",
     new="return q.to(torch.float32) * scale")


edit("fp8_dequantize_divides", within="fp8_dequantize",
     why="divides by the scale instead of multiplying",
     old="return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)",
     new="return (q.to(torch.float32) / scale).to(dtype)")


edit("fp8_dequantize_low_precision", within="fp8_dequantize",
     why="multiplies in the output dtype (bfloat16 rounding of the scale first)",
     old="return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)",
     new="return q.to(dtype) * scale.to(dtype)")


edit("fp8_error_bound_full_gap", within="fp8_error_bound",
     why="a full gap instead of half a gap",
     old="to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2)",
     new="float().abs() * info.eps, scale * info.smallest_normal * info.eps")


edit("fp8_error_bound_no_floor", within="fp8_error_bound",
     why="forgets the subnormal floor: zero bound for x = 0",
     old=("_, scale = fp8_quantize(x, dtype)\n"
          "    info = torch.finfo(dtype)\n"
          "    return torch.maximum(x.to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2))"),
     new="return x.float().abs() * (torch.finfo(dtype).eps / 2)")


edit("fp8_error_bound_unscaled_floor", within="fp8_error_bound",
     why="floor without the scale (in the scaled domain, not x's)",
     edits=[("    _, scale = fp8_quantize(x, dtype)\n", ""),
           ("to(torch.float32).abs() * (info.eps / 2), scale * (",
            "float().abs() * (info.eps / 2), torch.tensor(")])


edit("fp8_error_bound_one_eps", within="fp8_error_bound",
     why="uses e4m3's eps for both formats",
     old="to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps",
     new="float().abs() * (0.125 / 2), scale * (info.smallest_normal * 0.125")


edit("fp8_matmul_e5m2", within="fp8_matmul",
     why="quantises b as e5m2 (less precision than the test's e4m3)",
     edits=[("qb, sb = fp8_quantize(b)", "qb, sb = fp8_quantize(b, torch.float8_e5m2)"),
           ("qb = qb.t().contiguous().t()", "qa2 = (fp8_dequantize(qb, sb)).to(a.device)"),
           ("return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)",
            "return (fp8_dequantize(qa, sa) @ qa2).to(torch.bfloat16)")])


edit("fp8_matmul_no_scales", within="fp8_matmul",
     why="forgets the scales (multiplies the raw fp8 values)",
     edits=[("qb = qb.t().contiguous().t()", "one = torch.ones((), device=a.device)"),
           ("return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)",
            "return torch._scaled_mm(qa, qb.t().contiguous().t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)")])


# ---- independent breaking pass (BREAK_NEW.md, 2026-11-22) ----


edit("fp8_quantize_bk_inverse_scale", within="fp8_quantize",
     why="bk: returns the reciprocal scale finfo.max / amax (the 'multiply to quantise' convention)",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))",
            "inv = torch.where(amax > 0, top / amax, torch.ones_like(amax))"),
           ("q = (x32 / scale).clamp(-top, top).to(dtype)", "q = (x32 * inv).clamp(-top, top).to(dtype)"),
           ("return q, scale", "return q, inv")])


edit("fp8_quantize_bk_native_dtype", within="fp8_quantize",
     why="bk: divides and computes the scale in x's own dtype (bf16/fp16/fp64), not float32",
     edits=[("x32 = x.to(torch.float32)",
             "x32 = x"),
            ("return q, scale",
             "return q, scale.to(torch.float32)")])


edit("fp8_quantize_bk_divide_in_input_dtype", within="fp8_quantize",
     why="bk: float32 scale but x / scale computed in x's dtype (bf16 rounds twice before the fp8 cast)",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           (("x32 = x.to(torch.float32)\n"
            "    amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)"),
            "amax = x.to(torch.float32).abs().max() if x.numel() else torch.zeros((), device=x.device)"),
           ("q = (x32 / scale).clamp(-top, top).to(dtype)",
            "q = (x / scale.to(x.dtype)).clamp(-top, top).to(dtype)")])


edit("fp8_quantize_bk_empty_crash", within="fp8_quantize",
     why="bk: handles the all-zero tensor but calls .max() on an empty one (RuntimeError)",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)",
            "amax = x32.abs().max()")])


edit("fp8_quantize_bk_zero_nan", within="fp8_quantize",
     why="bk: no zero guard: an all-zero tensor gets scale 0 and q = 0/0 = NaN",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)",
            "amax = x32.abs().max() if x.numel() else torch.ones((), device=x.device) * top"),
           ("scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))", "scale = amax / top")])


edit("fp8_quantize_bk_scale_shape1", within="fp8_quantize",
     why="bk: scale has shape (1,) (keepdim reduction), not 0-d",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)",
            ("if x.numel():\n"
            "        amax = x32.abs().reshape(-1).max(dim=0, keepdim=True).values\n"
            "    else:\n"
            "        amax = torch.zeros(1, device=x.device)"))])


edit("fp8_quantize_bk_accepts_fnuz", within="fp8_quantize",
     why="bk: accepts any 1-byte float (float8_e4m3fnuz, float8_e5m2fnuz, e8m0) instead of raising",
     old=("if dtype not in FP8_FORMATS:\n"
          '        raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")'),
     new=("if not dtype.is_floating_point or dtype.itemsize != 1:\n"
          '        raise ValueError(f"bad dtype {dtype}")'))


edit("fp8_quantize_bk_inplace", within="fp8_quantize",
     why="bk: divides in place (.to(float32) is x itself for float32 input), so x is modified",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("q = (x32 / scale).clamp(-top, top).to(dtype)",
            "q = x32.div_(scale).clamp_(-top, top).to(dtype)")])


edit("fp8_quantize_bk_max_not_abs", within="fp8_quantize",
     why="bk: amax = x.max() (forgets abs): a tensor whose largest magnitude is negative overflows/clips",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)",
            "amax = x32.max().abs() if x.numel() else torch.zeros((), device=x.device)")])


edit("fp8_quantize_bk_e4m3_max_always", within="fp8_quantize",
     why="bk: always divides by e4m3's 448, also for float8_e5m2",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("top = torch.finfo(dtype).max", "top = torch.finfo(torch.float8_e4m3fn).max")])


edit("fp8_quantize_bk_via_bf16", within="fp8_quantize",
     why="bk: rounds through bfloat16 before the fp8 cast (double rounding breaks ties)",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("q = (x32 / scale).clamp(-top, top).to(dtype)",
            "q = (x32 / scale).clamp(-top, top).to(torch.bfloat16).to(dtype)")])


edit("fp8_quantize_bk_python_scale", within="fp8_quantize",
     why="bk: scale from Python floats, torch.tensor(amax.item() / max, dtype=float64): a float64 scale, "
         "not float32",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError(f"bad dtype {dtype}")'),
           ("amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)",
            "amax = x32.abs().max().item() if x.numel() else 0.0"),
           ("scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))",
            "scale = torch.tensor(amax / top if amax else 1.0, dtype=torch.float64)")])


edit("fp8_dequantize_bk_ignores_dtype", within="fp8_dequantize",
     why="bk: ignores `dtype`, always returns float32",
     old="return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)",
     new="return q.to(torch.float32) * scale.to(torch.float32)")


edit("fp8_dequantize_bk_cast_first", within="fp8_dequantize",
     why="bk: casts q to the target dtype first, so a bf16/fp16 result multiplies by a rounded scale",
     old="return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)",
     new="return q.to(dtype) * scale")


edit("fp8_dequantize_bk_divides", within="fp8_dequantize",
     why="bk: divides by the scale (the reciprocal-scale convention)",
     old="return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)",
     new="return (q.to(torch.float32) / scale.to(torch.float32)).to(dtype)")


edit("fp8_error_bound_bk_full_gap", within="fp8_error_bound",
     why="bk: a whole gap |x|*eps, not half of it",
     old="(info.eps / 2)",
     new="info.eps")


edit("fp8_error_bound_bk_no_subnormal", within="fp8_error_bound",
     why="bk: forgets the subnormal floor: the bound is 0 at x = 0 and too small for tiny |x|",
     edits=[("    _, scale = fp8_quantize(x, dtype)\n", ""),
           ("torch.maximum(x.to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2)",
            "x.to(torch.float32).abs() * (info.eps / 2")])


edit("fp8_error_bound_bk_floor_unscaled", within="fp8_error_bound",
     why="bk: the subnormal floor tiny*eps/2 without the scale",
     edits=[("    _, scale = fp8_quantize(x, dtype)\n", ""),
           ("maximum(x.to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2)",
            "clamp(x.to(torch.float32).abs() * (info.eps / 2), min=info.smallest_normal * info.eps / 2")])


edit("fp8_error_bound_bk_scaled_units", within="fp8_error_bound",
     why="bk: the normal term on the scaled value |x|/scale * eps/2 (forgets to scale back)",
     old="() * (info",
     new="() / scale * (info")


edit("fp8_error_bound_bk_input_dtype", within="fp8_error_bound",
     why="bk: returns the bound in x's dtype (bf16 input -> bf16 bound), not float32",
     old="to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2",
     new="abs() * (info.eps / 2), (scale * (info.smallest_normal * info.eps / 2)).to(x.dtype")


edit("fp8_error_bound_bk_resolution", within="fp8_error_bound",
     why="bk: uses finfo.resolution (decimal precision, 1.0 for e4m3) in place of eps",
     old="eps / 2), scale * (info.smallest_normal * info.eps",
     new="resolution / 2), scale * (info.smallest_normal * info.resolution")


edit("fp8_matmul_bk_out_float32", within="fp8_matmul",
     why="bk: returns _scaled_mm's default out_dtype (the operands' fp8 dtype / float32), not bfloat16",
     old="return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)",
     new="return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.float32)")


edit("fp8_matmul_bk_reciprocal_scales", within="fp8_matmul",
     why="bk: passes the reciprocal scales (1/sa, 1/sb) as if _scaled_mm took inverse scales",
     old="return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)",
     new="return torch._scaled_mm(qa, qb, scale_a=1.0 / sa, scale_b=1.0 / sb, out_dtype=torch.bfloat16)")


edit("fp8_matmul_bk_b_e5m2", within="fp8_matmul",
     why="bk: quantises the second operand to e5m2 (the gradient format)",
     old="qb, sb = fp8_quantize(b)",
     new="qb, sb = fp8_quantize(b, torch.float8_e5m2)")


edit("fp8_matmul_bk_one_scale", within="fp8_matmul",
     why="bk: multiplies only by sa, forgetting b's scale",
     old="return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)",
     new=("one = torch.ones((), dtype=torch.float32, device=a.device)\n"
          "    return torch._scaled_mm(qa, qb, scale_a=sa, scale_b=one, out_dtype=torch.bfloat16)"))


# ---- second breaking pass (BREAK5.md, session 5) ----


edit("b5_q_times_reciprocal", within="fp8_quantize",
     why="b5: multiplies by the reciprocal (x * (top / amax)): rounds differently than x / scale",
     edits=[('raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")',
            'raise ValueError("bad dtype")'),
           ("q = (x32 / scale).clamp(-top, top).to(dtype)",
            "inv = torch.where(amax > 0, top / amax, torch.ones_like(amax))"),
           ("return q, scale", "return (x32 * inv).clamp(-top, top).to(dtype), scale")])


edit("b5_eb_no_zero_guard", within="fp8_error_bound",
     why="b5: own scale without the zero guard: all-zero tensor gets a 0 bound (empty raises)",
     edits=[("    _, scale = fp8_quantize(x, dtype)\n", ""),
           ("return torch.maximum(x.to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2))",
            ("ax = x.to(torch.float32).abs()\n"
            "    scale = ax.max() / info.max\n"
            "    return torch.maximum(ax * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2))"))])


# Independent breaking pass (session 8): had full marks; caught by every midpoint between e4m3 values
# times a scale with an inexact reciprocal, and by the scale compared exactly.

edit("bk8_multiply_by_reciprocal", within="fp8_quantize", why="x * (1 / scale) instead of x / scale",
     old="q = (x32 / scale)", new="q = (x32 * (1.0 / scale))")
edit("bk8_scale_times_reciprocal_max", within="fp8_quantize",
     why="scale = amax * float32(1 / finfo.max): one ulp off for about half of all amax",
     old="amax / top,", new="amax * torch.tensor(1.0 / top, dtype=torch.float32),")


# -- every default and every case the docstrings name (issue 30) --------------------------------------

@mutant(replaces="fp8_quantize", why="i30: dtype defaults to float8_e5m2, not float8_e4m3fn", against="cc17031616fb")
def i30_quantize_default_e5m2(x, dtype=torch.float8_e5m2):
    if dtype not in FP8_FORMATS:
        raise ValueError(f"expected torch.float8_e4m3fn or torch.float8_e5m2, got {dtype}")
    top = torch.finfo(dtype).max
    x32 = x.to(torch.float32)
    amax = x32.abs().max() if x.numel() else torch.zeros((), device=x.device)
    scale = torch.where(amax > 0, amax / top, torch.ones_like(amax))
    return (x32 / scale).clamp(-top, top).to(dtype), scale


@mutant(replaces="fp8_dequantize", why="i30: dtype defaults to bfloat16 (the training dtype), not float32", against="0eb3dbf194b4")
def i30_dequantize_default_bf16(q, scale, dtype=torch.bfloat16):
    return (q.to(torch.float32) * scale.to(torch.float32)).to(dtype)


@mutant(replaces="fp8_error_bound", why="i30: dtype defaults to float8_e5m2, not float8_e4m3fn", against="07414fe672ae")
def i30_error_bound_default_e5m2(x, dtype=torch.float8_e5m2):
    _, scale = fp8_quantize(x, dtype)
    info = torch.finfo(dtype)
    return torch.maximum(x.to(torch.float32).abs() * (info.eps / 2), scale * (info.smallest_normal * info.eps / 2))
