"""`grader report`: the numbers on the page equal the batch's files, and it renders in a real browser.

The results folder is written with the batch's own writers (`grader.results.results_json`), from plugin
records of the shape `grader grade` produces, so the report reads exactly what a real batch
leaves.  The browser check runs Debian's headless Chromium on the file: it must load with no
console error, pull nothing from the network, and the screenshot must not be blank.
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path

import pytest

from grader import kit_version
from grader.cli import main as cli
from grader.reports import classreport
from grader.reports.classreport import collect, mask_numbers, module_shares, write_report
from grader.results.grades import grade_row, grades_csv
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results
from tests.kit.browser import FIRST_SCREEN, open_page, tops

pytestmark = pytest.mark.kit

TESTS = [("tests/public/test_memory.py::test_a", "memory", 2, False, False),
         ("tests/public/test_memory.py::test_b", "memory", 1, False, False),
         ("tests/hidden/test_views.py::test_c", "views", 3, True, False),
         ("tests/public/test_flops.py::test_gpu", "flops", 2, False, True)]


def _records(statuses: list[str], messages: list[str]) -> list[dict]:
    out = []
    for (tid, module, points, hidden, gpu), status, message in zip(TESTS, statuses, messages):
        out.append({"id": tid, "module": module, "name": tid.split("::")[1], "points": points, "hidden": hidden,
                    "gpu": gpu, "checked": f"checks {tid.split('::')[1]}", "status": status, "message": message})
    return out


def write_batch(out: Path, students: dict[str, tuple[list[str], list[str], dict]]) -> None:
    layout = Layout(out)
    rows = []
    for sid, (statuses, messages, stats) in students.items():
        records = _records(statuses, messages)
        doc = build_results(records, student=sid, kit_version=kit_version(), sandbox={"launcher": "bubblewrap"},
                            submission={})
        write_json(layout.results(sid), doc)
        write_json(layout.instructor(sid), {"student": sid, "status": "graded", "records": records,
                                            "sandbox": stats})
        rows.append(grade_row(sid, doc))
    rejected = {"score": 0, "max_score": 0, "extra_data": {"status": "rejected", "reason": "a zip bomb", "modules": {},
                                                           "pending_points": 0}}
    rows.append(grade_row("zed", rejected))
    layout.grades.write_text(grades_csv(rows))


CLASS = {
    "alice": (["passed", "passed", "passed", "pending"], ["", "", "", ""], {}),
    "bob": (["failed", "passed", "failed", "pending"],
            ["storage_bytes of a (3, 4) view: expected 48, got 12", "", "can_view: expected True, got False"], {}),
    "carol": (["failed", "not_attempted", "failed", "pending"],
              ["storage_bytes of a (5, 2) view: expected 40, got 10", "raises NotImplementedError",
               "timed out after 30 s"],
              {"timeouts": 1, "events": [{"kind": "timeouts", "call": "views.can_view", "message": "timed out"}]}),
}


class _Cells(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and ("data-student" in a or "data-test" in a):
            self.rows.append({k: v or "" for k, v in a.items()})


def test_report_numbers_equal_the_batch(tmp_path: Path) -> None:
    write_batch(tmp_path / "R", CLASS)
    out = tmp_path / "report.html"
    data = write_report(tmp_path / "R", out)
    page = out.read_text()
    cells = _Cells()
    cells.feed(page)
    scores = {r["data-student"]: float(r["data-score"]) for r in cells.rows if "data-student" in r}
    import csv
    import io

    csv_scores = {r["student"]: float(r["score"] or 0) for r in csv.DictReader(io.StringIO(Layout(tmp_path / "R").grades.read_text()))}
    assert scores == csv_scores
    passed = {r["data-test"]: (int(r["data-passed"]), int(r["data-graded"])) for r in cells.rows if "data-test" in r}
    assert passed["tests/public/test_memory.py::test_a"] == (1, 3)
    assert passed["tests/hidden/test_views.py::test_c"] == (1, 3)
    assert passed["tests/public/test_flops.py::test_gpu"] == (0, 0)  # pending everywhere
    rates = [p / g for p, g in passed.values() if g]  # in page order: hardest first
    assert rates == sorted(rates)
    grouped = next(t for t in data.tests if t.id.endswith("test_a")).messages
    assert grouped == {"storage_bytes of a (#, #) view: expected #, got #": 2}
    kinds = {(i["student"], i["kind"]) for i in data.incidents}
    assert ("carol", "timeouts") in kinds and ("zed", "rejected") in kinds
    fetched = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:|//)|url\(\s*["']?https?:|@import""", page)
    assert not fetched, f"the page must load nothing from the network: {fetched}"
    assert page.count("<script") == 1 and "<script>\n/* Only filters the rows" in page  # the filter box's, inline


def test_report_compare_lists_changed_scores(tmp_path: Path) -> None:
    write_batch(tmp_path / "old", CLASS)
    new = dict(CLASS)
    new["bob"] = (["passed", "passed", "failed", "pending"], ["", "", "x"], {})
    write_batch(tmp_path / "new", new)
    data = collect(tmp_path / "new", compare=tmp_path / "old")
    assert [(c["student"], c["before"], c["after"]) for c in data.changes] == [("bob", 1.0, 3.0)]


def test_report_rejects_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "r.html")]) == 2
    (tmp_path / "empty").mkdir()
    assert cli(["report", str(tmp_path / "empty"), "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()
    assert mask_numbers("expected 1.5e-3, got -2") == "expected #, got #"


def _order(page: str, *ids: str) -> list[int]:
    return [page.index(f'id="{i}"') for i in ids]


def test_report_opens_on_the_summary_tables_and_collapses_the_long_list(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Distribution, incidents, late, students first; then the per-module chart; then the tests, the
    hardest in view and the rest in a <details> (two here: the class has four tests)."""
    write_batch(tmp_path / "R", CLASS)
    monkeypatch.setattr(classreport, "HARDEST", 2)
    out = tmp_path / "report.html"
    data = write_report(tmp_path / "R", out)
    page = out.read_text()
    order = _order(page, "summary", "chart-scores", "score-stats", "incidents", "students", "chart-modules", "tests",
                   "tests-more", "tests-rest")
    assert order == sorted(order), order
    stats = dict(re.findall(r"<tr><th>([^<]+)</th><td class=\"num\">([^<]+)</td></tr>", page))
    assert stats["graded"] == "3 of 4" and stats["median"] == "1" and stats["highest"] == "6"  # 6, 1, 0
    hardest, rest = page.split('id="tests-more"')
    assert [t.id for t in data.tests[:2]] == re.findall(r'<tr data-test="([^"]+)"', hardest)
    assert [t.id for t in data.tests[2:]] == re.findall(r'<tr data-test="([^"]+)"', rest)
    assert '<p id="test-filter" hidden>' in page  # shown by the script only: without it, no dead box


def test_per_module_chart_is_a_share_of_each_module_maximum(tmp_path: Path) -> None:
    """memory has 3 points (2 + 1), views 3 (hidden), flops only a pending GPU test: no maximum, no box."""
    write_batch(tmp_path / "R", CLASS)
    shares = module_shares(collect(tmp_path / "R"))
    assert list(shares) == ["memory", "views"]  # MODULES order; flops' 2 points are pending for everyone
    assert shares["memory"]["values"] == pytest.approx([100.0, 100 / 3, 0.0]) and shares["memory"]["max"] == 3
    assert shares["views"]["values"] == pytest.approx([100.0, 0.0, 0.0])
    out = tmp_path / "report.html"
    write_report(tmp_path / "R", out)
    chart = out.read_text().split('id="chart-modules"')[1].split("</figure>")[0]
    assert "memory (of 3)" in chart and "views (of 3)" in chart and "% of the module" in chart


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    write_batch(tmp_path / "R", CLASS)
    out = tmp_path / "report.html"
    write_report(tmp_path / "R", out)
    page = open_page(out, tmp_path)
    assert not page.console_errors, page.console_errors
    assert page.dom.count("<svg") >= 2 and 'id="tests"' in page.dom, "the charts or the test table did not render"
    assert '<p id="test-filter">' in page.dom  # the script ran: the filter box is shown
    # the first screen (1200 x 900) holds the summary tables; the long list of tests comes after them
    screen = open_page(out, tmp_path, height=FIRST_SCREEN)
    assert not screen.console_errors, screen.console_errors
    at = tops(out, tmp_path, ["#summary", "#score-stats", "#incidents", "#students-section", "#tests-section"])
    assert all(v is not None for v in at.values()), at
    assert max(at["#summary"], at["#score-stats"], at["#incidents"], at["#students-section"]) < FIRST_SCREEN - 50, at
    assert at["#tests-section"] > at["#students-section"], at
