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
from pathlib import Path

import pytest

from grader import KIT_ROOT, kit_version
from grader.cli import main as cli
from grader.mutants import build_target, load_mutants
from grader.reports.feedback import feedback_path, render, write_pages
from grader.batch.results import Layout, build_results, write_json
from tests.kit.browser import open_page

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
