"""The notebooks of a release: one per module, nbformat 4 with nbgrader's cell metadata.

A module's notebook, top to bottom:

1. its title, an "Open in Colab" link (where course.toml's ``[course]`` names ``colab_repository``),
   and how to work in it;
2. the setup cell (locked): in Colab (``"google.colab" in sys.modules``) it clones the course's
   repository and installs the kit there, nowhere else; then `grader.commands.notebook_check.setup`;
3. the module's handout section, as markdown cells (one per ``###`` subsection);
4. the module's cells (`grader.notebooks.cells`): locked cells (imports, constants) and one answer
   cell per function or class to write (``solution: true``, a stable ``grade_id``);
5. the check cell (locked): `grader.commands.notebook_check.check`, the public tests on the answers.

Built with nbformat's own constructors and validated against its schema (`check_notebooks`).  Not
with jupytext: its text formats carry cell metadata as comments, and nbgrader's metadata is what
the grader keys on, so the cells are made here directly (jupytext is not a dependency either).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from grader.notebooks.cells import Cell, kernel_source, load_layout

FOLDER = "notebooks"
_SECTION = re.compile(r"^## (\d+)\. `([a-z_0-9]+)`.*$", re.MULTILINE)
#: What the setup cell installs in Colab beside the kit (torch, numpy, matplotlib, jinja2 are there).
COLAB_PACKAGES = ("einops", "jaxtyping", "beartype", "hypothesis", "rich", "pytest")

SETUP = '''\
# Setup (locked).  In Google Colab: fetch the course's release and install the kit (only there).
import sys
if "google.colab" in sys.modules:
    import os, subprocess
    REPOSITORY, BRANCH = {repository!r}, {branch!r}
    if not REPOSITORY:
        raise RuntimeError("this course has not set colab_repository in course.toml: ask your course staff")
    if not os.path.isdir("/content/kit"):
        subprocess.run(["git", "clone", "--quiet", "--depth=1", "--branch", BRANCH,
                        f"https://github.com/{{REPOSITORY}}", "/content/kit"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", "/content/kit"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *{packages!r}], check=True)
    sys.path.insert(0, "/content/kit")
from grader.commands.notebook_check import setup
setup({module!r}, {release!r})'''

CHECK = '''\
# Check your answers (locked): the public tests on the answer cells as you last ran them.
from grader.commands.notebook_check import check
check({module!r});'''

HOW = """\
Write each function in its answer cell (the cells that say `# YOUR CODE HERE`), run it, then run the
**check cell** at the end: it grades your answers with the public tests and shows your score, as
`grader check` does.  Leave the other code cells as they are: only the answer cells are handed in
and graded (with hidden tests too); cells you add are yours to experiment in and are not graded."""


def colab_url(repository: str, branch: str, module: str) -> str:
    return f"https://colab.research.google.com/github/{repository}/blob/{branch}/{FOLDER}/{module}.ipynb"


def handout_sections(text: str) -> dict[str, tuple[str, str]]:
    """module -> (its section's title line, its section's body) of a handout."""
    starts = list(_SECTION.finditer(text))
    out = {}
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out[m.group(2)] = (m.group(0)[3:], text[m.end():end].strip("\n"))
    return out


def _meta(grade_id: str, *, solution: bool = False, locked: bool = True) -> dict[str, Any]:
    return {"nbgrader": {"grade": False, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                         "solution": solution, "task": False}}


def _markdown(body: str) -> list[str]:
    """A handout section as markdown cells, one per ``###`` subsection."""
    parts = re.split(r"(?m)^(?=### )", body)
    return [p.strip("\n") for p in parts if p.strip()]


def notebook(module: str, cells: list[Cell], release: str, section: tuple[str, str] | None,
             colab: tuple[str, str] | None = None, version: str = "") -> Any:
    """The notebook of one module (an nbformat NotebookNode)."""
    import nbformat.v4 as v4

    title, body = section or (f"`{module}`", "")
    intro = [f"# {title}"]
    if colab:
        intro.append(f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                     f"({colab_url(colab[0], colab[1], module)})")
    intro.append(HOW)
    nb = v4.new_notebook()
    nb.metadata.update({"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                        "language_info": {"name": "python"},
                        "kit": {"module": module, "release": release, "version": version}})
    add = nb.cells.append
    add(v4.new_markdown_cell("\n\n".join(intro), metadata=_meta(f"{module}-title")))
    repository, branch = colab or ("", "main")
    add(v4.new_code_cell(SETUP.format(repository=repository, branch=branch, packages=COLAB_PACKAGES,
                                      module=module, release=release), metadata=_meta(f"{module}-setup")))
    for i, text in enumerate(_markdown(body), start=1):
        add(v4.new_markdown_cell(text, metadata=_meta(f"{module}-handout-{i}")))
    for c in cells:
        if c.kind == "answer":
            add(v4.new_code_cell(c.source, metadata=_meta(c.grade_id, solution=True, locked=False)))
        else:
            add(v4.new_code_cell(kernel_source(c), metadata=_meta(c.grade_id)))
    add(v4.new_markdown_cell("## Check your answers", metadata=_meta(f"{module}-check-title")))
    add(v4.new_code_cell(CHECK.format(module=module), metadata=_meta(f"{module}-check")))
    for i, cell in enumerate(nb.cells):  # stable ids (nbformat 4.5): a rebuilt release is byte for byte the same
        cell["id"] = f"{module}-{i}"
    return nb


def colab_setting() -> tuple[str, str] | None:
    """(repository, branch) from course.toml's [course] (colab_repository, colab_branch), or None."""
    from grader.course.config import load_course

    course = load_course()
    if course is None or not course.colab_repository:
        return None
    return course.colab_repository, course.colab_branch


def build_all(handout: str, modules: tuple[str, ...] | list[str], colab: tuple[str, str] | None = None) -> dict[str, Any]:
    """module -> its notebook, for `modules` (a handout's sections give their markdown)."""
    from grader import kit_version

    layout, sections = load_layout(), handout_sections(handout)
    return {m: notebook(m, layout[m][1], layout[m][0], sections.get(m), colab, kit_version())
            for m in modules if m in layout}


def write_notebooks(out: Path, handout: str, modules: tuple[str, ...] | list[str],
                    colab: tuple[str, str] | None = None) -> list[Path]:
    """`out/notebooks/<module>.ipynb` for each module; the paths written."""
    import nbformat

    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for module, nb in build_all(handout, modules, colab).items():
        path = folder / f"{module}.ipynb"
        nbformat.write(nb, str(path))
        written.append(path)
    return written


def check_notebooks(root: Path | None = None) -> list[str]:
    """`grader release --check`: the layout is in sync with solutions/, and every module's notebook
    builds and is valid nbformat with one answer cell per function to write."""
    import nbformat

    from grader import KIT_ROOT, MODULES
    from grader.notebooks.cells import check_layout

    root = root or KIT_ROOT
    problems = [f"{p} (run `grader stubs`)" for p in check_layout()]
    if problems:
        return problems
    layout = load_layout()
    for module, nb in build_all((root / "handout.md").read_text(encoding="utf-8"), MODULES, ("o/r", "main")).items():
        try:
            nbformat.validate(nb)
        except nbformat.ValidationError as exc:
            problems.append(f"notebooks/{module}.ipynb is not valid nbformat: {exc.message}")
        answers = [c for c in nb.cells if c.metadata["nbgrader"]["solution"]]
        if len(answers) != sum(c.kind == "answer" for c in layout[module][1]):
            problems.append(f"notebooks/{module}.ipynb: answer cells differ from the layout")
    problems += [f"notebooks/{m}.ipynb: no cells in the layout" for m in MODULES if m not in layout]
    return problems
