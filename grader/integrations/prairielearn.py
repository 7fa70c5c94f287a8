"""`grader prairielearn OUT`: the kit as a PrairieLearn course's externally graded questions.

PrairieLearn (docs/externalGrading.md in its repository) grades a question marked
``"gradingMethod": "External"`` by starting the question's Docker image with its ``entrypoint``,
the student's files in ``/grade/student``, the question's ``tests/`` folder in ``/grade/tests``,
the question's data in ``/grade/data/data.json``; the entrypoint must exit 0 having written
``/grade/results/results.json`` (`grader.integrations.prairielearn_grade` writes it).

The fragment an instructor copies into their course repository (`build_fragment`)::

    OUT/README.md                                  what goes where, how to build and push the image
    OUT/questions/<prefix>/<module>/info.json      external grading on, the image, its timeout
    OUT/questions/<prefix>/<module>/question.html  the handout's section, an editor pre-filled with
                                                   the stub (and an upload for the modules it uses)
    OUT/questions/<prefix>/<module>/<module>.py    the stub the editor starts from
    OUT/questions/<prefix>/<module>/tests/         question.json (which module, its points, the
                                                   timeout), the module's hidden tests, and the
                                                   assignment's marker course.toml
    OUT/courseInstances/COURSE_INSTANCE/assessments/<tid>/infoAssessment.json   one zone, a question
                                                   per module at its points (GPU tests left out)
    OUT/grader-image/Dockerfile, kit/              the image: the grader, public tests and probes

The image is public (PrairieLearn pulls it from Docker Hub), so it holds what a student release
holds plus the grader: no solutions, no hidden tests, no mutants (`grader.course.stubs.audit_release`
checks the folder).  The hidden tests travel in each question's ``tests/`` folder, which stays in
the (private) course repository.  PrairieLearn has no GPU: the GPU tests are left out of every
question's points, as `grader gradescope --no-gpu` does.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, kit_version

#: What PrairieLearn allows as a grading timeout (docs/externalGrading.md: "cannot exceed 600 seconds").
MAX_TIMEOUT = 600
DEFAULT_TIMEOUT = 300
#: Paths of the kit that go into the image (under grader-image/kit/): a student release's, plus the grader.
IMAGE_PATHS = ("grader", "tests/__init__.py", "tests/generators.py", "tests/probes", "tests/public",
               "pyproject.toml", "README.md", "handout.md")
ENTRYPOINT = "/opt/kit/prairielearn-entrypoint"
QUESTION_FILE = "question.json"
_NS = uuid.UUID("6f1c2a9e-3b1d-4c52-9a43-5d0c1e7b2f60")  # uuid5 namespace: the same fragment, the same uuids
_HIDDEN_IMPORT = re.compile(r"\btests\.hidden\.([A-Za-z_][A-Za-z0-9_]*)")
_SECTION = re.compile(r"^## (\d+)\. `([a-z_0-9]+)`(.*)$", re.MULTILINE)

DOCKERFILE = """\
# The PrairieLearn external-grading image of the resource-accounting kit {version}.
# Build and push it from this folder (PrairieLearn pulls images from Docker Hub):
#   docker build -t {image} . && docker push {image}
# kit/ holds the grader, the public tests and probes: no solutions, no hidden tests (each question
# brings its hidden tests in its tests/ folder, from the course repository).
ARG BASE=python:3.11-slim-bookworm
FROM ${{BASE}}
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1{require_env}
# the sandbox's layers: bubblewrap (where the container allows namespaces), libseccomp (the filter)
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \\
    && rm -rf /var/lib/apt/lists/*
# a base image that already has torch keeps it (--system-site-packages); else the CPU build
RUN python3 -m venv --system-site-packages /opt/kit-venv \\
    && (/opt/kit-venv/bin/python -c "import torch" 2>/dev/null \\
        || /opt/kit-venv/bin/pip install "torch==${{TORCH_VERSION}}" --index-url "${{TORCH_INDEX_URL}}")
COPY kit /opt/kit
RUN /opt/kit-venv/bin/pip install /opt/kit && chmod 0755 {entrypoint} \\
    && cd /opt/kit && /opt/kit-venv/bin/python -m grader.cli doctor
ENTRYPOINT ["{entrypoint}"]
"""

ENTRYPOINT_SH = """\
#!/bin/sh
# PrairieLearn runs this per submission: grade /grade/student with the question's tests and write
# /grade/results/results.json (grader prairielearn --grade).  It always exits 0: PrairieLearn reads
# results.json only from a job that exited 0; a submission that cannot be graded says so in it.
ROOT="${{1:-/grade}}"
PY="${{KIT_PYTHON:-/opt/kit-venv/bin/python}}"
cd "$(dirname "$0")" || exit 0
"$PY" -m grader.cli prairielearn --grade "$ROOT" ${{KIT_PL_REQUIRE:+--require "$KIT_PL_REQUIRE"}}
if [ ! -s "$ROOT/results/results.json" ]; then
  mkdir -p "$ROOT/results"
  MSG="The autograder could not grade this submission; please contact the course staff."
  printf '{{"gradable": false, "message": "%s"}}\\n' "$MSG" > "$ROOT/results/results.json"
fi
exit 0
"""


class FragmentError(ValueError):
    """The fragment cannot be written (OUT not empty, a bad option); the message says why."""


def question_uuid(course: str, assignment: str, what: str) -> str:
    """A stable uuid: regenerating the fragment keeps each question PrairieLearn already knows."""
    return str(uuid.uuid5(_NS, f"{course}\0{assignment}\0{what}"))


def handout_section(module: str, root: Path = KIT_ROOT) -> str:
    """The handout's section of `module` (its ``## N. `module` `` header to the next ``## ``), with the
    header's points phrase replaced (PrairieLearn's points leave the GPU tests out)."""
    text = (root / "handout.md").read_text(encoding="utf-8")
    starts = [(m.start(), m.group(2), m.end()) for m in _SECTION.finditer(text)]
    for i, (start, name, header_end) in enumerate(starts):
        if name == module:
            end = text.find("\n## ", header_end)
            body = text[header_end: end if end >= 0 else len(text)].strip("\n")
            title = text[start:header_end].split(":", 1)[-1].split(" (")[0].strip()
            return f"## `{module}`: {title}\n\n{body}\n"
    raise FragmentError(f"handout.md has no section for {module}")


def hidden_files(module: str, root: Path = KIT_ROOT) -> list[Path]:
    """tests/hidden/test_<module>.py and the hidden helpers it imports (``tests.hidden.X``), transitively."""
    hidden = root / "tests" / "hidden"
    todo, seen = [hidden / f"test_{module}.py"], []
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        todo += [hidden / f"{n}.py" for n in _HIDDEN_IMPORT.findall(path.read_text(encoding="utf-8"))]
    return ([hidden / "__init__.py"] if (hidden / "__init__.py").is_file() else []) + seen


def module_points(module: str, root: Path = KIT_ROOT) -> int:
    """The module's points on PrairieLearn: public and hidden, its GPU tests left out (no GPU there)."""
    from grader.testing.totals import module_totals

    return module_totals(module, root).without_gpu().points


def question_html(module: str, uses: list[str], points: int, stub_name: str) -> str:
    """question.html: the handout's section (PrairieLearn's <markdown> tag), the editor, the results."""
    section = handout_section(module)
    if "{{" in section or "}}" in section or "</markdown>" in section:
        raise FragmentError(f"handout.md's section on {module} holds '{{{{', '}}}}' or '</markdown>', which "
                            "question.html (a mustache template) cannot carry as text")
    upload = ""
    if uses:
        names = ", ".join(f"{m}.py" for m in uses)
        upload = (f"\n  <p>This module uses your earlier work: upload your own {names} (they are not graded "
                  f"here).</p>\n  <pl-file-upload file-names=\"{names}\"></pl-file-upload>\n")
    return f"""\
<pl-question-panel>
  <markdown>
{section}
  </markdown>
  <p>Fill in <code>{module}.py</code> below ({points} points: public and hidden tests; the GPU tests of
  the handout are not graded here, PrairieLearn has no GPU).</p>
  <pl-file-editor file-name="{module}.py" ace-mode="ace/mode/python" source-file-name="{stub_name}">
  </pl-file-editor>
{upload}</pl-question-panel>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_question(qdir: Path, module: str, *, course: str, assignment: Any, image: str, timeout: int,
                   marker: str | None) -> int:
    """One question of the fragment (see the module docstring); returns its points."""
    from grader.course.modules import dependencies
    from grader.course.stubs import make_stub

    points = module_points(module)
    uses = sorted(dependencies(module))  # their files come with the submission (the student's own)
    stub_name = f"initial_{module}.py"
    qdir.mkdir(parents=True)
    solution = KIT_ROOT / "solutions" / f"{module}.py"
    (qdir / stub_name).write_text(make_stub(solution.read_text(encoding="utf-8"), str(solution)), encoding="utf-8")
    (qdir / "question.html").write_text(question_html(module, uses, points, stub_name), encoding="utf-8")
    _write_json(qdir / "info.json", {
        "uuid": question_uuid(course, assignment.name, module),
        "type": "v3",
        "title": f"{module}" + (f" ({assignment.label})" if not assignment.default else ""),
        "topic": course or "PyTorch primitives and resource accounting",
        "tags": ["resource-accounting-kit", f"kit-{kit_version()}", module],
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {"image": image, "entrypoint": ENTRYPOINT, "timeout": timeout,
                                   "enableNetworking": False},
    })
    tests = qdir / "tests"
    _write_json(tests / QUESTION_FILE, {"module": module, "files": [f"{module}.py"] + [f"{m}.py" for m in uses],
                                        "points": points, "timeout": timeout, "kit_version": kit_version(),
                                        "assignment": "" if assignment.default else assignment.name})
    for path in hidden_files(module):
        (tests / "hidden").mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, tests / "hidden" / path.name)
    if marker is not None:
        (tests / "course.toml").write_text(marker, encoding="utf-8")
    return points


#: The image refuses to grade below Landlock unless the fragment is written with ``--require rlimits``:
#: under rlimits alone (Docker's default profile, a host kernel without Landlock) the student's code
#: runs with the file system the grading job has, /grade/tests (the hidden tests) included.
DEFAULT_REQUIRE = "landlock"


def write_image(out: Path, image: str, require: str | None) -> Path:
    """grader-image/: the Dockerfile, kit/ (`IMAGE_PATHS`) and the entrypoint; refused if kit/ would
    hold instructor material (`grader.course.stubs.audit_release`)."""
    from grader.course.stubs import audit_release

    kit = out / "kit"
    copy_image_paths(kit)
    (kit / "prairielearn-entrypoint").write_text(ENTRYPOINT_SH.format(), encoding="utf-8")
    (kit / "prairielearn-entrypoint").chmod(0o755)
    leaked = audit_release(kit)
    if leaked:
        raise FragmentError("the grader image would leak instructor material:\n" + "\n".join(leaked))
    require_env = f"\nENV KIT_PL_REQUIRE={require}" if require else ""
    (out / "Dockerfile").write_text(DOCKERFILE.format(version=kit_version(), image=image, entrypoint=ENTRYPOINT,
                                                      require_env=require_env), encoding="utf-8")
    return out / "Dockerfile"


def assessment(course: str, assignment: Any, number: int, questions: list[tuple[str, int]]) -> dict[str, Any]:
    """infoAssessment.json: a homework of one zone, a question per module at its points."""
    return {
        "uuid": question_uuid(course, assignment.name, "\0assessment"),
        "type": "Homework",
        "title": assignment.title or assignment.name or "PyTorch primitives and resource accounting",
        "set": "Homework",
        "number": str(number),
        "zones": [{"title": assignment.label if not assignment.default else "Modules",
                   "questions": [{"id": qid, "points": points} for qid, points in questions]}],
    }


def build_fragment(out: Path, assignment: Any, course: str = "", *, number: int = 1, image: str = "",
                   timeout: int = DEFAULT_TIMEOUT, require: str = DEFAULT_REQUIRE) -> dict[str, Any]:
    """Write the fragment for `assignment` (a `grader.course.config.Assignment`) of course `course` to `out`
    (which must not exist or be empty); returns what was written: questions (id, points), the
    assessment's tid and the image's name.  The image grades nothing below the sandbox level
    `require` (`DEFAULT_REQUIRE` unless the instructor asks for ``rlimits``)."""
    from grader.course.config import marker as course_marker

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FragmentError(f"{out} exists and is not an empty folder")
    if not 1 <= timeout <= MAX_TIMEOUT:
        raise FragmentError(f"--timeout {timeout}: PrairieLearn allows 1 to {MAX_TIMEOUT} seconds")
    image = image or f"replace-me/resource-accounting-grader:{kit_version()}"
    if not re.fullmatch(r"[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?", image):
        raise FragmentError(f"--image {image!r}: not a Docker image name (lowercase name[:tag])")
    prefix = assignment.name if not assignment.default else "kit"
    tid = (assignment.prairielearn_assessment or assignment.name) if not assignment.default else "kit"
    marker = None if assignment.default else course_marker(course, assignment)
    questions = []
    for module in assignment.modules:
        qid = f"{prefix}/{module}"
        points = write_question(out / "questions" / prefix / module, module, course=course, assignment=assignment,
                                image=image, timeout=timeout, marker=marker)
        questions.append((qid, points))
    _write_json(out / "courseInstances" / "COURSE_INSTANCE" / "assessments" / tid / "infoAssessment.json",
                assessment(course, assignment, number, questions))
    write_image(out / "grader-image", image, require)
    (out / "README.md").write_text(README.format(image=image, prefix=prefix, tid=tid, version=kit_version(),
                                                 timeout=timeout), encoding="utf-8")
    return {"questions": questions, "tid": tid, "image": image}


README = """\
# PrairieLearn questions of the resource-accounting kit {version}

Written by `grader prairielearn`; docs/PRAIRIELEARN.md in the kit explains each step.

1. Copy `questions/{prefix}/` into your course repository's `questions/`, and
   `courseInstances/COURSE_INSTANCE/assessments/{tid}/` into your course instance's `assessments/`.
   Each question's `tests/` folder holds its hidden tests: keep the course repository private.
2. Build and push the grader image: `cd grader-image && docker build -t {image} . && docker push {image}`
   (or rebuild this fragment with `--image YOURNAME/IMAGE:TAG`: every info.json names it).
3. Each question is graded in that image by `grader prairielearn --grade /grade`, within {timeout} s.
"""


def copy_image_paths(kit: Path) -> None:
    """What the grader image holds of this kit (`IMAGE_PATHS`, instructor material left out), copied to `kit`."""
    from grader.course.stubs import EXCLUDED_NAMES

    for rel in IMAGE_PATHS:
        src = KIT_ROOT / rel
        if src.is_dir():
            shutil.copytree(src, kit / rel, ignore=shutil.ignore_patterns(*EXCLUDED_NAMES))
        elif src.is_file():
            (kit / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, kit / rel)
