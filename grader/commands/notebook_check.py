"""What a module's notebook runs in the student's kernel: its setup cell and its check cell.

`check(module)` grades the notebook as it stands in the kernel: for each answer cell of the release
(`grader.notebooks.cells`), the last cell the student ran that defines its function or class (IPython's
input history, so it works the same in Jupyter, Colab and a headless kernel); an answer never run is
the stub.  Those answers, after the release's locked cells, make the module file; it is staged
exactly as `grader check` stages a submission (`grader.intake.stage`) with the modules it uses
(a ``<module>.ipynb`` saved next to the notebook, else ``assignment/<module>.py``), the public tests
run (`grader.testing.suite_process`, a pytest subprocess), and the result is shown as `grader check` shows it
(`grader.testing.check_table.render_check`).  Where CUDA is present the GPU tests run too, as a preview: the
grade of record is the course staff's run.
"""

from __future__ import annotations

import ast
import sys
import tempfile
from pathlib import Path
from typing import Any

from grader import KIT_ROOT
from grader.notebooks.cells import Cell, join, load_layout

GPU_PREVIEW = ("GPU tests ran on this machine's GPU ({name}): their result is a preview; the grade of record is "
               "the course staff's run.")
GPU_PENDING = "No CUDA here: GPU tests are listed as pending (graded on a GPU machine by the course staff)."


def setup(module: str, release: str) -> None:
    """The setup cell: `assignment` importable (the locked cells import the modules they use from
    it), and a word when this notebook was made for another release of the kit."""
    from grader import kit_version

    if str(KIT_ROOT) not in sys.path:
        sys.path.insert(0, str(KIT_ROOT))
    layout = load_layout()
    if module not in layout:
        print(f"This copy of the kit has no module {module!r}: open the notebook from your course's release.")
        return
    if layout[module][0] != release:
        print(f"This notebook was made for another release of {module} than this kit's (kit {kit_version()}): "
              "get the notebook of this release, or copy your answers into it.")
        return
    print(f"Kit {kit_version()} ready: write your answers, run them, then run the check cell at the end.")


def _defines(source: str) -> set[str]:
    """The top-level functions and classes a cell's source defines (none when it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def answers_from_history(history: list[str], cells: list[Cell]) -> list[str]:
    """The module text of each cell: a locked cell's own, an answer cell's from the last entry of
    `history` (the sources run, oldest first) that defines its name, else its stub."""
    latest: dict[str, str] = {}
    names = {c.name for c in cells if c.kind == "answer"}
    for source in history:
        for name in _defines(source) & names:
            latest[name] = source
    return [latest.get(c.name, c.source) if c.kind == "answer" else c.source for c in cells]


def _history() -> list[str]:
    try:
        from IPython import get_ipython
    except ImportError:
        return []
    shell = get_ipython()
    return list(shell.user_ns.get("In", [])) if shell is not None else []


def _sibling(module: str, layout: dict[str, tuple[str, list[Cell]]]) -> bytes | None:
    """A module this one uses: its notebook saved next to this one (converted as the grader does),
    else the release's assignment/<module>.py."""
    saved = Path.cwd() / f"{module}.ipynb"
    if saved.is_file():
        from grader.notebooks.convert import MAX_NOTEBOOK_BYTES, NotebookRefused, convert, parse

        if saved.stat().st_size <= MAX_NOTEBOOK_BYTES:
            try:
                release, cells = layout[module]
                parsed = parse(saved.read_bytes(), [c.grade_id for c in cells])
                return convert(parsed, module, release, cells).text.encode()
            except NotebookRefused:
                pass
    path = KIT_ROOT / "assignment" / f"{module}.py"
    return path.read_bytes() if path.is_file() else None


def gpu_lines(meta: dict[str, Any], gpu_tests: bool, device: str = "") -> list[str]:
    """What the check cell says about the GPU tests, from the run's metadata (`grader.testing.suite_process`:
    ``cuda``, whether the GPU tests ran) and the GPU's name."""
    if not gpu_tests:
        return []
    if meta.get("cuda"):
        return [GPU_PREVIEW.format(name=device or "CUDA")]
    return [GPU_PENDING]


def _device() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else ""


def check(module: str, *, history: list[str] | None = None, console: Any = None) -> list[dict[str, Any]]:
    """The check cell: grade the kernel's answers with the public tests and show the result (see the
    module docstring).  Returns the test records (as `grader check --json` writes them)."""
    from rich.console import Console

    from grader.intake.discover import Source
    from grader.intake.stage import stage
    from grader.intake.unpack import RejectedSubmission
    from grader.course.config import CourseError, check_assignment
    from grader.course.modules import dependencies
    from grader.testing.check_table import render_check
    from grader.testing.suite_process import run_suite, test_files
    from grader.untrusted import LOG_LIMIT, MESSAGE_LIMIT, shown

    console = console or Console(force_jupyter=False, width=120, highlight=False)
    layout = load_layout()
    release, cells = layout[module]
    text = join(answers_from_history(_history() if history is None else history, cells))
    try:
        gpu_tests = check_assignment(None).gpu_tests
    except CourseError:
        gpu_tests = True
    with tempfile.TemporaryDirectory(prefix="kit-notebook-") as tmp:
        folder = Path(tmp) / "answers" / "assignment"
        folder.mkdir(parents=True)
        (folder / f"{module}.py").write_text(text, encoding="utf-8")
        for other in sorted(dependencies(module, KIT_ROOT)):
            data = _sibling(other, layout)
            if data is not None:
                (folder / f"{other}.py").write_bytes(data)
        try:
            staged = stage(Source("notebook", folder.parent), Path(tmp) / "submission")
        except RejectedSubmission as exc:
            console.print(f"Your answers could not be taken: {shown(exc, MESSAGE_LIMIT)}", markup=False)
            return []
        console.print(f"Checking the answers of this notebook ({module}) with the public tests", markup=False)
        for note in staged.notes:
            console.print(shown(note, MESSAGE_LIMIT), markup=False)
        run = run_suite(staged.folder, test_files((module,), hidden=False),
                        extra=() if gpu_tests else ("--gpu-tests=none",))
    if not run.records:
        console.print("The tests did not run:", markup=False)
        console.print(shown(run.log, LOG_LIMIT, newlines=True), markup=False)
        return []
    for line in gpu_lines(run.meta, gpu_tests, _device() if run.meta.get("cuda") else ""):
        console.print(line, markup=False)
    render_check(run.records, console)
    return run.records
