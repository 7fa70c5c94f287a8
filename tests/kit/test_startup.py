"""How a batch starts: the trusted fork-server (`grader.batch.forkserver`) forks every trusted
worker from one warmed-up process, and the batch's mother zygote (`grader.sandbox.zygote`) forks
every worker's zygote; grades are the same without either, and a worker that dies is replaced
from the fork-server."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import time
from pathlib import Path

from grader import KIT_ROOT, sandbox
from tests.kit.test_grade import _cli, _wait_no_leftovers


def _batch(root: Path, count: int) -> None:
    """`count` full-credit `memory` submissions, each its own bytes."""
    for i in range(count):
        folder = root / f"student{i}"
        folder.mkdir(parents=True)
        (folder / "memory.py").write_text((KIT_ROOT / "solutions" / "memory.py").read_text() + f"\n# {i}\n")


def _grade(root: Path, out: Path, jobs: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    return _cli(["grade", str(root), "--out", str(out), "-j", str(jobs), "--module", "memory", "--no-progress",
                 "--call-timeout", "180", "--import-timeout", "180"], env={**os.environ, **(env or {})})


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _scores(out: Path) -> dict[str, tuple[str, str]]:
    rows = csv.DictReader(io.StringIO((out / "grades.csv").read_text()))
    return {r["student"]: (r["score"], r["status"]) for r in rows}


def _origins(out: Path) -> set[str]:
    import json

    return {json.loads(p.read_text())["sandbox"].get("zygote_origin", "none")
            for p in (out / "instructor" / "students").glob("*/instructor.json")}


def test_workers_fork_from_one_warm_process_and_grade_the_same(tmp_path: Path) -> None:
    """Two workers forked by the fork-server, their zygotes by the batch's mother (where zygotes
    are used: root and bubblewrap), grade a batch exactly as workers started the ordinary way;
    nothing is left running afterwards."""
    root = tmp_path / "subs"
    _batch(root, 3)
    os.chmod(tmp_path, 0o755)
    before = set(sandbox.descendants(os.getpid()))
    fast = _grade(root, tmp_path / "fast", 2)
    text, _ = fast.communicate(timeout=900)
    assert fast.returncode == 0, text
    logs = tmp_path / "fast" / "instructor" / "logs"
    assert (logs / "forkserver.log").exists()
    for log in logs.glob("worker-*.log"):
        assert "started as a process of its own" not in log.read_text(), log.read_text()[-2000:]
    zygotes = os.geteuid() == 0 and sandbox.bwrap_available()[0]
    assert _origins(tmp_path / "fast") == ({"batch"} if zygotes else {"none"})
    plain = _grade(root, tmp_path / "plain", 2, {"KIT_TRUSTED_FORKSERVER": "0", "KIT_SANDBOX_ZYGOTE": "0"})
    text, _ = plain.communicate(timeout=900)
    assert plain.returncode == 0, text
    assert not (tmp_path / "plain" / "instructor" / "logs" / "forkserver.log").exists()
    assert _origins(tmp_path / "plain") == {"none"}
    scores = _scores(tmp_path / "fast")
    assert scores == _scores(tmp_path / "plain") and len(scores) == 3
    assert all(status == "graded" and float(score) > 0 for score, status in scores.values()), scores
    assert _wait_no_leftovers(tmp_path / "fast", before) == []


def test_a_worker_that_dies_is_replaced_from_the_fork_server(tmp_path: Path) -> None:
    """SIGKILL to the trusted worker in the middle of a batch: its submission is graded again by a
    new worker (forked from the same fork-server), and every submission gets its full score."""
    root, out = tmp_path / "subs", tmp_path / "out"
    _batch(root, 3)
    os.chmod(tmp_path, 0o755)
    proc = _grade(root, out, 1)
    log = out / "instructor" / "logs" / "worker-0.log"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and "=== student1" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    forked = [p for p in sandbox.descendants(proc.pid) if b"grader.batch.forkserver" in _cmdline(p)]
    workers = [p for p in forked if _ppid(p) in forked]  # (the server's children: its command line too)
    assert len(workers) == 1, (forked, workers)
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text
    scores = _scores(out)
    assert len(scores) == 3 and all(s == "graded" and float(v) > 0 for v, s in scores.values()), (scores, text)
    assert "started as a process of its own" not in log.read_text()
    assert log.read_text().count("=== ") > 3  # the killed submission was graded again
