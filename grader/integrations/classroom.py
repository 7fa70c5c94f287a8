"""GitHub Classroom: the score in Classroom's grade column, through Classroom's own reporter.

`grader classroom-payload RESULTS_DIR [--student ID] [--github-output FILE]` turns one
student's results.json (after `grader merge`) into the payload that
`classroom-resources/autograding-grading-reporter@v1` decodes, and writes it as the step
output ``result`` (``$GITHUB_OUTPUT``), exactly as Classroom's own graders do
(autograding-command-grader `src/main.js`: ``core.setOutput('result', btoa(JSON.stringify(result)))``;
autograding-python-grader `bin/run.sh`: ``result=$(... | base64)`` into ``$GITHUB_OUTPUT``).

What the reporter reads (classroom-resources/autograding-grading-reporter, tag v1, `src/`):

* `main.js`: for each id in the ``runners`` input, the env var ``<ID upper-cased>_RESULTS``,
  base64, then ``JSON.parse``; the step fails when a runner's ``status`` is ``"fail"``
  ("Some tests failed.") or ``"error"`` ("Some tests errored.");
* `notify-classroom.js` (what Classroom records): ``maxPoints += results.max_score`` (a runner
  with a falsy ``max_score`` is skipped) and ``totalPoints += test.score`` for every entry of
  ``tests``; it writes the notice annotations ``Points T/M`` and ``{"totalPoints", "maxPoints"}``;
* `console-results.js` (the log only): ``tests[].status`` (``pass``, ``error``: prints only
  ``message``, anything else: a cross), ``name``, ``line_no`` (0 means no line), ``test_code``;
  its per-runner line ("Total points ...") is ``passed tests / all tests * max_score``, which
  is *not* the points the kit gives (tests carry different points): Classroom records the
  notice's sum of ``score``, which is the kit's score.

The payload (``version`` 1, the command grader's shape): ``status``, ``max_score`` = the kit's
``max_score`` (every point of the assignment, pending GPU tests included), and one entry per
test of results.json with ``name``, ``status``, ``score`` (that test's points, or 0),
``message`` (the student-visible output of results.json: hidden tests' details stay hidden),
``test_code`` "", ``filename`` "" and ``line_no`` 0.  So ``sum(score) == results.json score``
and ``max_score == results.json max_score``: Classroom shows the kit's number.

Pending GPU tests (the student workflow never runs them: the course staff do) count in
``max_score`` with score 0 and status ``error`` (the reporter's log then prints their message,
which says so): Classroom shows the points earned so far out of the whole assignment (never a
full mark for the CPU part alone).  They fail nothing: a submission whose every other test
passes reports ``pass``, so the job is not red forever for want of a GPU.  Test status: passed
-> ``pass``; pending and a test that could not run (``error``) -> ``error``; failed, not
attempted -> ``fail``.  Runner status: ``fail`` if any test failed, else ``error`` if a test
could not run or the submission was rejected, else ``pass``.  Classroom's number is a preview
(the student controls the repository and its workflow, `grader.integrations.github`).

A late penalty (`grader grade --deadline ...`, `grader.course.late`: results.json's ``score`` is the
tests' sum less ``extra_data.late.penalty_points``) becomes one more entry, "late policy", with
the negative score ``-penalty_points`` and the student's late-policy line as its message, so
the sum is still results.json's ``score``.

Classroom's side: the workflow is named "Autograding Tests" and the reporting job
``run-autograding-tests``, as the workflow Classroom generates (see
`grader.integrations.github`); the reporter needs no token (v1 only writes annotations).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from grader.results.layout import Layout
from grader.results.results_json import validate_results
from grader.untrusted import shown

#: The step id of the payload step, hence the reporter's ``runners`` input and env var name.
RUNNER = "autograde"
ENV_VAR = f"{RUNNER.upper()}_RESULTS"
OUTPUT = "result"
VERSION = 1
#: A message longer than this is cut (the python grader cuts output at 500 characters).
MESSAGE_CHARS = 500
#: The encoded payload travels in one environment variable: Linux refuses a single one
#: longer than 128 KiB (MAX_ARG_STRLEN) when the reporter's node process starts.
ENCODED_LIMIT = 96 * 1024

_STATUS = {"passed": "pass", "pending": "error", "error": "error"}  # else: fail
LATE_PREFIX = "Late policy: "
_WORKFLOW_COMMAND = re.compile(r"^(\s*)::", re.MULTILINE)
_LEGACY_COMMAND = re.compile(r"##\[")  # the runner's older "##[command]" form, honoured anywhere in a line


class PayloadError(Exception):
    """No results to report (missing folder or student, invalid results.json); the message says why."""


def _message(test: dict[str, Any], result: str, limit: int) -> str:
    text = str(test.get("output") or "")
    if _STATUS.get(result) == "error":  # the console prints only `message` for an error: name the test
        text = f"{test.get('name', '')}: {text}"
    # The runner treats a log line starting with "::" as a workflow command: defuse it (escaping and
    # cutting after that never make a new one: an escape is a backslash, letters and digits).
    return shown(_LEGACY_COMMAND.sub("# #[", _WORKFLOW_COMMAND.sub(r"\1: :", text)), limit, newlines=True)


def classroom_results(doc: dict[str, Any], *, message_chars: int = MESSAGE_CHARS) -> dict[str, Any]:
    """The reporter's runner results for one student's results.json document."""
    problems = validate_results(doc)
    if problems:
        raise PayloadError("not a valid results.json: " + "; ".join(problems[:3]))
    if not doc.get("tests"):
        raise PayloadError("results.json lists no tests: nothing to report")
    tests, errored = [], False
    for test in doc["tests"]:
        extra = test.get("extra_data") or {}
        result = str(extra.get("result") or test.get("status") or "pending")
        status = _STATUS.get(result, "fail")
        errored |= result == "error"  # a pending GPU test is shown as "error" too, but fails nothing
        tests.append({"name": shown(test.get("name", "")), "status": status,
                      "score": test["score"] if status == "pass" else 0,
                      "message": _message(test, result, message_chars),
                      "test_code": "", "filename": "", "line_no": 0})
    late = (doc.get("extra_data") or {}).get("late") or {}
    if late.get("penalty_points"):  # results.json's score is the raw score less the penalty: so is ours
        from grader.course.late import student_line

        tests.append({"name": "late policy", "status": "fail", "score": -late["penalty_points"],
                      "message": _message({"output": LATE_PREFIX + student_line(late, float(doc["max_score"]))},
                                          "failed", message_chars),
                      "test_code": "", "filename": "", "line_no": 0})
    statuses = {t["status"] for t in tests}
    rejected = (doc.get("extra_data") or {}).get("status") == "rejected"
    status = "fail" if "fail" in statuses else "error" if errored or rejected else "pass"
    payload = {"version": VERSION, "status": status, "max_score": doc["max_score"], "tests": tests}
    total = sum(t["score"] for t in tests)
    if abs(total - doc["score"]) > 1e-6:
        raise PayloadError(f"the tests' scores add up to {total:g}, results.json says {doc['score']:g}")
    return payload


def encode(payload: dict[str, Any]) -> str:
    """What a grader action writes as its ``result`` output: base64 of compact UTF-8 JSON."""
    return base64.b64encode(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()).decode()


def decode(encoded: str) -> dict[str, Any]:
    """What the reporter does with ``<RUNNER>_RESULTS`` (`main.js`: Buffer.from(.., "base64"), JSON.parse)."""
    return json.loads(base64.b64decode(encoded, validate=True).decode("utf-8"))


def named(names: list[str], limit: int = 5) -> str:
    """The first `limit` names, then "…" and how many more when the list is cut short ("none" if empty)."""
    shown_names = ", ".join(shown(n, 100) for n in names[:limit])
    return (shown_names + f", … ({len(names) - limit} more)") if len(names) > limit else shown_names or "none"


def student_payload(results_dir: Path, student: str | None = None) -> tuple[str, dict[str, Any], str]:
    """(student, payload, encoded payload) for the one student of a results folder (or `student`).

    Messages are shortened, then dropped, if the encoded payload would not fit in one
    environment variable; scores are never touched.
    """
    layout = Layout(results_dir)
    if not results_dir.is_dir():
        raise PayloadError(f"{results_dir}: no such results folder")
    students = layout.students()
    if student is None:
        if len(students) != 1:
            raise PayloadError(f"{results_dir} holds {len(students)} students ({named(students)}): "
                               "name one with --student")
        student = students[0]
    elif student not in students:
        raise PayloadError(f"{results_dir} has no results for {student!r}")
    try:
        doc = json.loads(layout.results(student).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PayloadError(f"{student}: results.json cannot be read ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise PayloadError(f"{student}: results.json is not a JSON object")
    for chars in (MESSAGE_CHARS, 200, 80, 0):
        payload = classroom_results(doc, message_chars=chars)
        encoded = encode(payload)
        if len(encoded) <= ENCODED_LIMIT:
            return student, payload, encoded
    raise PayloadError(f"{student}: the payload is {len(encoded)} characters even without messages "
                       f"(limit {ENCODED_LIMIT})")


def write_github_output(path: Path, value: str, name: str = OUTPUT) -> None:
    """Append ``name=value`` to a ``$GITHUB_OUTPUT`` file (base64 holds no newline)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{name}={value}\n")
