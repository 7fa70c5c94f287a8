"""Pictures for the feedback page: small, bounded data that a trusted test attaches to its record.

A graded test (or a helper it calls) computes, *in the trusted process* and from the
observations a probe returned, the numbers a picture needs, and calls `attach(figure(...))`
(`record_property`-like, but callable from the helpers the tests share).  The plugin
(`grader.testing.pytest_plugin`) collects them into the running test's record as ``record["figures"]``;
instructor.json keeps every test's, results.json carries them for *public* tests only
(``tests[i].extra_data.figures``: hidden tests keep their details hidden), and
`grader.reports.feedback` draws them.  Outside a graded test (a benchmark calling the same
helper) `attach` does nothing.

The data is plain JSON and bounded: at most `MAX_FIGURES` figures per test, `MAX_SERIES` series
per figure, `MAX_POINTS` points per series; numbers are finite floats rounded to 6 significant
digits (anything else becomes ``None``, a gap); texts are cut to `MAX_TEXT` characters
(a caption to `MAX_CAPTION`).  Texts
are the test's own words; only numbers may come from what the submission returned, and they
pass through `number()` here.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from typing import Any

MAX_FIGURES, MAX_SERIES, MAX_POINTS, MAX_MARKS, MAX_TEXT, MAX_CAPTION = 3, 6, 128, 8, 300, 1200
KINDS = ("lines", "bars")  # lines: numeric x per series; bars: one shared list of category labels
STYLES = ("line", "dashed", "bar", "points")

_records: list[dict[str, Any]] = []  # the running graded test's record (a stack: one at a time)


def number(value: Any) -> float | None:
    """A finite float rounded to 6 significant digits, or None (non-finite, not a real number)."""
    if type(value) not in (int, float):
        try:
            import torch

            if not (isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex()):
                return None
            value = value.item()
        except Exception:  # noqa: BLE001 - anything else is not a number for a picture
            return None
    try:
        value = float(value)
    except (OverflowError, ValueError):
        return None
    return float(f"{value:.6g}") if math.isfinite(value) else None


def _text(value: Any) -> str:
    return str(value)[:MAX_TEXT]


def series(label: str, y: Iterable[Any], *, x: Iterable[Any] | None = None, style: str = "line") -> dict[str, Any]:
    """One series: y values (and, for a `lines` figure, their x values)."""
    if style not in STYLES:
        raise ValueError(f"series style must be one of {STYLES}, not {style!r}")
    out: dict[str, Any] = {"label": _text(label), "style": style, "y": [number(v) for v in list(y)[:MAX_POINTS]]}
    if x is not None:
        xs = [number(v) for v in list(x)[:MAX_POINTS]]
        if len(xs) != len(out["y"]):
            raise ValueError(f"series {label!r}: {len(xs)} x values for {len(out['y'])} y values")
        out["x"] = xs
    return out


def mark(x: Any, y: Any, label: str) -> dict[str, Any]:
    """A marked point (e.g. the first divergence); on a `bars` figure x is the category's index."""
    return {"x": number(x), "y": number(y), "label": _text(label)}


def figure(title: str, data: list[dict[str, Any]], *, kind: str = "lines", x_label: str = "", y_label: str = "",
           log_y: bool = False, categories: Iterable[str] | None = None, marks: Iterable[dict[str, Any]] = (),
           caption: str = "") -> dict[str, Any]:
    """A figure as plain, bounded JSON (see the module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"figure kind must be one of {KINDS}, not {kind!r}")
    fig: dict[str, Any] = {"kind": kind, "title": _text(title), "x_label": _text(x_label), "y_label": _text(y_label),
                           "log_y": bool(log_y), "series": list(data)[:MAX_SERIES],
                           "marks": list(marks)[:MAX_MARKS], "caption": str(caption)[:MAX_CAPTION]}
    if kind == "bars":
        fig["categories"] = [_text(c)[:60] for c in list(categories or [])[:MAX_POINTS]]
    return fig


def attach(fig: dict[str, Any]) -> None:
    """Store `fig` in the running graded test's record (at most MAX_FIGURES; no-op outside a test)."""
    if not _records:
        return
    figures = _records[-1].setdefault("figures", [])
    if len(figures) < MAX_FIGURES:
        figures.append(fig)


@contextlib.contextmanager
def collecting(record: dict[str, Any]) -> Iterator[None]:
    """While a graded test runs (the plugin wraps its call): `attach` writes into `record`."""
    _records.append(record)
    try:
        yield
    finally:
        _records.pop()


def is_figure(fig: Any) -> bool:
    """Whether `fig` has the shape `figure()` writes (the renderer skips anything else)."""
    if not isinstance(fig, dict) or fig.get("kind") not in KINDS or not isinstance(fig.get("series"), list):
        return False
    if len(fig["series"]) > MAX_SERIES or len(fig.get("marks") or []) > MAX_MARKS:
        return False
    for s in fig["series"]:
        if not isinstance(s, dict) or s.get("style") not in STYLES or not isinstance(s.get("y"), list):
            return False
        if len(s["y"]) > MAX_POINTS or not isinstance(s.get("x", []), list):
            return False
        if any(v is not None and (type(v) not in (int, float) or not math.isfinite(v)) for v in s["y"] + s.get("x", [])):
            return False
        if fig["kind"] == "lines" and len(s.get("x", [])) != len(s["y"]):
            return False
    if fig["kind"] == "bars" and not (isinstance(fig.get("categories"), list) and all(
            len(s["y"]) == len(fig["categories"]) for s in fig["series"])):
        return False
    return isinstance(fig.get("marks", []), list) and all(isinstance(m, dict) for m in fig.get("marks", []))
