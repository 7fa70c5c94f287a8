"""`grader report`: the class at a glance, as one self-contained HTML file.

`collect(DIR)` turns a results folder into plain numbers (`ClassData`); `render(data)` turns
those into HTML with jinja2 and inline SVG charts drawn by matplotlib.  Every number on the
page is computed from the batch's own files, so it equals what grades.csv and the
per-student results say (the kit's test checks that).
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
from grader.batch.results import Layout

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
    #: the late policy found no submission time: student, what was decided, why (grader.batch.late)
    unknown_times: list[dict[str, str]] = field(default_factory=list)

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
                         # the late policy's columns (grader.batch.late): empty when graded without --deadline
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
        for rec in doc.get("records", []):
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
    from grader.batch.late import unknown_decision
    from grader.batch.late_batch import unknown_times
    from grader.untrusted import shown

    data = ClassData(folder, students, ordered, incidents, unknown_times=[
        {"student": sid, "decided": unknown_decision(late), "why": shown(late.get("note") or "no reason recorded")}
        for sid, late in unknown_times(layout, [r["student"] for r in students])])
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
    modules = [m for m in MODULES if any(m in s["modules"] for s in graded)]
    if modules:
        fig, ax = plt.subplots(figsize=(7, 2.8))
        per_module = [[s["modules"].get(m, 0.0) for s in graded] for m in modules]
        ax.boxplot(per_module, tick_labels=modules) if graded else None
        ax.set_ylabel("points")
        ax.tick_params(axis="x", labelrotation=45)
        out["modules"] = svg(fig)
    return out


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
    return env.get_template("report.html.j2").render(data=data, summary=summary, charts=charts(data),
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
