"""The student release of one assignment of a course (`grader release OUT --assignment NAME`).

What differs from the whole kit's release (`grader.authoring.release.build_release` does the rest: the
grader package, the benchmarks the handout names, .gitignore, the audit):

* ``assignment/``: the stubs of its modules, and of the modules it *carries over* (used by its
  modules, held by an earlier assignment: the student copies their own earlier work there; they
  are not graded again, `grader.course.config`);
* ``tests/public/``: its modules' public tests only; ``tests/probes/``: its modules' probes and the
  probe helpers (``_*.py``) that those, the public tests or the shared ``tests/*.py`` import
  (`grader.course.config.probe_files`);
* ``handout.md``: the introduction as it is, a paragraph naming the assignment, then its modules'
  sections only, renumbered 1..n; where its GPU tests do not count, each section's points without
  the GPU ones;
* ``README.md``: the student README, titled with the assignment, its modules counted and named,
  its deadline, what it carries over;
* ``course.toml``: the marker (`grader.course.config.marker`), so `grader check`/`grader grade` there grade
  this assignment; the workflow's `grader grade` names it.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.course.config import Assignment

_SECTION = re.compile(r"^## (\d+)\. `([a-z_0-9]+)`", re.MULTILINE)
_COUNT = re.compile(r"\((?:\w+|\d+) modules\)")


def _words(names: tuple[str, ...]) -> str:
    quoted = [f"`{m}`" for m in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _without_gpu(header: str) -> str:
    """A section header's points less the GPU ones: "(16 public points, 6 of them on the GPU; hidden
    tests add 8 (2 on the GPU))" -> "(10 public points; hidden tests add 6)" (`grader.testing.totals`, which
    `grader stubs` writes the headers with)."""
    from grader.testing.totals import without_gpu_phrase

    return without_gpu_phrase(header)


def about(a: Assignment, course: str) -> str:
    """The paragraph that says which assignment this release is."""
    lines = [f"**This release is {a.label}**" + (f" ({course})" if course else "") + ": "
             f"{len(a.modules)} of the course's modules, {_words(a.modules)}, numbered 1 to {len(a.modules)} below."]
    if a.deadline:
        lines.append(f"Deadline: {a.deadline}" + (f" (grace {a.grace})" if a.grace else "")
                     + (f"; late work loses {a.late_penalty}" + (f", at most {a.late_cap}" if a.late_cap else "")
                        if a.late_penalty and not a.late_penalty.startswith("0%") else "") + ".")
    if not a.gpu_tests:
        lines.append("The GPU tests of these modules are not part of this assignment: they are left out of its "
                     "points (the points below are without them).")
    if a.carried:
        lines.append(f"It uses {_words(a.carried)} from an earlier assignment: copy your own "
                     f"{', '.join(f'`{m}.py`' for m in a.carried)} into `assignment/` (they are not graded again).")
    return "\n".join(lines)


def handout_for(text: str, a: Assignment, course: str) -> str:
    """The handout of the assignment: the introduction, `about`, its sections renumbered 1..n."""
    starts = [(m.start(), m.group(2)) for m in _SECTION.finditer(text)]
    if not starts:
        return text
    intro = text[:starts[0][0]]
    sections = {name: text[start:(starts[i + 1][0] if i + 1 < len(starts) else len(text))]
                for i, (start, name) in enumerate(starts)}
    title, _, rest = intro.partition("\n")
    out = [f"{title}\n\n{about(a, course)}\n{rest}"]
    for number, module in enumerate(a.modules, start=1):
        body = sections.get(module, f"## {number}. `{module}`\n\n(no section in the handout)\n\n")
        head, _, tail = body.partition("\n")
        head = _SECTION.sub(f"## {number}. `{module}`", head, count=1)
        out.append((head if a.gpu_tests else _without_gpu(head)) + "\n" + tail)
    return "".join(out).rstrip("\n") + "\n"


def readme_for(text: str, a: Assignment, course: str) -> str:
    """The student README for the assignment: titled with it, its modules counted and named."""
    from grader.authoring.totals_docs import plain
    from grader.testing.totals import counted

    title, _, rest = plain(text).partition("\n")

    rest = _COUNT.sub(f"({counted(len(a.modules), 'module')} in this assignment: {', '.join(a.modules)})", rest, count=1)
    return f"# {a.label}" + (f" ({course})" if course else "") + f"\n\n{about(a, course)}\n" + rest


def write_assignment_release(out: Path, a: Assignment, course: str, root: Path) -> list[str]:
    """The assignment's own files into the release folder `out` (see the module docstring); returns
    the benchmarks its handout names (they ship too)."""
    import shutil

    from grader.course.config import marker
    from grader.course.modules import probe_files
    from grader.course.stubs import RELEASE_PATHS, generate_assignment, handout_benchmarks

    folder = out / "assignment"
    folder.mkdir(parents=True, exist_ok=True)
    keep = {"__init__.py", *(f"{m}.py" for m in (*a.modules, *a.carried))}
    for f in generate_assignment(root / "solutions"):
        if f.name in keep:
            (folder / f.name).write_text(f.text)
    public = [root / "tests" / "public" / f"test_{m}.py" for m in a.modules]
    shipped = [root / r for r in RELEASE_PATHS if r.startswith("tests/") and r.endswith(".py")]  # tests/generators.py
    for path in [root / "tests" / "public" / "__init__.py", *public,
                 *probe_files(a.modules, root, also=[*public, *shipped])]:
        if path.is_file():
            dest = out / path.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
    handout = handout_for((root / "handout.md").read_text(encoding="utf-8"), a, course)
    (out / "handout.md").write_text(handout, encoding="utf-8")
    readme = readme_for((root / "docs" / "STUDENT_README.md").read_text(encoding="utf-8"), a, course)
    (out / "README.md").write_text(readme, encoding="utf-8")
    (out / "course.toml").write_text(marker(course, a), encoding="utf-8")
    return handout_benchmarks(handout)


def name_in_workflow(path: Path, a: Assignment) -> None:
    """The release's workflow grades the assignment by name (`grader grade ... --assignment NAME`)."""
    text = path.read_text(encoding="utf-8")
    named = text.replace("grader grade submission ", f"grader grade submission --assignment {a.name} ")
    if named == text:
        raise RuntimeError(f"{path}: no `grader grade submission` step to name the assignment in")
    path.write_text(f"# The workflow of {a.label}\n" + named, encoding="utf-8")
