"""`grader grade` end to end: the adversarial suite, the Gradescope format, resume after kill -9,
and `grader check` / `grader check --sandbox` / `grader grade` agreeing test by test.

The adversarial suite (tests/adversarial/cases.py, and the batch-side cases of
tests/adversarial/batch.py, budgets_static.py, budgets_worker.py and budgets_data.py) is graded as one batch, two jobs,
with the `memory` module's tests only and short timeouts (the checkpoint cases of budgets_data.py, which need the
checkpointing tests, in a batch of their own).  Every case must get exactly its expected score; the batch must
finish; no process may be left behind; no file may appear outside the sandbox; the network
server must see no connection; every results.json must conform to the Gradescope format
(checked here with a JSON Schema written from the specification, not with the grader's own
validator).

Timeouts: the per-call limit is what makes the looping cases fail, and an honest call must
never reach it.  On a busy machine an honest call is slower by the machine's contention, so the
limit is scaled by the contention measured when the suite starts (`scaled_timeout`: 5 s on an
idle machine); the expectations never depend on wall-clock time otherwise.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from rich.console import Console

from grader import KIT_ROOT, MODULES, sandbox
from grader.batch.grade import grade
from grader.batch.options import GradeOptions
from grader.batch.options import test_files as grade_test_files
from grader.results.grades import CSV_FIELDS
from grader.results.layout import Layout
from grader.results.results_json import validate_results
from tests.adversarial.batch import BATCH_CASES, STATUS, Refused, relative_paths_batch
from tests.adversarial.budgets_static import BUDGET_BATCH_CASES
from tests.adversarial.budgets_worker import WORKER_CASES
from tests.adversarial.budgets_data import CHECKPOINT_CASES, CHECKPOINT_MODULE, DATA_CASES
from tests.adversarial.cases import CASES, Case, Ctx, Full, Rejected, Twin, Zero
from tests.adversarial.isolation import ISOLATION_CASES, problems_after

# https://gradescope-autograders.readthedocs.io/en/latest/specs/ (the "Output format" section)
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
GRADESCOPE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "name": {"type": "string"},
                    "number": {"type": "string"},
                    "output": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "visibility": VISIBILITY,
                    "extra_data": {"type": "object"},
                },
                "required": ["score", "max_score", "name", "output", "visibility"],
            },
        },
    },
    "required": ["score", "tests"],
}

BASE_TIMEOUT = 5.0


def contention() -> float:
    """How much slower than idle this machine runs a single-threaded job right now: the larger of
    the load per core and wall/CPU time of a short busy loop (1.0 on an idle machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    x = 0
    while time.process_time() - c0 < 0.3:
        x += 1
    ratio = (time.perf_counter() - t0) / max(1e-6, time.process_time() - c0)
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return max(1.0, ratio, load)


def scaled_timeout(base: float = BASE_TIMEOUT) -> float:
    """The per-call limit for this run: `base` on an idle machine, scaled by the contention
    (at most 8x); twice the contention, since two submissions are graded at once."""
    return base * min(8.0, max(1.0, 2 * contention() - 1))


def _bwrap() -> bool:
    ok, _ = sandbox.bwrap_available()
    return ok


def _stray_paths(ctx: Ctx) -> list[Path]:
    """Where an escaping submission would have left a file."""
    return [KIT_ROOT / "tests" / "public" / "test_pwned.py", KIT_ROOT / "grader" / "pwned.py",
            Path("/tmp/pwned"), Path("/tmp/zip_escape_marker"), Path("/root/pwned"), Path("/usr/pwned"),
            Path("/etc/pwned"), ctx.root.parent / "conftest.py"]


class _Listener:
    """TCP and UDP on one 127.0.0.1 port; records anything that arrives."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen()
        self.tcp.settimeout(0.2)
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.udp.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for sock in (self.tcp, self.udp):
                try:
                    if sock is self.tcp:
                        conn, addr = sock.accept()
                        self.seen.append(f"tcp {addr}")
                        conn.close()
                    else:
                        data, addr = sock.recvfrom(100)
                        self.seen.append(f"udp {addr} {data!r}")
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.tcp.close()
        self.udp.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    lst = _Listener()
    yield lst
    lst.close()


def _uids_in_use(out: Path) -> set[int]:
    uids = set()
    for path in Layout(out).instructor_dir.glob("*/instructor.json"):
        uid = json.loads(path.read_text()).get("sandbox", {}).get("uid")
        if uid is not None:
            uids.add(int(uid))
    return uids


def _leased_elsewhere(uid: int) -> bool:
    """True when another grader process (another test, another batch on this machine) holds the
    lease of `uid` now: its processes are that grader's, not leftovers of this batch."""
    import fcntl

    lock_dir = getattr(__import__("grader.sandbox.uids", fromlist=["_LOCK_DIR"]), "_LOCK_DIR", None)
    if lock_dir is None or not (Path(lock_dir) / f"{uid}.lock").exists():
        return False
    fd = os.open(Path(lock_dir) / f"{uid}.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _leftover_processes(out: Path, before: set[int]) -> list[str]:
    left = [f"pid {p} (descendant)" for p in sandbox.descendants(os.getpid()) if p not in before]
    for uid in _uids_in_use(out):
        pids = sandbox.processes_of_uid(uid)
        if pids and not _leased_elsewhere(uid):
            left += [f"pid {p} (sandbox uid {uid}: {_cmdline(p)})" for p in pids]
    return left


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return "?"


def _wait_no_leftovers(out: Path, before: set[int], seconds: float = 30) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        left = _leftover_processes(out, before)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _student(case: Case) -> str:
    return getattr(case, "student", case.name)


def test_the_host_path_check_sees_a_path_however_it_is_written(tmp_path: Path) -> None:
    """problems_after's host-path check (what no launcher may show): the kit root in plain, reversed or base64
    is found; a sibling folder that only starts with the same letters (a venv beside the kit) is not."""
    import base64

    ctx = Ctx(root=tmp_path / "subs", out=tmp_path / "out", marker_dir=tmp_path / "markers", port=0)
    kit = str(KIT_ROOT)
    for name, shown, found in [("plain", f"at {kit}/grader/cli.py", True), ("reversed", f"{kit}/x"[::-1], True),
                               ("base64", base64.b64encode(f"{kit}/solutions".encode()).decode(), True),
                               ("reversed, a line of its own", f"seen\n{kit[::-1]}\n", True),
                               ("reversed after non-ASCII", f"\u2192{kit[::-1]}", True),
                               ("end of a sentence", f"the folder is {kit}.", True),
                               ("sibling", f"{kit}-venv/lib/python3/torch", False), ("none", "nothing", False)]:
        folder = tmp_path / "out" / name.replace(" ", "_").replace(",", "")
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({"output": shown, "tests": []}))
        problems = problems_after(ctx, folder, set())
        assert any(f"shows the host path {kit} " in p for p in problems) == found, (name, problems)


def test_adversarial_suite(tmp_path: Path, listener: _Listener) -> None:
    isolated = _bwrap()
    if not isolated and os.environ.get("KIT_ALLOW_NO_BWRAP") != "1":
        pytest.fail("bubblewrap is not usable here: install it (apt-get install -y bubblewrap); the adversarial "
                    "suite needs it (KIT_ALLOW_NO_BWRAP=1 grades the rest with the rlimits fallback)")
    root, out, markers = tmp_path / "submissions", tmp_path / "out", tmp_path / "markers"
    for d in (root, markers):
        d.mkdir()
    os.chmod(tmp_path, 0o755)
    ctx = Ctx(root=root, out=out, marker_dir=markers, port=listener.port)
    cases = [c for c in [*CASES, *BATCH_CASES, *BUDGET_BATCH_CASES, *WORKER_CASES, *DATA_CASES, *ISOLATION_CASES]
             if isolated or not getattr(c, "needs_isolation", False)]
    for case in cases:
        case.build(ctx)
    honest_stub_text = (root / "honest_stub" / "assignment" / "memory.py").read_text()  # the stubs may be regenerated meanwhile
    before = set(sandbox.descendants(os.getpid()))
    console = Console(file=io.StringIO(), width=200)
    timeout = scaled_timeout()
    t0 = time.monotonic()
    result = grade([root], GradeOptions(out=out, jobs=2, modules=("memory",), call_timeout=timeout,
                                        import_timeout=timeout, memory_mb=2048, progress=False), console)
    elapsed = time.monotonic() - t0
    layout = Layout(out)

    problems: list[str] = []
    outcomes = {o.student: o for o in result.outcomes}
    docs: dict[str, dict] = {}
    for case in cases:
        sid = _student(case)
        o = outcomes.get(sid)
        if isinstance(case.expect, Refused):
            if o is None or o.status != "refused" or layout.results(sid).exists():
                problems.append(f"{case.name}: expected refused (colliding id), got {o and o.status}")
            continue
        if o is None or o.status in ("error", "refused"):
            problems.append(f"{case.name}: not graded ({o.message if o else 'missing'})")
            continue
        doc = json.loads(layout.results(sid).read_text())
        docs[case.name] = doc
        try:
            jsonschema.validate(doc, GRADESCOPE_SCHEMA)
        except jsonschema.ValidationError as exc:
            problems.append(f"{case.name}: results.json is not Gradescope format: {exc.message}")
        problems += [f"{case.name}: {p}" for p in validate_results(doc)]
    full = {name: d["max_score"] - d["extra_data"]["pending_points"] for name, d in docs.items()}
    for case in cases:
        doc = docs.get(case.name)
        if doc is None:
            continue
        got, status = doc["score"], doc["extra_data"]["status"]
        exp = case.expect
        if isinstance(exp, Rejected):
            if status != "rejected" or exp.words not in doc["extra_data"]["reason"] or got != 0:
                problems.append(f"{case.name}: expected rejected ({exp.words}), got {status} "
                                f"{doc['extra_data']['reason']!r} score {got}")
            continue
        want_status = STATUS.get(case.name) or getattr(case, "status", "graded")
        if status != want_status:
            problems.append(f"{case.name}: expected {want_status}, got {status}: {doc['extra_data']['reason']}")
        if isinstance(exp, Full) and got != full[case.name]:
            problems.append(f"{case.name} ({case.why}): expected full marks {full[case.name]}, got {got}")
        if isinstance(exp, Zero) and got != 0:
            problems.append(f"{case.name} ({case.why}): expected 0, got {got}")
        if isinstance(exp, Twin):
            twin = docs.get(exp.name)
            if exp.name == case.name:  # an honest twin: the rest of the module must still be graded
                if not 0 < got < full[case.name]:
                    problems.append(f"{case.name}: an honest twin must score strictly between 0 and full, got {got}")
            elif twin is None or got != twin["score"]:
                problems.append(f"{case.name} ({case.why}): expected its honest twin's {twin and twin['score']}, "
                                f"got {got}")
        if case.message:
            outputs = " ".join([doc["output"]] + [t["output"] for t in doc["tests"] if t.get("status") == "failed"])
            if case.message not in outputs:
                problems.append(f"{case.name}: feedback does not say {case.message!r}: {outputs[:300]}")
        if getattr(case, "check", None):
            problems += [f"{case.name}: {p}" for p in case.check(ctx, doc)]
        problems += [f"{case.name}: {p}" for p in _only_test_outcomes(doc)]
        log = layout.sandbox_log(_student(case))
        if log.exists() and log.stat().st_size > 80_000:
            problems.append(f"{case.name}: sandbox.log is {log.stat().st_size} bytes (output not capped)")

    strays = [str(p) for p in _stray_paths(ctx) if p.exists()] + [str(p) for p in markers.iterdir()]
    if (root / "honest_stub" / "assignment" / "memory.py").read_text() != honest_stub_text:
        strays.append("another submission's file was modified")
    problems += [f"a file appeared outside the sandbox: {p}" for p in strays]
    problems += [f"the network server saw: {s}" for s in listener.seen]
    problems += [f"left behind: {p}" for p in _wait_no_leftovers(out, before)]
    problems += problems_after(ctx, out, _uids_in_use(out))  # kernel state, host paths in results
    rows = list(csv.DictReader(io.StringIO(layout.grades.read_text())))
    if tuple(rows[0].keys()) != CSV_FIELDS or sorted(r["student"] for r in rows) != sorted(_student(c) for c in cases):
        problems.append("grades.csv does not list every case with the expected columns: "
                        f"{sorted(set(r['student'] for r in rows) ^ set(_student(c) for c in cases))}")
    by_student = {_student(c): c for c in cases}
    for r in rows:
        case = by_student.get(r["student"])
        if case is None:
            continue
        want = ("rejected" if isinstance(case.expect, Rejected) else "refused" if isinstance(case.expect, Refused)
                else STATUS.get(case.name, "graded"))
        if not r["status"].startswith(want):
            problems.append(f"grades.csv: {r['student']} has status {r['status']!r}, expected {want}")
    hidden = [t for d in docs.values() for t in d["tests"] if "hidden" in t["tags"]]
    if not hidden or any(t["visibility"] != "after_published" or "expected" in t["output"] for t in hidden):
        problems.append("hidden tests must be after_published and never show their details")
    assert not problems, (f"{len(problems)} problems (batch took {elapsed:.0f} s, call timeout {timeout:.0f} s):\n"
                          + "\n".join(problems))


def test_adversarial_checkpoints(tmp_path: Path) -> None:
    """The checkpoint cases of tests/adversarial/budgets_data.py, graded with the checkpointing tests:
    a file the trusted test loads that would expand there (deflated records, shared lists) scores
    what its honest twin scores, and the batch goes on."""
    root, out, markers = tmp_path / "submissions", tmp_path / "out", tmp_path / "markers"
    for d in (root, markers):
        d.mkdir()
    os.chmod(tmp_path, 0o755)
    ctx = Ctx(root=root, out=out, marker_dir=markers, port=0)
    for case in CHECKPOINT_CASES:
        case.build(ctx)
    timeout = scaled_timeout(30.0)
    result = grade([root], GradeOptions(out=out, jobs=2, modules=(CHECKPOINT_MODULE,), call_timeout=timeout,
                                        import_timeout=timeout, memory_mb=2048, progress=False),
                   Console(file=io.StringIO(), width=200))
    layout, problems = Layout(out), []
    statuses = {o.student: o.status for o in result.outcomes}
    docs = {c.name: json.loads(layout.results(c.student).read_text()) for c in CHECKPOINT_CASES
            if statuses.get(c.student) == "graded"}
    problems += [f"{c.name}: not graded ({statuses.get(c.student)})" for c in CHECKPOINT_CASES if c.name not in docs]
    for case in CHECKPOINT_CASES:
        doc = docs.get(case.name)
        if doc is None:
            continue
        got, full = doc["score"], doc["max_score"] - doc["extra_data"]["pending_points"]
        twin = docs.get(getattr(case.expect, "name", ""), {}).get("score")
        if isinstance(case.expect, Full) and got != full:
            problems.append(f"{case.name} ({case.why}): expected full marks {full}, got {got}")
        if isinstance(case.expect, Twin) and (not 0 < got < full if case.expect.name == case.name else got != twin):
            problems.append(f"{case.name} ({case.why}): expected {case.expect.name}'s score, strictly between 0 and "
                            f"{full} for a twin ({twin}), got {got}")
        outputs = " ".join(t["output"] for t in doc["tests"] if t.get("status") == "failed")
        if case.message and case.message not in outputs:
            problems.append(f"{case.name}: feedback does not say {case.message!r}: {outputs[:300]}")
        problems += [f"{case.name}: {p}" for p in (case.check(ctx, doc) if case.check else [])]
    assert not problems, "\n".join(problems)


def _only_test_outcomes(doc: dict) -> list[str]:
    """A1 for every case: results.json holds test outcomes and trusted messages, never sandbox statistics."""
    sandbox_keys = set(doc["extra_data"].get("sandbox", {})) - {"launcher", "layers", "warning"}
    return ([f"results.json carries sandbox statistics {sorted(sandbox_keys)}"] if sandbox_keys else []) + \
        (["results.json carries the execution time"] if "execution_time" in doc else [])


def test_sandbox_grades_like_in_process(tmp_path: Path) -> None:
    """Every module through the sandbox: the solutions get every non-pending point, the stubs get every
    test "not attempted" (nothing is lost to the sandbox's limits or its missing files)."""
    import shutil

    root, out = tmp_path / "subs", tmp_path / "out"
    (root / "solutions").mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    for src in (KIT_ROOT / "solutions").glob("*.py"):
        shutil.copy2(src, root / "solutions" / src.name)
    shutil.copytree(KIT_ROOT / "assignment", root / "stubs" / "assignment")
    # nothing here loops: a limit no honest call reaches on a busy machine
    result = grade([root], GradeOptions(out=out, jobs=2, progress=False, call_timeout=300, import_timeout=300),
                   Console(file=io.StringIO()))
    assert result.ok and {o.student for o in result.outcomes} == {"solutions", "stubs"}
    layout = Layout(out)
    sol = json.loads(layout.results("solutions").read_text())
    failed = [f"{t['name']}: {t['output']}" for t in sol["tests"] if t.get("status") == "failed"]
    assert not failed and sol["score"] == sol["max_score"] - sol["extra_data"]["pending_points"] > 0, failed
    records = json.loads(layout.instructor("stubs").read_text())["records"]
    wrong = [f"{r['id']}: {r['status']}: {r['message']}" for r in records if r["status"] not in ("not_attempted", "pending")]
    assert not wrong and len(records) == len(sol["tests"]), wrong


def test_public_tests_run_before_any_hidden_test() -> None:
    """Hidden inputs reach the submission only after every public test (whose messages students see) ran."""
    files = grade_test_files(MODULES, hidden=True)
    kinds = [Path(f).parent.name for f in files]
    assert kinds == sorted(kinds, key=lambda k: k != "public") and "hidden" in kinds and "public" in kinds


def _cli(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "grader.cli", *args], cwd=KIT_ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_resume_after_kill_9_and_determinism(tmp_path: Path) -> None:
    root, out = tmp_path / "subs", tmp_path / "out"
    root.mkdir()
    os.chmod(tmp_path, 0o755)
    ctx = Ctx(root=root, out=out, marker_dir=tmp_path, port=9)
    names = ["honest_full", "honest_stub", "twin_raises", "twin_wrong", "zipped_release", "corrupt_zip"]
    for case in CASES:
        if case.name in names:
            case.build(ctx)
    # nothing here loops: a limit no honest call reaches on a busy machine
    args = [str(root), "--out", str(out), "-j", "1", "--module", "memory", "--no-progress",
            "--call-timeout", "180", "--import-timeout", "180"]
    before = set(sandbox.descendants(os.getpid()))
    proc = _cli(["grade", *args])
    deadline = time.monotonic() + 300
    while not list(out.glob("students/*/results.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)  # the batch driver dies mid-batch: workers and sandboxes must follow
    proc.wait()
    proc.stdout.close()
    assert _wait_no_leftovers(out, before) == []
    done_first = {p.parent.name for p in out.glob("students/*/results.json")}
    assert 1 <= len(done_first) < len(names)
    for path in out.glob("students/*/results.json"):  # written atomically: complete or absent
        assert validate_results(json.loads(path.read_text())) == []

    resumed = _cli(["grade", *args])
    text, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, text
    assert f"{len(names) - len(done_first)} to grade" in text and f"{len(done_first)} already graded" in text
    first = {p.parent.name: json.loads(p.read_text()) for p in out.glob("students/*/results.json")}
    assert set(first) == set(names)
    assert not list(out.glob("**/.*.tmp"))  # leftovers of the killed run are cleaned up

    again = _cli(["grade", *args, "--force"])
    text, _ = again.communicate(timeout=600)
    assert again.returncode == 0, text
    for name in names:  # the same submission gets the same score, test by test
        second = json.loads(Layout(out).results(name).read_text())
        scores = [(t["name"], t["score"]) for t in second["tests"]]
        assert scores == [(t["name"], t["score"]) for t in first[name]["tests"]], name
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    full = rows["honest_full"]  # every point but the pending GPU ones
    assert float(full["score"]) == float(full["max_score"]) - float(full["pending"]) > 0
    assert rows["honest_stub"]["score"] == "0" and rows["corrupt_zip"]["status"].startswith("rejected: corrupt")
    assert _wait_no_leftovers(out, before) == []


def test_relative_paths_resolve_in_the_callers_directory(tmp_path: Path) -> None:
    """A3: `grader grade subs --out results` run from another folder writes there, never in the kit
    (the trusted workers' working directory); a path that does not exist stops everything."""
    os.chmod(tmp_path, 0o755)
    kit_before = sorted(p.name for p in KIT_ROOT.iterdir())
    args = relative_paths_batch(tmp_path)
    missing = subprocess.run([sys.executable, "-m", "grader.cli", "grade", "subs", "nowhere", "--out", "results2"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "nowhere: no such file or directory" in missing.stdout + missing.stderr
    assert not (tmp_path / "results2").exists()
    proc = subprocess.run([sys.executable, "-m", "grader.cli", *args, "--call-timeout", "60"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(Layout(tmp_path / "results").results("alice").read_text())
    assert doc["score"] == doc["max_score"] - doc["extra_data"]["pending_points"] > 0
    assert (Layout(tmp_path / "results").students_dir / "alice" / "feedback.html").is_file()  # drawn after grading
    assert sorted(p.name for p in KIT_ROOT.iterdir()) == kit_before
    assert not (KIT_ROOT / "results").exists() and not (KIT_ROOT / "subs").exists()


def _consistency_submissions(root: Path) -> dict[str, Path]:
    """A helper module, a missing module, a syntax error, a module in another encoding."""
    from tests.adversarial.cases import redefine, solution_text

    subs = {}
    for name, files in {
        "helper": {"memory.py": redefine(solution_text(), "from .helpers import nbytes\nreturn nbytes(x)"),
                   "helpers.py": "def nbytes(x):\n    return x.untyped_storage().nbytes()\n"},
        "missing": {"views.py": "X = 1\n"},
        "syntax": {"memory.py": solution_text() + "\ndef broken(:\n    pass\n"},
        "cookie": {"memory.py": b"# -*- coding: latin-1 -*-\n" + solution_text().encode()},
    }.items():
        folder = root / name / "assignment"
        folder.mkdir(parents=True)
        for rel, text in files.items():
            (folder / rel).write_bytes(text if isinstance(text, bytes) else text.encode())
        subs[name] = root / name
    return subs


def test_check_check_sandbox_and_grade_agree_test_by_test(tmp_path: Path) -> None:
    """B5: a local pass is a graded pass: `grader check`, `grader check --sandbox` and `grader grade`
    (public tests) give every test the same outcome, whatever the submission holds."""
    os.chmod(tmp_path, 0o755)
    root, out = tmp_path / "subs", tmp_path / "out"
    subs = _consistency_submissions(root)
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(root), "--out", str(out), "--module",
                           "memory", "--public-only", "-j", "2", "--no-progress", "--call-timeout", "60"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    differences = []
    for name, path in subs.items():
        graded = {r["id"]: r["status"] for r in json.loads(Layout(out).instructor(name).read_text())["records"]}
        for flags in ([], ["--sandbox"]):
            report = tmp_path / f"{name}{''.join(flags)}.json"
            check = subprocess.run([sys.executable, "-m", "grader.cli", "check", str(path), "--module", "memory",
                                    "--json", str(report), *flags], capture_output=True, text=True, timeout=600)
            assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
            checked = {r["id"]: r["status"] for r in json.loads(report.read_text())["tests"]}
            if checked != graded:
                differences.append(f"{name}: check {' '.join(flags)} {sorted(set(checked.items()) ^ set(graded.items()))}")
    assert not differences, "\n".join(differences)
    outcomes = {name: {r["status"] for r in json.loads(Layout(out).instructor(name).read_text())["records"]}
                - {"pending"} for name in subs}  # (the GPU tests are pending here, whatever the code)
    assert outcomes["helper"] == {"passed"} and outcomes["missing"] == {"not_attempted"}
    assert outcomes["syntax"] == {"failed"} and outcomes["cookie"] == {"not_attempted"}
