"""A class of 40 submissions, end to end: `grader grade` (with a late policy), `grader report`,
`grader similarity` and `grader export --canvas`, each checked against the others' numbers.

The class (the `memory` module only, to stay fast):
* 3 copies of the reference solution (a folder, a .zip, a .tar.gz) and 2 near-copies of it
  (identifiers renamed, comments and docstrings changed): full marks, and they top the
  similarity report together with the reference itself;
* 2 independent correct implementations (`HONEST`: the kit's correct variants, tests/variants/,
  plus hand-written functions) and one near-copy of the first; full marks;
* 26 mutants (tests/mutants/memory.py's mutated definitions, put with `grader.authoring.mutants.apply` into
  the independent implementations, never into the reference): each loses points;
* 2 untouched stubs (0), and 4 hostile submissions from tests/adversarial/cases.py (a conftest
  and sitecustomize that rewrite reports, stubs printing fake "PASSED" lines, `sys.exit` at
  import: 0 points; a corrupt zip: rejected);
* late cases: submission times (`--submitted-at`) around the deadline, its grace period and
  two extensions, one student without a time (no penalty, noted).
"""

from __future__ import annotations

import csv
import html.parser
import io
import json
import math
import re
import tarfile
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grader import KIT_ROOT
from grader.cli import main as cli
from grader.authoring.mutants import Mutant, apply, load_mutants, load_variants, mutated_definition
from grader.reports.classreport import collect
from grader.reports.similarity import REFERENCE
from grader.results.layout import Layout

pytestmark = pytest.mark.kit

MODULE = "memory"
UTC = timezone.utc
DEADLINE = datetime(2026, 12, 1, 23, 59, tzinfo=UTC)
POLICY = ["--deadline", "2026-12-01T23:59:00Z", "--late-penalty", "10%/day", "--late-cap", "50%", "--grace", "15m"]

# Hand-written functions for the independent implementations (the variants cover the others).
OWN = {
    "h1": {"bytes_per_parameter": '''
def bytes_per_parameter(optimizer, mixed_precision=False):
    moments = {"sgd": 0, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}.get(optimizer)
    if moments is None:
        raise ValueError("unknown optimizer: " + str(optimizer))
    weights_and_grads = 2 + 2 + 4 if mixed_precision else 4 + 4
    return weights_and_grads + 4 * moments
'''},
    "h2": {"bytes_per_parameter": '''
def bytes_per_parameter(optimizer, mixed_precision=False):
    if optimizer == "sgd":
        n = 0
    elif optimizer in ("adagrad", "rmsprop"):
        n = 1
    elif optimizer in ("adam", "adamw"):
        n = 2
    else:
        raise ValueError(f"bad optimizer {optimizer}")
    extra = 8  # bf16 weight + bf16 grad + fp32 master copy, or fp32 weight + fp32 grad
    return n * 4 + extra
''', "max_trainable_parameters": '''
def max_trainable_parameters(gpu_bytes, num_gpus, bytes_per_param):
    pool = float(num_gpus) * gpu_bytes
    return pool / bytes_per_param
'''},
}
VARIANTS = {"h1": ("usage_prod_itemsize", "storage_size", "format_finfo_restricted", "rtz_closed_form",
                   "napkin_reordered"),
            "h2": ("usage_nbytes", "storage_len", "format_by_name", "rtz_direct")}
# Local names only: a renamed parameter would break keyword calls (`torch.tensor(..., dtype=...)`).
NEAR_COPY = {"formats": "table_of_bits", "state_values": "moment_counts", "stored": "converted", "state": "opt_bytes"}
NEAR_COPY_H1 = {"moments": "m_count", "weights_and_grads": "base", "info": "fi", "supported": "ok_types",
                "smallest": "tiny_sub", "mant": "mbits"}


def _sub(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = re.sub(rf"\b{old}\b", new, text)
    return text


def honest(which: str) -> str:
    """An independent correct memory.py: the solution with every graded function replaced."""
    text = (KIT_ROOT / "solutions" / f"{MODULE}.py").read_text()
    variants = {v.name: v for v in load_variants((MODULE,))}
    for name in VARIANTS[which]:
        text = apply(variants[name], text)
    for func, source in OWN[which].items():
        text = apply(Mutant(MODULE, func, "hand-written", func, source.strip()), text)
    return text


def near_copy(text: str, names: dict[str, str]) -> str:
    """Renamed identifiers, comments rewritten, docstrings shortened: what copying students do."""
    text = _sub(text, names)
    text = re.sub(r"#.*", "# my own notes", text)
    return re.sub(r'"""(.|\n)*?"""', '"""Done for the lab."""', text)


def _folder(root: Path, name: str, text: str) -> Path:
    (root / name / "assignment").mkdir(parents=True)
    (root / name / "assignment" / f"{MODULE}.py").write_text(text)
    return root / name


def build_class(root: Path) -> dict[str, dict]:
    """Write the submissions under root/subs; return student -> what we know about it."""
    from tests.adversarial import cases as adversarial

    subs = root / "subs"
    subs.mkdir(parents=True)
    reference = (KIT_ROOT / "solutions" / f"{MODULE}.py").read_text()
    stub = (KIT_ROOT / "assignment" / f"{MODULE}.py").read_text()
    expect: dict[str, dict] = {}
    _folder(subs, "ref_dir", reference)
    with zipfile.ZipFile(subs / "ref_zip.zip", "w") as zf:
        zf.writestr(f"assignment/{MODULE}.py", reference)
    tar_src = _folder(root / "tmp", "ref_tgz", reference)
    with tarfile.open(subs / "ref_tgz.tar.gz", "w:gz") as tf:
        tf.add(tar_src / "assignment", arcname="assignment")
    for sid in ("ref_dir", "ref_zip", "ref_tgz"):
        expect[sid] = {"kind": "reference", "full": True, "group": "reference"}
    for sid, names in (("near_a", NEAR_COPY), ("near_b", dict(list(NEAR_COPY.items())[::2]))):
        _folder(subs, sid, near_copy(reference, names))
        expect[sid] = {"kind": "near-copy", "full": True, "group": "reference"}
    bases = {"h1": honest("h1"), "h2": honest("h2")}
    for which, text in bases.items():
        _folder(subs, f"honest_{which}", text)
        expect[f"honest_{which}"] = {"kind": "honest", "full": True, "group": f"honest_{which}"}
    _folder(subs, "copy_h1", near_copy(bases["h1"], NEAR_COPY_H1))
    expect["copy_h1"] = {"kind": "near-copy", "full": True, "group": "honest_h1"}
    mutants = load_mutants((MODULE,))
    for i, m in enumerate(mutants[:26]):
        which = ("h1", "h2")[i % 2]
        sid = f"mutant_{i:02d}"
        _folder(subs, sid, apply(mutated_definition(m, reference), bases[which]))  # (an edit holds the reference's text)
        expect[sid] = {"kind": "mutant", "full": False, "mutant": m.id, "base": which}
    for sid in ("stub_a", "stub_b"):
        _folder(subs, sid, stub)
        expect[sid] = {"kind": "stub", "zero": True}
    ctx = adversarial.Ctx(root=subs, out=root / "results", marker_dir=root / "markers", port=9)
    (root / "markers").mkdir()
    for build in (adversarial.conftest_rewrites_reports, adversarial.fake_pass_lines, adversarial.sys_exit_at_import):
        build(ctx)
        expect[build.__name__] = {"kind": "hostile", "zero": True}
    adversarial.corrupt_zip(ctx)
    expect["corrupt_zip"] = {"kind": "hostile", "rejected": True}
    assert len(expect) == 40 and sorted(p.name.split(".")[0] for p in subs.iterdir()) == sorted(expect)
    return expect


# -- the late policy's inputs: (submitted_at, extension) per student; no row: no time known ------

ON_TIME = "2026-12-01T12:00:00Z"
LATE = {
    "honest_h2": ("2026-12-02T00:10:00Z", None),   # inside the 15 min grace: on time
    "ref_dir": ("2026-12-02T00:14:01Z", None),     # 1 s past the grace: 1 started day
    "near_a": ("2026-12-04T12:00:00Z", None),      # 3 started days
    "copy_h1": ("2026-12-20T09:00:00Z", None),     # 19 days: capped at 50%
    "stub_b": ("2026-12-05T00:00:00Z", None),      # late, but 0 points earned: 0 off
    "mutant_03": ("2026-12-03T20:00:00Z", "2d"),   # within a 2-day extension
    "mutant_05": ("2026-12-03T01:00:00Z", "2026-12-02T23:59:00Z"),  # 1 h past extension + grace
    "mutant_07": ("2026-12-02T23:00:00Z", None),   # 1 started day
}
NO_TIME = "honest_h1"


def expected_percent(student: str) -> float:
    """The policy, computed here on its own: 10% per started day after deadline (or extension)
    + 15 min, at most 50%."""
    when, extension = LATE.get(student, (ON_TIME, None))
    deadline = DEADLINE
    if extension == "2d":
        deadline += timedelta(days=2)
    elif extension:
        deadline = datetime.fromisoformat(extension.replace("Z", "+00:00"))
    over = datetime.fromisoformat(when.replace("Z", "+00:00")) - (deadline + timedelta(minutes=15))
    days = math.ceil(over / timedelta(days=1)) if over > timedelta(0) else 0
    return min(50.0, 10.0 * days)


class _Rows(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and any(k in a for k in ("data-student", "data-test", "data-late")):
            self.rows.append({k: v or "" for k, v in a.items()})


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("class")
    expect = build_class(root)
    times = root / "times.csv"
    times.write_text("student,submitted_at\n" + "".join(f"{s},{LATE.get(s, (ON_TIME, None))[0]}\n"
                                                          for s in sorted(expect) if s != NO_TIME))
    extensions = root / "extensions.csv"
    extensions.write_text("student,extension\n" + "".join(f"{s},{e}\n" for s, (_, e) in LATE.items() if e))
    out = root / "results"
    code = cli(["grade", str(root / "subs"), "--out", str(out), "--module", MODULE, "-j", "2", "--no-progress",
                *POLICY, "--submitted-at", str(times), "--extensions", str(extensions)])
    assert code == 0
    grades = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    docs = {s: json.loads(Layout(out).results(s).read_text()) for s in expect}
    return {"root": root, "out": out, "expect": expect, "grades": grades, "docs": docs}


def test_every_submission_gets_the_score_it_deserves(graded: dict) -> None:
    grades, docs, expect = graded["grades"], graded["docs"], graded["expect"]
    assert set(grades) == set(expect)
    full = max(float(r["raw_score"]) for r in grades.values())
    assert full == float(grades["ref_zip"]["max_score"]) - float(grades["ref_zip"]["pending"]) > 0
    for sid, what in expect.items():
        raw = float(grades[sid]["raw_score"])
        assert raw == sum(t["score"] for t in docs[sid]["tests"]), sid
        if what.get("full"):
            assert raw == full, (sid, grades[sid])
        elif what.get("zero") or what.get("rejected"):
            assert raw == 0, (sid, grades[sid])
        else:  # a mutant: caught, so it loses points; not every test fails
            assert 0 < raw < full, (sid, what["mutant"], grades[sid])
        assert grades[sid]["status"].startswith("rejected" if what.get("rejected") else "graded"), grades[sid]


def test_every_late_case_gets_the_policy_penalty(graded: dict) -> None:
    grades, docs = graded["grades"], graded["docs"]
    for sid, doc in docs.items():
        late, row = doc["extra_data"]["late"], grades[sid]
        raw = sum(t["score"] for t in doc["tests"])
        if sid == NO_TIME:
            assert late["status"] == "unknown" and late["penalty_points"] == 0 and doc["score"] == raw
            assert "no time known" in row["late"]
            continue
        percent = expected_percent(sid)
        penalty = round(raw * percent / 100, 2)
        assert late["percent"] == percent, (sid, late)
        assert (late["status"] == "late") == (percent > 0) or (raw == 0 and late["status"] == "late"), (sid, late)
        assert late["penalty_points"] == pytest.approx(penalty) and doc["score"] == pytest.approx(raw - penalty)
        assert float(row["late_penalty"]) == pytest.approx(penalty)
        assert float(row["score"]) == pytest.approx(raw - penalty)
    # the cases the policy names, spelled out
    assert [expected_percent(s) for s in ("honest_h2", "ref_dir", "near_a", "copy_h1", "mutant_03", "mutant_05")] == \
        [0, 10, 30, 50, 0, 10]
    assert float(grades["copy_h1"]["score"]) == float(grades["copy_h1"]["raw_score"]) / 2
    assert float(grades["stub_b"]["late_penalty"]) == 0 and grades["stub_b"]["late"].startswith("late")


def test_the_report_says_what_grades_and_results_say(graded: dict) -> None:
    out, grades, docs = graded["out"], graded["grades"], graded["docs"]
    page = graded["root"] / "report.html"
    assert cli(["report", str(out), "--out", str(page)]) == 0
    data = collect(out)
    rows = {s["student"]: s for s in data.students}
    assert set(rows) == set(grades)
    for sid, row in rows.items():
        assert row["score"] == float(grades[sid]["score"]) and row["max_score"] == float(grades[sid]["max_score"])
        assert row["raw_score"] == float(grades[sid]["raw_score"]) == docs[sid]["extra_data"]["late"]["raw_score"]
        assert row["late_penalty"] == docs[sid]["extra_data"]["late"]["penalty_points"]
        assert row["modules"][MODULE] == docs[sid]["extra_data"]["modules"][MODULE]["earned"]
    # per test: the report's counts are the class's results.json outcomes, test by test
    outcomes: dict[str, dict[str, int]] = {}
    for doc in docs.values():
        for t in doc["tests"]:
            counts = outcomes.setdefault(t["extra_data"]["id"], {})
            counts[t["extra_data"]["result"]] = counts.get(t["extra_data"]["result"], 0) + 1
    assert {t.id: {k: v for k, v in t.counts.items() if v} for t in data.tests} == outcomes
    cells = _Rows()
    cells.feed(page.read_text(encoding="utf-8"))
    shown = {r["data-student"]: float(r["data-score"]) for r in cells.rows if "data-student" in r}
    assert shown == {s: float(r["score"]) for s, r in grades.items()}
    passed = {r["data-test"]: (int(r["data-passed"]), int(r["data-graded"])) for r in cells.rows if "data-test" in r}
    assert passed == {i: (c.get("passed", 0), sum(v for k, v in c.items() if k != "pending"))
                      for i, c in outcomes.items()}
    flagged = {r["data-late"] for r in cells.rows if "data-late" in r}
    penalised = {s for s, d in docs.items() if d["extra_data"]["late"]["penalty_points"] > 0}
    assert penalised <= flagged and {"ref_dir", "near_a", "copy_h1", "mutant_05", "mutant_07"} <= penalised
    kinds = {(i["student"], i["kind"]) for i in data.incidents}
    assert ("corrupt_zip", "rejected") in kinds


def test_copies_of_the_reference_top_the_similarity_report(graded: dict) -> None:
    from grader.reports.similarity import analyse

    root = graded["root"]
    assert cli(["similarity", str(root / "subs"), "--out", str(root / "similarity.html")]) == 0
    result = analyse([root / "subs"])
    reference = {REFERENCE, "ref_dir", "ref_zip", "ref_tgz", "near_a", "near_b",
                 "sys_exit_at_import"}  # the hostile one is the solution plus sys.exit at import
    inside = [p for p in result.pairs if {p.a, p.b} <= reference]
    across = [p for p in result.pairs if len({p.a, p.b} & reference) == 1]
    # every copy, near-copy with every other: the comparison covers each graded function's rule scope (the
    # code it reaches, module-level code included), so renamed helpers and an added sys.exit() line cost a
    # few percent (0.91-0.95 here), far above anyone else's 0.75 at most
    assert len(inside) == 21 and min(p.score for p in inside) > 0.9
    assert max(p.score for p in across) < 0.75  # nobody else is close to the reference
    with_reference = sorted([p for p in inside if REFERENCE in (p.a, p.b)], key=lambda p: (-p.score, p.a, p.b))
    assert result.pairs[:6] == with_reference  # the list opens with the leaked solutions
    copy = next(p for p in result.pairs if {p.a, p.b} == {"honest_h1", "copy_h1"})
    assert copy.score > 0.99  # a student's near-copy of another student is flagged too
    independent = next(p for p in result.pairs if {p.a, p.b} == {"honest_h1", "honest_h2"})
    assert independent.score < 0.5
    # nothing of their own to compare: the stubs and the unreadable archive (the stub-plus-hostile-import-code
    # submissions are compared: their module-level code runs, so it is theirs)
    assert {"stub_a", "stub_b", "corrupt_zip"} == set(result.skipped)


def test_canvas_import_puts_each_number_in_its_row(graded: dict) -> None:
    import random

    root, grades = graded["root"], graded["grades"]
    students = sorted(grades)
    random.Random(7).shuffle(students)
    renamed = {s: f"u{i:04d}" for i, s in enumerate(students[:4])}  # Canvas logins that differ: a mapping
    by_sis = set(students[4:8])  # matched on the SIS User ID column
    lines = ["Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (101),Primitives (4242)", "    Points Possible,,,,,10,"]
    for i, s in enumerate(students):
        sis_user, login = (s, f"x{i}") if s in by_sis else (f"S{i}", renamed.get(s, s))
        lines.append(f'"Student, {s}",{5000 + i},{sis_user},{login},A,,')
    lines.append('"Dropped, Dan",9999,S999,dan,B,,')  # on the roster, no submission
    (root / "roster.csv").write_text("\n".join(lines) + "\n")
    (root / "map.csv").write_text("student,canvas\n" + "".join(f"{s},{c}\n" for s, c in renamed.items()))
    column = "Primitives (4242)"
    assert cli(["export", str(graded["out"]), "--canvas", str(root / "roster.csv"), "--assignment", column,
                "--out", str(root / "canvas.csv"), "--map", str(root / "map.csv"), "--allow-pending"]) == 0  # a CPU run
    rows = list(csv.DictReader(io.StringIO((root / "canvas.csv").read_text(encoding="utf-8"))))
    assert list(rows[0]) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column]
    assert len(rows) == len(students) + 2
    assert rows[0]["Student"].strip() == "Points Possible"
    assert float(rows[0][column]) == float(grades["ref_dir"]["max_score"])
    for row in rows[1:]:
        name = row["Student"].removeprefix("Student, ")
        if name == "Dropped, Dan":
            assert row[column] == ""
            continue
        assert row["ID"] == str(5000 + students.index(name))  # the row is still that student's
        assert float(row[column]) == float(grades[name]["score"]), name  # the final score, late penalty included


def test_classroom_payload_of_every_student_is_their_final_score(graded: dict) -> None:
    from grader.integrations.classroom import decode, student_payload

    for sid, row in graded["grades"].items():
        _, payload, encoded = student_payload(graded["out"], sid)
        assert decode(encoded) == payload
        assert sum(t["score"] for t in payload["tests"]) == pytest.approx(float(row["score"]))  # late penalty included
        assert payload["max_score"] == float(row["max_score"])
