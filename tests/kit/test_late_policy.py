"""The late policy (`grader.course.late`, `late_batch`, `gittime`): the rules, the inputs, results.json,
grades.csv, merge, the gradebook, the report, and one real `grader grade` batch.

Policy under test (docs/INSTRUCTORS.md, "Late policy"): every started day (or hour) after deadline + grace
costs the rate, up to the cap, as a share of the points earned; an extension replaces the
deadline; no known time means no penalty and a note; bad input stops the command (exit 2)
before anything is written.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from grader import KIT_ROOT
from grader.intake.discover import Source
from grader.cli import main as cli
from grader.intake.gittime import GitTimeError, commit_time
from grader.course.late import (LateInputError, LatePolicy, apply, assess, csv_cells, parse_duration, parse_rate,
                               parse_time, policy_from_args, read_extensions, read_times)
from grader.results.late_batch import apply_policy
from grader.results.grades import CSV_FIELDS
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results, validate_results

pytestmark = pytest.mark.kit

UTC = timezone.utc
DEADLINE = datetime(2026, 12, 1, 23, 59, tzinfo=UTC)


def _policy(**kw) -> LatePolicy:
    return LatePolicy(**{"deadline": DEADLINE, "rate": 10.0, "unit": "day", "cap": 50.0,
                         "grace": timedelta(minutes=15), **kw})


def _records(gpu_status: str = "passed") -> list[dict]:
    return [{"id": "tests/public/test_memory.py::test_a", "module": "memory", "name": "test_a", "points": 6,
             "hidden": False, "gpu": False, "checked": "a", "status": "passed", "message": ""},
            {"id": "tests/hidden/test_views.py::test_b", "module": "views", "name": "test_b", "points": 4,
             "hidden": True, "gpu": False, "checked": "b", "status": "passed", "message": ""},
            {"id": "tests/public/test_flops.py::test_mfu", "module": "flops", "name": "test_mfu", "points": 10,
             "hidden": False, "gpu": True, "checked": "mfu", "status": gpu_status, "message": ""}]


def _doc(records=None, student="alice", sha="a" * 64) -> dict:
    return build_results(records or _records(), student=student, kit_version="9.9", sandbox={"launcher": "rlimits"},
                         submission={"sha256": sha})


# -- the rule ---------------------------------------------------------------------------------

@pytest.mark.parametrize("after, status, units, percent", [
    (timedelta(0), "on_time", 0, 0),                                 # at the deadline
    (timedelta(minutes=15), "on_time", 0, 0),                        # within grace (its last second)
    (timedelta(minutes=15, seconds=1), "late", 1, 10),               # 1 s after grace: a started day
    (timedelta(days=1, minutes=15), "late", 1, 10),                  # a whole day after grace
    (timedelta(days=1, minutes=15, seconds=1), "late", 2, 20),
    (timedelta(days=30), "late", 30, 50),                            # capped
    (-timedelta(days=3), "on_time", 0, 0),                           # early
])
def test_rule(after, status, units, percent):
    got = assess(_policy(), "alice", DEADLINE + after, "times.csv")
    assert (got["status"], got["units_late"], got["percent"]) == (status, units, percent)


def test_hours_extension_and_unknown():
    hourly = _policy(rate=2.0, unit="hour", grace=timedelta(0), cap=100.0)
    assert assess(hourly, "a", DEADLINE + timedelta(hours=3, seconds=1), "git")["percent"] == 8
    ext = _policy(extensions={"bob": DEADLINE + timedelta(days=2)})
    assert assess(ext, "bob", DEADLINE + timedelta(days=2), "times.csv")["status"] == "on_time"
    late = assess(ext, "bob", DEADLINE + timedelta(days=3), "times.csv")  # late past the extension: from it
    assert (late["units_late"], late["extension"], late["deadline"]) == (1, True, "2026-12-03T23:59:00+00:00")
    unknown = assess(ext, "carol", None, "", "not in times.csv")
    assert (unknown["status"], unknown["percent"], unknown["note"]) == ("unknown", 0, "not in times.csv")


@given(st.integers(-10**7, 10**8), st.integers(0, 100), st.sampled_from(["day", "hour"]),
       st.floats(0, 100), st.integers(0, 200))
def test_penalty_properties(seconds, rate, unit, cap, raw):
    policy = _policy(rate=float(rate), unit=unit, cap=cap)
    when = DEADLINE + timedelta(seconds=seconds)
    a, b = assess(policy, "s", when, "x"), assess(policy, "s", when + timedelta(hours=5), "x")
    assert 0 <= a["percent"] <= min(cap, 100) + 1e-9 and a["percent"] <= b["percent"]  # capped, monotone
    assert (a["status"] == "on_time") == (when <= DEADLINE + policy.grace)
    records = [{"id": f"t{i}", "module": "memory", "name": f"t{i}", "points": 1, "hidden": False, "gpu": False,
                "status": "passed"} for i in range(raw)]
    doc = apply(build_results(records or _records(), student="s", kit_version="0", sandbox={}, submission={}), a)
    late = doc["extra_data"]["late"]
    assert validate_results(doc) == [] and 0 <= doc["score"] <= late["raw_score"]
    assert late["raw_score"] - late["penalty_points"] == pytest.approx(late["final_score"]) == doc["score"]
    assert apply(json.loads(json.dumps(doc)), a) == doc  # idempotent


# -- the inputs --------------------------------------------------------------------------------

def test_parsers():
    assert parse_rate("10%/day") == (10.0, "day") and parse_rate("2.5%/hour") == (2.5, "hour")
    assert parse_duration("1d12h") == timedelta(hours=36) and parse_duration("15m") == timedelta(minutes=15)
    assert parse_time("2026-12-01T23:59:00Z", "x") == DEADLINE
    for bad, fn in (("10%/fortnight", parse_rate), ("10/day", parse_rate), ("150%/day", parse_rate),
                    ("15 minutes", lambda t: parse_duration(t, "--grace")),
                    ("2026-12-01T23:59:00", lambda t: parse_time(t, "--deadline")),
                    ("yesterday", lambda t: parse_time(t, "--deadline"))):
        with pytest.raises(LateInputError):
            fn(bad)
    with pytest.raises(LateInputError, match="no time zone"):
        parse_time("2026-12-01 23:59", "--deadline")


@pytest.mark.parametrize("text, match", [
    ("student,submitted_at\nalice,2026-12-01T10:00:00\n", "line 2: .* no time zone"),
    ("student,submitted_at\nalice,2026-12-01T10:00Z\nalice,2026-12-02T10:00Z\n", "line 3: .*alice.* twice"),
    ("student,submitted_at\nalice\n", "line 2: expected at least 2 columns"),
    ("student,submitted_at\n,2026-12-01T10:00Z\n", "line 2: no student id"),
    ("name,when\nalice,2026-12-01T10:00Z\n", "header naming the columns student and submitted_at"),
    ("student,submitted_at\nbob,soon\n", "line 2: 'soon' is not an ISO 8601 time"),
])
def test_bad_times_csv(tmp_path, text, match):
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(LateInputError, match=match):
        read_times(path)


def test_csv_files(tmp_path):
    times = tmp_path / "times.csv"
    times.write_text("\ufeffStudent,Submitted_At,extra\nalice,2026-12-01T10:00:00+01:00,x\nbob,,y\n\n")
    assert read_times(times) == {"alice": datetime(2026, 12, 1, 9, tzinfo=UTC), "bob": None}
    ext = tmp_path / "ext.csv"
    ext.write_text("student,extension\nalice,2d\nbob,2026-12-05T12:00Z\n")
    assert read_extensions(ext, DEADLINE) == {"alice": DEADLINE + timedelta(days=2),
                                              "bob": datetime(2026, 12, 5, 12, tzinfo=UTC)}
    ext.write_text("student,extension\nalice,2026-11-01T00:00Z\n")
    with pytest.raises(LateInputError, match="ends before the deadline"):
        read_extensions(ext, DEADLINE)
    with pytest.raises(LateInputError, match="no such file"):
        read_times(tmp_path / "nope.csv")
    with pytest.raises(LateInputError, match="need --deadline"):
        policy_from_args(None, "10%/day")
    with pytest.raises(LateInputError, match="needs --late-penalty"):
        policy_from_args("2026-12-01T23:59Z", None)


@pytest.mark.parametrize("args, match", [
    (["--deadline", "2026-12-01T23:59", "--late-penalty", "10%/day"], "no time zone"),
    (["--deadline", "2026-12-01T23:59Z", "--late-penalty", "10%/fortnight"], "not a rate"),
    (["--deadline", "2026-12-01T23:59Z", "--late-penalty", "10%/day", "--submitted-at", "missing.csv"], "no such file"),
    (["--deadline", "2026-12-01T23:59Z", "--late-penalty", "10%/day", "--submitted-at", "t.csv"], "no time zone"),
    (["--deadline", "2026-12-01T23:59Z", "--late-penalty", "10%/day", "--late-cap", "120%"], "between 0% and 100%"),
    (["--late-penalty", "10%/day"], "need --deadline"),
])
def test_cli_rejects_bad_input_before_grading(tmp_path, monkeypatch, capsys, args, match):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("student,submitted_at\nalice,2026-12-01T10:00\n")
    (tmp_path / "subs" / "alice" / "assignment").mkdir(parents=True)
    assert cli(["grade", "subs", "--out", "out", *args]) == 2
    assert not (tmp_path / "out").exists()
    out = capsys.readouterr().out.replace("\n", " ")
    assert "grader grade:" in out and __import__("re").search(match, out), out


# -- a batch's files: apply_policy, merge, gradebook, report ----------------------------------------

def _git(repo: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "s",
           "GIT_AUTHOR_EMAIL": "s@x", "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@x",
           **({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {})}
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, timeout=60)


def _repo(folder: Path, date: str) -> Path:
    (folder / "assignment").mkdir(parents=True)
    shutil.copy2(KIT_ROOT / "solutions" / "memory.py", folder / "assignment" / "memory.py")
    _git(folder, "init", "-q")
    _git(folder, "add", "assignment")
    _git(folder, "commit", "-qm", "work", date=date)
    (folder / "notes.txt").write_text("later, not in assignment/\n")
    _git(folder, "add", "notes.txt")
    _git(folder, "commit", "-qm", "notes", date="2027-01-01T00:00:00Z")
    return folder


def test_git_time_is_the_last_commit_touching_the_graded_files_and_never_runs_repo_config(tmp_path):
    repo = _repo(tmp_path / "carol", "2026-12-03T10:00:00+01:00")
    marker = tmp_path / "PWNED"
    for key, value in (("core.fsmonitor", f"touch {marker}"), ("core.pager", f"touch {marker}"),
                       ("log.showSignature", "true"), ("gpg.program", f"touch {marker}"),
                       ("core.hooksPath", str(tmp_path))):
        _git(repo, "config", key, value)
    assert commit_time(repo, ["assignment/memory.py"]) == datetime(2026, 12, 3, 9, tzinfo=UTC)
    assert not marker.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")
    with pytest.raises(GitTimeError, match="could not list"):
        commit_time(empty, ["assignment/memory.py"])
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    with pytest.raises(GitTimeError, match="not a folder"):
        commit_time(tmp_path / "link", ["assignment/memory.py"])


def test_git_time_dates_the_graded_files_only_as_committed(tmp_path):
    """The time of a commit says nothing about files changed after it, or moved where no commit
    touched them: such a submission has no time (a note), never an early one."""
    repo = _repo(tmp_path / "dan", "2026-11-20T10:00:00Z")
    (repo / "memory.py").write_bytes((repo / "assignment" / "memory.py").read_bytes())  # graded from the top level
    with pytest.raises(GitTimeError, match="memory.py is not in the last commit"):
        commit_time(repo, ["memory.py"])
    with (repo / "assignment" / "memory.py").open("a") as f:
        f.write("# changed after the last commit\n")
    with pytest.raises(GitTimeError, match="differs from the last commit"):
        commit_time(repo, ["assignment/memory.py"])


def test_git_time_refuses_what_git_never_writes(tmp_path):
    repo = _repo(tmp_path / "eve", "2026-11-20T10:00:00Z")
    _git(repo, "config", "extensions.objectformat", "sha1\n[include]\n\tpath = /etc/passwd")
    with pytest.raises(GitTimeError, match="object format"):
        commit_time(repo, ["assignment/memory.py"])
    repo = _repo(tmp_path / "fay", "2026-11-20T10:00:00Z")
    with (repo / ".git" / "refs" / "heads" / "huge").open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB that take no room in the upload
    with pytest.raises(GitTimeError, match="not a ref git wrote"):
        commit_time(repo, ["assignment/memory.py"])


def _clone(src: Path, dest: Path) -> Path:
    _git(src.parent, "clone", "-q", str(src), str(dest))
    return dest


def test_git_time_takes_any_folder_name_byte_for_byte(tmp_path):
    """Paths go to git as literal bytes and come back NUL-separated: a non-ASCII name (which
    `git ls-tree` quotes without -z), spaces, a name that is pathspec magic or a glob."""
    for name in ("devoir é", "naïve\tdir", ":(exclude)x", "*", "sub[1]", "a\\b", "\u202eevil"):
        repo = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
        (repo / name / "assignment").mkdir(parents=True)
        (repo / name / "assignment" / "memory.py").write_text("x = 1\n")
        (repo / "assignment").mkdir()  # what a glob or an exclusion would match instead
        (repo / "assignment" / "memory.py").write_text("x = 2\n")
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "late", date="2026-12-06T10:00:00Z")
        _git(repo, "commit", "-qm", "other", "--allow-empty", date="2027-01-01T00:00:00Z")
        assert commit_time(repo, [f"{name}/assignment/memory.py"]) == datetime(2026, 12, 6, 10, tzinfo=UTC), name


def test_git_time_accepts_git_own_checkouts_and_never_runs_a_filter(tmp_path):
    """The graded bytes may be any checkout git itself writes of HEAD's blob (CRLF lines from
    ``eol=crlf``, an expanded ``$Id$``, CRLF committed as such), whatever the student's attributes
    say; a filter driver the repository names is never run."""
    marker = tmp_path / "PWNED"
    text = b"# $Id$\nx = 1\n\ny = 'a\\n'\n"
    cases = {"crlf_ident": (b"* text eol=crlf ident\n*.py filter=evil diff=evil\n", text),
             "autocrlf": (b"", text), "crlf_committed": (b"* -text\n", text.replace(b"\n", b"\r\n")),
             "mixed_committed": (b"* text eol=crlf\n", b"a = 1\r\nb = 2\n")}
    for name, (attributes, data) in cases.items():
        work = tmp_path / "work" / name
        (work / "assignment").mkdir(parents=True)
        _git(work, "init", "-q")
        _git(work, "config", "core.autocrlf", "true" if name == "autocrlf" else "false")
        (work / "assignment" / "memory.py").write_bytes(data)
        _git(work, "add", "-A")  # the blob holds these bytes (the attributes below came later)
        (work / ".gitattributes").write_bytes(attributes)
        _git(work, "add", "-A")
        _git(work, "commit", "-qm", "late", date="2026-12-06T10:00:00Z")
        if name == "autocrlf":  # a Windows student's checkout: CRLF on disk, LF in the repository
            (work / "assignment" / "memory.py").write_bytes(data.replace(b"\n", b"\r\n"))
        repo = work if name == "autocrlf" else _clone(work, tmp_path / name)
        for key in ("clean", "smudge", "process", "textconv", "command"):
            _git(repo, "config", f"filter.evil.{key}", f"touch {marker}; cat")
            _git(repo, "config", f"diff.evil.{key}", f"touch {marker}; cat")
        on_disk = (repo / "assignment" / "memory.py").read_bytes()
        assert on_disk != data or name == "crlf_committed", name  # the checkout converted it
        assert commit_time(repo, ["assignment/memory.py"]) == datetime(2026, 12, 6, 10, tzinfo=UTC), name
    assert not marker.exists()


def test_git_time_refuses_bytes_no_checkout_writes(tmp_path):
    """Equal "once line endings are normalised" is not enough: which lines end in CRLF is room for
    a payload a file can read from its own bytes.  Such a file has no time (a note), never an early one."""
    repo = _repo(tmp_path / "hal", "2026-11-20T10:00:00Z")
    path = repo / "assignment" / "memory.py"
    committed = path.read_bytes()
    path.write_bytes(committed.replace(b"\n", b"\r\n", 3))  # some lines CRLF, the rest LF
    with pytest.raises(GitTimeError, match="differs from the last commit"):
        commit_time(repo, ["assignment/memory.py"])
    path.write_bytes(committed.replace(b"\n", b"\r\n").replace(b"\r\n", b"\r\r\n", 1))
    with pytest.raises(GitTimeError, match="differs from the last commit"):
        commit_time(repo, ["assignment/memory.py"])
    path.write_bytes(b"# $Id: " + b"0" * 40 + b" $\n" + committed)  # an Id that is not the blob's
    with pytest.raises(GitTimeError, match="differs from the last commit"):
        commit_time(repo, ["assignment/memory.py"])


def test_apply_policy_notes_missing_times_and_removes_stale_penalties(tmp_path):
    layout = Layout(tmp_path / "out")
    for s in ("alice", "bob", "dave"):
        write_json(layout.results(s), _doc(student=s))
    (tmp_path / "dave").mkdir()
    (tmp_path / "dave" / ".git").mkdir()  # a broken repository: a note, never a guess
    sources = [Source(s, tmp_path / s) for s in ("alice", "bob", "dave")]
    policy = _policy(times={"alice": DEADLINE + timedelta(hours=1), "bob": None, "zed": DEADLINE})
    console = Console(file=io.StringIO(), width=300)
    assert apply_policy(policy, sources, layout, console) == {"late": 1, "unknown": 2}
    docs = {s: json.loads(layout.results(s).read_text()) for s in ("alice", "bob", "dave")}
    assert (docs["alice"]["score"], docs["alice"]["extra_data"]["late"]["penalty_points"]) == (18, 2)
    assert docs["bob"]["score"] == 20 and "time is empty in" in docs["bob"]["extra_data"]["late"]["note"]
    assert docs["dave"]["extra_data"]["late"]["note"].startswith("git: ")
    assert all("Late policy: " in d["output"] and validate_results(d) == [] for d in docs.values())
    assert "not in this batch (ignored): zed" in console.file.getvalue()
    refused = Console(file=io.StringIO(), width=300)  # zed's two submissions collided: refused, not absent
    apply_policy(policy, sources, layout, refused, refused=[Source("zed", tmp_path / "zed.zip")])
    said = refused.file.getvalue()
    assert "not applied to refused submissions (colliding ids, not graded): zed" in said
    assert "not in this batch" not in said
    assert apply_policy(None, sources, layout, console) == {"removed": 3}  # results follow the command line
    assert json.loads(layout.results("alice").read_text())["score"] == 20


def test_merge_applies_the_late_percentage_to_the_merged_raw_score(tmp_path):
    from grader.results.merge import merge_runs, write_merged

    cpu, gpu = Layout(tmp_path / "cpu"), Layout(tmp_path / "gpu")
    doc = apply(_doc(_records("pending")), assess(_policy(), "alice", DEADLINE + timedelta(days=2), "times.csv"))
    assert (doc["score"], doc["extra_data"]["late"]["raw_score"]) == (8, 10)  # 20% of 10 earned on the CPU
    write_json(cpu.results("alice"), doc)
    write_json(cpu.instructor("alice"), {"student": "alice", "records": _records("pending")})
    gpu_records = [r for r in _records("passed") if r["gpu"]]
    write_json(gpu.results("alice"), _doc(gpu_records))
    write_json(gpu.instructor("alice"), {"student": "alice", "records": gpu_records})
    results, instructor, merged = merge_runs(cpu.out, gpu.out)
    late = results["alice"]["extra_data"]["late"]
    assert (late["raw_score"], late["penalty_points"], results["alice"]["score"]) == (20, 4, 16)
    assert validate_results(results["alice"]) == []
    write_merged(tmp_path / "final", results, instructor, merged)
    row = next(csv.DictReader((tmp_path / "final" / "grades.csv").open()))
    assert (row["score"], row["raw_score"], row["late_penalty"]) == ("16", "20", "4")
    assert row["late"].startswith("late 2 day(s): -20%")


def test_gradebook_carries_raw_penalty_and_final(tmp_path):
    from grader.integrations.gradebook import late_from_results, records_from_results, write_gradebook

    layout = Layout(tmp_path / "out")
    records = _records("passed")
    late = assess(_policy(extensions={"alice": DEADLINE + timedelta(days=1)}), "alice",
                  DEADLINE + timedelta(days=2), "times.csv")
    write_json(layout.results("alice"), apply(_doc(records), late))
    write_json(layout.instructor("alice"), {"student": "alice", "records": records})
    db = f"sqlite:///{tmp_path / 'gb.db'}"
    write_gradebook(db, records_from_results(layout.out), late=late_from_results(layout.out))
    out = tmp_path / "export.csv"
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    with Gradebook(db) as gb:  # what `nbgrader export` runs (in-process: the command takes 30 s to start)
        CsvExportPlugin(to=str(out)).export(gb)
        sub = gb.find_submission("resource_accounting", "alice")
        assert sub.extension == timedelta(days=1) and sub.timestamp == datetime(2026, 12, 3, 23, 59)
    row = next(csv.DictReader(out.open()))
    assert (float(row["raw_score"]), float(row["late_submission_penalty"]), float(row["score"])) == (20, 2, 18)


# -- one real batch -------------------------------------------------------------------------------

def test_grade_end_to_end_with_times_extension_and_a_git_submission(tmp_path):
    os.chmod(tmp_path, 0o755)
    subs = tmp_path / "subs"
    for name in ("alice", "bob"):
        (subs / name / "assignment").mkdir(parents=True)
        shutil.copy2(KIT_ROOT / "solutions" / "memory.py", subs / name / "assignment" / "memory.py")
    _repo(subs / "carol", "2026-12-03T10:00:00Z")  # 2 days after the deadline; her extension is 1 day
    (tmp_path / "times.csv").write_text("student,submitted_at\nalice,2026-12-02T00:10:00+00:00\n"
                                        "bob,2026-12-03T12:00:00+01:00\n")
    (tmp_path / "ext.csv").write_text("student,extension\ncarol,1d\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", "subs", "--out", "out", "--module", "memory",
                           "--public-only", "--no-progress", "-j", "2", "--call-timeout", "60",
                           "--deadline", "2026-12-01T23:59:00Z", "--late-penalty", "10%/day", "--late-cap", "50%",
                           "--grace", "15m", "--extensions", "ext.csv", "--submitted-at", "times.csv"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "commit dates are set by whoever commits" in proc.stdout.replace("\n", " ")
    docs = {s: json.loads(Layout(out).results(s).read_text()) for s in ("alice", "bob", "carol")}
    raw = docs["alice"]["extra_data"]["late"]["raw_score"]
    assert raw > 0 and all(validate_results(d) == [] for d in docs.values())
    expect = {"alice": ("on_time", 0, "times.csv"), "bob": ("late", 20, "times.csv"), "carol": ("late", 10, "git")}
    for s, (status, percent, source) in expect.items():
        late = docs[s]["extra_data"]["late"]
        assert (late["status"], late["percent"], late["source"], late["raw_score"]) == (status, percent, source, raw)
        assert docs[s]["score"] == late["final_score"] == round(raw * (1 - percent / 100), 2)
    assert docs["carol"]["extra_data"]["late"]["warning"] and docs["carol"]["extra_data"]["late"]["extension"]
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert tuple(next(iter(rows.values())).keys()) == CSV_FIELDS
    assert rows["bob"]["raw_score"] == f"{raw:g}" and float(rows["bob"]["late_penalty"]) == round(raw * 0.2, 2)
    assert rows["alice"]["late"] == "on time" and rows["carol"]["late"].startswith("late 1 day(s): -10%")
    assert cli(["report", str(out), "--out", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    assert 'data-late="bob"' in page and 'data-late="carol"' in page and 'data-late="alice"' not in page


def test_no_time_known_is_no_penalty_or_the_cap_as_asked():
    """A submission whose time cannot be established is never silently on time: a note, and the
    penalty the instructor chose for that case (none by default; the cap with --if-no-time cap)."""
    for choice, percent in (("no-penalty", 0.0), ("cap", 50.0)):
        late = assess(_policy(if_no_time=choice), "gus", None, "", note="git: uncommitted changes")
        assert (late["status"], late["percent"]) == ("unknown", percent)
        assert late["note"].startswith("git: uncommitted changes")
        doc = apply(_doc(), late)  # what grades.csv and the student's summary say is what was applied
        said = "-50% (--if-no-time cap)" if percent else "no penalty"
        assert csv_cells(doc)["late"].startswith(f"no time known: {said} (git: uncommitted changes")
        line = next(x for x in doc["output"].splitlines() if x.startswith("Late policy: "))
        assert ("the cap" in line and "-10" in line) if percent else "no late penalty applied" in line
    with pytest.raises(LateInputError, match="need --deadline"):
        policy_from_args(None, None, if_no_time="cap")


def test_adversarial_late_git_submissions(tmp_path):
    """Issue 23, root cause 5 (`tests/adversarial/late.py`): git submissions five days late whose
    check was easy to break (a non-ASCII folder, ``eol=crlf`` and ``ident`` attributes, a filter
    driver, CRLF committed as such, a folder named like pathspec magic) get their honest twin's
    penalty, from git; no filter runs; and a submission whose time truly is unknown is listed,
    last, with why."""
    from grader.intake.discover import student_id
    from tests.adversarial import late as cases

    os.chmod(tmp_path, 0o755)
    marker = tmp_path / "PWNED"
    built = cases.build(tmp_path / "subs", tmp_path / "scratch", marker)
    changed = _repo(tmp_path / "subs" / "changed_after", "2026-11-20T10:00:00Z")  # on time, then edited
    with (changed / "assignment" / "memory.py").open("a") as f:
        f.write("# edited after the last commit\n")
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", "subs", "--out", "out", "--module", "memory",
                           "--public-only", "--no-progress", "-j", "2", "--call-timeout", "60",
                           "--deadline", cases.DEADLINE, "--late-penalty", "10%/day", "--late-cap", "50%",
                           "--grace", "15m"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "1000", "NO_COLOR": "1", "TERM": "dumb"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not marker.exists()
    layout = Layout(tmp_path / "out")
    docs = {name: json.loads(layout.results(student_id(path)).read_text()) for name, path in built.items()}
    twin = docs[cases.TWIN]
    assert 0 < twin["score"] == twin["extra_data"]["late"]["raw_score"] / 2
    for name, doc in docs.items():
        late = doc["extra_data"]["late"]
        assert (late["status"], late["source"], late["units_late"], late["percent"]) == ("late", "git", 5, 50), name
        assert doc["score"] == twin["score"], name
    out = proc.stdout + proc.stderr
    tail = out[out.index("NO SUBMISSION TIME for 1 submission(s)"):].splitlines()
    assert tail[1].strip().startswith("changed_after: no penalty: git: assignment/memory.py differs from the last "
                                      "commit"), tail
    assert "late_non_ascii_crlf" not in "\n".join(tail) and len(tail) == 2
    assert cli(["report", str(tmp_path / "out"), "--out", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    section = page[page.index('id="late-section"'):]  # the unknown times come first in the late section
    assert section.index('data-unknown-time="changed_after"') < section.index('id="late"')
    assert page.count("data-unknown-time=") == 1 and 'data-late="late_plain"' in page
