"""Which implementation a run targets, and how the serving side imports it.

A target is a folder of module files (`memory.py`, `views.py`, ...): `solutions/`,
`assignment/`, or a student's submission.  It is imported as a package under a private,
path-derived name so that relative imports between modules (`from .memory import ...`)
work and two targets never collide in `sys.modules`.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import types
from pathlib import Path

from grader import KIT_ROOT, MODULES

NAMED_TARGETS = ("solutions", "assignment")


class TargetError(Exception):
    """A target that cannot be resolved to a folder of module files."""


def default_target() -> str:
    """`solutions` in the instructor repo, `assignment` in the student release."""
    return "solutions" if (KIT_ROOT / "solutions").is_dir() else "assignment"


def resolve_target(target: str | Path | None) -> Path:
    """Turn `solutions`, `assignment` or a path into the folder holding the module files.

    A path may point at the module folder itself or at a copy of the release that holds an
    `assignment/` folder.
    """
    if target is None:
        target = default_target()
    if str(target) in NAMED_TARGETS:
        folder = KIT_ROOT / str(target)
    else:
        folder = Path(target).expanduser().resolve()
        if (folder / "assignment").is_dir() and not any((folder / f"{m}.py").exists() for m in MODULES):
            folder = folder / "assignment"
    if not folder.is_dir():
        raise TargetError(f"target {target!s}: no such folder ({folder})")
    return folder.resolve()


class Implementation:
    """The code under test as seen by probes: `impl.memory`, `impl.views`, ...

    Modules are imported lazily, so a module that fails to import fails only the probes
    that use it.
    """

    def __init__(self, folder: Path):
        self.folder = folder.resolve()
        digest = hashlib.sha1(str(self.folder).encode()).hexdigest()[:12]
        self.package = f"_kit_target_{digest}"
        if self.package not in sys.modules:
            pkg = types.ModuleType(self.package)
            pkg.__path__ = [str(self.folder)]  # a namespace-like package over the folder
            pkg.__file__ = None
            sys.modules[self.package] = pkg

    def __getattr__(self, module: str) -> types.ModuleType:
        if module not in MODULES:
            raise AttributeError(f"the assignment has no module {module!r}")
        return importlib.import_module(f"{self.package}.{module}")
