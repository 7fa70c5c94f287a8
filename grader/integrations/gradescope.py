"""`grader gradescope OUT.zip`: a Gradescope autograder bundle.

Gradescope unpacks the zip into /autograder/source, runs `setup.sh` once when the image is
built, then `run_autograder` per submission with the student's files in
/autograder/submission; the score must end up in /autograder/results/results.json.  The
bundle carries the instructor kit without the reference solutions, mutants or kit
self-tests (hidden tests included: they never reach students, Gradescope runs them).

`AUTOGRADER_ROOT` (default /autograder) and `KIT_PYTHON` let the kit's own tests run the
bundle in a temporary folder laid out like /autograder.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

from grader import KIT_ROOT

BUNDLE_PATHS = ("grader", "tests/__init__.py", "tests/generators.py", "tests/probes", "tests/public", "tests/hidden",
                "pyproject.toml", "README.md", "CHANGELOG.md", "handout.md")
EXCLUDED = {"__pycache__", ".pytest_cache", ".hypothesis"}

SETUP_SH = """\
#!/usr/bin/env bash
# Runs once when Gradescope builds the autograder image (Ubuntu, as root).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
apt-get update
apt-get install -y python3 python3-venv python3-pip bubblewrap libseccomp2
python3 -m venv "$ROOT/venv"
"$ROOT/venv/bin/pip" install torch==2.13.0 --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
"$ROOT/venv/bin/pip" install "$ROOT/source/kit"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Runs per submission.  Grades /autograder/submission (the student's files, any layout the
# grader accepts) in the sandbox and writes /autograder/results/results.json.
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="${KIT_PYTHON:-$ROOT/venv/bin/python}"
OUT="$(mktemp -d)"
mkdir -p "$ROOT/results"
cd "$ROOT/source/kit"
# which isolation layers this container allows (Gradescope's Docker refuses namespaces: landlock),
# printed into the instructor-visible log only
"$PY" -m grader.cli doctor >&2 || true
# results: $OUT/students/<id>/results.json (what the student sees); $OUT/instructor/ stays here
"$PY" -m grader.cli grade "$ROOT/submission" --out "$OUT" -j 1 --no-progress ${KIT_GRADE_ARGS:-}
doc="$(ls "$OUT"/students/*/results.json 2>/dev/null | head -n 1)"
if [ -n "$doc" ]; then
  cp "$doc" "$ROOT/results/results.json"
else
  printf '{"score": 0, "output": "The autograder could not grade this submission; please contact the course staff.", "tests": []}\\n' > "$ROOT/results/results.json"
fi
"""


def _add_tree(zf: zipfile.ZipFile, src: Path, arc: str) -> None:
    if src.is_file():
        zf.write(src, arc)
        return
    for path in sorted(src.rglob("*")):
        if path.is_file() and not (set(path.relative_to(src).parts) & EXCLUDED):
            zf.write(path, f"{arc}/{path.relative_to(src).as_posix()}")


def _add_script(zf: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16
    zf.writestr(info, text)


def build_bundle(out: Path) -> Path:
    """Write the autograder zip: setup.sh and run_autograder at the top, the kit under kit/."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_script(zf, "setup.sh", SETUP_SH)
        _add_script(zf, "run_autograder", RUN_AUTOGRADER)
        for rel in BUNDLE_PATHS:
            if (KIT_ROOT / rel).exists():
                _add_tree(zf, KIT_ROOT / rel, f"kit/{rel}")
    return out
