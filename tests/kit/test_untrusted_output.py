"""Nothing a submission controls reaches a terminal raw (`grader.untrusted`, issue 23 root cause 6).

One small batch whose folder names, archive member names, exception messages, git's words and a
roster's names hold terminal escapes (a screen clear, a window title, a bell), a right-to-left
override, and 10,000-character strings, run through every instructor command that prints (and
`grader check`, which a student's CI log shows).  With colour off (``NO_COLOR``, ``TERM=dumb``,
and a pipe, so rich emits no styling at all), any control or bidi character in stdout/stderr is
a leak, and so is any run of a long string past `grader.untrusted.LIMIT`.  The instructor-only
logs (worker logs, sandbox.log) are checked for raw escapes too.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path

import pytest

from grader import KIT_ROOT
from grader.intake.discover import student_id
from grader.untrusted import LIMIT, printable, shown, shown_markup, spreadsheet_cell

pytestmark = pytest.mark.kit

ESC = "\x1b]0;PWNED\x07\x1b[2J\x1b[31m\u202e\u2066"  # title, bell, clear screen, red, RLO, LRI
LONG = "Ж" * 10_000  # a filler no message of the grader uses
ENV = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100000"}


def _leaks(text: str) -> list[str]:
    """Raw control/bidi characters (newline and tab aside) and runs of LONG past the cap."""
    bad = sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\t"
                  and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})
    runs = max((len(m) for m in re.findall("Ж+", text)), default=0)
    return bad + ([f"a run of {runs} characters of one student string (cap {LIMIT})"] if runs > LIMIT else [])


def test_shown_escapes_and_caps():
    assert shown("plain") == "plain" and printable("a\x1bb\u202e") == "a\\x1bb\\u202e"
    assert shown("a\nb\tc") == "a\\x0ab\\x09c" and shown("a\nb\tc", newlines=True) == "a\nb\tc"
    long = shown(ESC + LONG)
    assert len(long) == LIMIT and long.endswith("…") and not _leaks(long.replace("Ж", "x"))
    assert shown("ab\x1b", 5) == "ab…"  # never half an escape
    assert shown(12) == "12" and shown(ValueError("x\x07")) == "x\\x07"
    assert shown_markup("[red]x[/red]") == "\\[red]x\\[/red]"
    assert spreadsheet_cell("=1+1") == "'=1+1" and len(spreadsheet_cell(LONG * 4)) <= 32_001


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "s",
           "GIT_AUTHOR_EMAIL": "s@x", "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@x",
           "GIT_COMMITTER_DATE": "2026-12-06T10:00:00Z", "GIT_AUTHOR_DATE": "2026-12-06T10:00:00Z"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, timeout=60)


def _batch(subs: Path) -> dict[str, str]:
    """The hostile batch; returns name -> student id of the ones the test looks up."""
    solution = (KIT_ROOT / "solutions" / "memory.py").read_text()
    # 1. a git repository whose module folder's name is escapes, edited after its commit: no time,
    #    and the late-policy note quotes the folder
    repo = subs / "git_escapes"
    (repo / ESC / "assignment").mkdir(parents=True)
    (repo / ESC / "assignment" / "memory.py").write_text(solution)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "work")
    (repo / ESC / "assignment" / "memory.py").write_text(solution + "# later\n")
    # 2. a repository whose .git/shallow is escapes and a long line: git quotes it when it fails
    repo = subs / "git_shallow"
    (repo / "assignment").mkdir(parents=True)
    (repo / "assignment" / "memory.py").write_text(solution)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "work")
    (repo / ".git" / "shallow").write_text(ESC + LONG + "\n")
    # 3. an archive whose member's name is escapes and 10,000 characters, unreadable (bad CRC):
    #    the rejection quotes the name
    data = solution.encode()
    buf = subs / "zip_long_name.zip"
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{ESC}{LONG}/assignment/memory.py", data)
    raw = bytearray(buf.read_bytes())
    at = raw.index(data[:64])
    raw[at] ^= 0x01
    buf.write_bytes(bytes(raw))
    # 4. two submissions with one id (both refused; their paths are printed): a folder and an archive
    (subs / f"{ESC}twin" / "assignment").mkdir(parents=True)
    (subs / f"{ESC}twin" / "assignment" / "memory.py").write_text(solution)
    shutil.make_archive(str(subs / f"{ESC}twin"), "zip", subs / f"{ESC}twin")
    # 5. a function that raises an exception whose message is escapes and 10,000 characters
    raises = subs / "raises_escapes" / "assignment"
    raises.mkdir(parents=True)
    raises.joinpath("memory.py").write_text(solution + "\n\ndef storage_bytes(x):\n"
                                            f"    raise ValueError({ESC + LONG!r})\n")
    # 6. an honest one
    (subs / "alice" / "assignment").mkdir(parents=True)
    (subs / "alice" / "assignment" / "memory.py").write_text(solution)
    return {name: student_id(subs / name) for name in ("git_escapes", "git_shallow", "zip_long_name.zip",
                                                        "raises_escapes", "alice")}


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=ENV, errors="surrogateescape")


def test_no_student_string_reaches_a_terminal_raw(tmp_path):
    os.chmod(tmp_path, 0o755)
    ids = _batch(tmp_path / "subs")
    with open(tmp_path / "times.csv", "w", newline="") as f:  # a row for no one in the batch: listed as ignored
        csv.writer(f).writerows([["student", "submitted_at"], [ESC + LONG, "2026-12-01T10:00:00Z"]])
    with open(tmp_path / "roster.csv", "w", newline="") as f:  # Canvas: a name no result matches
        csv.writer(f).writerows([["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab (1)"],
                                 ["Points Possible", "", "", "", "", "181"],
                                 [ESC + LONG, "1", "x1", ESC + LONG, "s", ""],
                                 ["Alice", "2", "alice", "alice", "s", ""]])
    outputs: dict[str, str] = {}

    def run(name: str, *args: str, ok: tuple[int, ...] = (0, 1)) -> subprocess.CompletedProcess[str]:
        proc = _run(tmp_path, *args)
        outputs[name] = proc.stdout + proc.stderr
        assert proc.returncode in ok, (name, proc.returncode, outputs[name][-3000:])
        return proc

    run("grade", "grade", "subs", "--out", "shard", "--shard", "1/1", "--module", "memory", "--public-only",
        "--no-progress", "-j", "2", "--call-timeout", "60", "--deadline", "2026-12-01T23:59:00Z",
        "--late-penalty", "10%/day", "--submitted-at", "times.csv")
    grade = outputs["grade"]
    assert "REFUSED" in grade and "NO SUBMISSION TIME" in grade and "git said: fatal: bad shallow line" in grade
    assert f"{ids['git_escapes']}: no penalty: git: " + shown(ESC)[:20] in grade
    run("combine", "combine", "out", "shard")
    run("report", "report", "out", "--out", "report.html")
    run("merge", "merge", "out", "--out", "merged")
    run("export", "export", "out", "--canvas", "roster.csv", "--assignment", "Lab (1)", "--out", "canvas.csv",
        "--allow-pending")
    assert "with no result" in outputs["export"]
    run("payload", "classroom-payload", "out", "--student", ids["raises_escapes"], "--github-output",
        str(tmp_path / "gh_output"))
    run("similarity", "similarity", "subs", "--out", "similarity.html", ok=(0, 1, 2))
    run("check", "check", "subs/raises_escapes", "--module", "memory")
    assert "storage_bytes" in outputs["check"]
    leaks = {name: _leaks(text) for name, text in outputs.items() if _leaks(text)}
    assert not leaks, leaks
    logs = [*(tmp_path / "shard" / "instructor").rglob("*.log")]
    assert logs and not {p.name: _leaks(p.read_text(errors="replace").replace("Ж", "x"))
                         for p in logs if _leaks(p.read_text(errors="replace").replace("Ж", "x"))}
