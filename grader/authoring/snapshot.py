"""A snapshot of the kit for a long run (`grader validate`): what it reads, copied once at its start.

`grader validate` takes from a few minutes (one module) to most of an hour (all of them), and
people keep editing the tree meanwhile: a mutant file saved half-way, a test being written.
Every file validate reads while it runs comes from the copy made here, so one run sees one
state of the kit, whatever happens to the working tree during it:

* ``solutions/``, ``assignment/`` (the committed stubs, used where nbgrader is missing), the
  graded tests and what they import (``tests/public``, ``tests/hidden``, ``tests/probes``,
  ``tests/__init__.py``, ``tests/generators.py``), the mutants and the variants;
* ``grader/`` itself, with ``pyproject.toml`` (pytest's options: the plugin), ``handout.md``
  (the modules' order) and ``course.toml``: the pytest processes validate starts run in the copy
  (their working directory), so they import the copy's ``grader`` (the working directory comes
  first on ``sys.path``; the editable install's finder comes after it) and ``grader.KIT_ROOT``
  is the copy there.  The validate process itself keeps the ``grader`` it was started with.

Caches (``__pycache__``, ``.pytest_cache``, ``.hypothesis``) are not copied.  About 3 MB.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader import KIT_ROOT

#: What a validation run reads, relative to the kit root (folders copied whole).
SNAPSHOT_PATHS = ("grader", "pyproject.toml", "handout.md", "course.toml", "solutions", "assignment",
                  "tests/__init__.py", "tests/generators.py", "tests/probes", "tests/public", "tests/hidden",
                  "tests/mutants", "tests/variants")
_IGNORED = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis", "*.pyc")


def snapshot_kit(dest: Path, root: Path | None = None) -> Path:
    """Copy what a validation run reads from `root` (the kit) into `dest`; returns `dest`."""
    root = root or KIT_ROOT
    dest.mkdir(parents=True, exist_ok=True)
    for rel in SNAPSHOT_PATHS:
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=_IGNORED, dirs_exist_ok=True)
        elif src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest
