"""The student release (`grader release OUT`): the stubs, the public tests and probes, the handout.

The stubs and what else ships (`RELEASE_PATHS`, the benchmarks the handout names) are
`grader.course.stubs`; one assignment's release of a course, `grader.authoring.course_release`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, MODULES
from grader.course.stubs import (EXCLUDED_NAMES, RELEASE_PATHS, audit_release, handout_benchmarks,  # noqa: F401
                                 solution_blocks, write_assignment)

#: The student release's .gitignore: the environment, caches, and every folder the student README
#: tells students to create (`grader grade ... --out results-cpu`, `grader merge ... --out results`).
STUDENT_GITIGNORE = """\
# Python environment and caches
.venv/
__pycache__/
*.pyc
*.egg-info/
.pytest_cache/
.hypothesis/
# grading output (README: grader grade --out results-cpu / results-gpu, grader merge --out results)
/results/
/results-cpu/
/results-gpu/
/results-*/
# grader check --json FILE / --html FILE
/check*.json
/feedback*.html
# nbgrader gradebook (grader merge --gradebook sqlite:///gradebook.db)
*.db
"""


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*EXCLUDED_NAMES), dirs_exist_ok=True)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def build_release(out: Path, assignment: Any = None, course: str = "") -> Path:
    """Write the student release to `out`: stubs, public tests and probes, handout, README.

    No solutions, no hidden tests, no mutants, no kit self-tests.  `assignment` (a
    `grader.course.config.Assignment` of course `course`): that assignment's release only
    (`grader.authoring.course_release`); None or the default assignment: the whole kit.
    """
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    one = assignment is not None and not assignment.default
    out.mkdir(parents=True, exist_ok=True)
    if one:
        from grader.authoring.course_release import write_assignment_release

        benchmarks = write_assignment_release(out, assignment, course, KIT_ROOT)
        # its own benchmarks only (those its handout names), and not the kit's history (CHANGELOG.md)
        shared = [r for r in RELEASE_PATHS if r not in ("tests/probes", "tests/public", "handout.md", "CHANGELOG.md")
                  and not r.startswith("bench/")]
    else:
        write_assignment(out / "assignment")
        benchmarks, shared = handout_benchmarks(), list(RELEASE_PATHS)
        shutil.copy2(KIT_ROOT / "docs" / "STUDENT_README.md", out / "README.md")
    for rel in (*shared, *benchmarks):
        src = KIT_ROOT / rel
        if src.exists():
            _copy(src, out / rel)
    from grader.authoring.totals_docs import plain

    for doc in out.rglob("*.md"):  # students read the docs as rendered: the kit's markers go, their values stay
        doc.write_text(plain(doc.read_text(encoding="utf-8")), encoding="utf-8")
    from grader.notebooks.build import colab_setting, write_notebooks

    # the notebook edition (docs/NOTEBOOKS.md): notebooks/<module>.ipynb, from the release's own handout
    write_notebooks(out, (out / "handout.md").read_text(encoding="utf-8"),
                    assignment.modules if one else MODULES, colab_setting())
    (out / ".gitignore").write_text(STUDENT_GITIGNORE)
    from grader.integrations.github import WORKFLOW_PATH, write_workflow

    write_workflow(out)  # the student repo previews its score on each push (CPU, GitHub's runners)
    if one:
        from grader.authoring.course_release import name_in_workflow

        name_in_workflow(out / WORKFLOW_PATH, assignment)
    leaked = audit_release(out)
    if leaked:
        raise RuntimeError("the release would leak instructor material:\n" + "\n".join(leaked))
    return out
