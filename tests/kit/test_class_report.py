"""`grader report`: the numbers on the page equal the batch's files, and it renders in a real browser.

The results folder is written with the batch's own writers (`grader.batch.results`), from plugin
records of the shape `grader grade` produces, so the report reads exactly what a real batch
leaves.  The browser check runs Debian's headless Chromium on the file: it must load with no
console error, pull nothing from the network, and the screenshot must not be blank.
"""

from __future__ import annotations

import html.parser
from pathlib import Path

import pytest

from grader import kit_version
from grader.cli import main as cli
from grader.reports.classreport import collect, mask_numbers, write_report
from grader.batch.results import Layout, build_results, grade_row, grades_csv, write_json
from tests.kit.browser import open_page

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
    import re

    fetched = re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:|//)|url\(\s*["']?https?:|@import""", page)
    assert not fetched and "<script" not in page, f"the page must load nothing from the network: {fetched}"


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


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    write_batch(tmp_path / "R", CLASS)
    out = tmp_path / "report.html"
    write_report(tmp_path / "R", out)
    page = open_page(out, tmp_path)
    assert not page.console_errors, page.console_errors
    assert page.dom.count("<svg") >= 2 and 'id="tests"' in page.dom, "the charts or the test table did not render"
