"""The kit's trusted machinery: targets, probe backends, scoring, reports, release, validation.

Nothing in this package is student code; the code under test is reached only through a
probe backend (see `grader.backends`) and only data comes back from it.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

#: Every module of this copy of the kit: discovered (`grader.course.discover_modules`: a module is
#: `solutions/NAME.py` with its probes and tests), in the handout's order, else course.toml's.  A
#: command working on one assignment of a course takes `grader.course.resolve(...)`'s modules instead.
from grader.course import discover_modules as _discover  # noqa: E402

MODULES: tuple[str, ...] = _discover()

#: The repository root (the folder holding pyproject.toml, tests/ and grader/).
KIT_ROOT: Path = Path(__file__).resolve().parent.parent


def kit_version() -> str:
    """The kit version from pyproject.toml (installed metadata first, the file as fallback)."""
    try:
        return version("resource-accounting-kit")
    except PackageNotFoundError:  # running from a checkout without `pip install -e .`
        import tomllib

        with open(KIT_ROOT / "pyproject.toml", "rb") as f:
            return tomllib.load(f)["project"]["version"]
