"""The student's feedback page: `DIR/students/<id>/feedback.html`, `grader check --html FILE`.

One self-contained HTML page drawn from one results.json (what the student may see, and nothing
else).  Its first screen answers "how did I do, and what do I fix": the score line (with a late
penalty, raw, penalty and final together: ``162 / 181 raw, −32.4 late (2 started days late,
10%/day) = 129.6 / 181 points``), then what failed, per module, each failed test a link to its
entry further down ("Nothing failed." when so).  Then per module what passed and what failed in
plain words (the trusted tests' messages), and for the tests that attached pictures' data (`grader.testing.figures`: optimizer
trajectories against torch.optim, `get_batch`'s start positions against the uniform
expectation, FLOP counts against torch's counter) a chart drawn here with matplotlib.  Hidden
tests show their name and outcome only, as in results.json: no message and no picture, even if
a results.json held one.

`write_pages(DIR)` writes every student's page of a results folder; a page that cannot be drawn
is reported (student, why) and the others are still written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from grader import MODULES
from grader.testing.figures import MAX_FIGURES, is_figure
from grader.reports.page import environment, pyplot, svg, write_page
from grader.results.layout import Layout, STUDENT_FILE_BYTES, over_budget
from grader.results.results_json import load_results
from grader.testing.totals import counted

FEEDBACK = "feedback.html"
COLORS = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3")
WORDS = {"passed": "passed", "failed": "failed", "error": "failed (the test could not run)",
         "not_attempted": "not attempted", "pending": "pending (GPU machine)", "skipped": "skipped"}


class FeedbackError(Exception):
    """The file is not a results.json the page can be drawn from."""


def feedback_path(layout: Layout, student: str) -> Path:
    return layout.students_dir / student / FEEDBACK


# -- charts -------------------------------------------------------------------------------------

def _values(values: list[Any]) -> list[float]:
    return [float(v) if v is not None else math.nan for v in values]


def draw(fig: dict[str, Any]) -> str | None:
    """The figure as inline SVG, or None when `fig` is not of the shape `grader.testing.figures` writes."""
    if not is_figure(fig):
        return None
    plt = pyplot()
    bars = fig["kind"] == "bars"
    width = 7.5 if not bars else min(14.0, max(6.0, 0.75 * len(fig["categories"]) + 2))
    figure, ax = plt.subplots(figsize=(width, 3.2))
    figure.subplots_adjust(left=0.13, right=0.98, top=0.84, bottom=0.3 if bars else 0.17)
    try:
        _plot(fig, ax, bars)
    except Exception:
        plt.close(figure)
        raise
    return svg(figure, tight=False)


def _plot(fig: dict[str, Any], ax: Any, bars: bool) -> None:
    from matplotlib.ticker import FuncFormatter

    series = fig["series"]
    positive = [v for s in series for v in s["y"] if v is not None and v > 0]
    floor = min(positive) / 100 if positive else 1e-12
    clipped = bool(fig.get("log_y")) and any(v is not None and v <= 0 for s in series for v in s["y"])
    for i, s in enumerate(series):
        y = _values(s["y"])
        if fig.get("log_y"):
            y = [max(v, floor) if not math.isnan(v) else v for v in y]
        label = str(s.get("label") or "") or "_nolegend_"
        color = COLORS[i % len(COLORS)]
        if bars:
            k = len(series)
            x = [j + (i - (k - 1) / 2) * 0.8 / k for j in range(len(y))]
            ax.bar(x, y, width=0.8 / k, label=label, color=color)
            continue
        x = _values(s["x"])
        if s["style"] == "bar":
            ax.bar(x, y, width=0.8, label=label, color="#9db4d6")
        elif s["style"] == "dashed":
            ax.plot(x, y, "--", label=label, color="#777777", linewidth=1)
        elif s["style"] == "points":
            ax.plot(x, y, "o", label=label, color=color, markersize=4)
        else:
            ax.plot(x, y, "-o" if len(y) <= 20 else "-", label=label, color=color, markersize=3, linewidth=1.5)
    if fig.get("log_y"):
        ax.set_yscale("log")
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e")))
        if clipped:
            ax.text(0.01, 0.02, "0 drawn at the bottom edge", transform=ax.transAxes, fontsize=7, color="#777777")
    if bars:
        categories = fig.get("categories") or []
        ax.set_xticks(range(len(categories)), [str(c) for c in categories], rotation=30, ha="right")
    top = ax.get_ylim()[1]
    for m in fig.get("marks") or []:
        x, y = m.get("x"), m.get("y")
        if type(x) not in (int, float):
            continue
        y = float(y) if type(y) in (int, float) else top
        if fig.get("log_y"):
            y = max(y, floor)
        if not bars:
            ax.axvline(x, color="#c44e52", linestyle=":", linewidth=1)
        ax.plot([x], [y], "x", color="#c44e52", markersize=9, markeredgewidth=2)
        left, right = ax.get_xlim()
        on_right = x > (left + right) / 2  # write the label on the side with room for it
        ax.annotate(str(m.get("label") or ""), (x, y), textcoords="offset points", xytext=(-8 if on_right else 8, 6),
                    ha="right" if on_right else "left", color="#c44e52", fontsize=8)
    ax.set_xlabel(str(fig.get("x_label") or ""))
    ax.set_ylabel(str(fig.get("y_label") or ""))
    ax.grid(alpha=0.3)
    labelled = [s for s in series if str(s.get("label") or "")]
    if labelled:  # above the axes: never over the data or the marks
        ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1.01), ncol=min(3, len(labelled)), frameon=False)


# -- the page -----------------------------------------------------------------------------------

def _test_view(test: dict[str, Any], charts: str = "failed") -> dict[str, Any]:
    extra = test.get("extra_data") if isinstance(test.get("extra_data"), dict) else {}
    hidden = bool(extra.get("hidden")) or "hidden" in (test.get("tags") or []) or test.get("visibility") != "visible"
    name = str(test.get("name", ""))
    label = name.split(" — ", 1)[1] if " — " in name else name.split(": ", 1)[-1]
    output = str(test.get("output") or "")
    lines = output.splitlines()
    if lines and lines[0].startswith("checked: "):
        lines = lines[1:]
    result = str(extra.get("result") or test.get("status") or "failed")
    view = {"number": str(test.get("number", "")), "label": label, "id": str(extra.get("id", name)),
            "result": result, "word": WORDS.get(result, result), "hidden": hidden,
            "score": test.get("score", 0), "max_score": test.get("max_score", 0),
            "message": "" if hidden or result == "passed" else "\n".join(lines).strip(),
            "charts": []}
    figures = extra.get("figures") if isinstance(extra.get("figures"), list) and not hidden else []
    if charts != "all" and result == "passed":
        figures = []  # a chart costs ~0.1 s to draw: a batch draws the ones that explain a failure
    for fig in figures[:MAX_FIGURES]:
        try:
            drawn = draw(fig)
        except Exception:  # noqa: BLE001 - a picture that cannot be drawn leaves the rest of the page
            drawn = None
        if drawn is not None:
            view["charts"].append({"svg": drawn, "title": str(fig.get("title", "")),
                                   "caption": str(fig.get("caption", ""))})
    return view


def _num(value: Any) -> float:
    return float(value) if type(value) in (int, float) else 0.0


def score_line(doc: dict[str, Any]) -> str:
    """The score in one line: ``120 / 181 points``; with a late penalty, raw, penalty and final
    together (``162 / 181 raw, −32.4 late (3 started days late, 10%/day, capped at 20%) = 129.6 / 181
    points``); an on-time submission says so (and its extension); pending GPU points are named."""
    extra = doc.get("extra_data") if isinstance(doc.get("extra_data"), dict) else {}
    late = extra.get("late") if isinstance(extra.get("late"), dict) else None
    top, score = _num(doc.get("max_score")), _num(doc.get("score"))
    pending = _num(extra.get("pending_points"))
    tail = f" ({counted(pending, 'point')} of GPU tests pending: graded on a GPU machine by the course staff)" if pending else ""
    if late is None:
        return f"{score:g} / {top:g} points{tail}"
    from grader.course.late import on_time_word

    status, percent = late.get("status"), _num(late.get("percent"))
    if status == "on_time":
        return f"{score:g} / {top:g} points, {on_time_word(late)}{tail}"
    if not _num(late.get("penalty_points")) and status != "late":
        return f"{score:g} / {top:g} points (no submission time known: no late penalty){tail}"
    if status == "late":
        units, unit, rate, cap = int(_num(late.get("units_late"))), str(late.get("unit", "day")), \
            _num(late.get("rate_percent")), _num(late.get("cap_percent")) or 100.0
        why = f"{units} started {unit}{'s' if units != 1 else ''} late, {rate:g}%/{unit}"
        why += f", capped at {cap:g}%" if rate * units > cap else f": {percent:g}%" if units > 1 else ""
        if late.get("extension"):
            why += f", from your extension to {late.get('deadline')}"
    else:
        why = f"no submission time known: the cap, {percent:g}%"
    return (f"{_num(late.get('raw_score')):g} / {top:g} raw, \u2212{_num(late.get('penalty_points')):g} late "
            f"({why}) = {_num(late.get('final_score', score)):g} / {top:g} points{tail}")


def _shown_summary(summary: str, line: str) -> str:
    """results.json's summary with its "Score:" line (the raw score) replaced by `line`."""
    lines = summary.split("\n")
    at = next((i for i, x in enumerate(lines) if x.startswith("Score:")), None)
    if at is not None:
        lines[at] = "Score: " + line
    return "\n".join(lines)


def page_data(doc: dict[str, Any], charts: str = "failed") -> dict[str, Any]:
    """What the template shows, from a results.json (the tests grouped by module, in MODULES order;
    each test with an anchor, ``test-N``, that the summary of what failed links to)."""
    extra = doc.get("extra_data") if isinstance(doc.get("extra_data"), dict) else {}
    modules: dict[str, dict[str, Any]] = {}
    points = extra.get("modules") if isinstance(extra.get("modules"), dict) else {}
    for n, test in enumerate(doc.get("tests") or []):
        if not isinstance(test, dict):
            continue
        module = str((test.get("extra_data") or {}).get("module") or (test.get("tags") or ["?"])[0])
        entry = modules.setdefault(module, {"name": module, "anchor": f"module-{len(modules) + 1}", "tests": [],
                                            **points.get(module, {})})
        entry["tests"].append({**_test_view(test, charts), "anchor": f"test-{n + 1}"})
    order = {m: i for i, m in enumerate(MODULES)}
    ordered = sorted(modules.values(), key=lambda m: (order.get(m["name"], 99), m["name"]))
    first = {"failed": 0, "error": 0, "not_attempted": 1, "passed": 2}  # what to fix first, pending last
    for m in ordered:
        m["tests"].sort(key=lambda t: first.get(t["result"], 3))  # stable: the results.json order within
        m["passed"] = sum(t["result"] == "passed" for t in m["tests"])
        m["failed"] = sum(t["result"] in ("failed", "error") for t in m["tests"])
        m["not_attempted"] = sum(t["result"] == "not_attempted" for t in m["tests"])
        m["pending_tests"] = sum(t["result"] == "pending" for t in m["tests"])
    line = score_line(doc)
    return {"student": str(extra.get("student", "")), "kit_version": str(extra.get("kit_version", "")),
            "status": str(extra.get("status", "graded")), "score": float(doc.get("score", 0)),
            "max_score": float(doc.get("max_score", 0)), "pending": float(extra.get("pending_points", 0) or 0),
            "score_line": line, "summary": _shown_summary(str(doc.get("output", "")), line), "modules": ordered,
            "to_fix": [m for m in ordered if m["failed"] or m["not_attempted"]],
            "sandbox": extra.get("sandbox") if isinstance(extra.get("sandbox"), dict) else {}, "charts": charts}


def render(doc: dict[str, Any], charts: str = "failed") -> str:
    """The page's HTML; `charts`: "failed" draws the pictures of the tests that did not pass (what a
    batch writes: a page per student in a fraction of a second), "all" every test's (`check --html`)."""
    return environment().get_template("feedback.html.j2").render(page=page_data(doc, charts))


def write_feedback(doc: dict[str, Any], out: Path, charts: str = "failed") -> None:
    """The page of `doc` at `out`.  A page has the budget of every file written for one student
    (`grader.results.layout.STUDENT_FILE_BYTES`; one with every chart drawn is about 260 KB): over
    it, the page of what `over_budget` keeps of `doc` (the score and points per module, and a note
    saying the details were left out) is written instead."""
    html = render(doc, charts)
    if len(html.encode("utf-8")) > STUDENT_FILE_BYTES:
        html = render(over_budget(doc, FEEDBACK), charts)
    write_page(out, html)


def write_feedback_file(results: Path, out: Path) -> None:
    """The page of one results.json file; FeedbackError when it is not a complete results.json."""
    doc = load_results(results)
    if doc is None:
        raise FeedbackError(f"{results}: not a complete results.json of the kit")
    write_feedback(doc, out)


def _write_one(todo: tuple[str, Path, Path]) -> tuple[str, str | None]:
    student, results, page = todo
    try:
        write_feedback_file(results, page)
        return student, None
    except Exception as exc:  # noqa: BLE001 - one page must not stop the others; the caller reports it
        return student, f"{type(exc).__name__}: {exc}"[:300]


def write_pages(folder: Path, students: Iterable[str] | None = None, *, only_stale: bool = False,
                jobs: int = 1) -> tuple[int, list[tuple[str, str]]]:
    """Write students/<id>/feedback.html for these students of a results folder (default: all of
    them that have a results.json; `only_stale`: only where the page is missing or older than the
    results.json), `jobs` pages at a time (a page with many charts takes about a second);
    returns (pages written, [(student, why not)])."""
    layout = Layout(Path(folder))
    todo = []
    for student in layout.students() if students is None else students:
        results, page = layout.results(student), feedback_path(layout, student)
        if not results.is_file():
            continue
        if only_stale and page.is_file() and page.stat().st_mtime_ns >= results.stat().st_mtime_ns:
            continue
        todo.append((student, results, page))
    if jobs > 1 and len(todo) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pyplot()  # matplotlib imported once here, before forking: the children start warm
        with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=multiprocessing.get_context("fork")) as pool:
            done = list(pool.map(_write_one, todo))
    else:
        done = [_write_one(t) for t in todo]
    failed = [(student, why) for student, why in done if why is not None]
    return len(done) - len(failed), failed


def write_and_report(folder: Path, students: Iterable[str], console: Any, *, only_stale: bool = False,
                     jobs: int = 1) -> list[str]:
    """`write_pages`, then one line on the console: how many were written, and each page that
    failed (named, in red); returns the failures as problems ("student: why")."""
    from rich.markup import escape

    from grader.untrusted import shown_markup

    written, failed = write_pages(folder, students, only_stale=only_stale, jobs=jobs)
    for student, why in failed:
        console.print(f"[red]feedback page of {shown_markup(student)} not written: {shown_markup(why)}[/red]",
                      highlight=False, soft_wrap=True)
    if written or not only_stale:
        console.print(f"wrote {written} feedback page(s): {escape(str(Layout(Path(folder)).students_dir))}"
                      "/<student>/feedback.html", highlight=False, soft_wrap=True)
    return [f"{student}: feedback page not written: {why}" for student, why in failed]
