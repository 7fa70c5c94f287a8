"""The late policy of `grader grade --deadline ... --late-penalty ...` (pure functions, plus `apply_policy`).

    grader grade SUBMISSION... --out DIR --deadline 2026-12-01T23:59:00+01:00 --late-penalty 10%/day
        [--late-cap 50%] [--grace 15m] [--extensions extensions.csv] [--submitted-at times.csv]

The policy, as stated to students (docs/INSTRUCTORS.md, "Late policy"):

* *When*: a submission's time is compared with its deadline (the assignment's, or the
  student's extension) plus the grace period.  At or before deadline + grace it is on time.
  After it, every *started* unit counts: 1 second past deadline + grace is 1 day late (or
  1 hour with ``%/hour``), 24 h + 1 s is 2 days.
* *How much*: ``rate x units late``, at most ``--late-cap`` (default 100%), as a share of the
  points *earned* (the raw score): 10%/day, 2 days late, 120 points earned -> 24 points off,
  final 96.  The max score is unchanged; the final score never goes below 0.
* *Extensions* (``student,extension``): a new deadline (ISO 8601 with a zone) or a duration
  added to the assignment's deadline (``2d``, ``36h``, ``1d12h``).  The extension replaces the
  deadline for that student; grace applies on top of it, and a student late past the extension
  is penalised from the extended deadline.
* *Times* (`grader.results.late_batch`, which applies the policy to a batch): ``--submitted-at times.csv`` (``student,submitted_at``, what LMS exports give) first;
  else, for a submission folder holding ``.git``, the committer date of the last commit touching
  the files that were graded, provided they are exactly what that commit holds
  (`grader.intake.gittime`; flagged: commit dates are set by whoever commits); else no time is
  known: *a note* in the student's results, grades.csv and the report, and no penalty
  (``--if-no-time cap``: the cap, for classes that must submit through git).  Every submission
  with no known time is listed last by `grader grade` (`late_batch.list_unknown_times`) and at the top of
  the class report's late section, for the instructor to decide.

Input errors (a missing or malformed file, a duplicate student, a time or deadline without a
zone, a penalty like ``10%/fortnight``) raise `LateInputError` before anything is graded (the
command exits with status 2).  results.json keeps the test scores untouched (their sum is the
raw score); the top-level ``score`` is the final score, and ``extra_data.late`` holds
``raw_score``, ``penalty_points``, ``final_score`` and how they were decided.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from grader.untrusted import shown

#: The most a penalty takes without ``--late-cap`` / ``late_cap``, in percent of the points earned.
DEFAULT_CAP_PERCENT = 100.0
UNITS = {"day": timedelta(days=1), "hour": timedelta(hours=1)}
_DURATION = re.compile(r"(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*%\s*/\s*(day|hour)")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
STUDENT_COLUMNS = ("student", "student_id", "id", "login")
TIME_COLUMNS = ("submitted_at", "submitted", "timestamp", "time")
EXTENSION_COLUMNS = ("extension", "deadline", "new_deadline", "extra")
#: The prefix of the lines this module adds to a student's summary (so they can be replaced).
LINE = "Late policy: "


class LateInputError(ValueError):
    """A late-policy input that cannot be used; the message names the file, line and value."""


def _q(value: object) -> str:
    """A value quoted in a message (a CSV cell may hold anything, of any length)."""
    return shown(repr(value), 100)


def parse_time(text: str, what: str) -> datetime:
    """An ISO 8601 time *with* a zone (``2026-12-01T23:59:00+01:00``, ``...Z``)."""
    text = (text or "").strip()
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise LateInputError(f"{what}: {_q(text)} is not an ISO 8601 time (e.g. 2026-12-01T23:59:00+01:00)") from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise LateInputError(f"{what}: {_q(text)} has no time zone: write it as {shown(text, 100)}Z (UTC) or with an "
                             "offset like +01:00")
    return value


def parse_duration(text: str, what: str = "duration") -> timedelta:
    """``15m``, ``2d``, ``1d12h``, ``90s``, ``1w`` (weeks, days, hours, minutes, seconds), or ``0``."""
    text = (text or "").strip().lower()
    m = _DURATION.fullmatch(text)
    if text == "0":
        return timedelta(0)
    if not text or m is None:
        raise LateInputError(f"{what}: {_q(text)} is not a duration (e.g. 15m, 2h, 2d, 1d12h)")
    w, d, h, mi, s = (int(x or 0) for x in m.groups())
    return timedelta(weeks=w, days=d, hours=h, minutes=mi, seconds=s)


def parse_rate(text: str, what: str = "--late-penalty") -> tuple[float, str]:
    """``10%/day`` -> (10.0, "day"); ``2%/hour`` -> (2.0, "hour").  `what` names where it was written
    (the flag, or course.toml's ``late_penalty``) in the error."""
    m = _RATE.fullmatch((text or "").strip().lower())
    if m is None:
        raise LateInputError(f"{what}: {_q(text)} is not a rate: write a percentage per day or per hour, "
                             "e.g. 10%/day or 2%/hour")
    rate = float(m.group(1))
    if rate > 100:
        raise LateInputError(f"{what}: {_q(text)} is more than 100% per {m.group(2)}")
    return rate, m.group(2)


def parse_percent(text: str, what: str) -> float:
    m = _PERCENT.fullmatch((text or "").strip())
    if m is None or float(m.group(1)) > 100:
        raise LateInputError(f"{what}: {_q(text)} is not a percentage between 0% and 100% (e.g. 50%)")
    return float(m.group(1))


# -- the CSV files ------------------------------------------------------------------------------

def _read_rows(path: Path, what: str, value_columns: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(line, student, value) for every row of a CSV with a header naming a student column and a
    value column; duplicate students, empty ids and short rows are errors."""
    if not path.is_file():
        raise LateInputError(f"{what} {path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")  # spreadsheets write a BOM
    except (OSError, UnicodeDecodeError) as exc:
        raise LateInputError(f"{what} {path}: cannot be read as UTF-8 text ({exc})") from None
    reader = csv.reader(text.splitlines())
    header = [h.strip().lower() for h in next(reader, [])]
    student_col = next((header.index(c) for c in STUDENT_COLUMNS if c in header), None)
    value_col = next((header.index(c) for c in value_columns if c in header), None)
    if student_col is None or value_col is None:
        raise LateInputError(f"{what} {path}: the first line must be a header naming the columns "
                             f"{STUDENT_COLUMNS[0]} and {value_columns[0]} (found: {', '.join(header) or 'nothing'})")
    rows, seen = [], {}
    for line, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(student_col, value_col):
            raise LateInputError(f"{what} {path}, line {line}: expected at least {max(student_col, value_col) + 1} "
                                 f"columns, found {len(row)}")
        student = row[student_col].strip()
        if not student:
            raise LateInputError(f"{what} {path}, line {line}: no student id")
        if student in seen:
            raise LateInputError(f"{what} {path}, line {line}: student {_q(student)} is listed twice "
                                 f"(also on line {seen[student]})")
        seen[student] = line
        rows.append((line, student, row[value_col].strip()))
    return rows


def read_times(path: Path) -> dict[str, datetime | None]:
    """student -> submission time (None: the cell is empty, i.e. the LMS knows no time)."""
    return {student: parse_time(value, f"--submitted-at {path}, line {line}") if value else None
            for line, student, value in _read_rows(path, "--submitted-at", TIME_COLUMNS)}


def read_extensions(path: Path, deadline: datetime) -> dict[str, datetime]:
    """student -> that student's deadline: a time, or a duration added to `deadline`."""
    out = {}
    for line, student, value in _read_rows(path, "--extensions", EXTENSION_COLUMNS):
        where = f"--extensions {path}, line {line}"
        if not value:
            raise LateInputError(f"{where}: no extension for {_q(student)} (a deadline like 2026-12-03T23:59Z or a "
                                 "duration like 2d)")
        is_duration = _DURATION.fullmatch(value.lower()) is not None
        new = deadline + parse_duration(value, where) if is_duration else parse_time(value, where)
        if new < deadline:
            raise LateInputError(f"{where}: {_q(student)}'s extension {_q(value)} ends before the deadline")
        out[student] = new
    return out


# -- the policy -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime
    rate: float  # percent per unit
    unit: str  # "day" | "hour"
    cap: float = DEFAULT_CAP_PERCENT  # percent
    grace: timedelta = timedelta(0)
    extensions: dict[str, datetime] = field(default_factory=dict)
    times: dict[str, datetime | None] | None = None  # None: no --submitted-at
    times_file: str = ""
    if_no_time: str = "no-penalty"  # or "cap": a submission whose time cannot be established gets the cap

    def describe(self) -> str:
        return (f"deadline {self.deadline.isoformat()}, {self.rate:g}%/{self.unit} of the points earned per started "
                f"{self.unit} late, at most {self.cap:g}%" + (f", grace {_span(self.grace)}" if self.grace else "")
                + (f"; no time known: {self.if_no_time}" if self.if_no_time != "no-penalty" else ""))


def policy_from_args(deadline: str | None, penalty: str | None, cap: str | None = None, grace: str | None = None,
                     extensions: Path | None = None, submitted_at: Path | None = None,
                     if_no_time: str | None = None) -> LatePolicy | None:
    """The policy a command line asks for, or None (no --deadline and no other late option)."""
    if deadline is None:
        given = [n for n, v in (("--late-penalty", penalty), ("--late-cap", cap), ("--grace", grace),
                                ("--extensions", extensions), ("--submitted-at", submitted_at),
                                ("--if-no-time", if_no_time)) if v is not None]
        if given:
            raise LateInputError(f"{', '.join(given)} need --deadline (the assignment's deadline, ISO 8601 "
                                 "with a zone)")
        return None
    when = parse_time(deadline, "--deadline")
    if penalty is None:
        raise LateInputError("--deadline needs --late-penalty (e.g. 10%/day; 0%/day only flags late submissions)")
    rate, unit = parse_rate(penalty)
    if if_no_time not in (None, "no-penalty", "cap"):
        raise LateInputError(f"--if-no-time {_q(if_no_time)}: expected no-penalty or cap")
    return LatePolicy(deadline=when, rate=rate, unit=unit, if_no_time=if_no_time or "no-penalty",
                      cap=parse_percent(cap, "--late-cap") if cap is not None else DEFAULT_CAP_PERCENT,
                      grace=parse_duration(grace, "--grace") if grace is not None else timedelta(0),
                      extensions=read_extensions(extensions, when) if extensions is not None else {},
                      times=read_times(submitted_at) if submitted_at is not None else None,
                      times_file=Path(submitted_at).name if submitted_at else "")  # no host path for students


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "min"),
             (seconds % 60, "s")]
    return " ".join(f"{n} {u}" for n, u in parts if n) or "0 s"


def assess(policy: LatePolicy, student: str, submitted: datetime | None, source: str, note: str = "",
           warning: str = "") -> dict[str, Any]:
    """The late decision for one submission, as stored in results.json's ``extra_data.late``
    (`apply` adds the points).  `submitted` None: no time known, `note` says why, and no penalty
    (or the cap, with ``--if-no-time cap``)."""
    deadline = policy.extensions.get(student, policy.deadline)
    out: dict[str, Any] = {"status": "unknown", "percent": 0.0, "units_late": 0, "unit": policy.unit,
                           "rate_percent": policy.rate, "cap_percent": policy.cap, "deadline": deadline.isoformat(),
                           "assignment_deadline": policy.deadline.isoformat(),
                           "extension": student in policy.extensions, "grace_seconds": policy.grace.total_seconds(),
                           "submitted_at": None, "source": source, "note": note, "warning": warning}
    if submitted is None:
        if policy.if_no_time == "cap":
            out.update(percent=policy.cap, note=f"{note}; no time known: the cap applies (--if-no-time cap)")
        return out
    over = submitted - (deadline + policy.grace)
    units = math.ceil(over / UNITS[policy.unit]) if over > timedelta(0) else 0
    out.update(status="late" if units else "on_time", units_late=units, submitted_at=submitted.isoformat(),
               late_by_seconds=max(0.0, (submitted - deadline).total_seconds()),
               percent=min(policy.cap, round(policy.rate * units, 6)))
    return out


# -- results.json ---------------------------------------------------------------------------------

def apply(doc: dict[str, Any], late: dict[str, Any] | None) -> dict[str, Any]:
    """`doc` (a results.json) with its late decision applied (or removed, `late` None): the raw
    score is the sum of the tests' scores; ``score`` becomes the final one; the student's summary
    gets one ``Late policy:`` line.  Idempotent: applying twice changes nothing."""
    raw = round(sum(float(t.get("score", 0)) for t in doc.get("tests", [])), 6)
    lines = [_score_line(x, raw) for x in str(doc.get("output", "")).split("\n") if not x.startswith(LINE)]
    extra = doc.setdefault("extra_data", {})
    if late is None:
        extra.pop("late", None)
        doc.update(score=raw, output="\n".join(lines))
        return doc
    try:
        percent = float(late["percent"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"extra_data.late of {extra.get('student', '?')} has no valid percent") from None
    penalty = round(raw * percent / 100, 2)
    final = round(max(0.0, raw - penalty), 2)
    late = {**late, "raw_score": raw, "penalty_points": round(raw - final, 6), "final_score": final}
    extra["late"] = late
    at = next((i + 1 for i, x in enumerate(lines) if x.startswith("Score:")), min(1, len(lines)))
    if at and late["penalty_points"]:  # the summary's first numbers are the final ones, the raw ones beside them
        lines[at - 1] = _score_line(lines[at - 1], raw, final, late["penalty_points"])
    lines.insert(at, LINE + student_line(late, float(doc.get("max_score", 0))))
    doc.update(score=final, output="\n".join(lines))
    return doc


_SCORE = re.compile(r"^Score: (?P<score>[^ ]+) / (?P<max>[^ ]+) points(?: \([^ ]+ earned, \u2212[^ ]+ late penalty\))?")


def _score_line(line: str, raw: float, final: float | None = None, penalty: float = 0.0) -> str:
    """results.json's "Score: X / Y points" line with the raw score, or with the final one and the raw
    score and the penalty beside it (the rest of the line, e.g. the pending GPU note, kept)."""
    match = _SCORE.match(line)
    if match is None:
        return line
    head = f"Score: {raw:g} / {match['max']} points" if final is None else \
        f"Score: {final:g} / {match['max']} points ({raw:g} earned, \u2212{penalty:g} late penalty)"
    return head + line[match.end():]


def student_line(late: dict[str, Any], max_score: float) -> str:
    where = {"times.csv": "", "git": " (the last commit touching assignment/)"}.get(late.get("source", ""), "")
    deadline = f"deadline {late['deadline']}" + (" (your extension)" if late.get("extension") else "")
    if late["status"] == "unknown":
        decided = (f"{late['percent']:g}% of the {late['raw_score']:g} points earned, -{late['penalty_points']:g} "
                   "(the cap: a time is required)" if late.get("percent") else "no late penalty applied")
        return (f"no submission time is known ({late.get('note') or 'none recorded'}): {decided}; "
                "your instructor has been told.")
    if late["status"] == "on_time":
        return f"submitted {late['submitted_at']}{where}, " + (on_time_word(late) if late.get("extension") else
                                                                  f"on time ({deadline})") + "."
    unit = late["unit"] + ("s" if late["units_late"] != 1 else "")
    return (f"submitted {late['submitted_at']}{where}, {late['units_late']} started {unit} late ({deadline}"
            + (f", {_span(timedelta(seconds=late['grace_seconds']))} of grace" if late.get("grace_seconds") else "")
            + f"): {late['percent']:g}% of the {late['raw_score']:g} points earned, -{late['penalty_points']:g}; "
            f"final score {late['final_score']:g} / {max_score:g} points.")


def on_time_word(late: dict[str, Any]) -> str:
    """How an on-time submission is shown (grades.csv, the student's summary, the feedback page): with
    the extension that made it on time, when there was one."""
    return f"on time (extension to {late['deadline']})" if late.get("extension") else "on time"


def csv_cells(doc: dict[str, Any] | None) -> dict[str, str]:
    """grades.csv's late columns for one results.json (empty cells when no policy was applied)."""
    late = (doc or {}).get("extra_data", {}).get("late")
    if not late:
        raw = "" if doc is None else f"{float(doc['score']):g}"
        return {"raw_score": raw, "late_penalty": "", "late": ""}
    word = {"on_time": on_time_word(late), "unknown": f"no time known: {unknown_decision(late)} ({late.get('note', '')})"}.get(
        late["status"], f"late {late['units_late']} {late['unit']}(s): -{late['percent']:g}%")
    if late.get("warning") and late["status"] != "unknown":
        word += f" [{late['warning']}]"
    return {"raw_score": f"{late['raw_score']:g}", "late_penalty": f"{late['penalty_points']:g}", "late": word}


def unknown_decision(late: dict[str, Any]) -> str:
    """What was decided for a submission with no known time: "no penalty", or the cap."""
    return f"-{late['percent']:g}% (--if-no-time cap)" if late.get("percent") else "no penalty"
