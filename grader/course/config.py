"""The course: how a course splits the modules into assignments (`course.toml`).

Which modules exist, in which order, and what each uses is `grader.course.modules`.

**`course.toml`** (optional, at the kit root; the environment variable ``KIT_COURSE`` names
another file).  Without it the kit is one assignment of every module, as it always was (the
*default* assignment: no late policy, GPU tests pending until the staff grade them).  With it::

    [course]
    name = "CS 336: PyTorch primitives"

    [[assignment]]
    name = "hw1"                          # what --assignment takes: letters, digits, - and _
    title = "Tensors and gradients"       # optional: shown in the release, the report, Gradescope
    modules = ["memory", "views", ...]    # in handout order: the release numbers its sections 1..n
    deadline = 2026-10-09T23:59:00-07:00  # optional; a TOML date-time or an ISO 8601 string, with a zone
    late_penalty = "10%/day"              # needed with a deadline (0%/day only flags)
    late_cap = "50%"                      # optional (default 100%)
    grace = "15m"                         # optional
    extensions = "extensions/hw1.csv"     # optional: relative to course.toml (student,extension)
    if_no_time = "no-penalty"             # optional: or "cap"
    gpu_tests = false                     # default true; false: GPU tests left out of every maximum
    canvas_column = "HW1 (12345)"         # optional: `grader export --canvas` fills this column
    gradescope_title = "HW1: Tensors"     # optional: the Gradescope assignment the bundle is for
    prairielearn_assessment = "HW1"       # optional: the PrairieLearn assessment (its folder) `grader prairielearn` writes

`load_course` validates the whole file and raises `CourseError` listing every mistake, one line
each (a TOML syntax error, an unknown key, an unknown module, a module in two assignments or
twice in one, a bad date, rate or duration, a missing extensions file, a Canvas column that is
not ``Name (id)``, a module that needs one no assignment up to it holds); the commands print it
and stop with exit status 2 before writing anything.

**One function resolves ``--assignment NAME``** for every command: `resolve` gives the
`Assignment` (its modules, whether GPU tests count, its late policy, Canvas column, Gradescope
title); no name means the only assignment there is (the default one without course.toml), and
a course of several assignments without a name is an error that lists them.  `cli_assignment`
is the same for a command: it prints the error and returns None.

**A release knows its assignment**: `marker` writes a small course.toml (the course's name and
that one assignment, with its carried modules, without the late policy, which is the staff's)
at the root of a student release or a Gradescope bundle, so `grader check` and `grader grade`
there grade that assignment without being told.

**A results folder knows its assignment**: `grader grade` writes the name, modules and GPU
choice into each results.json's ``extra_data.submission.graded_with`` (only for a course.toml
assignment, so results without one are byte for byte as before); `recorded` reads it back, and
merge, report, export and classroom-payload refuse an ``--assignment`` that differs from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from grader.course.modules import COURSE_FILE, _kit_root, course_path, dependencies, discover_modules

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
COURSE_KEYS = {"name", "colab_repository", "colab_branch"}  # colab_*: the notebooks' Open in Colab link
ASSIGNMENT_KEYS = {"name", "title", "modules", "deadline", "late_penalty", "late_cap", "grace", "extensions",
                   "if_no_time", "gpu_tests", "canvas_column", "gradescope_title", "prairielearn_assessment"}
MARKER_KEYS = {"carried"}  # only in a release's marker (written by `marker`)


class CourseError(ValueError):
    """A course.toml that cannot be used, or an --assignment it does not have; one mistake per line."""


@dataclass(frozen=True)
class Assignment:
    """One homework: its modules (handout order) and how it is graded.  `default`: the whole kit,
    no course.toml (today's single assignment)."""

    name: str
    modules: tuple[str, ...]
    title: str = ""
    deadline: str | None = None
    late_penalty: str | None = None
    late_cap: str | None = None
    grace: str | None = None
    extensions: Path | None = None
    if_no_time: str | None = None
    gpu_tests: bool = True
    canvas_column: str | None = None
    gradescope_title: str | None = None
    prairielearn_assessment: str | None = None
    carried: tuple[str, ...] = ()
    default: bool = False

    @property
    def label(self) -> str:
        """How people see it: "hw1: Tensors and gradients" (the name alone without a title)."""
        return f"{self.name}: {self.title}" if self.title else self.name

    def late_args(self) -> dict[str, Any]:
        """Its late policy as `grader.course.late.policy_from_args`'s keywords (None where unset)."""
        return {"deadline": self.deadline, "penalty": self.late_penalty, "cap": self.late_cap, "grace": self.grace,
                "extensions": self.extensions, "if_no_time": self.if_no_time}

    def graded_with(self) -> dict[str, Any]:
        """What results.json records of it (`extra_data.submission.graded_with`); {} for the default."""
        if self.default:
            return {}
        return {"assignment": self.name, "gpu_tests": self.gpu_tests}


@dataclass(frozen=True)
class Course:
    name: str
    assignments: tuple[Assignment, ...]
    path: Path | None = None
    release: bool = False  # a release's (or bundle's) marker: one assignment, nothing else
    colab_repository: str = ""  # "owner/name" on GitHub: the notebooks open in Colab from it (grader.notebooks)
    colab_branch: str = "main"

    def get(self, name: str) -> Assignment | None:
        return next((a for a in self.assignments if a.name == name), None)


# -- course.toml ----------------------------------------------------------------------------

def _close(word: str, choices: Iterable[str]) -> str:
    import difflib

    match = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat() if value.tzinfo is not None else f"{value.isoformat()} (no zone)"
    return str(value)


def _check_late(where: str, a: dict[str, Any], base: Path, problems: list[str]) -> None:
    from grader.course.late import (LateInputError, parse_duration, parse_percent, parse_rate, parse_time,
                                   read_extensions)

    deadline = a.get("deadline")
    late_keys = [k for k in ("late_penalty", "late_cap", "grace", "extensions", "if_no_time") if k in a]
    if deadline is None:
        if late_keys:
            problems.append(f"{where}: {', '.join(late_keys)} need a deadline")
        return
    when = None
    try:
        if isinstance(deadline, datetime) and deadline.tzinfo is None:
            raise LateInputError(f"deadline {deadline.isoformat()} has no zone: write it as "
                                 f"{deadline.isoformat()}+01:00 (or Z for UTC)")
        if not isinstance(deadline, (str, datetime)):
            raise LateInputError(f"deadline must be a date and time with a zone, got {deadline!r}")
        when = deadline if isinstance(deadline, datetime) else parse_time(deadline, "deadline")
    except LateInputError as exc:
        problems.append(f"{where}: {exc}")
    checks = (("late_penalty", lambda v: parse_rate(v, "late_penalty")),
              ("late_cap", lambda v: parse_percent(v, "late_cap")),
              ("grace", lambda v: parse_duration(v, "grace")))
    if "late_penalty" not in a:
        problems.append(f"{where}: a deadline needs late_penalty (e.g. \"10%/day\"; \"0%/day\" only flags)")
    for key, parse in checks:
        if key in a:
            try:
                if not isinstance(a[key], str):
                    raise LateInputError(f"{key} must be a string such as \"10%/day\", \"50%\" or \"15m\"")
                parse(a[key])
            except LateInputError as exc:  # (each message starts with the key)
                problems.append(f"{where}: {exc}")
    if a.get("if_no_time") not in (None, "no-penalty", "cap"):
        problems.append(f"{where}: if_no_time must be \"no-penalty\" or \"cap\", got {a['if_no_time']!r}")
    if "extensions" in a:
        path = base / str(a["extensions"])
        if not path.is_file():
            problems.append(f"{where}: extensions file {a['extensions']} not found (relative to {base})")
        elif when is not None:
            try:
                read_extensions(path, when)
            except LateInputError as exc:
                problems.append(f"{where}: extensions: {exc}")


def parse_course(raw: dict[str, Any], path: Path | None, modules: tuple[str, ...],
                 root: Path | None = None) -> Course:
    """A `Course` from course.toml's data; CourseError listing every mistake."""
    root = root or _kit_root()
    where_file = path.name if path else COURSE_FILE
    problems: list[str] = []
    release = isinstance(raw.get("course"), dict) and raw["course"].get("release") is True
    course = _course_table(raw, problems)
    items = raw.get("assignment", [])
    if not isinstance(items, list) or not items:
        problems.append("no assignment: add at least one [[assignment]] table (name, modules)")
        items = []
    assignments: list[Assignment] = []
    owner: dict[str, str] = {}
    names: set[str] = set()
    base = path.parent if path else root
    for i, a in enumerate(items, start=1):
        if not isinstance(a, dict):
            problems.append(f"assignment {i}: must be a table ([[assignment]])")
            continue
        assignments.append(_assignment(i, a, modules, release, base, (names, owner), problems))
    if not release and not problems and (root / "solutions").is_dir():
        assignments = _with_carried(assignments, modules, root, problems)
    if len(problems) == 1:
        raise CourseError(f"{where_file}: {problems[0]}")
    if problems:
        raise CourseError(f"{where_file}: {len(problems)} mistakes:\n" + "\n".join(f"  {p}" for p in problems))
    return Course(name=course.get("name") or "", assignments=tuple(assignments), path=path, release=release,
                  colab_repository=course.get("colab_repository") or "", colab_branch=course.get("colab_branch") or "main")


def _course_table(raw: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The [course] table, checked (unknown tables and keys, the name, the Colab settings)."""
    for key in raw:
        if key not in ("course", "assignment"):
            problems.append(f"unknown table or key {key!r}{_close(key, ['course', 'assignment'])} "
                            "(course.toml has [course] and [[assignment]])")
    course = raw.get("course", {})
    if not isinstance(course, dict):
        problems.append("[course] must be a table")
        return {}
    for key in course:
        if key not in COURSE_KEYS | {"release"}:
            problems.append(f"[course]: unknown key {key!r}{_close(key, COURSE_KEYS)}")
    if not isinstance(course.get("name", ""), str):
        problems.append("[course]: name must be a string")
    if "colab_repository" in course and not (isinstance(course["colab_repository"], str)
                                             and re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", course["colab_repository"])):
        problems.append(f"[course]: colab_repository must be a GitHub repository, 'owner/name'; got {course['colab_repository']!r}")
    if "colab_branch" in course and not (isinstance(course["colab_branch"], str)
                                         and re.fullmatch(r"[A-Za-z0-9_./-]+", course["colab_branch"])):
        problems.append(f"[course]: colab_branch must be a branch name; got {course['colab_branch']!r}")
    return course


def _assignment(i: int, a: dict[str, Any], modules: tuple[str, ...], release: bool, base: Path,
                seen: tuple[set[str], dict[str, str]], problems: list[str]) -> Assignment:
    """The `i`-th [[assignment]] table, checked (`seen`: the names so far, the assignment of each module so far)."""
    names, owner = seen
    name = a.get("name")
    where = f"assignment {name!r}" if isinstance(name, str) else f"assignment {i}"
    for key in a:
        if key not in ASSIGNMENT_KEYS | (MARKER_KEYS if release else set()):
            problems.append(f"{where}: unknown key {key!r}{_close(key, ASSIGNMENT_KEYS)}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(f"{where}: name must be letters, digits, '-' and '_' (e.g. \"hw1\"), got {name!r}")
    elif name in names:
        problems.append(f"{where}: the name {name!r} is used twice")
    else:
        names.add(name)
    mods = a.get("modules")
    if not isinstance(mods, list) or not mods or not all(isinstance(m, str) for m in mods):
        problems.append(f"{where}: modules must be a list of module names, e.g. [\"memory\", \"views\"]")
        mods = []
    for m in mods:
        if m not in modules:
            problems.append(f"{where}: unknown module {m!r}{_close(m, modules)} (the modules: "
                            f"{', '.join(modules)})")
        elif m in owner and owner[m] == where:
            problems.append(f"{where}: module {m!r} is listed twice")
        elif m in owner:
            problems.append(f"{where}: module {m!r} is already in {owner[m]} (a module belongs to one assignment)")
        else:
            owner[m] = where
    _check_settings(where, a, problems)
    _check_late(where, a, base, problems)
    carried = tuple(m for m in a.get("carried") or [] if isinstance(m, str)) if release else ()
    return Assignment(
        name=name if isinstance(name, str) else f"#{i}", modules=tuple(m for m in mods if m in modules),
        title=a.get("title") or "", deadline=_text(a.get("deadline")), late_penalty=_text(a.get("late_penalty")),
        late_cap=_text(a.get("late_cap")), grace=_text(a.get("grace")),
        extensions=base / str(a["extensions"]) if "extensions" in a else None, if_no_time=a.get("if_no_time"),
        gpu_tests=a.get("gpu_tests", True) is not False, canvas_column=a.get("canvas_column"),
        gradescope_title=a.get("gradescope_title"), prairielearn_assessment=a.get("prairielearn_assessment"),
        carried=carried)


def _check_settings(where: str, a: dict[str, Any], problems: list[str]) -> None:
    """An assignment's GPU choice and its names elsewhere (title, Canvas column, Gradescope, PrairieLearn)."""
    if not isinstance(a.get("gpu_tests", True), bool):
        problems.append(f"{where}: gpu_tests must be true or false, got {a['gpu_tests']!r}")
    for key in ("title", "canvas_column", "gradescope_title", "prairielearn_assessment"):
        if key in a and not isinstance(a[key], str):
            problems.append(f"{where}: {key} must be a string")
    if isinstance(a.get("canvas_column"), str) and not re.fullmatch(r".+ \(\d+\)", a["canvas_column"]):
        problems.append(f"{where}: canvas_column must be Canvas's column name, 'Name (id)', e.g. "
                        f"'HW1 (12345)'; got {a['canvas_column']!r}")
    if isinstance(a.get("prairielearn_assessment"), str) and not _NAME.fullmatch(a["prairielearn_assessment"]):
        problems.append(f"{where}: prairielearn_assessment must be an assessment folder name: letters, digits, "
                        f"'-' and '_' (e.g. \"HW1\"), got {a['prairielearn_assessment']!r}")


def _with_carried(assignments: list[Assignment], modules: tuple[str, ...], root: Path,
                  problems: list[str]) -> list[Assignment]:
    """Each assignment with the modules it carries over (used by its modules, held by an earlier
    assignment); a module used but held by no assignment up to it is a mistake."""
    out, earlier = [], set()
    for a in assignments:
        carried: set[str] = set()
        for m in a.modules:
            for dep in sorted(dependencies(m, root, modules) - set(a.modules)):
                if dep in earlier:
                    carried.add(dep)
                else:
                    problems.append(f"assignment {a.name!r}: {m} uses {dep} (its solution imports it, or its probes "
                                    f"call it), which neither {a.name!r} nor an assignment before it holds: add {dep} "
                                    f"to {a.name!r} or to an earlier assignment")
        earlier |= set(a.modules)
        out.append(replace(a, carried=tuple(m for m in modules if m in carried)))
    return out


def load_course(root: Path | None = None) -> Course | None:
    """The validated course.toml (`KIT_COURSE`, else at the kit root), or None without one."""
    import tomllib

    path = course_path(root)
    if not path.is_file():
        return None
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CourseError(f"{path.name}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path.name}: cannot be read: {exc}") from None
    return parse_course(raw, path, discover_modules(root), root)


def default_assignment(modules: tuple[str, ...] | None = None) -> Assignment:
    """The whole kit as one assignment (no course.toml): every module, no late policy, GPU tests count."""
    return Assignment(name="", modules=tuple(modules if modules is not None else discover_modules()), default=True)


def resolve(name: str | None, root: Path | None = None) -> Assignment:
    """`--assignment NAME` (or none) as the `Assignment` a command works on; CourseError when the
    course.toml is bad, has no such assignment, or has several and no name was given."""
    course = load_course(root)
    if course is None:
        if name:
            raise CourseError(f"--assignment {name}: there is no course.toml (docs/INSTRUCTORS.md: Your course); without one "
                              "the kit is one assignment of every module")
        return default_assignment(discover_modules(root))
    names = ", ".join(a.name for a in course.assignments)
    if name:
        found = course.get(name)
        if found is None:
            raise CourseError(f"--assignment {name}: {course_path(root).name} has no assignment {name!r} (it has: "
                              f"{names}){_close(name, [a.name for a in course.assignments])}")
        return found
    if len(course.assignments) == 1:
        return course.assignments[0]
    raise CourseError(f"{course_path(root).name} has {len(course.assignments)} assignments: say which with "
                      f"--assignment ({names})")


def cli_assignment(name: str | None, console: Any, what: str) -> Assignment | None:
    """`resolve` for a command: None after printing the mistake (the command then exits 2)."""
    try:
        return resolve(name)
    except CourseError as exc:
        from grader.untrusted import MESSAGE_LIMIT, shown_markup

        console.print(f"[red]{what}: {shown_markup(exc, MESSAGE_LIMIT, newlines=True)}[/red]", highlight=False,
                      soft_wrap=True)
        return None


def marker(course_name: str, a: Assignment, *, carried: bool = True) -> str:
    """course.toml for a student release or a Gradescope bundle: that one assignment (and what it
    carries over), without its late policy (the staff apply it when they grade)."""
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["# This copy of the kit is one assignment of the course: `grader check` and `grader grade` here",
             "# grade its modules only (written by `grader release` / `grader gradescope`; do not edit).",
             "[course]", f"name = {q(course_name)}", "release = true", "", "[[assignment]]", f"name = {q(a.name)}"]
    if a.title:
        lines.append(f"title = {q(a.title)}")
    lines.append("modules = [" + ", ".join(q(m) for m in a.modules) + "]")
    if carried and a.carried:
        lines.append("carried = [" + ", ".join(q(m) for m in a.carried) + "]")
    lines.append(f"gpu_tests = {'true' if a.gpu_tests else 'false'}")
    if a.gradescope_title:
        lines.append(f"gradescope_title = {q(a.gradescope_title)}")
    return "\n".join(lines) + "\n"


def check_assignment(name: str | None) -> Assignment:
    """What `grader check` checks: the assignment named; else a course.toml's only assignment (a
    release's marker); else every module (no course.toml, or several assignments: the whole kit)."""
    if name:
        return resolve(name)
    course = load_course()
    if course is not None and len(course.assignments) == 1:
        return course.assignments[0]
    return default_assignment()
