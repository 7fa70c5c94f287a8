"""Submissions that try to buy points past the assignment's rules, each with its honest twin.

Every case is the reference solutions with one module rewritten so that a ruled function
does the forbidden thing (calls `x.transpose` in `transpose_view`, autograd in
`two_layer_grads`, torch.optim's update in `AdamW.step`, `FlopCounterMode` in
`count_matmul_flops`, `permute` in an einops rewrite) through a trick a reading of one `def`
would miss: a module-level rebinding, a decorator, a helper, another module of the submission,
`sys.modules`, `__subclasses__`, `pkgutil.resolve_name`, `__getattribute__`, a module
`__getattr__`, `operator.attrgetter`, a coding cookie.  Its twin is the same submission with
the ruled function raising: the trick must not score above it (`tests/kit/test_rules_hold.py`).

`do_nothing` is every stub body replaced by `return None` (or `pass`): it must score 0.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader import KIT_ROOT, MODULES


@dataclass(frozen=True)
class RuleCase:
    name: str
    module: str
    ruled: str  # the top-level function (or Class.method) the rule is about
    code: str  # appended to the solution module: redefines `ruled` with the trick
    extra: dict[str, str] = field(default_factory=dict)  # other files of the submission
    why: str = ""
    header: str = ""  # prepended to the module (e.g. a coding cookie)
    plants: dict[str, str] = field(default_factory=dict)  # code appended to other modules of the solutions


def _solution(module: str) -> str:
    return (KIT_ROOT / "solutions" / f"{module}.py").read_text()


def build(case: RuleCase, dest: Path) -> Path:
    """The submission folder: solutions/ with `case.module` rewritten (and extra files)."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in (KIT_ROOT / "solutions").glob("*.py"):
        shutil.copy2(path, dest / path.name)
    text = case.header + _solution(case.module).rstrip() + "\n\n\n" + textwrap.dedent(case.code).strip() + "\n"
    (dest / f"{case.module}.py").write_text(text)
    for name, content in case.extra.items():
        (dest / name).write_text(textwrap.dedent(content).lstrip())
    for module, code in case.plants.items():
        path = dest / f"{module}.py"
        path.write_text(path.read_text().rstrip() + "\n\n\n" + textwrap.dedent(code).strip() + "\n")
    if case.name == "planted_by_other_module":  # memory.py plants the method, transpose_view uses it
        memory = dest / "memory.py"
        memory.write_text(memory.read_text() + "\n\ntorch.Tensor._swap = torch.Tensor.transpose\n")
        views = dest / "views.py"
        views.write_text(views.read_text() + textwrap.dedent("""

            def transpose_view(x, dim0, dim1):
                if x.dim() < 0:
                    x.as_strided(x.size(), x.stride())
                return x._swap(dim0, dim1)
            """))
    return dest


def twin(case: RuleCase, dest: Path) -> Path:
    """The honest twin: the same module with the ruled function raising."""
    name = case.ruled.rsplit(".", 1)[-1]
    if "." in case.ruled:
        cls = case.ruled.split(".")[0]
        code = f"""
        _Base_{cls} = {cls}
        class {cls}(_Base_{cls}):
            def {name}(self, *args, **kwargs):
                raise RuntimeError("broken on purpose")
        """
    else:
        code = f"""
        def {name}(*args, **kwargs):
            raise RuntimeError("broken on purpose")
        """
    return build(RuleCase(case.name + "_twin", case.module, case.ruled, code), dest)


T = "transpose_view"
_TRANSPOSE = [
    RuleCase("rebinding", "views", T, "transpose_view = lambda x, dim0, dim1: x.transpose(dim0, dim1)",
             why="rebinds the name at module level"),
    RuleCase("decorator", "views", T, """
        def _swap(f):
            return lambda x, dim0, dim1: x.transpose(dim0, dim1)

        @_swap
        def transpose_view(x, dim0, dim1):
            return x.as_strided(x.shape, x.stride(), x.storage_offset())
        """, why="a decorator replaces the honest-looking body"),
    RuleCase("helper", "views", T, """
        def _helper(x, a, b):
            return x.transpose(a, b)

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _helper(x, dim0, dim1)
        """, why="the forbidden call lives in a helper"),
    RuleCase("other_module", "views", T, """
        from .utils import swap as _swap

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _swap(x, dim0, dim1)
        """, extra={"utils.py": "def swap(x, a, b):\n    return x.transpose(a, b)\n"},
             why="the forbidden call lives in another module of the submission"),
    RuleCase("sys_modules", "views", T, """
        import sys as _s

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _s.modules["torch"].Tensor.__dict__["trans" + "pose"](x, dim0, dim1)
        """, why="reaches the method through sys.modules and a class __dict__"),
    RuleCase("subclasses", "views", T, """
        def transpose_view(x, dim0, dim1):
            x.as_strided
            cls = [c for c in object.__subclasses__() if c.__name__ == "TensorBase"][0]
            return cls.__dict__["trans" + "pose"](x, dim0, dim1)
        """, why="walks __subclasses__()"),
    RuleCase("resolve_name", "views", T, """
        import pkgutil as _p

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _p.resolve_name("torch:Tensor.trans" + "pose")(x, dim0, dim1)
        """, why="pkgutil.resolve_name"),
    RuleCase("getattribute", "views", T, """
        def transpose_view(x, dim0, dim1):
            x.as_strided
            return x.__getattribute__("trans" + "pose")(dim0, dim1)
        """, why="x.__getattribute__(...)"),
    RuleCase("attrgetter", "views", T, """
        from operator import attrgetter as _a

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _a("trans" + "pose")(x)(dim0, dim1)
        """, why="operator.attrgetter"),
    RuleCase("module_getattr", "views", T, """
        def __getattr__(name):
            import torch as _t
            return _t.Tensor.transpose

        def transpose_view(x, dim0, dim1):
            x.as_strided
            from . import views as _me
            return _me.swapper(x, dim0, dim1)
        """, why="a module-level __getattr__ hands out the forbidden method"),
    RuleCase("coding_cookie", "views", T, """
        def transpose_view(x, dim0, dim1):
            x.as_strided
            return x.transpose(dim0, dim1)
        """, header="# -*- coding: latin-1 -*-\n", why="a coding cookie (the bytes are read as the import reads them)"),
]

_RED_TEAM = [  # found by an independent red-team pass against the first program-wide rules
    RuleCase("formatter_get_field", "views", T, """
        import string as _string

        def transpose_view(x, dim0, dim1):
            if x.dim() < 0:
                x.as_strided(x.size(), x.stride())
            return _string.Formatter().get_field("0.trans" + "pose", [x], {})[0](dim0, dim1)
        """, why="string.Formatter().get_field as an unlisted getattr"),
    RuleCase("type_hints", "views", T, """
        import typing as _typing

        def _h(a: "torch.Tensor.trans" "pose"):
            pass

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _typing.get_type_hints(_h, {"torch": torch})["a"](x, dim0, dim1)
        """, why="typing.get_type_hints evaluates a string annotation"),
    RuleCase("pickle_global", "views", T, """
        import pickle as _p

        def transpose_view(x, dim0, dim1):
            x.as_strided
            return _p.loads(b"\\x80\\x04ctorch\\nTensor.trans" b"pose\\n.")(x, dim0, dim1)
        """, why="pickle.loads resolves a global by name"),
    RuleCase("planted_by_other_module", "views", T, "", extra={}, why="memory.py plants torch.Tensor._swap at import",
             header=""),
    RuleCase("autograd_engine", "gradients", "two_layer_grads", """
        def two_layer_grads(x, w1, w2):
            with torch.inference_mode(False):
                a, b = torch.nn.Parameter(w1.clone()), torch.nn.Parameter(w2.clone())
                loss = ((x.clone() @ a @ b) ** 2).mean()
                g1, g2 = torch._C._ImperativeEngine().run_backward((loss,), (torch.ones_like(loss),), False, False,
                                                                   (a, b), False, False)
            return g1.detach(), g2.detach()
        """, why="autograd's engine called directly, plain names only"),
    RuleCase("erases_tripwire", "flops", "count_matmul_flops", """
        from grader.rules import tripwire as _tw
        from torch.utils.flop_counter import FlopCounterMode as _FCM

        def count_matmul_flops(fn, *args):
            counter = _FCM(display=False)
            with counter:
                fn(*args)
            for seen in list(_tw._active):
                seen.discard("FlopCounterMode")
            return int(counter.get_total_flops())
        """, why="imports the grader and erases the probe's tripwire record"),
]

_OTHERS = [
    RuleCase("autograd_helper", "gradients", "two_layer_grads", """
        from .utils import grads as _grads

        def two_layer_grads(x, w1, w2):
            return _grads(x, w1, w2)
        """, extra={"utils.py": """
            import torch

            def grads(x, w1, w2):
                w1 = w1.detach().requires_grad_(True)
                w2 = w2.detach().requires_grad_(True)
                loss = ((x @ w1 @ w2) ** 2).mean()
                loss.backward()
                return w1.grad, w2.grad
            """}, why="autograd in another module of the submission"),
    RuleCase("optim_rebinding", "optimizers", "AdamW.step", """
        import torch as _torch

        _Honest = AdamW

        class AdamW(_Honest):
            step = _torch.optim.AdamW.step
        """, why="borrows torch.optim.AdamW.step by rebinding"),
    RuleCase("flop_counter_indirect", "flops", "count_matmul_flops", """
        import importlib as _il

        def count_matmul_flops(fn, *args):
            mode = _il.import_module("torch.utils.flop_" + "counter").FlopCounterMode(display=False)
            with mode:
                fn(*args)
            return mode.get_total_flops()
        """, why="FlopCounterMode through importlib"),
    RuleCase("einops_permute_helper", "einops_rewrites", "split_heads", """
        from .utils import heads as _heads

        def split_heads(x, num_heads):
            return _heads(x, num_heads)
        """, extra={"utils.py": """
            def heads(x, num_heads):
                b, s, d = x.shape
                return x.reshape(b, s, num_heads, d // num_heads).permute(0, 2, 1, 3)
            """}, why="permute in another module"),
]

_SWAP = """
    def transpose_view(x, dim0, dim1):
        if x.dim() < 0:
            x.as_strided(x.size(), x.stride())
        return x._swap(dim0, dim1)
    """


def _planted(name: str, plant: str, why: str, extra: dict[str, str] | None = None) -> RuleCase:
    """memory.py plants `torch.Tensor._swap` (= transpose) through an alias; transpose_view calls it."""
    return RuleCase(name, "views", T, _SWAP, plants={"memory": plant}, extra=extra or {}, why=why)


_ALIASES = [  # monkeypatching through an alias (grader.rules.monkeypatch): each must cost transpose_view its points
    _planted("alias_module_level", "T = torch.Tensor\nT._swap = T.transpose\n",
             "the reviewer's repro: an alias at module level"),
    _planted("alias_in_function", """
        def _setup():
            T = torch.Tensor
            T._swap = T.transpose

        _setup()
        """, "an alias local to a function"),
    _planted("alias_in_class_body", """
        class _Setup:
            T = torch.Tensor
            T._swap = T.transpose
        """, "an alias in a class body"),
    _planted("alias_class_attribute", """
        class _Holder:
            T = torch.Tensor

        _Holder().T._swap = torch.Tensor.transpose
        """, "a class attribute read through an instance"),
    _planted("type_of_a_tensor", "type(torch.zeros(1))._swap = type(torch.zeros(1)).transpose\n", "type(x)"),
    _planted("dunder_class", "torch.zeros(1).__class__._swap = torch.zeros(1).__class__.transpose\n", "x.__class__"),
    _planted("mro_item", "torch.nn.Parameter.__mro__[1]._swap = torch.Tensor.transpose\n", "Parameter.__mro__[1]"),
    _planted("list_item", "_L = [torch.Tensor]\n_L[0]._swap = _L[0].transpose\n", "an item of a list"),
    _planted("dict_values", """
        for _c in {"t": torch.Tensor}.values():
            _c._swap = _c.transpose
        """, "the values of a dict"),
    _planted("walrus", "if (_T := torch.Tensor) is not None:\n    _T._swap = _T.transpose\n", "a walrus"),
    _planted("tuple_unpacking", "_a, (_b, _T) = 0, (1, torch.Tensor)\n_T._swap = _T.transpose\n",
             "nested tuple unpacking"),
    _planted("for_target", "for _T in (torch.Tensor,):\n    _T._swap = _T.transpose\n", "a for loop's target"),
    _planted("with_target", """
        import contextlib as _cl

        with _cl.nullcontext(torch.Tensor) as _T:
            _T._swap = _T.transpose
        """, "with ... as"),
    _planted("parameter_default", """
        def _plant(T=torch.Tensor):
            T._swap = T.transpose

        _plant()
        """, "a parameter's default value"),
    _planted("global_rebinding", """
        def _find():
            global _T
            _T = torch.Tensor

        _find()
        _T._swap = _T.transpose
        """, "a global bound inside a function"),
    _planted("nonlocal_rebinding", """
        def _outer():
            T = None

            def inner():
                nonlocal T
                T = torch.Tensor

            inner()
            T._swap = T.transpose

        _outer()
        """, "a nonlocal bound by an inner function"),
    _planted("function_returns_it", """
        def _get():
            return torch.Tensor

        _get()._swap = torch.Tensor.transpose
        """, "a function of the submission returns the class"),
    _planted("patcher_function", """
        def _patch(cls):
            cls._swap = cls.transpose

        _patch(torch.Tensor)
        """, "a function that patches its argument"),
    _planted("setattr_alias", "_T = torch.Tensor\nsetattr(_T, '_swap', _T.transpose)\n", "setattr on an alias"),
    _planted("getattr_computed", "getattr(torch, 'Ten' + 'sor')._swap = torch.Tensor.transpose\n",
             "getattr with a computed name"),
    _planted("map_lambda_setattr", "list(map(lambda c: setattr(c, '_swap', c.transpose), [torch.Tensor]))\n",
             "a lambda that patches, mapped over the class"),
    _planted("instance_field", """
        class _Box:
            def __init__(self, c):
                self.c = c

        _Box(torch.Tensor).c._swap = torch.Tensor.transpose
        """, "an object of the submission keeps the class"),
    _planted("helper_module_returns_it", "from ._plant_helper import get as _get\n_get()._swap = _get().transpose\n",
             "a helper module's function returns the class",
             extra={"_plant_helper.py": "import torch\n\n\ndef get():\n    return torch.Tensor\n"}),
    RuleCase("module_dict_alias", "views", T, """
        def transpose_view(x, dim0, dim1):
            if x.dim() < 0:
                x.as_strided(x.size(), x.stride())
            return torch.swap_dims_of(x, dim0, dim1)
        """, plants={"memory": "_m = torch\nvars(_m)['swap_dims_of'] = _m.transpose\n"},
             why="a module's namespace written through vars() of an alias"),
    RuleCase("einops_alias_patch", "einops_rewrites", "split_heads", """
        @jaxtyped(typechecker=beartype)
        def split_heads(x: Float[Tensor, "b s hd"], num_heads: int) -> Float[Tensor, "b heads s d"]:
            return rearrange(x, "b s (heads d) -> b s heads d", heads=num_heads).heads_first(0, 2, 1, 3)
        """, plants={"memory": "_E = torch.Tensor\n_E.heads_first = _E.permute\n"},
             why="memory.py plants a permute under another name through an alias"),
]


def _alias_bomb(calls: int = 1500, chain: int = 64) -> str:
    """What the red team fed the alias analysis (104 s of CPU for 70 KB): `chain` globals passed along
    to `_X`, each a different function, and `calls` lines `_X(*_X)` in a function never called.
    Every call applies every function `_X` may be: spent past the budget, it is "too complex"."""
    defs = "".join(f"def _f{i}(*a):\n    pass\n" for i in range(1, chain + 1))
    names = ", ".join(f"_c{i}" for i in range(1, chain + 1))
    moves = "".join(f"    _c{i} = _c{i + 1}\n" for i in range(1, chain)) + "".join(
        f"    _c{i} = _f{i}\n" for i in range(1, chain + 1))
    never = "".join(f"    _y{i} = _X(*_X)\n" for i in range(calls))
    return f"{defs}\ndef _setup():\n    global _X, {names}\n    _X = _c1\n{moves}\n\ndef _never():\n{never}"


def _jaxtyping_plant() -> str:
    """A jaxtyping-checked function whose second shape is `n+0*len(str(exec(...)))`, the code
    spelled with chr() (a shape is split at spaces and read inside an f-string), called at import."""
    code = "import torch;torch.Tensor._swap=torch.Tensor.transpose"
    shape = "n+0*len(str(exec(" + "+".join(f"chr({ord(c)})" for c in code) + ")))"
    return (f"from jaxtyping import Float as _F, jaxtyped as _jt\nfrom beartype import beartype as _bt\n\n\n"
            f"@_jt(typechecker=_bt)\ndef _plant(a: _F[torch.Tensor, \"n\"], b: _F[torch.Tensor, \"{shape}\"]) -> None:\n"
            f"    pass\n\n\n_plant(torch.zeros(2), torch.zeros(2))\n")


_SYNTAX = [  # found by a second red-team pass: lookups with no name or attribute node, code compiled from text
    RuleCase("match_class_keyword", "views", "can_view", """
        def can_view(x, shape):
            match x:
                case torch.Tensor(view=v):
                    try:
                        v(tuple(shape))
                        return True
                    except Exception:
                        return False
        """, why="a class pattern fetches x.view with no attribute node (red team v1)"),
    RuleCase("match_class_positional", "views", T, """
        class _Swapper(torch.Tensor):
            __match_args__ = ("trans" "pose",)

        def transpose_view(x, dim0, dim1):
            if x.dim() < 0:
                x.as_strided(x.size(), x.stride())
            match x.as_subclass(_Swapper):
                case _Swapper(swap):
                    return swap(dim0, dim1).as_subclass(torch.Tensor)
        """, why="a positional class pattern fetches the attribute __match_args__ names"),
    RuleCase("match_class_autograd", "gradients", "two_layer_grads", """
        def _hand(loss_fn, *ws):
            match torch:
                case object(enable_grad=eg, autograd=ag):
                    pass
            match ag:
                case object(grad=agrad, graph=gr):
                    pass
            match agrad:
                case object(__wrapped__=original):
                    pass
            match gr:
                case object(saved_tensors_hooks=sth):
                    pass
            with torch.inference_mode(False), eg(), sth(lambda t: t, lambda t: t):
                leaves = [w.detach().clone() for w in ws]
                for leaf in leaves:
                    match leaf:
                        case torch.Tensor(requires_grad_=rg):
                            rg(True)
                loss = loss_fn(*leaves)
                return [t.detach().clone() for t in original(loss, leaves)]

        def two_layer_grads(x, w1, w2):
            g1, g2 = _hand(lambda a, b: ((x @ a @ b) ** 2).mean(), w1, w2)
            return g1, g2
        """, why="class patterns fetch autograd.grad's unwrapped original and a nested saved-tensor hook, "
                 "past the tripwires (red team g1)"),
    RuleCase("torchscript_string", "views", "can_view", """
        _SCRIPTED = torch.jit.CompilationUnit("def v(x: Tensor, shape: List[int]) -> Tensor:\\n"
                                              "    return x.vi" "ew(shape)\\n")

        def can_view(x, shape):
            try:
                _SCRIPTED.v(x, list(shape))
                return True
            except Exception:
                return False
        """, why="TorchScript compiled from a string at module level (red team v2)"),
    RuleCase("fx_graph_through_alias", "views", T, """
        _T = torch

        def transpose_view(x, dim0, dim1):
            if x.dim() < 0:
                x.as_strided(x.size(), x.stride())
            g = _T.fx.Graph()
            a, b, c = g.placeholder("a"), g.placeholder("b"), g.placeholder("c")
            g.output(g.call_method("trans" "pose", (a, b, c)))
            return _T.fx.GraphModule(_T.nn.Module(), g)(x, dim0, dim1)
        """, why="an FX graph names the method in a string; torch.fx reached through an alias"),
    RuleCase("beartype_string_annotation", "einops_rewrites", "split_heads", """
        @beartype
        def _plant(x: "setattr(torch.Tensor, 'heads_first', torch.Tensor.per" "mute) or int") -> None:
            pass

        _plant(0)

        @jaxtyped(typechecker=beartype)
        def split_heads(x: Float[Tensor, "b s hd"], num_heads: int) -> Float[Tensor, "b heads s d"]:
            return rearrange(x, "b s (heads d) -> b s heads d", heads=num_heads).heads_first(0, 2, 1, 3)
        """, why="beartype evaluates a string annotation: a monkeypatch in a string"),
    RuleCase("jaxtyping_shape_code", "views", T, _jaxtyping_plant() + "\n\n" + textwrap.dedent(_SWAP),
             why="jaxtyping evaluates a symbolic axis: code in a shape string (no space, no quote) plants the method"),
    RuleCase("alias_analysis_bomb", "views", T, _SWAP,
             plants={"memory": _alias_bomb() + "\n\n_P = torch.Tensor\n_P._swap = _P.transpose\n"}, why="the plant hidden in a program built to exhaust the alias analysis (red team ab1)"),
]

CASES: list[RuleCase] = _TRANSPOSE + _RED_TEAM + _OTHERS + _ALIASES + _SYNTAX


def do_nothing(dest: Path, body: str = "return None") -> Path:
    """Every stub of assignment/ with its `raise NotImplementedError()` replaced by `body`."""
    dest.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        text = (KIT_ROOT / "assignment" / f"{module}.py").read_text()
        text = re.sub(r"raise NotImplementedError\(\)", body, text)
        (dest / f"{module}.py").write_text(text)
    return dest


CaseBuilder = Callable[[RuleCase, Path], Path]
