"""The kit's mutants (`grader.authoring.mutants`): one file per module, edits of the reference where an edit can say it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any


def reference_default(qualname: str, parameter: str) -> Any:
    """The default of `parameter` of `qualname` in the reference solution of the calling
    tests/mutants/<module>.py, for a mutant that uses the reference's value without copying it (an edit
    that hard-codes the default, say).  Read from the solutions/ beside the caller's tests/ folder: the
    snapshot's, when `grader validate` loads the file from its copy of the kit."""
    from grader.rules.static import find_definition

    caller = Path(sys._getframe(1).f_globals["__file__"]).resolve()
    source = (caller.parents[2] / "solutions" / caller.name).read_text(encoding="utf-8")
    node = find_definition(ast.parse(source), qualname)
    if node is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise LookupError(f"solutions/{caller.name} defines no function {qualname}")
    args = node.args
    positional = args.posonlyargs + args.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    if parameter not in defaults:
        raise LookupError(f"{qualname} of solutions/{caller.name} has no default for {parameter}")
    return ast.literal_eval(defaults[parameter])
