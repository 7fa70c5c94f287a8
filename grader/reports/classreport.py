"""`grader report`: the class at a glance, as one self-contained HTML file.

`collect(DIR)` turns a results folder into plain numbers (`ClassData`); `render(data)` turns
those into HTML with jinja2 and inline SVG charts drawn by matplotlib.  Every number on the
page is computed from the batch's own files, so it equals what grades.csv and the
per-student results say (the kit's test checks that).

The page opens on what an instructor acts on: the score distribution (a chart and its numbers),
the timeouts, crashes and rejections, who changed score after a regrade, the late submissions
(those with no known time first) and the students; then the per-module chart (each student's
points as a share of the module's maximum, so modules of 6 and 30 points compare) and the
tests, hardest first: the `HARDEST` hardest in view, the rest collapsed, and a filter box (a few
lines of inline script that only hide rows; without script the page reads the same, the box
stays hidden).
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import MODULES
from grader.reports.page import environment, pyplot, svg, write_page
from grader.results.layout import Layout

#: Tests shown in view under "Tests, hardest first"; the others are collapsed below them.
HARDEST = 20

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class ReportError(Exception):
    """The folder is not a results folder the report can read."""


def mask_numbers(message: str) -> str:
    """A failure message with every number replaced by `#`, so that messages differing only in
    values (shapes, seeds, amounts) group together."""
    return _NUMBER.sub("#", message.strip().splitlines()[0] if message.strip() else "")[:300]


@dataclass
class TestStats:
    id: str
    module: str
    name: str
    checked: str
    points: float
    hidden: bool
    gpu: bool
    counts: Counter = field(default_factory=Counter)  # status -> submissions
    messages: Counter = field(default_factory=Counter)  # masked failure message -> submissions

    @property
    def graded(self) -> int:
        return sum(n for s, n in self.counts.items() if s != "pending")

    @property
    def pass_rate(self) -> float:
        return self.counts["passed"] / self.graded if self.graded else float("nan")

    @property
    def not_attempted_rate(self) -> float:
        return self.counts["not_attempted"] / self.graded if self.graded else float("nan")


@dataclass
class ClassData:
    folder: Path
    students: list[dict[str, Any]]  # one row per grades.csv line (numbers as floats)
    tests: list[TestStats]
    incidents: list[dict[str, str]]  # timeouts, crashes, rejections, errors
    changes: list[dict[str, Any]] = field(default_factory=list)  # after --compare
    #: the late policy found no submission time: student, what was decided, why (grader.course.late)
    unknown_times: list[dict[str, str]] = field(default_factory=list)
    #: the course.toml assignment the class was graded for ("" without one: grader.course.config.recorded)
    assignment: str = ""

    @property
    def title(self) -> str:
        """"Class report: hw1: Bytes, views and FLOPs": the assignment as course.toml labels it (its id
        alone where course.toml has no title or no longer has it), the results folder's name only
        where it is not the assignment's id."""
        label = self.assignment
        if label:
            from grader.course.config import CourseError, resolve

            try:
                label = resolve(self.assignment).label
            except CourseError:
                pass
        names = [self.folder.name] if self.folder.name != self.assignment else []
        return "Class report: " + ", ".join(names + ([label] if label else []))

    @property
    def graded(self) -> list[dict[str, Any]]:
        return [s for s in self.students if s["status"].startswith(("graded", "partial"))]  # partial: has a score


def _float(text: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def read_grades(folder: Path) -> list[dict[str, Any]]:
    layout = Layout(folder)
    if not folder.is_dir():
        raise ReportError(f"{folder}: no such folder")
    if not layout.grades.is_file():
        raise ReportError(f"{folder} holds no grades.csv: not a results folder of `grader grade`")
    rows = []
    with open(layout.grades, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            student = row.get("student", "").lstrip("'")
            rows.append({"student": student, "score": _float(row.get("score", "")),
                         "max_score": _float(row.get("max_score", "")), "pending": _float(row.get("pending", "")),
                         "status": (row.get("status") or "").lstrip("'"),
                         "modules": {m: _float(row.get(m, "")) for m in MODULES if m in row},
                         # the late policy's columns (grader.course.late): empty when graded without --deadline
                         "raw_score": _float(row.get("raw_score") or row.get("score", "")),
                         "late_penalty": _float(row.get("late_penalty", "")),
                         "late": (row.get("late") or "").lstrip("'")})
    return rows


def collect(folder: Path, compare: Path | None = None) -> ClassData:
    """Read a results folder (and optionally an older one of the same class)."""
    folder = Path(folder)
    layout = Layout(folder)
    students = read_grades(folder)
    tests: dict[str, TestStats] = {}
    incidents: list[dict[str, str]] = []
    for row in students:
        sid = row["student"]
        if not row["status"].startswith("graded"):
            incidents.append({"student": sid, "kind": row["status"].split(":")[0], "detail": row["status"]})
        path = layout.instructor(sid)
        if not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            incidents.append({"student": sid, "kind": "unreadable", "detail": f"{path.name} is not valid JSON"})
            continue
        possible = row["possible"] = {}  # the module's maximum for this student: the points of its tests, less pending
        for rec in doc.get("records", []):
            if rec.get("status") != "pending":
                possible[rec.get("module", "")] = possible.get(rec.get("module", ""), 0.0) + float(rec.get("points", 0))
            t = tests.get(rec["id"])
            if t is None:
                t = tests[rec["id"]] = TestStats(rec["id"], rec.get("module", ""), rec.get("name", rec["id"]),
                                                 rec.get("checked", ""), float(rec.get("points", 0)),
                                                 bool(rec.get("hidden")), bool(rec.get("gpu")))
            status = rec.get("status", "error")
            t.counts[status] += 1
            if status in ("failed", "error"):
                t.messages[mask_numbers(str(rec.get("message", "")))] += 1
        stats = doc.get("sandbox", {}) if isinstance(doc.get("sandbox"), dict) else {}
        for kind in ("timeouts", "crashes", "garbage"):
            if stats.get(kind):
                events = [e for e in stats.get("events", []) if e.get("kind") == kind]
                detail = "; ".join(f"{e.get('call', '')}: {e.get('message', '')}" for e in events[:3])
                incidents.append({"student": sid, "kind": kind, "detail": f"{stats[kind]} ({detail})"[:400]})
        if stats.get("infra_error"):
            incidents.append({"student": sid, "kind": "grader error", "detail": str(stats["infra_error"])[:400]})
    ordered = sorted(tests.values(), key=lambda t: (t.pass_rate if t.graded else 2.0, t.module, t.name))
    from grader.course.late import unknown_decision
    from grader.results.late_batch import unknown_times
    from grader.untrusted import shown

    data = ClassData(folder, students, ordered, incidents, unknown_times=[
        {"student": sid, "decided": unknown_decision(late), "why": shown(late.get("note") or "no reason recorded")}
        for sid, late in unknown_times(layout, [r["student"] for r in students])])
    from grader.results.recorded import recorded_in

    data.assignment = recorded_in(folder).get("assignment", "")
    if compare is not None:
        old = {r["student"]: r for r in read_grades(Path(compare))}
        for row in students:
            before = old.get(row["student"])
            if before is None:
                data.changes.append({"student": row["student"], "before": None, "after": row["score"]})
            elif abs(before["score"] - row["score"]) > 1e-9:
                data.changes.append({"student": row["student"], "before": before["score"], "after": row["score"]})
        for sid in sorted(set(old) - {r["student"] for r in students}):
            data.changes.append({"student": sid, "before": old[sid]["score"], "after": None})
    return data


# -- charts -----------------------------------------------------------------------------------

def charts(data: ClassData) -> dict[str, str]:
    plt = pyplot()
    out: dict[str, str] = {}
    graded = data.graded
    fig, ax = plt.subplots(figsize=(6, 2.6))
    scores = [s["score"] for s in graded]
    top = max([s["max_score"] - s["pending"] for s in graded] or [1.0])
    ax.hist(scores, bins=min(20, max(5, len(scores))), range=(0, max(top, 1.0)), color="#4c72b0")
    ax.set_xlabel("score (points, GPU points pending excluded)")
    ax.set_ylabel("submissions")
    out["scores"] = svg(fig)
    shares = module_shares(data)
    if shares:
        # one horizontal box per module, each student's points as a share of that module's maximum: modules
        # of different sizes compare, and the names read left of their box (never rotated or overlapping)
        names = list(shares)[::-1]  # MODULES order from the top
        fig, ax = plt.subplots(figsize=(7.5, 0.8 + 0.34 * len(names)))
        import matplotlib

        horizontal = {"orientation": "horizontal"} if tuple(map(int, matplotlib.__version__.split(".")[:2])) >= (3, 10) \
            else {"vert": False}  # (vert is deprecated from 3.11; orientation is new in 3.10)
        ax.boxplot([shares[m]["values"] for m in names], **horizontal, widths=0.6, showmeans=True,
                   meanprops={"marker": "D", "markerfacecolor": "#dd8452", "markeredgecolor": "#dd8452",
                              "markersize": 4})
        ax.set_yticks(range(1, len(names) + 1), [f"{m} (of {shares[m]['max']:g})" for m in names])
        ax.set_xlim(-3, 103)
        ax.set_xlabel("points earned, % of the module's maximum (box: middle half of the class, | median, \u25c6 mean)")
        ax.grid(axis="x", alpha=0.3)
        out["modules"] = svg(fig)
    return out


def module_shares(data: ClassData) -> dict[str, dict[str, Any]]:
    """module -> {"values": each graded student's points as % of their maximum in it, "max": the
    largest maximum}, in MODULES order; pending GPU points are in no maximum (neither given nor lost)."""
    out: dict[str, dict[str, Any]] = {}
    for m in MODULES:
        values, top = [], 0.0
        for s in data.graded:
            possible = (s.get("possible") or {}).get(m, 0.0)
            if possible > 0 and m in s["modules"]:
                values.append(100.0 * s["modules"][m] / possible)
                top = max(top, possible)
        if values:
            out[m] = {"values": values, "max": top}
    return out


def score_stats(data: ClassData) -> list[tuple[str, str]]:
    """The score distribution in numbers, next to its chart: (what, value) rows."""
    scores = sorted(s["score"] for s in data.graded)
    if not scores:
        return [("graded", "0")]
    rows = [("graded", f"{len(scores)} of {len(data.students)}"), ("lowest", f"{scores[0]:g}"),
            ("25th percentile", f"{_quantile(scores, 0.25):g}"), ("median", f"{_median(scores):g}"),
            ("mean", f"{sum(scores) / len(scores):.2f}"), ("75th percentile", f"{_quantile(scores, 0.75):g}"),
            ("highest", f"{scores[-1]:g}"),
            ("full marks", f"{sum(1 for s in data.graded if s['score'] >= s['max_score'] - s['pending'] > 0)}")]
    return rows


def _quantile(values: list[float], q: float) -> float:
    """The `q` quantile of sorted `values`, linear between ranks (numpy's default)."""
    at = (len(values) - 1) * q
    low = int(at)
    high = min(low + 1, len(values) - 1)
    return round(values[low] + (values[high] - values[low]) * (at - low), 2)


# -- HTML -------------------------------------------------------------------------------------

def render(data: ClassData) -> str:
    env = environment()
    per_module: dict[str, list[TestStats]] = defaultdict(list)
    for t in data.tests:
        per_module[t.module].append(t)
    graded = data.graded
    summary = {
        "submissions": len(data.students),
        "graded": len(graded),
        "mean": sum(s["score"] for s in graded) / len(graded) if graded else 0.0,
        "median": _median([s["score"] for s in graded]),
        "max_points": max([s["max_score"] for s in graded] or [0.0]),
        "pending": max([s["pending"] for s in graded] or [0.0]),
    }
    summary["late"] = any(s["late"] for s in data.students)  # graded with a late policy: its columns are shown
    late = [s for s in data.students if s["late"] and not s["late"].startswith("on time")]  # penalised or unknown
    return env.get_template("report.html.j2").render(
        data=data, summary=summary, charts=charts(data), stats=score_stats(data), late=late,
        hardest=data.tests[:HARDEST], others=data.tests[HARDEST:],
        pending_tests=[t for t in data.tests if t.counts["pending"]])


def _median(values: list[float]) -> float:
    if not values:
        return 0.0
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def write_report(folder: Path, out: Path, compare: Path | None = None) -> ClassData:
    data = collect(folder, compare)
    write_page(out, render(data))
    return data
