"""`grader grade` keeps a result only when the same suite and settings graded it (grader.batch.suite):
a new hidden test, a changed probe or grader file, --device cuda or another timeout all regrade,
whatever the installed version string says."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from grader import KIT_ROOT
from grader.batch.discover import Source, fingerprint
from grader.batch.grade import GradeOptions, already_graded
from grader.batch.layout import Layout
from grader.batch.suite import suite_digest, verdict_files


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
    for rel in ("tests/hidden/test_memory.py", "tests/probes/memory.py", "grader/expect.py"):
        path = root / rel
        original = path.read_bytes()
        path.write_bytes(original + b"\n# a TA's change\n")
        assert suite_digest(options, root) != before, rel
        path.write_bytes(original)
    (root / "tests" / "kit" / "test_new.py").write_text("# a kit self-test never grades anyone\n")
    assert suite_digest(options, root) == before
