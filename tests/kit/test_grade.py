"""`grader grade` end to end: the adversarial suite, the Gradescope format, resume after kill -9.

The adversarial suite (tests/adversarial/cases.py) is graded as one batch, two jobs, with the
`memory` module's tests only and short timeouts.  Every case must get exactly its expected
score; the batch must finish; no process may be left behind; no file may appear outside the
sandbox; the network server must see no connection; every results.json must conform to the
Gradescope format (checked here with a JSON Schema written from the specification, not with
the grader's own validator).
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
from grader.grade import GradeOptions, grade
from grader.grade import test_files as grade_test_files
from grader.results import CSV_FIELDS, validate_results
from tests.adversarial.cases import CASES, Ctx, Full, Rejected, Twin, Zero, stub_text

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

TIMEOUT = 5.0


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
    for path in out.glob("*/instructor.json"):
        uid = json.loads(path.read_text()).get("sandbox", {}).get("uid")
        if uid is not None:
            uids.add(int(uid))
    return uids


def _leftover_processes(out: Path, before: set[int]) -> list[str]:
    left = [f"pid {p} (descendant)" for p in sandbox.descendants(os.getpid()) if p not in before]
    for uid in _uids_in_use(out):
        left += [f"pid {p} (sandbox uid {uid})" for p in sandbox.processes_of_uid(uid)]
    return left


def _wait_no_leftovers(out: Path, before: set[int], seconds: float = 10) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        left = _leftover_processes(out, before)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


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
    cases = [c for c in CASES if isolated or not c.needs_isolation]
    for case in cases:
        case.build(ctx)
    before = set(sandbox.descendants(os.getpid()))
    console = Console(file=io.StringIO(), width=200)
    t0 = time.monotonic()
    result = grade([root], GradeOptions(out=out, jobs=2, modules=("memory",), call_timeout=TIMEOUT,
                                        import_timeout=TIMEOUT, memory_mb=2048, progress=False), console)
    elapsed = time.monotonic() - t0

    problems: list[str] = []
    outcomes = {o.student: o for o in result.outcomes}
    docs: dict[str, dict] = {}
    for case in cases:
        o = outcomes.get(case.name)
        if o is None or o.status == "error":
            problems.append(f"{case.name}: not graded ({o.message if o else 'missing'})")
            continue
        doc = json.loads((out / case.name / "results.json").read_text())
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
        if status != "graded":
            problems.append(f"{case.name}: expected graded, got {status}: {doc['extra_data']['reason']}")
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
            outputs = " ".join(t["output"] for t in doc["tests"] if t.get("status") == "failed")
            if case.message not in outputs:
                problems.append(f"{case.name}: feedback does not say {case.message!r}: {outputs[:300]}")
        log = out / case.name / "sandbox.log"
        if log.exists() and log.stat().st_size > 80_000:
            problems.append(f"{case.name}: sandbox.log is {log.stat().st_size} bytes (output not capped)")

    strays = [str(p) for p in _stray_paths(ctx) if p.exists()] + [str(p) for p in markers.iterdir()]
    if (root / "honest_stub" / "assignment" / "memory.py").read_text() != stub_text():
        strays.append("another submission's file was modified")
    problems += [f"a file appeared outside the sandbox: {p}" for p in strays]
    problems += [f"the network server saw: {s}" for s in listener.seen]
    problems += [f"left behind: {p}" for p in _wait_no_leftovers(out, before)]
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    if tuple(rows[0].keys()) != CSV_FIELDS or sorted(r["student"] for r in rows) != sorted(c.name for c in cases):
        problems.append("grades.csv does not list every case with the expected columns")
    for r in rows:
        want = "rejected" if isinstance(next(c for c in cases if c.name == r["student"]).expect, Rejected) else "graded"
        if not r["status"].startswith(want):
            problems.append(f"grades.csv: {r['student']} has status {r['status']!r}, expected {want}")
    hidden = [t for d in docs.values() for t in d["tests"] if "hidden" in t["tags"]]
    if not hidden or any(t["visibility"] != "after_published" or "expected" in t["output"] for t in hidden):
        problems.append("hidden tests must be after_published and never show their details")
    assert not problems, f"{len(problems)} problems (batch took {elapsed:.0f} s):\n" + "\n".join(problems)


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
    result = grade([root], GradeOptions(out=out, jobs=2, progress=False), Console(file=io.StringIO()))
    assert result.ok and {o.student for o in result.outcomes} == {"solutions", "stubs"}
    sol = json.loads((out / "solutions" / "results.json").read_text())
    failed = [f"{t['name']}: {t['output']}" for t in sol["tests"] if t.get("status") == "failed"]
    assert not failed and sol["score"] == sol["max_score"] - sol["extra_data"]["pending_points"] > 0, failed
    records = json.loads((out / "stubs" / "instructor.json").read_text())["records"]
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
    args = [str(root), "--out", str(out), "-j", "1", "--module", "memory", "--no-progress",
            "--call-timeout", "20", "--import-timeout", "20"]
    before = set(sandbox.descendants(os.getpid()))
    proc = _cli(["grade", *args])
    deadline = time.monotonic() + 300
    while not list(out.glob("*/results.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)  # the batch driver dies mid-batch: workers and sandboxes must follow
    proc.wait()
    proc.stdout.close()
    assert _wait_no_leftovers(out, before) == []
    done_first = {p.parent.name for p in out.glob("*/results.json")}
    assert 1 <= len(done_first) < len(names)
    for path in out.glob("*/results.json"):  # written atomically: complete or absent
        assert validate_results(json.loads(path.read_text())) == []

    resumed = _cli(["grade", *args])
    text, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, text
    assert f"{len(names) - len(done_first)} to grade" in text and f"{len(done_first)} already graded" in text
    first = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}
    assert set(first) == set(names)
    assert not list(out.glob("*/.*.tmp"))  # leftovers of the killed run are cleaned up

    again = _cli(["grade", *args, "--force"])
    text, _ = again.communicate(timeout=600)
    assert again.returncode == 0, text
    for name in names:  # the same submission gets the same score, test by test
        second = json.loads((out / name / "results.json").read_text())
        scores = [(t["name"], t["score"]) for t in second["tests"]]
        assert scores == [(t["name"], t["score"]) for t in first[name]["tests"]], name
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert rows["honest_full"]["score"] == rows["honest_full"]["max_score"] != "0"
    assert rows["honest_stub"]["score"] == "0" and rows["corrupt_zip"]["status"].startswith("rejected: corrupt")
    assert _wait_no_leftovers(out, before) == []
