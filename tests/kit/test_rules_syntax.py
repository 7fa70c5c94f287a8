"""Every syntax that looks a name up is seen by the rules, code compiled from text is a breach, the
alias analysis ends within its budget, and the views rules have a runtime layer of ops.

* A class pattern (`case C(view=v)`, `case C(v)` through `__match_args__`) fetches an attribute with
  no attribute node: a breach in any file that can run, and its keyword names count as attributes
  for every rule's names (`static.forbidden_uses`, the gradients rule).  The alias analysis binds a
  keyword capture to the subject's attribute, never to the subject.
* torch's compilers of source text, C++ and graphs (`grader.rules.breaches.CODE_LOADERS`) are loaders, a
  breach in any file that can run, spelled out or reached through an alias (`grader.rules.monkeypatch`).
* A string a library evaluates as code (a string annotation: beartype and typing evaluate it; a
  jaxtyping shape, whose symbolic axes are evaluated) must be inert: a type expression or arithmetic
  on axis names; what it names is in the rule's scope.
* torch's private modules imported under a name of one's choosing are private internals.
* A name read but never bound comes from a star import: `from torch.autograd import *` then
  `grad(...)` breaks the gradients rule.
* The alias analysis has an explicit budget: the red team's program (64 chained globals fed to
  thousands of calls) is "too complex for the checks to follow"; honest code stays far under it.
* `grader.rules.tripwire.watch_ops` records the aten ops a call dispatched: every name of the views rules
  dispatches one of the ops the runtime layer forbids (`TRANSPOSE_OPS`, `VIEW_OPS`), however it is
  reached (TorchScript included), and the reference solutions dispatch none.
"""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import grader
from grader.rules import monkeypatch
from grader.rules import static
from grader.rules import tripwire
from grader.rules.breaches import _breach, global_breaches
from grader.rules.sources import SourceSet
from tests.adversarial.rules import _alias_bomb
from tests.public import test_views
from tests.public.test_gradients import autograd_uses

pytestmark = pytest.mark.kit

KIT = Path(grader.KIT_ROOT)
SOLUTIONS = KIT / "solutions"


def _global(code: str) -> list[str]:
    return global_breaches(ast.parse(textwrap.dedent(code)), "m.py")


def _aliases(code: str) -> list[str]:
    trees = {"memory": ast.parse(textwrap.dedent(code))}
    return [b for found in monkeypatch.monkeypatches(trees, set(trees)).values() for b in found]


def _submission(tmp_path: Path, module: str, tail: str) -> SourceSet:
    for path in SOLUTIONS.glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    target = tmp_path / f"{module}.py"
    target.write_text(target.read_text() + "\n\n" + textwrap.dedent(tail))
    return SourceSet(tmp_path)


# -- class patterns ---------------------------------------------------------------------------

CLASS_PATTERNS = {
    "keyword": "match x:\n    case torch.Tensor(view=v):\n        v(3)\n",
    "positional": "match x:\n    case P(t):\n        t(0, 1)\n",
    "nested in a sequence": "match xs:\n    case [object(grad=g), *_]:\n        g(1)\n",
    "isinstance only": "match x:\n    case int():\n        pass\n",
    "in a function never called": "def f(x):\n    match x:\n        case object(__wrapped__=w):\n            return w\n",
}
OTHER_PATTERNS = {
    "sequence": "match xs:\n    case [a, b, *rest]:\n        pass\n",
    "mapping": "match d:\n    case {'k': v, **rest}:\n        pass\n",
    "value": "import enum\nclass C(enum.Enum):\n    A = 1\nmatch c:\n    case C.A | 2:\n        pass\n",
    "capture and wildcard": "match x:\n    case None:\n        pass\n    case y if y > 1:\n        pass\n    case _:\n        pass\n",
}


@pytest.mark.parametrize("name", list(CLASS_PATTERNS))
def test_a_class_pattern_is_a_breach_in_any_file(name: str) -> None:
    assert any("class pattern" in b for b in _global(CLASS_PATTERNS[name])), name


@pytest.mark.parametrize("name", list(OTHER_PATTERNS))
def test_other_patterns_are_not(name: str) -> None:
    assert _global(OTHER_PATTERNS[name]) == [], name


def test_class_pattern_keywords_are_attribute_names() -> None:
    tree = ast.parse(CLASS_PATTERNS["keyword"])
    assert static.forbidden_uses(tree, {"view"}) == ["view"]
    assert "view" in static.attribute_names(tree) and "view" in static.referenced_names(tree)


def test_class_patterns_break_the_views_and_gradients_rules(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    views = _submission(tmp_path / "v", "views", """
        def can_view(x, shape):
            match x:
                case torch.Tensor(view=v):
                    return v(tuple(shape)) is not None
        """)
    hits = static.forbidden_uses(static.build_scope(views, "views", "can_view"), test_views.VIEW_FORBIDDEN)
    assert "view" in hits and any("class pattern" in h for h in hits), hits
    (tmp_path / "g").mkdir()
    grads = _submission(tmp_path / "g", "gradients", """
        def two_layer_grads(x, w1, w2):
            match torch.autograd:
                case object(grad=original):
                    pass
            return original(((x @ w1 @ w2) ** 2).mean(), [w1, w2])
        """)
    hits = autograd_uses(static.build_scope(grads, "gradients", "two_layer_grads"))
    assert "grad" in hits and any("class pattern" in h for h in hits), hits


def test_the_alias_analysis_binds_a_keyword_capture_to_the_attribute() -> None:
    assert _aliases("import torch\nmatch torch:\n    case object(Tensor=T):\n        T._swap = T.transpose\n") \
        == ["monkeypatches T._swap (memory.py:4)"]
    assert _aliases("import torch\nmatch torch.nn:\n    case object(functional=F, x=[*rest]):\n"
                    "        F.relu = None\n        rest[0].y = 1\n")
    assert _aliases("import torch\nmatch torch:\n    case object(fx=f):\n        f.Graph()\n")
    # what an object of the submission's own hands out is its own: no breach
    assert _aliases("class P:\n    def __init__(self):\n        self.box = []\n"
                    "match P():\n    case P(box=b):\n        b.append(1)\n") == []


def test_no_solution_or_variant_uses_a_class_pattern() -> None:
    for folder in ("solutions", "assignment", "tests/variants"):
        for path in sorted((KIT / folder).glob("*.py")):
            tree = ast.parse(path.read_bytes())
            assert not any(isinstance(n, ast.MatchClass) for n in ast.walk(tree)), path


# -- code compiled from text ---------------------------------------------------------------------

LOADERS = {
    "TorchScript string": "import torch\ncu = torch.jit.CompilationUnit('def f(x: Tensor) -> Tensor:\\n  return x')\n",
    "torch.jit.script": "import torch\nf = torch.jit.script(lambda x: x)\n",
    "alias of torch": "import torch as T\nf = T.jit.script(g)\n",
    "from torch import jit": "from torch import jit\n",
    "import torch.fx": "import torch.fx\n",
    "torch.fx.Graph": "import torch\ng = torch.fx.Graph()\n",
    "torch.compile": "import torch\nf = torch.compile(g)\n",
    "from torch import compile": "from torch import compile as c\n",
    "torch.export": "import torch\ntorch.export.export(m, ())\n",
    "torch._dynamo": "import torch\ntorch._dynamo.optimize()\n",
    "load_inline": "from torch.utils.cpp_extension import load_inline\n",
    "cpp_extension module": "from torch.utils import cpp_extension\n",
    "cpp_extension through an alias": "import torch.utils as U\nU.cpp_extension.load_inline('m', '')\n",
    "load_library": "import torch\ntorch.ops.load_library('x.so')\n",
    "jiterator": "import torch\ntorch.cuda.jiterator._create_jit_fn('')\n",
    "torch.hub": "import torch\ntorch.hub.load('a', 'b')\n",
    "torch.package": "from torch.package import PackageImporter\n",
}
NOT_LOADERS = {
    "a variable named jit or fx": "jit = 3\nfx = jit * 2\nprint(fx)\n",
    "a model's own compile method name": "class M:\n    def compile(self):\n        return 1\nM().compile()\n",
    "torch.nn": "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\n",
}


@pytest.mark.parametrize("name", list(LOADERS))
def test_torch_code_loaders_are_breaches_in_any_file(name: str) -> None:
    assert any(b.startswith("loads code") for b in _global(LOADERS[name]) + _aliases(LOADERS[name])), name


@pytest.mark.parametrize("name", list(NOT_LOADERS))
def test_names_like_them_are_not(name: str) -> None:
    assert _global(NOT_LOADERS[name]) == [] and _aliases(NOT_LOADERS[name]) == [], name


@pytest.mark.parametrize("code", [
    "import torch\nT = torch\ng = T.fx.Graph()\n",
    "from torch import *\nf = jit.script(g)\n",
    "import torch\ne = getattr(torch, 'export')\n",
    "import torch\nbox = [torch]\nbox[0].fx.Graph()\n",
])
def test_the_alias_analysis_follows_an_alias_to_a_code_loader(code: str) -> None:
    assert _global(code) == [], "the syntactic check sees no loader here: the alias analysis must"
    assert any(b.startswith("loads code from source text or a graph: ") for b in _aliases(code)), code


# -- strings that libraries evaluate as code -------------------------------------------------------

EVALUATED = {
    "beartype string annotation": "from beartype import beartype\n@beartype\ndef f(x: 'exec(\"1\") or int'):\n    pass\n",
    "string return annotation": "def f() -> 'print(1) or int':\n    pass\n",
    "annotated assignment": "x: '__import__(\"os\")' = 1\n",
    "nested in a subscript": "import typing\ndef f(x: typing.List['g() or int']):\n    pass\n",
    "jaxtyping symbolic axis": "from jaxtyping import Float\ndef f(x: Float[T, 'n'], y: Float[T, 'n+len(str(exec(chr(49))))']):\n"
                               "    pass\n",
    "jaxtyping f-string braces": "def f(x: Float[T, 'n {exec(chr(49))}']):\n    pass\n",
    "jaxtyping shape outside an annotation": "ok = isinstance(x, Float[T, 'n+exec(chr(49))'])\n",
}
INERT = {
    "forward reference": "class A:\n    def f(self) -> 'A':\n        return self\n",
    "dotted and union": "def f(x: 'torch.Tensor | None', y: 'list[int]'):\n    pass\n",
    "jaxtyping shapes": "def f(x: Float[T, 'b s (heads d)'], y: Float[T, '*batch #c _ ... rows=3'], z: Float[T, 'n+1 2*n']):"
                        "\n    pass\n",
    "documentation": "import typing\nx: typing.Annotated[int, 'the count, never negative!'] = 1\n",
    "strings in a tuple subscript": "d = {}\nd['a', 'b c'] = 1\n",
}


@pytest.mark.parametrize("name", list(EVALUATED))
def test_code_in_an_evaluated_string_is_a_breach(name: str) -> None:
    assert any(b.startswith("evaluates code in a string") for b in _global(EVALUATED[name])), name


@pytest.mark.parametrize("name", list(INERT))
def test_inert_strings_are_not(name: str) -> None:
    assert _global(INERT[name]) == [], name


def test_a_jaxtyping_shape_computed_at_run_time_is_a_breach() -> None:
    code = "from jaxtyping import Float\nfrom torch import Tensor\nS = 'n'\ndef f(x: Float[Tensor, S]):\n    pass\n"
    assert any(b.startswith("evaluates code in a string: a jaxtyping shape") for b in _aliases(code))
    assert _aliases(code.replace("Float[Tensor, S]", "Float[Tensor, 'n']")) == []


def test_a_string_annotation_brings_what_it_names_into_the_scope(tmp_path: Path) -> None:
    """`x: "K[0]"`: beartype evaluates it, so K.__class_getitem__ runs: the rule reads K's code."""
    sources = _submission(tmp_path, "views", """
        class _K:
            def __class_getitem__(cls, item):
                _STASH.append(torch.Tensor.transpose)
                return int

        _STASH = []

        def transpose_view(x, dim0, dim1: "_K[0]"):
            x.as_strided
            return _STASH[0](x, dim0, dim1)
        """)
    scope = static.build_scope(sources, "views", "transpose_view")
    assert "transpose" in static.forbidden_uses(scope, test_views.TRANSPOSE_FORBIDDEN)


# -- private internals under another name, star imports ------------------------------------------

@pytest.mark.parametrize("code,breach", [
    ("import torch._C as C", True), ("from torch._C import DispatchKey", True),
    ("from torch.utils._python_dispatch import _pop_mode", True),
    ("from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes", True),
    ("from torch.autograd import _functions", True),
    ("from torch.utils._python_dispatch import TorchDispatchMode", False),
    ("import torch.nn.functional as F", False), ("from torch import __version__", False),
])
def test_private_torch_imports_are_breaches(code: str, breach: bool) -> None:
    found = [b for n in ast.walk(ast.parse(code)) if (b := _breach(n, "m.py", frozenset()))]
    assert bool(found) == breach, (code, found)


def test_a_star_import_of_autograd_breaks_the_gradients_rule(tmp_path: Path) -> None:
    sources = _submission(tmp_path, "gradients", """
        from torch.autograd import *

        def two_layer_grads(x, w1, w2):
            w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()
            return grad(((x @ w1 @ w2) ** 2).mean(), [w1, w2])
        """)
    assert "grad" in autograd_uses(static.build_scope(sources, "gradients", "two_layer_grads"))
    honest = SourceSet(SOLUTIONS)
    for name in ("linear_regression_grad", "two_layer_grads", "MatmulFunction.forward", "MatmulFunction.backward"):
        assert autograd_uses(static.build_scope(honest, "gradients", name)) == [], name


# -- the alias analysis' budget ------------------------------------------------------------------

def _steps(trees: dict[str, ast.Module]) -> tuple[int, int]:
    """(steps the analysis took without a budget, the budget it has)."""
    nodes = sum(1 for t in trees.values() for _ in ast.walk(t))
    analysis = monkeypatch._Analysis(trees, frozenset(trees), 10**12)
    analysis.run()
    return 10**12 - analysis.steps_left, monkeypatch.budget(nodes)


def test_honest_code_stays_far_under_the_budget() -> None:
    trees = {p.stem: ast.parse(p.read_bytes()) for p in SOLUTIONS.glob("*.py")}
    trees.update((f"variant_{p.stem}", ast.parse(p.read_bytes())) for p in (KIT / "tests/variants").glob("*.py"))
    steps, budget = _steps(trees)
    assert steps * 4 < budget, (steps, budget)


def test_the_red_teams_program_is_too_complex_to_follow() -> None:
    program = {p.stem: ast.parse(p.read_bytes()) for p in SOLUTIONS.glob("*.py")}
    program["memory"] = ast.parse((SOLUTIONS / "memory.py").read_text() + "\n\n" + _alias_bomb())
    found = monkeypatch.monkeypatches(program, set(program))
    assert list(found) == [next(iter(program))], found  # one breach, on the program's first file
    (breach,) = next(iter(found.values()))
    assert breach.startswith("too complex for the checks to follow") and "program of memory.py" in breach, breach


# -- the runtime layer of the views rules ---------------------------------------------------------

def _ops(call) -> set[str]:
    with tripwire.watch_ops() as ops:
        try:
            call()
        except RuntimeError:  # a view that torch refuses is dispatched all the same
            pass
    return ops


_X = torch.arange(24.0).reshape(4, 6)
_CALLS = {
    "transpose": lambda: _X.transpose(0, 1), "permute": lambda: _X.permute(1, 0), "t": lambda: _X.t(),
    "T": lambda: _X.T, "mT": lambda: _X.mT, "mH": lambda: _X.mH, "H": lambda: _X.H, "adjoint": lambda: _X.adjoint(),
    "swapaxes": lambda: _X.swapaxes(0, 1), "swapdims": lambda: _X.swapdims(0, 1), "movedim": lambda: _X.movedim(0, 1),
    "view": lambda: _X.t().view(24), "reshape": lambda: _X.t().reshape(24), "flatten": lambda: _X.t().flatten(),
    "view_as": lambda: _X.view_as(torch.empty(24)), "reshape_as": lambda: _X.t().reshape_as(torch.empty(24)),
    "unflatten": lambda: _X.unflatten(1, (2, 3)),
    "_reshape_alias": lambda: torch.ops.aten._reshape_alias(_X, (24,), (1,)),
}


@pytest.mark.parametrize("name,ops", [(n, "TRANSPOSE_OPS") for n in sorted(test_views.TRANSPOSE_FORBIDDEN)]
                         + [(n, "VIEW_OPS") for n in sorted(test_views.VIEW_FORBIDDEN)])
def test_every_forbidden_name_dispatches_a_forbidden_op(name: str, ops: str) -> None:
    seen = _ops(_CALLS[name])
    assert seen & getattr(test_views, ops), (name, seen)


def test_torchscript_is_seen_by_the_op_record() -> None:
    unit = torch.jit.CompilationUnit("def v(x: Tensor, shape: List[int]) -> Tensor:\n    return x.view(shape)\n")
    assert "aten::view" in _ops(lambda: unit.v(_X, [24]))


def test_the_reference_solutions_dispatch_no_forbidden_op() -> None:
    from solutions import views as reference
    from tests.probes import views as probes

    impl = SimpleNamespace(views=reference)
    _, can_view_cases = test_views._watched_cases(transpose=False)
    _, transpose_cases = test_views._watched_cases(transpose=True)
    assert not set(probes.can_view_ops(impl, can_view_cases)) & test_views.VIEW_OPS
    ran = set(probes.transpose_view_ops(impl, transpose_cases))
    assert "aten::as_strided" in ran and not ran & test_views.TRANSPOSE_OPS, ran


def test_the_op_record_sees_what_a_reading_cannot() -> None:
    """An implementation that asks torch through TorchScript (can_view) or an FX graph naming the method
    in a string (transpose_view): the probes' records hold the forbidden ops the gates refuse."""
    from tests.probes import views as probes

    unit = torch.jit.CompilationUnit("def v(x: Tensor, shape: List[int]) -> Tensor:\n    return x.view(shape)\n")

    def can_view(x, shape):
        try:
            unit.v(x, list(shape))
            return True
        except RuntimeError:
            return False

    def transpose_view(x, dim0, dim1):
        graph = torch.fx.Graph()
        args = [graph.placeholder(name) for name in "abc"]
        graph.output(graph.call_method("trans" "pose", tuple(args)))
        return torch.fx.GraphModule(torch.nn.Module(), graph)(x, dim0, dim1)

    impl = SimpleNamespace(views=SimpleNamespace(can_view=can_view, transpose_view=transpose_view))
    assert set(probes.can_view_ops(impl, test_views._watched_cases(transpose=False)[1])) & test_views.VIEW_OPS
    assert set(probes.transpose_view_ops(impl, test_views._watched_cases(transpose=True)[1])) & test_views.TRANSPOSE_OPS


def test_an_import_of_re_is_plain_computation() -> None:
    """`re` is in ALLOWED_IMPORTS: a module-level ``import re`` (``re.split`` to cut a GPU's name into
    words) is no breach of count_matmul_flops's rule; ``importlib`` still is, and so is ``re.compile``
    (the docstring forbids `compile` by name)."""
    def breaches(code: str) -> list[str]:
        tree = ast.parse(textwrap.dedent(code))
        return [b for n in ast.walk(tree) if (b := _breach(n, "flops.py", frozenset({"flops"})))]

    assert breaches("import re\nwords = re.split(r'[ -]', 'NVIDIA A100-SXM4-40GB')\n") == []
    assert breaches("from re import split\n") == []
    assert breaches("import importlib\n") and breaches("import re\np = re.compile('x')\n")
