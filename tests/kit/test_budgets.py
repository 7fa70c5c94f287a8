"""The trusted side's budgets (`grader.testing.budget`): a submission that makes the trusted worker
work past its time budget, or past its memory limit, or whose worker is killed twice, scores what
it earned so far, flagged ``partial``; the batch goes on and the next submission is graded as usual.

Trusted-side cost is simulated deterministically by `tests.kit.trusted_costs`, a pytest plugin
loaded into the workers through ``PYTEST_PLUGINS``: the submission marked ``cost`` makes the
trusted process compute, hang or allocate from its third graded test on.  Every assertion is on
structure (which tests passed, in what order, with which words), never on how long anything took:
budgets are CPU seconds of the worker, which a busy machine does not inflate.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import time
from pathlib import Path

import pytest

from grader import KIT_ROOT, sandbox
from grader.testing.budget import DIED_MESSAGE, MEMORY_MESSAGE
from grader.results.layout import Layout
from tests.kit.test_grade import _cli, _wait_no_leftovers
from tests.kit.trusted_costs import MARK

PLUGIN = {"PYTEST_PLUGINS": "tests.kit.trusted_costs"}


def _batch(root: Path, cost: dict) -> None:
    """a_honest, b_cost (the reference solution plus `cost`), c_honest: graded in that order by one worker."""
    solution = (KIT_ROOT / "solutions" / "memory.py").read_text()
    for name, extra in (("a_honest", ""), ("b_cost", MARK + json.dumps(cost)), ("c_honest", "# c")):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "memory.py").write_text(solution + "\n" + extra + "\n")


def _grade(root: Path, out: Path, *args: str, env: dict[str, str] | None = None):
    return _cli(["grade", str(root), "--out", str(out), "-j", "1", "--module", "memory", "--no-progress",
                 "--call-timeout", "180", "--import-timeout", "180", *args],
                env={**os.environ, **PLUGIN, **(env or {})})


def _check_partial(out: Path, why: str) -> dict:
    """b_cost: the tests before the third passed, every later one not graded (`why`), status partial in
    results.json, instructor.json and grades.csv; a_honest and c_honest: every point."""
    layout = Layout(out)
    records = json.loads(layout.instructor("b_cost").read_text())["records"]  # in run order
    ran = [r for r in records if r["status"] != "pending"]
    assert [r["status"] for r in ran[:2]] == ["passed", "passed"], ran[:3]
    assert all(r["status"] == "failed" and r["message"] == f"not graded: {why}" for r in ran[2:]), ran[2:]
    doc = json.loads(layout.results("b_cost").read_text())
    assert doc["extra_data"]["status"] == "partial" and doc["extra_data"]["reason"] == why
    assert doc["score"] == sum(r["points"] for r in ran[:2]) > 0
    assert why in doc["output"].splitlines()[0]
    hidden = [t for t in doc["tests"] if "hidden" in t["tags"]]
    assert hidden and all(why not in t["output"] for t in hidden)  # hidden tests say only failed
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(layout.grades.read_text()))}
    assert rows["b_cost"]["status"] == f"partial: {why}" and float(rows["b_cost"]["score"]) == doc["score"]
    for name in ("a_honest", "c_honest"):
        row = rows[name]
        assert row["status"] == "graded" and float(row["score"]) == float(row["max_score"]) - float(row["pending"]) > 0
    return json.loads(layout.instructor("b_cost").read_text())


def test_time_budget_spent_scores_what_was_earned(tmp_path: Path) -> None:
    """Soft: the worker spends its budget in trusted work from the third test on; that test fails
    as not graded, no later test runs, and the next submission is graded normally by the same worker."""
    root, out = tmp_path / "subs", tmp_path / "out"
    _batch(root, {"at": 3, "cpu": 12})
    os.chmod(tmp_path, 0o755)
    proc = _grade(root, out, "--submission-budget", "8")
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    instructor = _check_partial(out, "the submission used up its time budget of 8 s")
    assert instructor["trusted"]["stopped"]["why"] == "time"
    assert instructor["settings"]["trusted"]["submission_budget_cpu_s"] == 8
    log = (out / "instructor" / "logs" / "worker-0.log").read_text()
    assert [line.split()[1] for line in log.splitlines() if line.startswith("=== ") and line.endswith(") ===")] \
        == ["a_honest", "b_cost", "c_honest"] and "results of the stopped run" not in log  # one worker, no kill


def test_worker_stuck_past_its_budget_is_killed_and_scores_what_was_earned(tmp_path: Path) -> None:
    """Hard: trusted code that never returns (no probe call, no test end where the budget is checked)
    is killed by the parent past the budget and its margin; a fresh worker writes the results from
    the two tests that ended, and grades the next submission."""
    root, out = tmp_path / "subs", tmp_path / "out"
    _batch(root, {"at": 3, "spin": True})
    os.chmod(tmp_path, 0o755)
    before = set(sandbox.descendants(os.getpid()))
    proc = _grade(root, out, "--submission-budget", "2")
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    instructor = _check_partial(out, "the submission used up its time budget of 2 s")
    assert instructor["trusted"]["stopped"]["why"] == "time"
    log = (out / "instructor" / "logs" / "worker-0.log").read_text()
    assert "results of the stopped run" in log
    assert _wait_no_leftovers(out, before) == []


def _workers(cli_pid: int) -> list[int]:
    """The trusted workers of the `grader grade` run `cli_pid`: the fork-server's children, or
    processes of their own (KIT_TRUSTED_FORKSERVER=0)."""
    from tests.kit.test_startup import _cmdline, _ppid

    procs = sandbox.descendants(cli_pid)
    forked = [p for p in procs if b"grader.batch.forkserver" in _cmdline(p)]
    return [p for p in forked if _ppid(p) in forked] + [p for p in procs if b"grader.batch.trusted" in _cmdline(p)]


def _owner(folder: Path) -> str:
    """The pid in a grader temp folder's owner file (`grader.sandbox.scratch.owned_tempdir`); names hold none."""
    try:
        return (folder / ".owner").read_text().strip()
    except OSError:
        return ""


def test_worker_killed_twice_mid_submission_scores_what_was_earned(tmp_path: Path) -> None:
    """SIGKILL to the worker while it grades b_cost, twice (the first time it is graded again from
    the start): its results come from the tests the second run finished, not "not graded"."""
    import tempfile

    root, out = tmp_path / "subs", tmp_path / "out"
    _batch(root, {"at": 3, "sleep": True})
    os.chmod(tmp_path, 0o755)
    proc = _grade(root, out)
    for job in (2, 3):  # the progress folders of b_cost's runs (a_honest's is 1)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # two tests ended, the third waits for ever
            streams = [p for p in Path(tempfile.gettempdir()).glob(f"kit-progress-*/{job}/records.jsonl")
                       if _owner(p.parents[1]) == str(proc.pid)]
            if streams and len(streams[0].read_text().splitlines()) == 2:
                break
            time.sleep(0.2)
        workers = _workers(proc.pid)
        assert len(workers) == 1, workers
        os.kill(workers[0], signal.SIGKILL)
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    instructor = _check_partial(out, DIED_MESSAGE)
    assert instructor["trusted"]["stopped"]["why"] == "died"


@pytest.mark.parametrize("how", ["cgroup", "rlimit"])
def test_worker_out_of_memory_scores_what_was_earned(tmp_path: Path, how: str) -> None:
    """The trusted worker allocates 6 GiB from the third test on, with a limit of 1 GiB: killed by
    its memory cgroup (root), or a MemoryError under RLIMIT_AS (KIT_WORKER_CGROUP=0, and where no
    cgroup can be made); either way partial, flagged, and the batch goes on with a fresh worker."""
    from grader.sandbox.limits import cgroups_available
    from grader.sandbox.uids import is_root

    if how == "cgroup" and not (is_root() and cgroups_available()[0]):
        pytest.skip("no memory cgroup for the workers here (needs root and a memory controller)")
    root, out = tmp_path / "subs", tmp_path / "out"
    _batch(root, {"at": 3, "allocate_mb": 6144})
    os.chmod(tmp_path, 0o755)
    proc = _grade(root, out, "--worker-memory", "1024", env={"KIT_WORKER_CGROUP": "0"} if how == "rlimit" else {})
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    instructor = _check_partial(out, MEMORY_MESSAGE)
    memory = instructor["settings"]["trusted"]["worker_memory"]
    assert memory["method"].startswith("cgroup" if how == "cgroup" else "RLIMIT_AS") and memory["limit_bytes"] == 2**30
    assert instructor["trusted"]["stopped"]["why"] == "memory"
