"""The notebook edition (grader/notebooks/, grader/intake/notebook.py; docs/NOTEBOOKS.md).

* every module's notebook is cut from its stub, line for line, and `grader release --check` builds
  and validates all of them;
* on a real Jupyter kernel (nbclient + ipykernel), each notebook's check cell shows "not attempted"
  on the stubs and full marks once the reference answers are pasted into its answer cells (one
  kernel per notebook, two notebooks at a time);
* a new student with the notebook alone in a fresh folder implements one function and sees the
  check cell's verdict change;
* a class of notebook submissions grades in one batch (`grader grade`, the sandbox) with the scores
  of the same work as `.py` files, test by test, and the bad ones get a clear result.
"""

from __future__ import annotations

import concurrent.futures
import copy
import csv
import json
import re
import zipfile
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.intake.discover import Source
from grader.intake.stage import stage
from grader.notebooks.build import SETUP, build_all, check_notebooks, colab_url
from grader.notebooks.cells import cut, join, load_layout
from grader.notebooks.convert import MAX_NOTEBOOK_BYTES
from grader.commands.notebook_check import GPU_PENDING, answers_from_history, gpu_lines
from grader.course.stubs import generate_assignment

pytestmark = pytest.mark.kit

HANDOUT = (KIT_ROOT / "handout.md").read_text(encoding="utf-8")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def reference(module: str) -> dict[str, str]:
    """grade_id -> the reference answer (the solution file cut like its stub)."""
    text = (KIT_ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
    return {c.grade_id: c.source for c in cut(text, module) if c.kind == "answer"}


def with_answers(nb, answers: dict[str, str]):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        gid = cell.metadata["nbgrader"]["grade_id"]
        if cell.metadata["nbgrader"]["solution"] and gid in answers:
            cell.source = answers[gid]
    return nb


def write(nb, path: Path) -> Path:
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


# -- the notebooks, as generated ----------------------------------------------------------------

def test_cells_give_back_the_stub_and_the_solution_byte_for_byte() -> None:
    stubs = {f.name.removesuffix(".py"): f.text for f in generate_assignment() if f.name != "__init__.py"}
    assert sorted(stubs) == sorted(MODULES)
    for module, stub in stubs.items():
        cells = cut(stub, module)
        assert join([c.source for c in cells]) == stub, module
        solution = (KIT_ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
        answers = reference(module)
        assert join([answers.get(c.grade_id, c.source) for c in cells]) == solution, module
        # one answer cell per top-level definition that holds a solution region
        import ast

        tree = ast.parse(solution)
        lines = solution.splitlines()
        defined = {f"{module}-{n.name}" for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                   and any("### BEGIN SOLUTION" in ln for ln in lines[n.lineno - 1:n.end_lineno])}
        assert {c.grade_id for c in cells if c.kind == "answer"} == defined, module
        assert cells[0].kind == "locked" and "import" in cells[0].source, module


def test_release_check_builds_and_validates_every_notebook() -> None:
    assert check_notebooks() == []


def test_cells_carry_nbgrader_metadata_and_colab_setup() -> None:
    nbs = build_all(HANDOUT, MODULES, ("course-org/course-repo", "fall"))
    assert sorted(nbs) == sorted(MODULES)
    layout = load_layout()
    for module, nb in nbs.items():
        ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells]
        assert len(ids) == len(set(ids)), module
        answers = [c for c in nb.cells if c.metadata["nbgrader"]["solution"]]
        assert [c.metadata["nbgrader"]["grade_id"] for c in answers] == \
            [c.grade_id for c in layout[module][1] if c.kind == "answer"]
        assert all(not c.metadata["nbgrader"]["locked"] and c.cell_type == "code" for c in answers)
        locked = [c for c in nb.cells if not c.metadata["nbgrader"]["solution"]]
        assert all(c.metadata["nbgrader"]["locked"] for c in locked)
        assert colab_url("course-org/course-repo", "fall", module) in nb.cells[0].source
        assert colab_url("course-org/course-repo", "fall", module).endswith(f"/blob/fall/notebooks/{module}.ipynb")
        setup = nb.cells[1].source
        assert '"google.colab" in sys.modules' in setup and "'course-org/course-repo', 'fall'" in setup
        assert nb.cells[-1].source.endswith(f"check({module!r});")
        assert nb.metadata["kit"] == {"module": module, "release": layout[module][0], "version": nb.metadata["kit"]["version"]}
    training = nbs["training"]
    imports = next(c.source for c in training.cells if c.metadata["nbgrader"]["grade_id"] == "training-imports")
    assert "from assignment.flops import" in imports and "from .flops" not in imports
    assert "REPOSITORY, BRANCH = {repository!r}, {branch!r}" in SETUP


def test_colab_setting_in_course_toml_is_checked(tmp_path: Path) -> None:
    from grader.course.config import CourseError, parse_course

    raw = {"course": {"name": "c", "colab_repository": "org/repo", "colab_branch": "main"},
           "assignment": [{"name": "hw1", "modules": ["memory"]}]}
    course = parse_course(raw, None, MODULES, root=tmp_path)
    assert (course.colab_repository, course.colab_branch) == ("org/repo", "main")
    raw["course"]["colab_repository"] = "https://github.com/org/repo"
    with pytest.raises(CourseError, match="colab_repository must be a GitHub repository"):
        parse_course(raw, None, MODULES, root=tmp_path)


def test_gpu_preview_lines() -> None:
    """Where CUDA is present the GPU tests ran and are shown as a preview; else pending; not at all
    where the assignment's GPU tests do not count (CPU-side: the CUDA branch is checked on a GPU)."""
    assert "preview" in gpu_lines({"cuda": True}, True, "Tesla T4")[0] and "Tesla T4" in gpu_lines({"cuda": True}, True, "Tesla T4")[0]
    assert gpu_lines({"cuda": False}, True) == [GPU_PENDING]
    assert gpu_lines({"cuda": True}, False) == []


def test_history_takes_the_last_run_of_each_answer() -> None:
    _, cells = load_layout()["memory"]
    history = ["", "def storage_bytes(x):\n    return 1\n", "print(2)", "def storage_bytes(x):\n    return 2\n",
               "def get_memory_usage(x:\n  broken"]
    got = answers_from_history(history, cells)
    by_id = dict(zip([c.grade_id for c in cells], got))
    assert by_id["memory-storage_bytes"].endswith("return 2\n")
    assert by_id["memory-get_memory_usage"] == next(c.source for c in cells if c.grade_id == "memory-get_memory_usage")
    assert by_id["memory-imports"] == cells[0].source


# -- on a real kernel ------------------------------------------------------------------------------

def _check_output(cell) -> str:
    return _ANSI.sub("", "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"))


def _total(text: str) -> tuple[float, float, int, int]:
    """(earned, points possible here, failed, not attempted) from the check cell's table (its total
    row: module, earned, possible or max with the pending points, pending, then tests: passed, failed,
    not attempted, pending)."""
    row = next(line for line in text.splitlines() if line.startswith("│ total"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    head = text.split("┡")[0]
    with_pending = "max" in head and "possible" not in head
    possible = float(cells[2]) - (float(cells[3]) if with_pending else 0)
    return float(cells[1]), possible, int(cells[5]), int(cells[6])


def _run_kernel(module: str, folder: str, steps: list[dict[str, str] | None]) -> list[str]:
    """Run the notebook of `module` in one fresh kernel in `folder`: all cells, then for each step
    (answers by grade_id) those answer cells and the check cell again.  The check cell's text each time."""
    from nbclient import NotebookClient

    nb = build_all(HANDOUT, [module])[module]
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": folder}})
    outs = []
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        outs.append(_check_output(nb.cells[-1]))
        for answers in steps:
            for index, cell in enumerate(nb.cells):
                if cell.metadata["nbgrader"]["grade_id"] in answers:
                    cell.source = answers[cell.metadata["nbgrader"]["grade_id"]]
                    client.execute_cell(cell, index)
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
            outs.append(_check_output(nb.cells[-1]))
    return outs


def test_every_notebook_on_a_kernel_stub_then_reference(tmp_path: Path) -> None:
    """One kernel per notebook, two at a time: run all (the stubs: not attempted), paste the
    reference answers and rerun them and the check cell (full marks)."""
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        runs = {m: pool.submit(_run_kernel, m, str(tmp_path), [reference(m)]) for m in MODULES}
        results = {m: f.result(timeout=1200) for m, f in runs.items()}
    for module, (stub, ref) in results.items():
        earned, possible, failed, not_attempted = _total(stub)
        assert earned == 0 and possible > 0 and not_attempted > 0, (module, stub[-2000:])
        assert "not attempted" in stub
        earned, possible, failed, not_attempted = _total(ref)
        assert earned == possible > 0 and failed == 0 and not_attempted == 0, (module, ref[-2000:])


def test_a_new_student_implements_one_function_and_sees_the_verdict_change(tmp_path: Path) -> None:
    """The notebook alone in a fresh folder (no release next to it): run all, write one function."""
    import nbformat

    nb = build_all(HANDOUT, ["memory"])["memory"]
    write(nb, tmp_path / "memory.ipynb")
    assert [p.name for p in tmp_path.iterdir()] == ["memory.ipynb"]
    fresh = nbformat.read(str(tmp_path / "memory.ipynb"), 4)  # what the student opens
    assert fresh.cells[-1].source == nb.cells[-1].source
    storage = {"memory-storage_bytes": "def storage_bytes(x):\n    return x.untyped_storage().nbytes()\n"}
    before, after = _run_kernel("memory", str(tmp_path), [storage])
    assert _total(before)[0] == 0 and "storage_bytes" in before
    earned, _, failed, not_attempted = _total(after)
    assert earned == 2 and failed == 0 and _total(before)[3] == not_attempted + 1
    assert "Kit" not in after and "GPU tests are listed as pending" in after


# -- handed in: staged like files -----------------------------------------------------------------

BUG = "def storage_bytes(x):\n    return x.numel() * x.element_size()\n"  # the view's bytes, not the storage's


def _memory_nb():
    return build_all(HANDOUT, ["memory"])["memory"]


def _py(answers: dict[str, str]) -> str:
    _, cells = load_layout()["memory"]
    return join([answers.get(c.grade_id, c.source) for c in cells])


def test_a_notebook_stages_as_the_same_module_file(tmp_path: Path) -> None:
    ref = reference("memory")
    path = write(with_answers(_memory_nb(), ref), tmp_path / "alice" / "notebooks" / "memory.ipynb")
    staged = stage(Source("alice", path.parent.parent), tmp_path / "staged")
    assert (tmp_path / "staged" / "memory.py").read_text() == (KIT_ROOT / "solutions" / "memory.py").read_text()
    assert list(staged.files) == ["memory"] and any("graded from the notebook" in n for n in staged.notes)


def test_what_is_not_graded_is_listed(tmp_path: Path) -> None:
    import nbformat

    nb = with_answers(_memory_nb(), reference("memory"))
    nb.cells.insert(4, nbformat.v4.new_code_cell("scratch = 1\n"))
    nb.cells[4].outputs = [nbformat.v4.new_output("stream", text="\x1b]0;pwned\x07" * 10)]
    locked = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "memory-imports")
    locked.source += "\nFP32_BYTES = 8\n"
    path = write(nb, tmp_path / "memory.ipynb")
    staged = stage(Source("bob", path), tmp_path / "staged")
    note = " ".join(staged.notes)
    assert "cells not graded" in note and "#5" in note and "memory-imports" in note and "outputs of 1 cell" in note
    assert "FP32_BYTES = 8" not in (tmp_path / "staged" / "memory.py").read_text()
    assert "\x1b" not in note


@pytest.mark.parametrize("data, why", [
    (b"{not json", "not a readable notebook"),
    (b'{"nbformat": 3, "cells": []}', "nbformat 3"),
    (b"[" * 200_000 + b"]" * 200_000, "not a readable notebook"),
    (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 5,
                                           "metadata": {"nbgrader": {"grade_id": "memory-storage_bytes"}}}]}).encode(),
     ""),
])
def test_a_malformed_notebook_gets_a_clear_result(tmp_path: Path, data: bytes, why: str) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "memory.ipynb").write_bytes(data)
    staged = stage(Source("s", tmp_path / "s"), tmp_path / "staged")
    assert "memory" not in staged.files or why == ""
    if why:
        assert why in staged.not_taken["memory.ipynb"]
    else:  # a cell that is not a notebook cell: the stub is graded for it, and that is said
        assert any("no answer cell for" in n and "storage_bytes" in n for n in staged.notes)


def test_a_notebook_over_the_cap_is_refused_before_it_is_read(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "s").mkdir()
    with open(tmp_path / "s" / "memory.ipynb", "wb") as f:
        f.truncate(MAX_NOTEBOOK_BYTES + 1)  # sparse: nothing is read, or it would fail to parse
    import grader.notebooks.convert as convert

    monkeypatch.setattr(convert, "parse", lambda *a: pytest.fail("parsed a notebook over the cap"))
    staged = stage(Source("s", tmp_path / "s"), tmp_path / "staged")
    assert "clear its outputs" in staged.not_taken["memory.ipynb"] and "memory" not in staged.files


def test_a_py_file_with_answers_wins_over_a_notebook(tmp_path: Path) -> None:
    folder = tmp_path / "carol"
    write(with_answers(_memory_nb(), {"memory-storage_bytes": BUG}), folder / "notebooks" / "memory.ipynb")
    (folder / "assignment").mkdir()
    (folder / "assignment" / "memory.py").write_text(_py(reference("memory")))
    staged = stage(Source("carol", folder), tmp_path / "staged")
    assert (tmp_path / "staged" / "memory.py").read_text() == _py(reference("memory"))
    assert "module file is graded" in staged.not_taken["notebooks/memory.ipynb"]
    # beside the untouched stub, the notebook is graded
    (folder / "assignment" / "memory.py").write_text(_py({}))
    staged = stage(Source("carol", folder), tmp_path / "staged2")
    assert "x.numel() * x.element_size()" in (tmp_path / "staged2" / "memory.py").read_text().split("def storage_bytes")[1]


def _class(root: Path) -> dict[str, str]:
    """The class: student -> what it is.  Notebooks and the same work as .py files."""
    import nbformat

    nb, ref = _memory_nb(), reference("memory")
    subs = root / "subs"
    write(with_answers(nb, ref), subs / "nb_full" / "memory.ipynb")
    (subs / "py_full").mkdir(parents=True)
    (subs / "py_full" / "memory.py").write_text(_py(ref))
    write(nb, subs / "nb_stub" / "notebooks" / "memory.ipynb")
    (subs / "py_stub").mkdir()
    (subs / "py_stub" / "memory.py").write_text(_py({}))
    bug = {**ref, "memory-storage_bytes": BUG}
    zipped = write(with_answers(nb, bug), root / "tmp" / "notebooks" / "memory.ipynb")
    with zipfile.ZipFile(subs / "nb_bug.zip", "w") as zf:
        zf.write(zipped, "nb_bug/notebooks/memory.ipynb")
    (subs / "py_bug").mkdir()
    (subs / "py_bug" / "memory.py").write_text(_py(bug))
    scratch = with_answers(nb, ref)
    scratch.cells.insert(3, nbformat.v4.new_code_cell("import os\nos.system('echo hi')\n"))
    write(scratch, subs / "nb_scratch" / "memory.ipynb")
    locked = with_answers(nb, ref)
    next(c for c in locked.cells if c.metadata["nbgrader"]["grade_id"] == "memory-imports").source += "\nBF16_BYTES = 3\n"
    write(locked, subs / "nb_locked" / "memory.ipynb")
    big = with_answers(nb, ref)
    big.cells[-1].outputs = [nbformat.v4.new_output("stream", text="x" * (50 * 2**20))]
    write(big, subs / "nb_big" / "memory.ipynb")
    (subs / "nb_bad").mkdir()
    (subs / "nb_bad" / "memory.ipynb").write_text('{"cells": [', encoding="utf-8")
    old = with_answers(nb, ref)
    old.metadata["kit"]["release"] = "0123456789ab"
    cell = next(c for c in old.cells if c.metadata["nbgrader"]["grade_id"] == "memory-max_trainable_parameters")
    cell.metadata["nbgrader"]["grade_id"] = "memory-max_params"  # renamed in that release
    write(old, subs / "nb_old" / "memory.ipynb")
    write(with_answers(nb, ref), root / "submitted" / "nb_nbgrader" / "ps1" / "memory.ipynb")
    return {"nb_full": "py_full", "nb_stub": "py_stub", "nb_bug": "py_bug", "nb_scratch": "py_full",
            "nb_locked": "py_full", "nb_big": "py_stub", "nb_bad": "py_stub", "nb_nbgrader": "py_full",
            "nb_old": "old"}


def test_a_class_of_notebooks_grades_like_the_same_work_as_files(tmp_path: Path) -> None:
    from grader.results.layout import Layout
    from grader.cli import main as cli

    pairs = _class(tmp_path)
    out = tmp_path / "results"
    db = f"sqlite:///{tmp_path / 'gb.db'}"
    assert cli(["grade", str(tmp_path / "subs"), str(tmp_path / "submitted"), "--out", str(out), "--module", "memory",
                "-j", "2", "--no-progress", "--gradebook", db]) == 0
    grades = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    docs = {s: json.loads(Layout(out).instructor(s).read_text()) for s in grades}
    outcome = {s: {r["id"]: r["status"] for r in d["records"]} for s, d in docs.items()}
    summary = {s: json.loads(Layout(out).results(s).read_text())["output"] for s in grades}
    for nb_student, py_student in pairs.items():
        if py_student != "old":
            assert outcome[nb_student] == outcome[py_student], nb_student
            assert grades[nb_student]["raw_score"] == grades[py_student]["raw_score"], nb_student
    assert 0 < float(grades["py_bug"]["raw_score"]) < float(grades["py_full"]["raw_score"])
    assert float(grades["py_stub"]["raw_score"]) == 0
    assert "cells not graded" in summary["nb_scratch"] and "memory-imports" in summary["nb_locked"]
    assert "clear its outputs" in summary["nb_big"] and "50.0 MiB" in summary["nb_big"]
    assert "not a readable notebook" in summary["nb_bad"]
    assert "another release" in summary["nb_old"] and "max_trainable_parameters" in summary["nb_old"]
    old = {i: s for i, s in outcome["nb_old"].items() if s != outcome["py_full"][i]}
    assert old and all("max_trainable" in i and s == "not_attempted" for i, s in old.items()), old
    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    with Gradebook(db) as gb:  # what `nbgrader export` runs
        CsvExportPlugin(to=str(tmp_path / "export.csv")).export(gb)
    exported = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader((tmp_path / "export.csv").open())}
    for nb_student, py_student in pairs.items():
        assert exported[nb_student] == float(grades[nb_student]["raw_score"]), nb_student
    assert exported["nb_nbgrader"] == exported["py_full"] > exported["nb_bug"] == exported["py_bug"] > 0


def test_the_docs_state_the_notebook_budget_the_code_has() -> None:
    from grader.intake.notebook import MAX_DEPTH, MAX_NOTEBOOKS
    from grader.notebooks.convert import MAX_CELLS, MAX_ID_CHARS, PARSE_MEMORY, PARSE_SECONDS

    said = {
        "docs/NOTEBOOKS.md": [f"at most {MAX_NOTEBOOK_BYTES // 2**20} MiB a notebook", f"at most {MAX_NOTEBOOKS} notebooks",
                              f"at most {MAX_DEPTH} folders down", f"under {PARSE_MEMORY // 2**20} MiB and "
                              f"{PARSE_SECONDS:g} seconds for all of a submission's notebooks together", f"at most {MAX_CELLS:,} cells",
                              f"{MAX_NOTEBOOK_BYTES // 2**20} MiB for all of a submission's notebooks together"],
        "docs/ARCHITECTURE.md": [f"{MAX_NOTEBOOK_BYTES // 2**20} MiB a notebook", f"{MAX_NOTEBOOKS} notebooks",
                                 f"up to {MAX_DEPTH} folders", f"({PARSE_MEMORY // 2**20} MiB, {PARSE_SECONDS:g} s for all of a submission's notebooks together)",
                                 f"{MAX_NOTEBOOK_BYTES // 2**20} MiB for all of a submission's notebooks",
                                 f"cut at {MAX_ID_CHARS} characters", f"at most {MAX_CELLS:,} cells"],
    }
    for doc, phrases in said.items():
        text = " ".join((KIT_ROOT / doc).read_text(encoding="utf-8").split())
        for phrase in phrases:
            assert phrase in text, (doc, phrase)


# -- red-team regressions: magics, a stub beside a notebook, discovery, budgets --------------------

SOLUTION = (KIT_ROOT / "solutions" / "memory.py").read_text(encoding="utf-8")
CONTINUED = ("    return x.untyped_storage().nbytes()", "    n = (x.untyped_storage().nbytes()\n         % (1 << 62))\n"
             "    return n")


def _staged_text(source: Path, tmp_path: Path, name: str = "staged") -> tuple[str, object]:
    staged = stage(Source(source.name, source), tmp_path / name)
    path = tmp_path / name / "memory.py"
    return (path.read_text(encoding="utf-8") if path.exists() else ""), staged


def test_a_percent_line_inside_brackets_is_python_not_a_magic(tmp_path: Path) -> None:
    """`n = (a` then `% b)` is one Python statement: the notebook stages to exactly its .py twin."""
    twin = SOLUTION.replace(*CONTINUED)
    assert twin != SOLUTION
    answers = {gid: src.replace(*CONTINUED) for gid, src in reference("memory").items()}
    write(with_answers(_memory_nb(), answers), tmp_path / "s" / "memory.ipynb")
    text, staged = _staged_text(tmp_path / "s", tmp_path)
    assert text == twin and not any("magic" in n for n in staged.notes)


CELLS = [
    "n = (a\n% b)\n",
    "%timeit f()\nx = 1\n  !ls\n",
    's = """\n%d items\n!not a shell line\n"""\n%time x\n',
    "x = 1 + \\\n% 2\n",
    "def f():\n    %time g()\n    return (1\n    % 2)\n",
    "y = [1,\n  # a comment\n  !x]\n!echo hi\n",
    "\n\n%matplotlib inline\n\n# c\n%load_ext autoreload\nz = {\n%1}\n",
]


@pytest.mark.parametrize("cell", CELLS)
def test_magics_are_found_where_ipython_finds_them(cell: str) -> None:
    """The lines `_unmagic` turns into `pass` are the magics IPython itself finds (its own
    `make_tokens_by_line`: a `%` or `!` first on a logical line), no more, no fewer."""
    from IPython.core.inputtransformer2 import make_tokens_by_line

    from grader.notebooks.convert import _unmagic

    ipython = set()
    for tokens in make_tokens_by_line(cell.splitlines(keepends=True)):
        first = next((t for t in tokens if t.type not in (5, 6)), None)  # (INDENT, DEDENT)
        if first is not None and first.string in ("%", "!") and first.line[first.start[1]:].startswith(first.string):
            ipython.add(first.start[0] - 1)
    text, count = _unmagic(cell)
    ours = {n for n, (a, b) in enumerate(zip(cell.splitlines(), text.splitlines())) if a != b}
    assert ours == ipython and count == len(ipython), (cell, ours, ipython)
    assert all("pass  # (notebook magic, not run)" in text.splitlines()[n] for n in ours)
    if "%d items" in cell:
        assert "%d items\n!not a shell line" in text


@pytest.mark.parametrize("variant", ["crlf", "bom", "trailing", "lf"])
def test_an_untouched_stub_py_in_any_line_ending_gives_way_to_the_notebook(tmp_path: Path, variant: str) -> None:
    """A release folder handed in (a Windows checkout: CRLF, a BOM, an editor's trailing spaces): the
    stub .py is not an answer, the answered notebook is graded."""
    stub = _py({})
    data = {"crlf": stub.replace("\n", "\r\n").encode(), "bom": b"\xef\xbb\xbf" + stub.encode(),
            "trailing": stub.replace("\n", "  \n").encode(), "lf": stub.encode()}[variant]
    folder = tmp_path / "dana"
    (folder / "assignment").mkdir(parents=True)
    (folder / "assignment" / "memory.py").write_bytes(data)
    write(with_answers(_memory_nb(), reference("memory")), folder / "notebooks" / "memory.ipynb")
    text, staged = _staged_text(folder, tmp_path)
    assert text == SOLUTION and not staged.not_taken, staged.not_taken


def test_an_answered_copy_wins_over_an_untouched_notebook(tmp_path: Path) -> None:
    folder = tmp_path / "erin"
    write(_memory_nb(), folder / "memory.ipynb")
    write(with_answers(_memory_nb(), reference("memory")), folder / "Copy of memory.ipynb")
    text, staged = _staged_text(folder, tmp_path)
    assert text == SOLUTION
    assert "Copy of memory.ipynb" in staged.not_taken["memory.ipynb"]
    assert any("graded from the notebook Copy of memory.ipynb" in n for n in staged.notes)


def test_a_notebook_named_for_another_module_is_graded_for_its_own(tmp_path: Path) -> None:
    folder = tmp_path / "finn"
    write(with_answers(_memory_nb(), reference("memory")), folder / "flops.ipynb")
    text, staged = _staged_text(folder, tmp_path)
    note = " ".join(staged.notes)
    assert text == SOLUTION and "a notebook of memory named flops.ipynb" in note and "another release" not in note


def test_a_folder_of_per_student_notebooks_is_a_folder_of_submissions(tmp_path: Path) -> None:
    from grader.intake.discover import discover

    flat = tmp_path / "flat"
    write(with_answers(_memory_nb(), reference("memory")), flat / "alice_memory.ipynb")
    write(_memory_nb(), flat / "bob_memory.ipynb")
    found = discover([flat])
    assert [(s.student, s.path.name) for s in found.sources] == [("alice_memory", "alice_memory.ipynb"),
                                                                  ("bob_memory", "bob_memory.ipynb")]
    assert not found.errors and not found.warnings
    text, _ = _staged_text(flat / "bob_memory.ipynb", tmp_path)
    assert text == _py({})  # bob's own (untouched) work, nothing of alice's
    # one student's folder stays one submission: a release name and a Colab copy, or one notebook
    one = tmp_path / "one"
    write(_memory_nb(), one / "memory.ipynb")
    write(_memory_nb(), one / "Copy of memory.ipynb")
    write(_memory_nb(), tmp_path / "two" / "my homework.ipynb")
    assert [s.path for s in discover([one, tmp_path / "two"]).sources] == [one, tmp_path / "two"]


@pytest.mark.parametrize("stray", ["memory.ipynb", "notebooks/memory.ipynb"])
def test_a_class_folder_with_a_stray_notebook_is_refused_not_merged(tmp_path: Path, stray: str) -> None:
    """A class folder (alice/, bob/) with a notebook at its top or a student folder named notebooks/:
    ambiguous, refused before anything is written (exit 2); never one submission of the whole class."""
    from grader.intake.discover import discover
    from grader.cli import main as cli

    cls = tmp_path / "class"
    write(with_answers(_memory_nb(), reference("memory")), cls / "alice" / "memory.ipynb")
    (cls / "bob").mkdir()
    (cls / "bob" / "memory.py").write_text(_py({}))
    write(_memory_nb(), cls / stray)
    found = discover([cls])
    assert not found.sources and len(found.errors) == 1 and "other students'" in found.errors[0]
    assert cli(["grade", str(cls), "--out", str(tmp_path / "out"), "--module", "memory", "--no-progress"]) == 2
    assert not (tmp_path / "out").exists()


def _filler_notebook(size: int) -> bytes:
    head, tail = b'{"nbformat": 4, "metadata": {}, "cells": [', b'{}]}'
    return head + b"[]," * ((size - len(head) - len(tail)) // 3) + tail


def test_a_submissions_notebooks_share_one_byte_and_time_budget(tmp_path: Path, monkeypatch) -> None:
    """Ten notebooks just under the cap of one are not ten times the work: all of a submission's
    notebooks together are read up to the cap of one, before any is parsed, within one parse deadline."""
    import grader.notebooks.convert as convert
    from grader.intake.notebook import MAX_NOTEBOOKS

    assert MAX_NOTEBOOKS == len(MODULES)
    seen: list[tuple[int, float]] = []
    real = convert.parse
    monkeypatch.setattr(convert, "parse", lambda data, wanted, seconds=convert.PARSE_SECONDS:
                        seen.append((len(data), seconds)) or real(data, wanted, seconds))
    size = MAX_NOTEBOOK_BYTES // 3 + 1  # two fit in the cap of one, not three
    with zipfile.ZipFile(tmp_path / "zed.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for n in range(5):
            zf.writestr(f"nb{n}.ipynb", _filler_notebook(size))
    staged = stage(Source("zed", tmp_path / "zed.zip"), tmp_path / "staged")
    assert [n for n, _ in seen] == [size] * 2  # the third would pass the cap of one, with the two before it
    assert all(s <= convert.PARSE_SECONDS for _, s in seen) and seen[1][1] < seen[0][1]  # one deadline, shared
    refused = [why for key, why in staged.not_taken.items() if key.startswith("nb")]
    assert sum("together" in why for why in refused) == 3 and len(refused) == 5
    monkeypatch.setattr(convert, "PARSE_SECONDS", 0.0)  # the deadline spent: refused unread, with the reason
    staged = stage(Source("zed", tmp_path / "zed.zip"), tmp_path / "staged2")
    assert "seconds of reading" in staged.not_taken["nb0.ipynb"]


def test_a_symlinked_notebook_is_listed_not_skipped_silently(tmp_path: Path) -> None:
    folder = tmp_path / "gus"
    write(with_answers(_memory_nb(), reference("memory")), tmp_path / "elsewhere" / "memory.ipynb")
    folder.mkdir()
    (folder / "memory.ipynb").symlink_to(tmp_path / "elsewhere" / "memory.ipynb")
    text, staged = _staged_text(folder, tmp_path)
    assert text == "" and "symlink" in staged.not_taken["memory.ipynb"]


def test_grader_check_on_a_notebook_it_cannot_read_exits_2(tmp_path: Path, capsys) -> None:
    from grader.cli import main as cli

    (tmp_path / "memory.ipynb").write_text('{"cells": [', encoding="utf-8")
    assert cli(["check", str(tmp_path / "memory.ipynb")]) == 2
    out = capsys.readouterr().out
    assert "not a readable notebook" in out and "total" not in out
