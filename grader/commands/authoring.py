"""Changing the assignment: `grader new-module NAME` (`grader.authoring.scaffold` does the work).

The scaffold's next steps are printed after it, in the order docs/CONTRIBUTING.md (*Adding a
module*) walks through them; `grader validate --module NAME` fails until they are done.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from grader.commands.common import needs_instructor_repo


NEW_MODULE = """\
Scaffolds a module: its solution, stub, probe, public and hidden test, mutant and variant files and
a handout section, every placeholder marked `TODO(new-module)`, and prints the next steps; `grader
validate --module NAME` fails until they are written.  A name that is taken, not a lowercase
identifier, or one Python or the kit imports is refused (exit status 2, nothing written).  The
steps: docs/CONTRIBUTING.md, Adding a module.  Instructor repository only."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """`grader new-module`."""
    p = sub.add_parser("new-module", help="scaffold a new module: solution, stub, probe, public and hidden tests, "
                                          "mutants, variants and a handout section", description=NEW_MODULE)
    p.add_argument("name", help="the module's name: a lowercase identifier (e.g. layer_norm)")
    p.add_argument("--function", metavar="FN", help="the name of its first function (default: the module's)")
    p.set_defaults(func=cmd_new_module)


def cmd_new_module(args: argparse.Namespace, console: Console) -> int:
    from grader.authoring.scaffold import ScaffoldError, new_module
    from grader.testing.totals import min_mutants

    if (code := needs_instructor_repo("grader new-module", console)) is not None:
        return code
    try:
        written = new_module(args.name, args.function)
    except ScaffoldError as exc:
        console.print(f"[red]grader new-module: {exc}[/red] (nothing written)", highlight=False, soft_wrap=True)
        return 2
    name, fn = args.name, args.function or args.name
    console.print(f"new module `{name}`: wrote {', '.join(written)}", highlight=False, soft_wrap=True)
    if f"assignment/{name}.py" not in written:
        console.print("[yellow]nbgrader is not installed: run `grader stubs` once it is (pip install -e '.[dev]')[/yellow]")
    steps = [
        f"write the task in the docstrings of solutions/{name}.py and the reference between its markers, "
        "then `grader stubs`",
        f"write expected_{fn} and the cases in tests/public/test_{name}.py and tests/hidden/test_{name}.py, more tests "
        f"as you need (`pytest tests/public/test_{name}.py tests/hidden/test_{name}.py`)",
        f"write at least {min_mutants(name)} mutants in tests/mutants/{name}.py as edits of the reference "
        f"(`grader validate --mutant {name}:ID` says which tests catch one), correct variants in tests/variants/",
        f"write the handout section (handout.md, `{name}`); add {name} to an assignment of course.toml if you have one",
        f"`grader stubs` (the docs' totals), then `grader validate --module {name}`: it fails until all of this is "
        "done (every TODO(new-module) replaced)",
    ]
    console.print("next (docs/CONTRIBUTING.md, Adding a module):", highlight=False)
    for i, step in enumerate(steps, start=1):
        console.print(f"  {i}. {step}", highlight=False, soft_wrap=True)
    return 0
