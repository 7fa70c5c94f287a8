"""Kit self-tests: single source (solutions -> stubs) and the student release."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.authoring.release import audit_release, build_release
from grader.testing.totals import count_word
from grader.course.stubs import MarkerError, check_assignment, check_markers, make_stub


def test_assignment_is_in_sync_with_solutions():
    assert check_assignment() == []


def test_release_check_names_the_stale_file(tmp_path):
    stale = tmp_path / "assignment"
    shutil.copytree(KIT_ROOT / "assignment", stale)
    (stale / "memory.py").write_text((stale / "memory.py").read_text() + "\n# edited by hand\n")
    (stale / "extra.py").write_text("x = 1\n")
    problems = check_assignment(stale)
    assert problems == ["assignment/memory.py is out of date with solutions/memory.py",
                        "assignment/extra.py has no counterpart in solutions/"]


@pytest.mark.parametrize("source, line, words", [
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", 2, "never closed"),
    ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    ### END SOLUTION\n", 3, "nested"),
    ("def f():\n    return 1\n    ### END SOLUTION\n", 3, "without a matching"),
    ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", 1, "top level"),
    ("def f():\n    x = 1  ### BEGIN SOLUTION\n", 2, "line of its own"),
])
def test_malformed_markers_name_file_and_line(source, line, words):
    with pytest.raises(MarkerError, match=rf"^solutions/x\.py:{line}: .*{words}"):
        make_stub(source, "solutions/x.py")


def test_stub_keeps_signature_and_docstring_and_raises():
    source = 'def f(x: int) -> int:\n    """Double x."""\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n'
    stub = make_stub(source)
    assert check_markers(source, "x") == 1
    assert stub == 'def f(x: int) -> int:\n    """Double x."""\n    # YOUR CODE HERE\n    raise NotImplementedError()\n'


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return build_release(tmp_path_factory.mktemp("rel") / "release")


def test_release_holds_no_instructor_material(release):
    for path in ("solutions", "tests/hidden", "tests/mutants", "tests/kit"):
        assert not (release / path).exists(), path
    assert (release / "assignment" / "memory.py").exists() and (release / "tests" / "public").is_dir()
    assert audit_release(release) == []
    assert "### BEGIN SOLUTION" not in "".join(p.read_text() for p in (release / "assignment").glob("*.py"))


def test_release_docs_read_as_rendered(release):
    """The kit's number markers (grader.authoring.totals_docs) are the instructors' machinery: a student reading
    README.md, handout.md or a notebook's source sees the values, not `<!--kit:...-->`."""
    docs = {p.relative_to(release).as_posix(): p.read_text() for pattern in ("*.md", "*.ipynb")
            for p in release.rglob(pattern)}
    assert {"README.md", "handout.md"} <= set(docs)
    from grader.authoring.totals_docs import plain

    assert [name for name, text in docs.items() if plain(text) != text] == []  # no live marker left
    assert docs["CHANGELOG.md"] == (KIT_ROOT / "CHANGELOG.md").read_text()  # the syntax it quotes in code stays
    assert f"({count_word(len(MODULES))} modules)" in docs["README.md"]


def _grader_check(release: Path, target: str) -> tuple[dict, str]:
    env = {**os.environ, "PYTHONPATH": str(release), "COLUMNS": "200"}
    out = release.parent / f"check-{Path(target).name}.json"
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", target, "--json", str(out)], cwd=release,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout


def test_release_check_gives_zero_on_stubs_and_full_marks_on_solutions(release):
    result, text = _grader_check(release, "assignment")
    statuses = {t["status"] for t in result["tests"]}
    assert result["earned"] == 0 and result["possible"] > 0 and statuses <= {"not_attempted", "pending"}, statuses
    assert "not attempted" in text
    assert all(not t["hidden"] for t in result["tests"])
    filled = release / "filled"
    shutil.copytree(KIT_ROOT / "solutions", filled)  # the reference bodies pasted in
    result, text = _grader_check(release, str(filled))
    assert result["earned"] == result["possible"] > 0, [t for t in result["tests"] if t["status"] != "passed"]


def test_plain_pytest_in_release_targets_assignment(release):
    env = {**os.environ, "PYTHONPATH": str(release)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "tests/public/test_memory.py"], cwd=release,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "NotAttempted" in proc.stdout, proc.stdout[-2000:]


def _run_in_release(release: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(release), "COLUMNS": "200"}
    return subprocess.run([sys.executable, *args], cwd=release, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_release_ships_the_benchmarks_the_handout_names_and_they_run_there(release):
    import re

    named = set(re.findall(r"bench/\w+\.py", (release / "handout.md").read_text()))
    assert named and all((release / b).is_file() for b in named), named
    filled = release.parent / "filled-bench"
    if not filled.exists():
        shutil.copytree(KIT_ROOT / "solutions", filled)
    runs = {
        "bench/data_get_batch.py": ["--tokens", "200000", "--batch", "4", "--context", "32", "--repeats", "2",
                                    "--device", "cpu"],
        "bench/mixed_precision.py": ["--device", "cpu", "--width", "32", "--layers", "1", "--batch", "16",
                                     "--steps", "1"],
        "bench/flops_mfu.py": ["--sizes", "64", "--trials", "1"],
    }
    for bench in sorted(named):
        proc = _run_in_release(release, bench, "--target", str(filled), *runs.get(bench, []))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (bench, proc.stdout[-1500:], proc.stderr[-1500:])


def test_release_gitignore_covers_the_folders_the_student_readme_creates(release):
    import re

    readme = (release / "README.md").read_text()
    folders = set(re.findall(r"--out\s+([\w.-]+)", readme))
    assert {"results-cpu", "results"} <= folders, folders
    subprocess.run(["git", "init", "-q"], cwd=release, check=True)
    for folder in folders | {"results-gpu", ".venv"}:
        proc = subprocess.run(["git", "check-ignore", "-q", f"{folder}/x"], cwd=release)
        assert proc.returncode == 0, f"{folder}/ is not ignored by the release's .gitignore"
    assert subprocess.run(["git", "check-ignore", "-q", "assignment/memory.py"], cwd=release).returncode == 1


@pytest.mark.parametrize("args", [["stubs"], ["release", "--check"], ["validate", "--module", "memory"],
                                  ["gradescope", "bundle.zip"], ["check", "--hidden", "--module", "memory"]])
def test_instructor_only_commands_say_so_in_the_release(release, args):
    proc = _run_in_release(release, "-m", "grader.cli", *args, timeout=120)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "needs the instructor repository" in text and "Traceback" not in text, text[-2000:]
