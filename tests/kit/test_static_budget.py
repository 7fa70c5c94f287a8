"""The trusted process reads student sources within a budget (`grader.rules.sources`, `grader.rules.scope`).

* Only the files a rule needs are parsed: a helper nothing imports never is, one a graded module
  imports is (its global breaches count), whatever reaches it.
* Building a scope is linear in the code read: counted in lines of the grader run, not in
  seconds (a busy machine changes the time, not the count).
* Any failure of the parse is a plain "does not parse" for the tests that needed the file; a
  file that is not Python never runs, so it costs no other module anything.
* Staging takes at most 256 KiB a file and 1 MiB in all.
* No cache outlives a run.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import grader
from grader.rules import static
from grader.rules.breaches import EVALUATED
from grader.boundary.backends import read_module_source
from grader.intake.discover import Source
from grader.intake.stage import stage
from grader.intake.unpack import RejectedSubmission
from grader.rules.sources import MAX_FILE_BYTES, MAX_TOTAL_BYTES, SourceSet, Unparsable
from grader.testing.student import ProbeError, Student
from tests.adversarial.budgets_static import many_defs

pytestmark = pytest.mark.kit

SOLUTIONS = Path(grader.KIT_ROOT) / "solutions"
GRADER_DIR = str(Path(grader.__file__).parent)


class _Folder:
    """The part of a backend the static checks use (no code is run)."""

    def __init__(self, folder: Path):
        self.folder = folder

    def source(self, module: str) -> str | None:
        return read_module_source(self.folder, module)


def _submission(tmp_path: Path, extra: dict[str, str | bytes], views_tail: str = "") -> Path:
    dest = tmp_path / "sub"
    dest.mkdir()
    for path in SOLUTIONS.glob("*.py"):
        (dest / path.name).write_bytes(path.read_bytes())
    for name, content in extra.items():
        (dest / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    if views_tail:
        (dest / "views.py").write_text((dest / "views.py").read_text() + "\n\n" + views_tail)
    return dest


def _parsed_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file name `ast.parse` is asked to parse from now on."""
    seen: list[str] = []
    real = ast.parse

    def recording(source, filename="<unknown>", *args, **kwargs):
        seen.append(str(filename))
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording)
    return seen


def test_a_file_nothing_imports_is_never_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _submission(tmp_path, {"blob.py": "x = (" + "a," * 1000 + ")\n", "vhelp.py": "def h(x):\n    return x\n",
                                    "plant.py": "import torch\ntorch.Tensor._swap = torch.Tensor.transpose\n"},
                         views_tail="from .vhelp import h as _h\n")
    (folder / "memory.py").write_text((folder / "memory.py").read_text() + "\nfrom . import plant as _plant\n")
    parsed = _parsed_files(monkeypatch)
    scope = Student(_Folder(folder), "sub").scope("views", "transpose_view")  # type: ignore[arg-type]
    assert "blob.py" not in parsed, parsed
    assert {"views.py", "vhelp.py", "memory.py", "plant.py"} <= set(parsed), parsed
    files = [name for name in parsed if name != EVALUATED]  # (strings beartype/jaxtyping evaluate: not files)
    assert len(files) == len(set(files)), f"a file was parsed twice: {files}"
    # plant.py runs (memory.py imports it, and the sandbox may import memory before views): its
    # monkeypatch is a breach of every rule, though no views code reaches it
    assert any("monkeypatches torch.Tensor._swap (plant.py:2)" in b for b in scope.breaches), scope.breaches
    assert "plant.py" not in scope.files


def test_a_loader_anywhere_that_runs_is_a_breach_of_every_rule(tmp_path: Path) -> None:
    """A file nothing imports can only run through a loader by a computed name: one in any file
    that can run is reported, so not reading the unimported files loses nothing."""
    for loader in ("import importlib\nimportlib.import_module('.evil', __package__)\n",
                   "exec('from . import evil')\n", "import sys\nsys.modules\n",
                   "import torch, io\ntorch.load(io.BytesIO(b''), weights_only=False)\n"):
        folder = tmp_path / f"l{abs(hash(loader))}"
        folder.mkdir()
        folder.joinpath("views.py").write_bytes((SOLUTIONS / "views.py").read_bytes())
        folder.joinpath("memory.py").write_text((SOLUTIONS / "memory.py").read_text() + "\n" + loader)
        folder.joinpath("evil.py").write_text("import torch\ntorch.Tensor._swap = torch.Tensor.transpose\n")
        scope = static.build_scope(SourceSet(folder), "views", "transpose_view")
        assert any(b.startswith("loads code by a computed name") and "memory.py" in b for b in scope.breaches), \
            (loader, scope.breaches)
    clean = static.build_scope(SourceSet(SOLUTIONS), "views", "transpose_view")
    assert clean.breaches == [], clean.breaches


def test_relative_imports_are_monkeypatching_targets_too(tmp_path: Path) -> None:
    folder = _submission(tmp_path, {})
    (folder / "memory.py").write_text((folder / "memory.py").read_text()
                                      + "\nfrom .views import transpose_view as _tv\n"
                                        "_tv.__code__ = (lambda x, a, b: x.transpose(a, b)).__code__\n")
    scope = static.build_scope(SourceSet(folder), "views", "transpose_view")
    assert any("monkeypatches _tv.__code__" in b for b in scope.breaches), scope.breaches


def _lines_run(fn) -> int:
    """Lines of the grader's own code executed by `fn()` (ast and the parser not counted)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if not frame.f_code.co_filename.startswith(GRADER_DIR):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def test_building_a_scope_is_linear_in_the_defs_it_reaches() -> None:
    def views(n: int) -> dict[str, str]:
        return {"views": many_defs(n) + "def transpose_view(x, dim0, dim1):\n    return _d0(x)\n"}

    small = _lines_run(lambda: static.build_scope(views(400), "views", "transpose_view"))
    large = _lines_run(lambda: static.build_scope(views(1600), "views", "transpose_view"))
    scope = static.build_scope(views(1600), "views", "transpose_view")
    assert len(scope.nodes) >= 1600  # every def was reached
    assert large < 6 * small, f"4x the defs cost {large / small:.1f}x the lines ({small} -> {large}): not linear"


def test_following_aliases_is_linear_in_the_code_read() -> None:
    """The monkeypatch analysis (`grader.rules.monkeypatch`) evaluates a statement again only when a value it
    read grows: chains of aliases and of functions returning one another, written so that each
    is read before it is bound (the worst order for a worklist), cost lines in proportion."""
    def views(n: int) -> dict[str, str]:
        aliases = "".join(f"a{i} = a{i + 1}\n" for i in range(n)) + f"a{n} = torch.Tensor\n"
        returns = "".join(f"def r{i}():\n    return r{i + 1}()\n" for i in range(n))
        fields = "".join(f"class C{i}:\n    f{i} = C{i + 1}().f{i + 1}\n" for i in range(n))
        text = (SOLUTIONS / "views.py").read_text()
        return {"views": text + "\n" + aliases + returns + f"def r{n}():\n    return a0\n" + fields}

    small = _lines_run(lambda: static.build_scope(views(300), "views", "transpose_view"))
    large = _lines_run(lambda: static.build_scope(views(1200), "views", "transpose_view"))
    assert large < 6 * small, f"4x the aliases cost {large / small:.1f}x the lines ({small} -> {large}): not linear"


@pytest.mark.parametrize("source, words", [
    ("x = " + "+".join(["a"] * 100_000) + "\n", "nests too deeply"),  # RecursionError in the parser
    ("x = " + "-" * 100_000 + "1\n", "nests too deeply"),  # MemoryError in the parser
])
def test_a_file_that_cannot_be_parsed_fails_the_rules_that_need_it(tmp_path: Path, source: str, words: str) -> None:
    """Imported by views.py, deep.py can run beside any graded module: no rule can be checked (a
    plain failure of the rule's test, never a crash); nobody importing it, it costs nothing."""
    folder = _submission(tmp_path, {"deep.py": source}, views_tail="from . import deep as _deep\n")
    for module, qualname in (("views", "transpose_view"), ("einops_rewrites", "split_heads")):
        with pytest.raises(ProbeError, match=words):
            Student(_Folder(folder), "sub").scope(module, qualname)  # type: ignore[arg-type]
    (folder / "views.py").write_bytes((SOLUTIONS / "views.py").read_bytes())
    assert Student(_Folder(folder), "sub").scope("views", "transpose_view").breaches == []  # type: ignore[arg-type]


def test_a_module_that_is_not_python_costs_only_itself(tmp_path: Path) -> None:
    """training.py with a syntax error never runs (its import fails): the views rules still hold."""
    folder = _submission(tmp_path, {"training.py": "def broken(:\n"})
    scope = Student(_Folder(folder), "sub").scope("views", "transpose_view")  # type: ignore[arg-type]
    assert scope.breaches == []


def test_the_parse_budget(tmp_path: Path) -> None:
    big = "#" * (MAX_FILE_BYTES + 1)
    with pytest.raises(Unparsable, match="over the 256 KiB"):
        SourceSet({"m": big}).tree("m")
    half = "x = 1\n" + "#" * (MAX_FILE_BYTES - 10) + "\n"
    sources = SourceSet({f"m{i}": half for i in range(5)})
    for i in range(4):
        sources.tree(f"m{i}")
    with pytest.raises(Unparsable, match="1 MiB"):
        sources.tree("m4")
    assert sources.spent <= MAX_TOTAL_BYTES


def test_staging_caps(tmp_path: Path) -> None:
    sub = tmp_path / "alice" / "assignment"
    sub.mkdir(parents=True)
    (sub / "memory.py").write_bytes((SOLUTIONS / "memory.py").read_bytes())
    (sub / "blob.py").write_text("#" * (MAX_FILE_BYTES + 1))
    pad = "#" * (250 * 1024) + "\n"
    for i in range(5):
        (sub / f"pad{i}.py").write_text(pad)
    staged = stage(Source("alice", tmp_path / "alice"), tmp_path / "staged")
    assert "larger than 256 KiB" in staged.not_taken["assignment/blob.py"]
    over = sorted(k for k, why in staged.not_taken.items() if "1 MiB of source together" in why)
    assert over == ["assignment/pad4.py"], staged.not_taken
    assert sum(p.stat().st_size for p in staged.folder.glob("*.py")) <= MAX_TOTAL_BYTES
    for i in range(5):  # five module files of 250 KiB: over the total, the submission is refused
        (sub / f"{grader.MODULES[i]}.py").write_text(pad)
    with pytest.raises(RejectedSubmission, match="1 MiB"):
        stage(Source("alice", tmp_path / "alice"), tmp_path / "staged2")


def test_no_cache_outlives_a_run(tmp_path: Path) -> None:
    from tests.probes import _optimizers_rules

    scope = static.build_scope(SourceSet(SOLUTIONS), "optimizers", "AdamW")
    _optimizers_rules.torch_optim_uses_in(scope.nodes)
    assert _optimizers_rules._uses_in.memo, "the rule's memo (a run_cache) kept nothing"
    SourceSet(tmp_path)  # the next submission's run starts
    assert not _optimizers_rules._uses_in.memo, "a previous run's trees are still held"
