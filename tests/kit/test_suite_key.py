"""`grader grade` keeps a result only when the same suite and settings graded it (grader.batch.suite):
a new hidden test, a changed probe or grader file, --device cuda or another timeout all regrade,
whatever the installed version string says."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from grader import KIT_ROOT
from grader.intake.discover import Source, fingerprint
from grader.batch.grade import GradeOptions, already_graded
from grader.results.layout import Layout
from grader.batch.suite import suite_digest, suite_settings, verdict_files, why_regraded
from grader.cli import main as grader_main


def _graded(out: Path, source: Source, suite: str) -> None:
    layout = Layout(out)
    layout.results(source.student).parent.mkdir(parents=True)
    layout.instructor(source.student).parent.mkdir(parents=True)
    doc = {"score": 1.0, "max_score": 2.0, "output": "", "tests": [],
           "extra_data": {"kit_version": "0.0.1", "submission": {"sha256": fingerprint(source)}}}
    layout.results(source.student).write_text(json.dumps(doc))
    layout.instructor(source.student).write_text(json.dumps({"student": source.student, "suite": suite}))


def test_a_result_is_kept_only_for_the_same_suite_and_settings(tmp_path: Path) -> None:
    sub = tmp_path / "alice"
    (sub / "assignment").mkdir(parents=True)
    (sub / "assignment" / "memory.py").write_text("x = 1\n")
    source = Source("alice", sub)
    options = GradeOptions(out=tmp_path / "out", modules=("memory",))
    options = replace(options, suite=suite_digest(options))
    _graded(options.out, source, options.suite)
    assert already_graded(source, options.out, options) is not None
    for change in ({"device": "cuda"}, {"call_timeout": 31.0}, {"modules": ("memory", "views")},
                   {"hidden": False}, {"memory_mb": 1024}, {"submission_budget": 5.0}):
        other = replace(options, **change)
        other = replace(other, suite=suite_digest(other))
        assert other.suite != options.suite, change
        assert already_graded(source, other.out, other) is None, change
    (sub / "assignment" / "memory.py").write_text("x = 2\n")  # the submission changed
    assert already_graded(source, options.out, options) is None


def test_the_digest_follows_the_bytes_of_tests_probes_and_grader(tmp_path: Path) -> None:
    root = tmp_path / "kit"
    for folder in ("grader", "tests"):
        shutil.copytree(KIT_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    options = GradeOptions(out=tmp_path / "out")
    before = suite_digest(options, root)
    assert before == suite_digest(options, root)  # (and nothing else: no time, no paths outside the kit)
    names = {p.relative_to(root).as_posix() for p in verdict_files(root)}
    assert {"tests/hidden/test_memory.py", "tests/probes/memory.py", "grader/batch/trusted.py"} <= names
    assert not any(n.startswith(("tests/kit/", "tests/mutants/", "tests/adversarial/")) for n in names)
    for rel in ("tests/hidden/test_memory.py", "tests/probes/memory.py", "grader/testing/expect.py"):
        path = root / rel
        original = path.read_bytes()
        path.write_bytes(original + b"\n# a TA's change\n")
        assert suite_digest(options, root) != before, rel
        path.write_bytes(original)
    (root / "tests" / "kit" / "test_new.py").write_text("# a kit self-test never grades anyone\n")
    assert suite_digest(options, root) == before


def test_why_a_result_is_regraded_is_said_in_words() -> None:
    options = GradeOptions(out=Path("out"), modules=("memory",))
    settings = suite_settings(options)
    last = {"suite": "s1", "settings": dict(settings, device="cpu", call_timeout=30.0)}
    cuda = dict(settings, device="cuda", call_timeout=30.0)
    assert why_regraded("s1", last, "s2", cuda) == "settings changed: device 'cpu' -> 'cuda'"
    assert why_regraded("s1", last, "s2", last["settings"]) == "the tests, probes or grader changed since it was graded"
    assert why_regraded("s0", last, "s2", cuda) == why_regraded("s1", None, "s2", cuda) == \
        "graded by an earlier suite or other settings"


def test_a_regrade_says_why_keeps_the_grades_before_it_and_says_renamed_ids(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33: regrading into the same folder kept no trace of the old grades (so `report --compare
    OLD` was impossible) and never said why it regraded; a renamed student id was never shown.
    (The kit's files are held to one digest: others may edit them while this runs.)"""
    import grader.batch.grade

    monkeypatch.setattr(grader.batch.grade, "suite_digest", lambda options: json.dumps(suite_settings(options)))
    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "alice" / "assignment").mkdir(parents=True)
    shutil.copy(KIT_ROOT / "solutions" / "memory.py", subs / "alice" / "assignment" / "memory.py")
    (subs / "José Núñez (2)" / "assignment").mkdir(parents=True)
    shutil.copy(KIT_ROOT / "assignment" / "memory.py", subs / "José Núñez (2)" / "assignment" / "memory.py")

    def grade(*extra: str) -> str:
        code = grader_main(["grade", str(subs), "--out", str(out), "-j", "1", "--module", "memory", "--no-progress",
                            "--call-timeout", "120", *extra])
        text = capsys.readouterr()
        assert code == 0, text.out[-3000:] + text.err[-3000:]
        return " ".join((text.out + text.err).split())  # (unwrapped)

    first = grade()
    assert "regrading" not in first and not Layout(out).previous.exists()
    assert first.count("José Núñez (2) -> Jos_N_ez_2_~") == 1  # said once, at the end of the batch
    before = (out / "grades.csv").read_text()
    shutil.copy(KIT_ROOT / "assignment" / "memory.py", subs / "alice" / "assignment" / "memory.py")
    second = grade()
    assert "regrading 1 graded before (the submission's files changed): alice" in second
    previous = Layout(out).previous
    assert (previous / "grades.csv").read_text() == before != (out / "grades.csv").read_text()
    assert f"--compare {previous}" in second
    assert grader_main(["report", str(out), "--out", str(tmp_path / "r.html"), "--compare", str(previous)]) == 0
    third = grade("--call-timeout", "121")  # (the last one wins)
    assert "regrading 2 graded before (settings changed: call_timeout 120.0 -> 121.0)" in third
    assert "no grade changed" in third and (previous / "grades.csv").read_text() == before
