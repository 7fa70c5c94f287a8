"""The public tests on a student's macOS or Windows (issue 25): each works there, or it is reported as
"checked only when graded" (pending: no points lost or given), never "tell the course staff".

Most students work on a Mac, some on Windows: no Linux /proc there, no fork on Windows (and a fork
of a process running torch is unsafe on macOS: the kit forks only on Linux).  `tests/kit/portable/
sitecustomize.py`, put on PYTHONPATH, takes /proc and `os.fork` away from every interpreter of a
run (`grader check`, its pytest child, the fresh interpreters they start); with ``KIT_NO_POSIX=1``
also `resource`, `fcntl` and `os.O_NOFOLLOW`, as on Windows.  `grader check` then runs the public
suite in-process exactly as on a student's machine:

* macOS-like: every test passes on the solutions (the memory bound is measured in a fresh
  interpreter, `grader.boundary.peak`), and a get_batch that copies the file is still caught;
* Windows-like: the memory bound is the one test checked only when graded;
* on the stubs, every test is not attempted (or pending: the GPU tests, and that one on Windows).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import KIT_ROOT

pytestmark = pytest.mark.kit

SHIM = Path(__file__).parent / "portable"
MEMORY_TEST = "public/test_data.py::test_get_batch_memory_bounded"
GRADED_ONLY = "checked only when graded"


def _env(no_posix: bool) -> dict[str, str]:
    path = os.pathsep.join([str(SHIM), str(KIT_ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "KIT_NO_POSIX": "1" if no_posix else "0", "COLUMNS": "200"}


def _check(target: str | Path, out: Path, *, no_posix: bool, modules: tuple[str, ...] = ()) -> tuple[list[dict], str]:
    """`grader check TARGET --json OUT` on the shimmed machine: the records and what it printed."""
    flags = [a for m in modules for a in ("--module", m)]
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", str(target), *flags, "--json", str(out)],
                          cwd=KIT_ROOT, env=_env(no_posix), capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())["tests"], proc.stdout


def _is_memory(record: dict) -> bool:
    return record["id"].endswith(MEMORY_TEST)


@pytest.mark.parametrize("no_posix", [False, True], ids=["no_proc_no_fork", "windows_like"])
def test_the_shim_takes_proc_and_fork_away(no_posix: bool) -> None:
    """The machine the tests below simulate really lacks what they say (else they prove nothing)."""
    probe = ("import os, sys, importlib.util\n"
             "try:\n    open('/proc/self/status'); proc = True\nexcept OSError:\n    proc = False\n"
             "def gone(name):\n    try:\n        __import__(name); return False\n    except ImportError:\n        return True\n"
             "print(proc, os.path.exists('/proc/self/clear_refs'), hasattr(os, 'fork'), gone('resource'), gone('fcntl'),"
             " hasattr(os, 'O_NOFOLLOW'))")
    proc = subprocess.run([sys.executable, "-c", probe], env=_env(no_posix), capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.split() == ["False", "False", "False", str(no_posix), str(no_posix), str(not no_posix)]


@pytest.mark.parametrize("no_posix", [False, True], ids=["no_proc_no_fork", "windows_like"])
def test_public_suite_passes_on_the_solutions_without_proc_and_fork(no_posix: bool, tmp_path: Path) -> None:
    records, text = _check("solutions", tmp_path / "check.json", no_posix=no_posix)
    assert records and "tell the course staff" not in text
    bad = [f"{r['id']}: {r['status']}: {r['message']}" for r in records if r["status"] not in ("passed", "pending")]
    assert not bad, "\n".join(bad)
    local = [r for r in records if r["status"] == "pending" and not r["gpu"]]
    if no_posix:  # Windows: nothing measures a call's memory; that one test says so and costs nothing
        assert len(local) == 1 and _is_memory(local[0]) and local[0]["message"].startswith(GRADED_ONLY), local
        assert "data: batching from a 5 GiB" in text and GRADED_ONLY in text
    else:  # macOS: measured in a fresh interpreter, and within the bound
        assert not local, local


@pytest.mark.parametrize("no_posix", [False, True], ids=["no_proc_no_fork", "windows_like"])
def test_public_suite_is_not_attempted_on_the_stubs_without_proc_and_fork(no_posix: bool, tmp_path: Path) -> None:
    records, text = _check("assignment", tmp_path / "check.json", no_posix=no_posix)
    other = [f"{r['id']}: {r['status']}: {r['message']}" for r in records
             if r["status"] != "not_attempted" and not (r["status"] == "pending" and r["gpu"])
             and not (no_posix and _is_memory(r) and r["status"] == "pending")]
    assert records and not other, "\n".join(other)
    assert "not attempted yet: memory, views" in text


def test_a_get_batch_that_copies_the_file_is_caught_without_proc(tmp_path: Path) -> None:
    """The fresh interpreter's measurement is a real one: the mutant that copies the whole memmap
    (5 GiB, as int64 20 GiB) is stopped at 1 GiB of growth and fails the memory test, as on Linux."""
    from grader.authoring.mutants import build_target, load_mutants

    mutant = next(m for m in load_mutants(("data",)) if m.name == "get_batch_copies_everything")
    target = build_target(mutant, tmp_path / "mutant")
    records, _ = _check(target, tmp_path / "check.json", no_posix=False, modules=("data",))
    memory = next(r for r in records if _is_memory(r))
    assert memory["status"] == "failed" and "MemoryError" in memory["message"], memory


def test_nothing_forks_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    """On macOS (fork present, unsafe with torch) the trusted child of `grader.testing.contained` runs here."""
    from grader.testing.contained import contained

    monkeypatch.setattr(sys, "platform", "darwin")
    got = contained(os.getpid)
    assert got.error is None and got.value == os.getpid()


def test_an_output_that_cannot_encode_the_marks_gets_question_marks(tmp_path: Path) -> None:
    """Windows with the output piped (CI, Git Bash, `> file`) writes cp1252, which has no "✗": the
    failure lines come out with "?" instead of a UnicodeEncodeError."""
    from grader.authoring.mutants import build_target, load_mutants

    target = build_target(load_mutants(("memory",))[0], tmp_path / "mutant")
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "check", str(target), "--module", "memory"],
                          cwd=KIT_ROOT, env={**_env(True), "PYTHONIOENCODING": "cp1252"}, capture_output=True,
                          timeout=900, stdin=subprocess.DEVNULL)
    out = proc.stdout.decode("cp1252")
    assert proc.returncode == 0, out[-2000:] + proc.stderr.decode("cp1252", "replace")[-2000:]
    assert "\n? memory: " in out and "UnicodeEncodeError" not in out
