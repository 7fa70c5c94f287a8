"""The student's feedback page (`grader check --html`, `DIR/students/<id>/feedback.html`).

Drawn from real in-process runs of the public tests (`grader check`): on the reference
solutions (every picture there, nothing failed) and on a submission made of the solutions with
one optimizer mutant swapped in (AdamW's step count kept outside self.state: torch's run and
the student's part after the state_dict round trip at step 100) and a hostile exception message
in `optimizer_state_bytes`.  The page must name what passed and failed, mark the first
divergence on the AdamW picture, keep the hidden tests' messages and pictures out, escape the
student's text, and render in headless Chromium with no console error.
"""

from __future__ import annotations

import html
import html.parser
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grader import KIT_ROOT, kit_version
from grader.cli import main as cli
from grader.authoring.mutants import build_target, load_mutants
from grader.reports.feedback import feedback_path, render, write_feedback, write_pages
from grader.course.late import LatePolicy, apply, assess, csv_cells
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results
from tests.kit.browser import FIRST_SCREEN, open_page, tops

pytestmark = pytest.mark.kit

HOSTILE = "<script>alert(1)</script> & <img src=x onerror=alert(2)>"
MODULES = ["--module", "optimizers", "--module", "data", "--module", "flops"]


class _Tests(html.parser.HTMLParser):
    """data-test -> (data-result, hidden?, number of charts) for every test item of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tests: dict[str, dict] = {}
        self._current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "li" and "data-test" in a:
            self._current = a["data-test"] or ""
            self.tests[self._current] = {"result": a.get("data-result"), "hidden": "data-hidden" in a, "charts": 0}
        elif tag == "svg" and self._current is not None:
            self.tests[self._current]["charts"] += 1


def _parse(page: str) -> dict[str, dict]:
    parser = _Tests()
    parser.feed(page)
    return parser.tests


def _by_name(tests: dict[str, dict], name: str) -> dict:
    return next(v for k, v in tests.items() if k.endswith("::" + name))


@pytest.fixture(scope="module")
def mutant_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """`grader check --hidden --html` on the solutions with the AdamW mutant and a hostile message."""
    tmp = tmp_path_factory.mktemp("feedback-mutant")
    mutant = next(m for m in load_mutants(("optimizers",)) if m.name == "adamw_step_count_attribute")
    folder = build_target(mutant, tmp / "assignment")
    source = (folder / "optimizers.py").read_text()
    marker = "def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:\n"
    assert marker in source
    (folder / "optimizers.py").write_text(source.replace(marker, marker + f"    raise ValueError({HOSTILE!r})\n"))
    page, records = tmp / "feedback.html", tmp / "records.json"
    assert cli(["check", str(folder), "--module", "optimizers", "--hidden", "--html", str(page),
                "--json", str(records)]) == 0
    return page, json.loads(records.read_text())


def test_feedback_on_the_solutions(tmp_path: Path) -> None:
    page = tmp_path / "feedback.html"
    assert cli(["check", str(KIT_ROOT / "solutions"), *MODULES, "--html", str(page)]) == 0
    text = page.read_text()
    tests = _parse(text)
    assert {t["result"] for t in tests.values()} == {"passed", "pending"}
    assert _by_name(tests, "test_sgd_matches_torch")["charts"] == 3  # one picture per run
    assert _by_name(tests, "test_get_batch_starts_uniform")["charts"] == 1
    assert _by_name(tests, "test_count_matmul_flops_forward_backward")["charts"] == 1
    assert "first divergence" not in text
    for words in ("get_batch: how often each start position was drawn", "uniform expectation",
                  "FLOPs per model (forward): yours vs torch&#39;s FlopCounterMode", "torch FlopCounterMode"):
        assert words in text, words


def test_feedback_names_failures_and_marks_the_divergence(mutant_page: tuple[Path, dict]) -> None:
    page, run = mutant_page
    text = page.read_text()
    tests = _parse(text)
    assert _by_name(tests, "test_adamw_matches_torch")["result"] == "failed"
    assert _by_name(tests, "test_optimizer_state_bytes")["result"] == "failed"
    assert _by_name(tests, "test_adam_matches_torch")["result"] == "passed"
    assert "AdamW diverged from torch.optim.AdamW between step 100 and step 150" in text  # the test's own words
    assert "first divergence: between steps 100 and 150" in text  # the mark on the AdamW picture
    # hidden tests: their outcome only; no message, no picture, although their records hold both
    hidden = {r["id"]: r for r in run["tests"] if r["hidden"]}
    assert any(r.get("figures") for r in hidden.values()), "a hidden trajectory test should have attached pictures"
    plain = html.unescape(text)
    for tid, record in hidden.items():
        shown = tests[tid]
        assert shown["hidden"] and shown["charts"] == 0
        assert not record["message"] or record["message"] not in plain


def test_a_batch_page_draws_the_pictures_of_failed_tests_only(mutant_page: tuple[Path, dict]) -> None:
    """`grader grade` writes a page per student: it draws what explains a failure (a chart costs
    ~0.1 s); `grader check --html` (above) draws every test's."""
    from grader.reports.feedback import render

    _, run = mutant_page
    doc = build_results(run["tests"], student="s", kit_version="test", sandbox={}, submission={})
    tests = _parse(render(doc))
    assert _by_name(tests, "test_adamw_matches_torch")["charts"] >= 1
    assert _by_name(tests, "test_adam_matches_torch") == {"result": "passed", "hidden": False, "charts": 0}
    assert _by_name(_parse(render(doc, charts="all")), "test_adam_matches_torch")["charts"] >= 1


def test_feedback_escapes_student_text(mutant_page: tuple[Path, dict]) -> None:
    text = mutant_page[0].read_text()
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(2)&gt;" in text
    # a results.json edited by hand: markup in every text a figure carries stays text
    record = {"id": "tests/public/test_data.py::test_x", "module": "data", "name": "test_x", "points": 1,
              "hidden": False, "gpu": False, "checked": HOSTILE, "status": "failed", "message": HOSTILE,
              "figures": [{"kind": "bars", "title": HOSTILE, "x_label": HOSTILE, "y_label": "$x$", "log_y": True,
                           "categories": [HOSTILE], "series": [{"label": HOSTILE, "style": "bar", "y": [3.0]}],
                           "marks": [{"x": 0, "y": 3.0, "label": HOSTILE}], "caption": HOSTILE}]}
    doc = build_results([record], student=HOSTILE, kit_version=kit_version(), sandbox={}, submission={})
    page = render(doc)
    assert "<script" not in page and "<img" not in page and page.count("<svg") == 1


def test_feedback_renders_in_headless_chromium(mutant_page: tuple[Path, dict], tmp_path: Path) -> None:
    page = open_page(mutant_page[0], tmp_path, height=1400)
    assert not page.console_errors, page.console_errors
    assert page.dom.count("<svg") >= 8 and 'data-result="failed"' in page.dom
    assert "<script" not in page.dom  # the hostile message stayed text in the live DOM too
    # the page of a late student (a batch's page): the score line (raw, penalty, final) and what failed, with
    # its links, are on the first screen (1200 x 900), before the first test of the first module
    doc = build_results(mutant_page[1]["tests"], student="late", kit_version=kit_version(), sandbox={}, submission={})
    apply(doc, assess(POLICY, "late", DEADLINE + timedelta(days=2, hours=3), "times.csv"))
    late = tmp_path / "feedback-late.html"
    write_feedback(doc, late)
    screen = open_page(late, tmp_path, height=FIRST_SCREEN)
    assert not screen.console_errors, screen.console_errors
    at = tops(late, tmp_path, ["#score", "#to-fix", "#to-fix a.failed-link", "li.test"])
    assert all(v is not None for v in at.values()), at
    assert max(at["#score"], at["#to-fix"], at["#to-fix a.failed-link"]) < FIRST_SCREEN - 50, at
    assert at["li.test"] > at["#to-fix"], at
    assert "raw, \u2212" in screen.dom and "late (3 started days late, 10%/day: 30%) = " in screen.dom


DEADLINE = datetime(2026, 12, 1, 23, 59, tzinfo=timezone.utc)
POLICY = LatePolicy(deadline=DEADLINE, rate=10, unit="day", cap=50, extensions={"ext": DEADLINE + timedelta(days=2)})


def _to_fix(page: str) -> tuple[str, list[str], set[str]]:
    """The summary of what failed: its text, the anchors its test links point to, and the ids of the
    page's failed tests (data-result failed or error)."""
    section = page.split('id="to-fix"', 1)[1].split("</section>", 1)[0]
    links = re.findall(r'class="failed-link" href="#([^"]+)"', section)
    failed = set(re.findall(r'<li class="test (?:failed|error)" id="([^"]+)"', page))
    return section, links, failed


def test_the_page_opens_on_what_failed_with_links(mutant_page: tuple[Path, dict], tmp_path: Path) -> None:
    text = mutant_page[0].read_text()
    section, links, failed = _to_fix(text)
    assert failed and sorted(links) == sorted(failed)  # every failed test, linked to its entry, and nothing else
    assert text.index('id="to-fix"') < text.index('<li class="test')  # before the first test of the page
    assert "What failed" in section and "<strong>optimizers</strong>" in section
    adamw = re.search(r'<li class="test failed" id="([^"]+)" data-test="[^"]*::test_adamw_matches_torch"', text)
    assert adamw and adamw.group(1) in links
    solutions = tmp_path / "solutions.html"
    assert cli(["check", str(KIT_ROOT / "solutions"), "--module", "memory", "--html", str(solutions)]) == 0
    section, links, failed = _to_fix(solutions.read_text())
    assert "Nothing failed." in section and not links and not failed


def _late_doc(student: str, submitted: datetime) -> dict:
    records = [{"id": f"tests/public/test_memory.py::test_{i}", "module": "memory", "name": f"test_{i}",
                "points": 2, "hidden": False, "gpu": False, "checked": f"check {i}",
                "status": "failed" if i == 0 else "passed", "message": "expected 1, got 2"} for i in range(6)]
    return apply(build_results(records, student=student, kit_version=kit_version(), sandbox={}, submission={}),
                 assess(POLICY, student, submitted, "times.csv"))


def _score_and_summary(doc: dict) -> tuple[str, str]:
    page = render(doc)
    score = html.unescape(re.search(r'<p class="score" id="score">(.*?)</p>', page, re.S).group(1))
    summary = html.unescape(re.search(r'<pre id="summary">(.*?)</pre>', page, re.S).group(1))
    return " ".join(score.split()), summary.splitlines()[0]


def test_one_point_is_one_point_and_the_maximum_is_the_terminals() -> None:
    """Issue 33: "(1 / 1 points)", "1 points of GPU tests pending"."""
    def record(name: str, points: int, status: str, gpu: bool = False) -> dict:
        return {"id": f"tests/public/test_memory.py::{name}", "module": "memory", "name": name, "points": points,
                "hidden": False, "gpu": gpu, "checked": name, "status": status, "message": ""}

    doc = build_results([record("test_a", 1, "passed"), record("test_b", 2, "failed"),
                         record("test_c", 1, "pending", gpu=True)], student="s", kit_version="0", sandbox={},
                        submission={})
    text = " ".join(html.unescape(render(doc)).split())
    assert "(1 / 1 point):" in text and "(0 / 2 points):" in text and "1 points" not in text
    assert "1 / 4 points (1 point of GPU tests pending" in text  # 3 that can be earned here + 1 pending
    assert "its 1 point is merged in later" in json.dumps(doc)


def test_the_score_line_shows_raw_penalty_and_final_together() -> None:
    """10 of 12 points earned, 3 started days late at 10%/day (cap 50%): 10 - 3 = 7; 9 days: the cap."""
    score, summary = _score_and_summary(_late_doc("late", DEADLINE + timedelta(days=2, hours=3)))
    line = "10 / 12 raw, \u22123 late (3 started days late, 10%/day: 30%) = 7 / 12 points"
    assert score == f"Score: {line}."
    assert summary == f"Score: {line}"  # the collapsed summary opens on the same line, not the raw score alone
    score, _ = _score_and_summary(_late_doc("late", DEADLINE + timedelta(days=8, hours=1)))
    assert score == "Score: 10 / 12 raw, \u22125 late (9 started days late, 10%/day, capped at 50%) = 5 / 12 points."
    score, _ = _score_and_summary(_late_doc("late", DEADLINE - timedelta(hours=1)))
    assert score == "Score: 10 / 12 points, on time."


def test_an_extension_shows_in_the_page_the_summary_and_grades_csv() -> None:
    doc = _late_doc("ext", DEADLINE + timedelta(days=1))  # late for the class, on time for their extension
    word = "on time (extension to 2026-12-03T23:59:00+00:00)"
    score, _ = _score_and_summary(doc)
    assert score == f"Score: 10 / 12 points, {word}."
    assert csv_cells(doc)["late"] == word
    assert f"Late policy: submitted 2026-12-02T23:59:00+00:00, {word}." in doc["output"].splitlines()


def test_write_pages_reports_a_broken_page_and_writes_the_rest(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "R")
    record = {"id": "tests/public/test_data.py::test_x", "module": "data", "name": "test_x", "points": 1,
              "hidden": False, "gpu": False, "checked": "x", "status": "passed", "message": ""}
    for sid in ("alice", "bob"):
        write_json(layout.results(sid), build_results([record], student=sid, kit_version=kit_version(), sandbox={},
                                                      submission={}))
    layout.results("carol").parent.mkdir(parents=True)
    layout.results("carol").write_text("{not json")
    feedback_path(layout, "bob").mkdir(parents=True)  # a folder where bob's page should go: it cannot be written
    written, failed = write_pages(layout.out)
    assert written == 1 and [s for s, _ in failed] == ["bob", "carol"]
    assert feedback_path(layout, "alice").is_file()
    assert write_pages(layout.out, ["alice"], only_stale=True) == (0, [])  # up to date: not drawn again
    assert cli(["check", "solutions", "--html", str(tmp_path / "nowhere" / "page.html")]) == 2  # before any test runs
    assert not (tmp_path / "nowhere").exists()


def test_merge_writes_the_pages_and_the_workflow_uploads_them(tmp_path: Path) -> None:
    import yaml

    from grader.integrations.github import WORKFLOW
    from tests.kit.test_integrations import _records, _write_run

    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    _write_run(cpu, "alice", _records("pending"))
    _write_run(gpu, "alice", _records("passed"), only_gpu=True)
    assert cli(["merge", str(cpu), str(gpu), "--out", str(tmp_path / "final")]) == 0
    tests = _parse(feedback_path(Layout(tmp_path / "final"), "alice").read_text())
    assert _by_name(tests, "test_mfu")["result"] == "passed"  # the merged result, not the CPU run's pending
    steps = [s for job in yaml.safe_load(WORKFLOW)["jobs"].values() for s in job["steps"]]
    uploads = [s["with"]["path"] for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert "results/students/*/feedback.html" in uploads
