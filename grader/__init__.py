"""The kit's trusted machinery: the grader, in packages named by their concerns.

Nothing in this package is student code; the code under test is reached only through a probe
backend (`grader.boundary`) and only data comes back from it.  `LAYERS` lists the top level, top
down; each package's docstring says what it owns.  A package or module imports only those after
it (tests/kit/test_imports.py), and any of them may import this package itself (`MODULES`,
`KIT_ROOT`, `kit_version`), which imports only `grader.course.modules`.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

#: Every module of this copy of the kit: discovered (`grader.course.modules.discover_modules`: a module is
#: `solutions/NAME.py` with its probes and tests), in the handout's order, else course.toml's.  A
#: command working on one assignment of a course takes `grader.course.config.resolve(...)`'s modules instead.
from grader.course.modules import discover_modules as _discover  # noqa: E402

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


#: The grader's top level, top down: each package (or module) imports only those after it.
LAYERS = (
    "cli",           # the `grader` command: the parser and the dispatch
    "commands",      # each subcommand family; the notebook's check cell
    "cluster",       # shards, their combination, Slurm, GitHub Actions matrix jobs
    "authoring",     # release, validate, new-module, mutants, the docs' totals
    "integrations",  # Gradescope, GitHub, Classroom, Canvas, nbgrader's gradebook, PrairieLearn
    "batch",         # `grader grade`: the pool of trusted workers, one submission after another
    "reports",       # the class report, the feedback pages, similarity
    "results",       # the results folder, results.json, grades.csv, merge
    "intake",        # a submission found, unpacked within caps, staged
    "notebooks",     # the notebook edition: cells, the notebooks, a handed-in notebook read back
    "testing",       # the graded tests' API, the pytest plugin, scores and totals
    "sandbox",       # where student code runs: the launchers, the lock-down, the worker
    "boundary",      # the probe boundary: backends, serving, the data-only wire format
    "rules",         # static rules over the submission's source, runtime tripwires
    "course",        # modules, course.toml, the late policy's rules, the stubs
    "console",       # the console commands print to
    "files",         # files written whole, never half
    "untrusted",     # the one capping and escaping function for what a submission controls
)
