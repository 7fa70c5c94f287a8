"""Assertions for graded tests, with one-line plain-language messages.

Every helper checks the *type* of what came back first (a probe result is untrusted data),
then its value, and says what was checked and expected vs got in words a student can act
on.  The first line of the message is what `grader check` shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch


def _fmt(value: Any, limit: int = 80) -> str:
    """A short description of a value; bounded work however large the (untrusted) value is."""
    if type(value) is torch.Tensor:
        return f"tensor of shape {tuple(value.shape)}, dtype {str(value.dtype).removeprefix('torch.')}"
    from grader.testing.student import safe_repr

    return safe_repr(value, limit)


def assert_type(got: Any, expected: type | tuple[type, ...], what: str) -> None:
    """Exact type check (`bool` is not accepted where `int` is expected)."""
    types = expected if isinstance(expected, tuple) else (expected,)
    if type(got) not in types:
        names = " or ".join(t.__name__ for t in types)
        raise AssertionError(f"{what}: expected a {names}, got {type(got).__name__} {_fmt(got)}")


def assert_equal(got: Any, want: Any, what: str, *, kind: type | tuple[type, ...] | None = None) -> None:
    """`got == want` exactly, with `got` of type `kind` (default: the type of `want`)."""
    assert_type(got, kind or type(want), what)
    if got != want:
        raise AssertionError(f"{what}: expected {_fmt(want)}, got {_fmt(got)}")


def assert_close(got: Any, want: float, what: str, *, rel: float = 1e-9, abs_: float = 0.0) -> None:
    """A real number within a relative (and/or absolute) tolerance of `want`."""
    assert_type(got, (float, int), what)
    if not math.isclose(got, want, rel_tol=rel, abs_tol=abs_):
        raise AssertionError(f"{what}: expected {want:.6g} (relative tolerance {rel:g}), got {_fmt(got)}")


def assert_tensor(got: Any, like: torch.Tensor, what: str, *, atol: float = 0.0, rtol: float = 0.0,
                  check_dtype: bool = True) -> None:
    """A real `torch.Tensor` with `like`'s shape (and dtype), equal within atol + rtol·|like|."""
    assert_type(got, torch.Tensor, what)
    if tuple(got.shape) != tuple(like.shape):
        raise AssertionError(f"{what}: expected shape {tuple(like.shape)}, got {tuple(got.shape)}")
    if check_dtype and got.dtype != like.dtype:
        raise AssertionError(f"{what}: expected dtype {like.dtype}, got {got.dtype}")
    if got.numel() == 0:
        return
    a, b = got.detach().to(torch.float64), like.detach().to(torch.float64)
    if atol == 0.0 and rtol == 0.0:
        bad = ~((a == b) | (a.isnan() & b.isnan()))
    else:
        bad = ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0])
        diff = (a - b).abs().nan_to_num(nan=float("inf")).max().item()
        tol = "exactly" if atol == 0.0 and rtol == 0.0 else f"within atol={atol:g}, rtol={rtol:g}"
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.numel()} values differ (expected {tol}); "
            f"at index {index} expected {b[index].item():.6g}, got {a[index].item():.6g}; largest difference {diff:.3g}")


def assert_cases(got: Any, want: Sequence[Any], what: str, describe: Callable[[int], str],
                 *, kind: type | tuple[type, ...] | None = None) -> None:
    """A list of results, one per case, each exactly equal; names the first wrong case."""
    assert_type(got, (list, tuple), what)
    if len(got) != len(want):
        raise AssertionError(f"{what}: expected {len(want)} results, got {len(got)}")
    kinds = kind if isinstance(kind, tuple) else ((kind,) if kind else None)
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if type(g) not in (kinds or (type(w),)) or g != w]
    if wrong:
        i = wrong[0]
        raise AssertionError(f"{what}: wrong for {len(wrong)} of {len(want)} cases; for {describe(i)} "
                             f"expected {_fmt(want[i])}, got {_fmt(got[i])}")
