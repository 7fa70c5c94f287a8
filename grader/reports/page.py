"""What every HTML page of the kit shares: the jinja2 environment, matplotlib set up for inline
SVG, and the atomic write.

Pages are self-contained (inline SVG and CSS, nothing fetched; no script, except the class
report's filter box: a few fixed lines of inline script that only hide rows of a table, and the
page reads the same without them).  Templates are autoescaped: text that came from a results
folder (messages quote student exceptions) is never markup.  Only SVG drawn here by matplotlib is inserted as is (`|safe`); matplotlib
escapes the text it writes into it, and mathtext is off, so a `$` in a label stays a `$`.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any


def environment() -> Any:
    """The jinja2 environment for grader/reports/templates (autoescape on for every template)."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("grader.reports", "templates"), autoescape=True)


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, text kept as SVG text and never parsed as mathtext."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text (small, searchable)
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def svg(fig: Any, *, tight: bool = True) -> str:
    """`fig` as an inline <svg> element (no XML prologue, no date), and the figure closed.
    `tight=False` keeps the figure's own margins (one drawing pass instead of two: faster)."""
    plt = pyplot()
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight" if tight else None,
                metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # inline: drop the XML prologue and DOCTYPE


def write_page(out: Path, html: str) -> None:
    """Write `html` to `out` atomically (a reader sees the old page or the new one)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
