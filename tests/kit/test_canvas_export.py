"""`grader export --canvas`: the right number in the right row; nobody dropped; bad input refused;
pending GPU points and an assignment column the roster lacks refused unless asked for; unmatched
names listed one per line (Canvas's names hold commas)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from grader.cli import main as cli
from tests.kit.test_class_report import CLASS, write_batch

pytestmark = pytest.mark.kit

#: CLASS graded on CPU: each student's GPU test (2 points) pending.
PENDING = {sid: (statuses, messages + [""] * (len(statuses) - len(messages)), stats)
           for sid, (statuses, messages, stats) in CLASS.items()}
#: The class after `grader merge` with its GPU run: nothing pending.
MERGED = {sid: (["failed" if s == "pending" else s for s in statuses], messages, stats)
          for sid, (statuses, messages, stats) in PENDING.items()}

ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (111),Primitives (4242),Current Score
    Points Possible,,,,,10,8,
"Liddell, Alice",1001,S1,alice,A,9,,90
"Builder, Bob",1002,S2,bob.b,A,,,
"Cat, Carol",1003,carol,c3,B,7,,70
"Nobody, Nick",1004,S4,nick,B,,,
"""


def _export(tmp_path: Path, *extra: str, assignment: str = "Primitives (4242)",
            students: dict = PENDING) -> tuple[int, list[dict[str, str]]]:
    write_batch(tmp_path / "R", students)
    (tmp_path / "roster.csv").write_text(ROSTER)
    code = cli(["export", str(tmp_path / "R"), "--canvas", str(tmp_path / "roster.csv"), "--assignment",
                assignment, "--out", str(tmp_path / "canvas.csv"), *extra])
    rows = list(csv.DictReader(io.StringIO((tmp_path / "canvas.csv").read_text()))) if (tmp_path / "canvas.csv").exists() else []
    return code, rows


def test_scores_land_in_the_right_rows(tmp_path: Path) -> None:
    (tmp_path / "map.csv").write_text("student,canvas\nbob,bob.b\n")
    code, rows = _export(tmp_path, "--map", str(tmp_path / "map.csv"), students=MERGED)
    by_name = {r["Student"].strip(): r for r in rows}
    assert list(rows[0]) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Primitives (4242)"]
    assert by_name["Points Possible"]["Primitives (4242)"] == "8"
    assert by_name["Liddell, Alice"]["Primitives (4242)"] == "6"  # matched on SIS Login ID
    assert by_name["Builder, Bob"]["Primitives (4242)"] == "1"  # through the mapping
    assert by_name["Cat, Carol"]["Primitives (4242)"] == "0"  # matched on SIS User ID
    assert by_name["Nobody, Nick"]["Primitives (4242)"] == ""  # no result: left empty, listed
    assert code == 1  # "zed" was graded (rejected) but is not in the roster: listed, exit 1


def test_bad_input_is_refused(tmp_path: Path) -> None:
    write_batch(tmp_path / "R", CLASS)
    (tmp_path / "bad.csv").write_text("name,score\nx,1\n")
    base = ["export", str(tmp_path / "R"), "--out", str(tmp_path / "o.csv")]
    assert cli([*base, "--canvas", str(tmp_path / "missing.csv"), "--assignment", "A (1)"]) == 2
    assert cli([*base, "--canvas", str(tmp_path / "bad.csv"), "--assignment", "A (1)"]) == 2
    (tmp_path / "roster.csv").write_text(ROSTER)
    assert cli([*base, "--canvas", str(tmp_path / "roster.csv"), "--assignment", "no id"]) == 2
    assert cli(["export", str(tmp_path / "nothing"), "--out", str(tmp_path / "o.csv"), "--canvas",
                str(tmp_path / "roster.csv"), "--assignment", "A (1)"]) == 2
    (tmp_path / "map.csv").write_text("student\nbob\n")
    assert cli([*base, "--canvas", str(tmp_path / "roster.csv"), "--assignment", "A (1)", "--map",
                str(tmp_path / "map.csv")]) == 2
    assert not (tmp_path / "o.csv").exists()


def test_pending_gpu_points_are_refused_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU run not merged with its GPU run: Canvas would get scores without the GPU points."""
    (tmp_path / "map.csv").write_text("student,canvas\nbob,bob.b\n")
    code, rows = _export(tmp_path, "--map", str(tmp_path / "map.csv"))
    err = capsys.readouterr().out
    assert code == 2 and rows == [] and not (tmp_path / "canvas.csv").exists()
    line = " ".join(err.split())
    assert "pending for 3 student(s) (2 points each, 6 points in all)" in line, line
    assert "grader merge" in line and "--allow-pending" in line
    code, rows = _export(tmp_path, "--allow-pending", "--map", str(tmp_path / "map.csv"))
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1 and {r["Student"].strip(): r["Primitives (4242)"] for r in rows}["Liddell, Alice"] == "6"
    assert "warning: 3 exported score(s) lack 6 pending GPU points" in out


def test_an_assignment_column_not_in_the_roster_is_refused(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A typo would make Canvas create a new assignment: refused, with the roster's columns, closest first."""
    code, _ = _export(tmp_path, assignment="Primitive (4242)", students=MERGED)
    out = " ".join(capsys.readouterr().out.split())
    assert code == 2 and not (tmp_path / "canvas.csv").exists()
    assert "closest first: 'Primitives (4242)', 'Lab 1 (111)')" in out, out  # Current Score is not an assignment
    assert "--create-column" in out
    code, rows = _export(tmp_path, "--create-column", assignment="Lab 3 (999)", students=MERGED)
    assert code == 1 and list(rows[0])[-1] == "Lab 3 (999)"
    assert {r["Student"].strip(): r["Lab 3 (999)"] for r in rows}["Cat, Carol"] == "0"
    assert "is a new column (--create-column)" in capsys.readouterr().out


def test_unmatched_names_are_listed_one_per_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _export(tmp_path, students=MERGED)  # no mapping: bob is not matched; zed is not in the roster
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert code == 1
    at = lines.index("2 in the roster, with no result (left empty):")
    assert lines[at + 1:at + 3] == ["Builder, Bob", "Nobody, Nick"]
    at = lines.index("2 graded, but not in the roster (not exported):")
    assert lines[at + 1:at + 3] == ["bob", "zed"]
