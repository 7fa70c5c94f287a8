"""`grader export --canvas`: the right number in the right row; nobody dropped; bad input refused."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from grader.cli import main as cli
from tests.kit.test_class_report import CLASS, write_batch

pytestmark = pytest.mark.kit

ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (111)
    Points Possible,,,,,10
"Liddell, Alice",1001,S1,alice,A,9
"Builder, Bob",1002,S2,bob.b,A,
"Cat, Carol",1003,carol,c3,B,7
"Nobody, Nick",1004,S4,nick,B,
"""


def _export(tmp_path: Path, *extra: str) -> tuple[int, list[dict[str, str]]]:
    write_batch(tmp_path / "R", CLASS)
    (tmp_path / "roster.csv").write_text(ROSTER)
    code = cli(["export", str(tmp_path / "R"), "--canvas", str(tmp_path / "roster.csv"), "--assignment",
                "Primitives (4242)", "--out", str(tmp_path / "canvas.csv"), *extra])
    rows = list(csv.DictReader(io.StringIO((tmp_path / "canvas.csv").read_text()))) if (tmp_path / "canvas.csv").exists() else []
    return code, rows


def test_scores_land_in_the_right_rows(tmp_path: Path) -> None:
    (tmp_path / "map.csv").write_text("student,canvas\nbob,bob.b\n")
    code, rows = _export(tmp_path, "--map", str(tmp_path / "map.csv"))
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
