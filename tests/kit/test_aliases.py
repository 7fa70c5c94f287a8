"""The monkeypatch rule follows values, not names (`grader.rules.monkeypatch`).

* Every form of `FLAGGED` writes to an object other code also sees (a torch class or module, a
  module of the submission) through an alias, a container, a call: each is reported, with where.
* Every form of `CLEAN` is what honest code does (attributes of objects it made, `torch.backends`
  settings, optimizer state, `super().__init__`...): none is reported.
* The reviewer's repro (memory.py patches `torch.Tensor` through an alias, `transpose_view` calls the
  planted method) is a breach of the views rules, read program-wide.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import grader
from grader.rules import static
from grader.rules.monkeypatch import monkeypatches
from grader.rules.monkeypatch_values import MAX_REFS
from grader.rules.sources import SourceSet
from tests.public.test_views import TRANSPOSE_FORBIDDEN

pytestmark = pytest.mark.kit

SOLUTIONS = Path(grader.KIT_ROOT) / "solutions"


def _found(source: str, **others: str) -> list[str]:
    trees = {"memory": ast.parse(textwrap.dedent(source))}
    trees.update((name, ast.parse(textwrap.dedent(text))) for name, text in others.items())
    return [b for found in monkeypatches(trees, set(trees)).values() for b in found]


FLAGGED = {
    "alias at module level": "import torch\nT = torch.Tensor\nT._swap = T.transpose\n",
    "alias of a module": "import torch.nn.functional as F\nG = F\nG.relu = None\n",
    "alias of an imported class": "from torch import nn\nLin = nn.Linear\nLin.forward = None\n",
    "alias in a function": "import torch\ndef f():\n    T = torch.Tensor\n    T._swap = 1\n",
    "alias in a class body": "import torch\nclass A:\n    T = torch.Tensor\n    T._swap = 1\n",
    "class attribute through an instance": "import torch\nclass A:\n    T = torch.Tensor\nA().T._swap = 1\n",
    "type(x)": "import torch\nx = torch.zeros(1)\ntype(x)._swap = 1\n",
    "type(x) bound to a name": "import torch\nC = type(torch.zeros(1))\nC._swap = 1\n",
    "x.__class__": "import torch\ntorch.zeros(1).__class__._swap = 1\n",
    "__mro__ item": "import torch\ntorch.nn.Parameter.__mro__[1]._swap = 1\n",
    "__bases__ of a subclass": "import torch\nclass P(torch.Tensor):\n    pass\nP.__bases__[0]._swap = 1\n",
    "super()": "import torch\nclass P(torch.Tensor):\n    def f(self):\n        super().__thisclass__.__base__._swap = 1\n",
    "list item": "import torch\nL = [torch.Tensor]\nL[0]._swap = 1\n",
    "dict value": "import torch\nd = {'t': torch.Tensor}\nd['t']._swap = 1\n",
    "dict.get": "import torch\n{'t': torch.Tensor}.get('t')._swap = 1\n",
    "list appended": "import torch\nL = []\nL.append(torch.Tensor)\nL[0]._swap = 1\n",
    "for over dict items": "import torch\nfor k, v in {'t': torch.Tensor}.items():\n    v._swap = 1\n",
    "walrus": "import torch\nif (T := torch.Tensor):\n    T._swap = 1\n",
    "walrus in a comprehension": "import torch\n[(T := c) for c in [torch.Tensor]]\nT._swap = 1\n",
    "tuple unpacking": "import torch\na, T = 1, torch.Tensor\nT._swap = 1\n",
    "nested unpacking of a name": "import torch\nx = (1, (2, torch.Tensor))\na, (b, T) = x\nT._swap = 1\n",
    "starred unpacking": "import torch\na, *rest = 1, torch.Tensor\nrest[0]._swap = 1\n",
    "for target": "import torch\nfor T in (torch.Tensor,):\n    T._swap = 1\n",
    "comprehension": "import torch\n[T for T in [torch.Tensor]][0]._swap = 1\n",
    "with ... as": "import torch, contextlib\nwith contextlib.nullcontext(torch.Tensor) as T:\n    T._swap = 1\n",
    "contextmanager": "import torch, contextlib\n@contextlib.contextmanager\ndef cm():\n    yield torch.Tensor\n"
                      "with cm() as T:\n    T._swap = 1\n",
    "match capture": "import torch\nmatch torch.Tensor:\n    case T:\n        T._swap = 1\n",
    "parameter default": "import torch\ndef f(T=torch.Tensor):\n    T._swap = 1\n",
    "lambda default": "import torch\n(lambda T=torch.Tensor: T.__setattr__('x', 1))()\n",
    "global": "import torch\nT = None\ndef g():\n    global T\n    T = torch.Tensor\ng()\nT._swap = 1\n",
    "nonlocal": "import torch\ndef g():\n    T = None\n    def h():\n        nonlocal T\n        T = torch.Tensor\n    h()\n    T._swap = 1\n",
    "closure": "import torch\ndef g():\n    T = torch.Tensor\n    def h():\n        T._swap = 1\n    return h\n",
    "function returns it": "import torch\ndef get():\n    return torch.Tensor\nget()._swap = 1\n",
    "function returns it, aliased": "import torch\ndef get():\n    return torch.Tensor\ng = get\ng()._swap = 1\n",
    "chain of returns": "import torch\ndef a():\n    return b()\ndef b():\n    return torch.Tensor\na()._swap = 1\n",
    "an item of what was passed": "import torch\ndef first(xs):\n    return xs[0]\nfirst([torch.Tensor])._swap = 1\n",
    "backends, back to torch through a function": "import torch\ndef get(m):\n    return m.torch\n"
                                                  "get(torch.backends.cudnn).Tensor._swap = 1\n",
    "backends kept in an object": "import torch\nclass H:\n    def __init__(self, b):\n        self.b = b\n"
                                  "H(torch.backends.cudnn).b.torch.Tensor._swap = 1\n",
    "identity function": "import torch\ndef ident(x):\n    return x\nident(torch.Tensor)._swap = 1\n",
    "decorated with lru_cache": "import torch, functools\n@functools.lru_cache\ndef get():\n    return torch.Tensor\n"
                                "get()._swap = 1\n",
    "generator": "import torch\ndef gen():\n    yield torch.Tensor\nfor T in gen():\n    T._swap = 1\n",
    "a function that patches its argument": "import torch\ndef patch(c):\n    c._swap = c.transpose\npatch(torch.Tensor)\n",
    "patcher through a chain": "import torch\ndef patch(c):\n    c._swap = 1\ndef outer(c):\n    patch(c)\n"
                               "outer(torch.Tensor)\n",
    "patcher of items": "import torch\ndef put(d):\n    d['relu'] = None\nput(torch.nn.functional.__dict__)\n",
    "patcher method": "import torch\nclass P:\n    def patch(self, c):\n        c._swap = 1\nP().patch(torch.Tensor)\n",
    "patcher given a list": "import torch\ndef patch(cs):\n    for c in cs:\n        c._swap = 1\npatch([torch.Tensor])\n",
    "patcher mapped": "import torch\ndef patch(c):\n    c._swap = 1\nlist(map(patch, [torch.Tensor]))\n",
    "lambda setattr mapped": "import torch\nlist(map(lambda c: setattr(c, 'x', 1), [torch.Tensor]))\n",
    "patcher kept in a field": "import torch\ndef patch(c):\n    c._swap = 1\nclass B:\n    def __init__(self, f):\n"
                               "        self.f = f\nB(patch).f(torch.Tensor)\n",
    "setattr on an alias": "import torch\nT = torch.Tensor\nsetattr(T, '_swap', T.transpose)\n",
    "delattr": "import torch\nT = torch.Tensor\ndelattr(T, 'transpose')\n",
    "setattr aliased": "import torch\ns = setattr\ns(torch.Tensor, 'x', 1)\n",
    "a bound writer, aliased": "import torch.nn.functional as F\nu = F.__dict__.update\nu(relu=None)\n",
    "setattr with star arguments": "import torch\nsetattr(*(torch.Tensor, 'x', 1))\n",
    "partial of setattr": "import torch, functools\nfunctools.partial(setattr, torch.Tensor)('x', 1)\n",
    "type.__setattr__": "import torch\ntype.__setattr__(torch.Tensor, 'x', 1)\n",
    "X.__setattr__ bound": "import torch.nn.functional as F\nF.__setattr__('relu', None)\n",
    "vars() of an alias": "import torch.nn.functional as F\nG = F\nvars(G)['relu'] = None\n",
    "__dict__ item": "import torch\nF = torch.nn.functional\nF.__dict__['relu'] = 1\n",
    "__dict__.update": "import torch.nn.functional as F\nF.__dict__.update(relu=None)\n",
    "dict.update unbound": "import torch.nn.functional as F\ndict.update(vars(F), relu=None)\n",
    "operator.setitem": "import torch.nn.functional as F, operator\noperator.setitem(F.__dict__, 'relu', None)\n",
    "globals() written": "globals()['transpose_view'] = None\n",
    "getattr with a computed name": "import torch\ngetattr(torch, 'Ten' + 'sor')._swap = 1\n",
    "getattr of a dunder": "import torch\ngetattr(torch.zeros(1), '__class__')._swap = 1\n",
    "attrgetter": "import torch, operator\noperator.attrgetter('__class__')(torch.zeros(1))._swap = 1\n",
    "partial of getattr": "import torch, functools\nfunctools.partial(getattr, torch)('Tensor')._swap = 1\n",
    "reduce of getattr": "import torch, functools\nfunctools.reduce(getattr, ['Tensor'], torch)._swap = 1\n",
    "object.__getattribute__": "import torch\nobject.__getattribute__(torch, 'Tensor')._swap = 1\n",
    "mro()": "import torch\ntorch.nn.Parameter.mro()[1]._swap = 1\n",
    "__subclasses__()": "import torch\ntorch.nn.Module.__subclasses__()[0].forward = None\n",
    "inspect": "import torch, inspect\ninspect.getmro(torch.nn.Parameter)[1]._swap = 1\n",
    "copy.copy": "import torch, copy\ncopy.copy(torch.Tensor)._swap = 1\n",
    "next(iter(...))": "import torch\nnext(iter([torch.Tensor]))._swap = 1\n",
    "instance field set in __init__": "import torch\nclass Box:\n    def __init__(self, v):\n        self.v = v\n"
                                      "Box(torch.Tensor).v._swap = 1\n",
    "dataclass field": "import torch, dataclasses\n@dataclasses.dataclass\nclass Box:\n    v: object\n"
                       "Box(torch.Tensor).v._swap = 1\n",
    "SimpleNamespace": "import torch, types\ntypes.SimpleNamespace(T=torch.Tensor).T._swap = 1\n",
    "namedtuple": "import torch, collections\nN = collections.namedtuple('N', 'T')\nN(torch.Tensor).T._swap = 1\n",
    "property": "import torch\nclass P:\n    @property\n    def T(self):\n        return torch.Tensor\nP().T._swap = 1\n",
    "property()": "import torch\nclass P:\n    T = property(lambda self: torch.Tensor)\nP().T._swap = 1\n",
    "a wrapper's __getattr__ called for a dunder": "import torch\nclass Wrap:\n    def __getattr__(self, name):\n"
                                                   "        return getattr(torch.zeros(1), name)\n"
                                                   "Wrap().__getattr__('__class__')._swap = 1\n",
    "class __getattr__": "import torch\nclass P:\n    def __getattr__(self, name):\n        return torch.Tensor\n"
                         "P().anything._swap = 1\n",
    "instance __call__": "import torch\nclass P:\n    def __call__(self):\n        return torch.Tensor\nP()()._swap = 1\n",
    "attribute stored, then read": "import torch\nclass A:\n    pass\na = A()\na.T = torch.Tensor\na.T._swap = 1\n",
    "function attribute": "import torch\ndef f():\n    pass\nf.T = torch.Tensor\nf.T._swap = 1\n",
    "caught exception's args": "import torch\ntry:\n    raise ValueError(torch.Tensor)\nexcept ValueError as e:\n"
                               "    e.args[0]._swap = 1\n",
    "sent into a generator": "def g():\n    T = yield\n    T._swap = 1\n",
    "del of an attribute": "import torch\nT = torch.Tensor\ndel T.transpose\n",
    "augmented assignment": "import torch\nT = torch.Tensor\nT.x += 1\n",
    "for loop target attribute": "import torch\nT = torch.Tensor\nfor T._swap in [1]:\n    pass\n",
    "backends, back to torch": "import torch\ntorch.backends.cudnn.torch.Tensor._swap = 1\n",
    "backends, private": "import torch\ntorch.backends._nnapi.x = 1\n",
    "star import of torch": "from torch import *\nTensor._swap = 1\n",
    "os.environ (as before)": "import os\nos.environ['X'] = '1'\n",
}

CROSS_MODULE = {
    "a helper module's function returns it": ("from .helpers import get\nget()._swap = 1\n",
                                              {"helpers": "import torch\ndef get():\n    return torch.Tensor\n"}),
    "a helper module's patcher": ("from . import helpers\nimport torch\nhelpers.patch(torch.Tensor)\n",
                                  {"helpers": "def patch(c):\n    c._swap = 1\n"}),
    "a module of the submission, aliased": ("from . import views as v\nm = v\nm.transpose_view = None\n",
                                            {"views": "def transpose_view(x, a, b):\n    return x\n"}),
    "a star import of a helper": ("from .helpers import *\nT._swap = 1\n",
                                  {"helpers": "import torch\nT = torch.Tensor\n"}),
    "a re-exported alias": ("from .helpers import T\nT._swap = 1\n",
                            {"helpers": "from .deeper import T\n", "deeper": "import torch\nT = torch.Tensor\n"}),
}

CLEAN = {
    "parameters and tensors made here": "import torch\np = torch.nn.Parameter(torch.zeros(3))\np.grad = None\n"
                                        "t = torch.zeros(3, dtype=torch.float32)\nt.grad = None\nt.requires_grad = True\n",
    "a parameter of a function": "def zero(ps):\n    for t in ps:\n        t.grad = None\nzero([1])\n",
    "module attributes in methods": "import torch\nclass M(torch.nn.Module):\n    def __init__(self, d):\n"
                                    "        super().__init__()\n        self.weight = torch.nn.Parameter(torch.zeros(d))\n"
                                    "    def reset(self):\n        self.weight.data = torch.zeros(3)\n",
    "a model's layers": "import torch\nmodel = torch.nn.Sequential(torch.nn.Linear(2, 2))\n"
                        "model[0].weight.data = torch.zeros(2, 2)\nmodel = model.to(torch.float64)\n"
                        "for p in model.parameters():\n    p.grad = None\nmodel.layers = [1]\nmodel.layers[0] = 2\n",
    "optimizer param groups": "import torch\nopt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)\n"
                              "opt.param_groups[0]['lr'] = 0.2\nopt.state[0]['step'] = 1\n",
    "an optimizer subclass": "import torch\nclass A(torch.optim.Optimizer):\n    def __init__(self, params, lr=0.1):\n"
                             "        super().__init__(params, dict(lr=lr))\n    def step(self, closure=None):\n"
                             "        for group in self.param_groups:\n            for p in group['params']:\n"
                             "                state = self.state[p]\n                state['step'] = 0\n"
                             "                state.setdefault('sum', 0)\n                p.grad = None\n"
                             "A([torch.nn.Parameter(torch.zeros(1))]).step()\n",
    "torch.backends settings": "import torch\ntorch.backends.cudnn.deterministic = True\n"
                               "torch.backends.cuda.matmul.allow_tf32 = False\nimport torch.backends.cudnn as cudnn\n"
                               "cudnn.benchmark = False\nB = torch.backends.cudnn\nB.enabled = True\n",
    "a dict of dtypes written": "import torch\ncfg = {'dtype': torch.float32}\ncfg['lr'] = 0.1\ncfg.update(eps=1e-8)\n",
    "model.apply with an initialiser": "import torch\ndef init(m):\n    m.weight.data = torch.zeros(1)\n"
                                       "torch.nn.Linear(1, 1).apply(init)\n",
    "object.__setattr__ on self": "import torch\nclass A:\n    def __init__(self):\n"
                                  "        object.__setattr__(self, 'x', torch.float32)\n"
                                  "        self.__dict__.update({'y': 1})\n    def __setattr__(self, k, v):\n"
                                  "        super().__setattr__(k, v)\n",
    "Module.__init__ called unbound": "import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n"
                                      "        torch.nn.Module.__init__(self)\n        self.fc = torch.nn.Linear(1, 1)\n"
                                      "m = M()\nm.fc.weight.data = torch.zeros(1, 1)\n",
    "state dicts": "def step(state, group):\n    state.setdefault('step', 0)\n    group.update(lr=0.1)\n"
                   "    state.pop('x', None)\n    dict.update(state, {'a': 1})\n",
    "a dataclass made here": "import torch, dataclasses\n@dataclasses.dataclass\nclass C:\n    dtype: object = torch.float32\n"
                             "    n: int = 0\nc = C()\nc.n = 2\n",
    "a bound writer of a dict made here, aliased": "d = {}\nu = d.update\nu(a=1)\ns = setattr\n"
                                                   "class A:\n    pass\ns(A(), 'x', 1)\n",
    "backends set by a helper": "import torch\ndef setup(b):\n    b.deterministic = True\nsetup(torch.backends.cudnn)\n",
    "a wrapper delegating by __getattr__": "import torch\nclass Wrap:\n    def __init__(self, inner):\n"
                                           "        self.inner = inner\n    def __getattr__(self, name):\n"
                                           "        return getattr(self.inner, name)\n"
                                           "w = Wrap(torch.nn.Linear(1, 1))\nw.weight.data = torch.zeros(1, 1)\n"
                                           "p = torch.nn.Parameter(torch.zeros(1))\np.grad = None\n",
    "rng states": "import torch\nrng = {'cpu': torch.get_rng_state()}\nrng['cuda'] = None\n",
    "a checkpoint file": "import os, torch, tempfile\ndef save(obj, path):\n    fd, tmp = tempfile.mkstemp()\n"
                         "    with os.fdopen(fd, 'wb') as f:\n        torch.save(obj, f)\n        f.flush()\n"
                         "        os.fsync(f.fileno())\n    os.replace(tmp, path)\n",
    "a flop counter mode": "import torch\nfrom torch.utils._python_dispatch import TorchDispatchMode\n"
                           "class C(TorchDispatchMode):\n    def __init__(self):\n        super().__init__()\n"
                           "        self.flops = 0\n    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
                           "        self.flops += 1\n        return func(*args, **(kwargs or {}))\n",
    "a local shadowing an import": "import torch\ndef f(torch):\n    torch.x = 1\nf(object())\n",
    "exception attributes": "try:\n    pass\nexcept ValueError as e:\n    e.note = 'x'\n",
}


@pytest.mark.parametrize("name", list(FLAGGED))
def test_a_write_through_an_alias_is_reported(name: str) -> None:
    assert _found(FLAGGED[name]), f"not reported: {name}"


@pytest.mark.parametrize("name", list(CROSS_MODULE))
def test_a_write_through_another_module_is_reported(name: str) -> None:
    source, others = CROSS_MODULE[name]
    assert _found(source, **others), f"not reported: {name}"


@pytest.mark.parametrize("name", list(CLEAN))
def test_honest_writes_are_not_reported(name: str) -> None:
    assert _found(CLEAN[name]) == [], name


def test_a_breach_names_the_write_and_where() -> None:
    assert _found("import torch\n\nT = torch.Tensor\nT._swap = T.transpose\n") == ["monkeypatches T._swap (memory.py:4)"]
    assert _found("import torch\ndef patch(c):\n    c.x = 1\npatch(torch.Tensor)\n") == \
        ["monkeypatches through patch(...) (memory.py:4)"]


def test_past_the_caps_anything_is_flagged() -> None:
    """A value holding more than MAX_REFS functions becomes anything: a write to it is reported."""
    defs = "".join(f"def f{i}():\n    pass\n" for i in range(MAX_REFS + 1))
    pick = " or ".join(f"f{i}" for i in range(MAX_REFS + 1))
    assert _found(defs + f"g = {pick}\ng.x = 1\n")
    assert not _found(defs + "g = f0 or f1\ng.x = 1\n")


def test_the_reviewers_repro_breaks_the_views_rule(tmp_path: Path) -> None:
    """memory.py: `T = torch.Tensor; T._swap = T.transpose`; transpose_view returns `x._swap(...)`."""
    for path in SOLUTIONS.glob("*.py"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    memory = tmp_path / "memory.py"
    memory.write_text(memory.read_text() + "\n\nT = torch.Tensor\nT._swap = T.transpose\n")
    views = tmp_path / "views.py"
    views.write_text(views.read_text() + "\n\ndef transpose_view(x, dim0, dim1):\n    x.as_strided\n"
                     "    return x._swap(dim0, dim1)\n")
    scope = static.build_scope(SourceSet(tmp_path), "views", "transpose_view")
    assert any(b.startswith("monkeypatches T._swap (memory.py:") for b in scope.breaches), scope.breaches
    assert static.forbidden_uses(scope, TRANSPOSE_FORBIDDEN), "the rule's check does not see the breach"
    assert static.build_scope(SourceSet(SOLUTIONS), "views", "transpose_view").breaches == []


def test_global_hooks_and_torch_registries_break_every_rule() -> None:
    """Installing what changes every later call without writing an attribute (a global module hook, a
    tracer, a kernel in torch.library, a torch.overrides mode) is a breach in any file that can run;
    an ordinary module hook on one's own model is not."""
    import ast as _ast

    from grader.rules.breaches import global_breaches

    flagged = ["import torch\nlib = torch.library.Library('aten', 'IMPL')",
               "from torch.overrides import TorchFunctionMode",
               "import sys\nsys.settrace(lambda *a: None)",
               "import threading\nthreading.setprofile(print)",
               "from torch.nn.modules.module import register_module_forward_hook",
               "import torch\ntorch.nn.modules.module.register_module_forward_pre_hook(lambda m, a: None)",
               "from torch import library"]
    clean = ["import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.register_forward_hook(lambda m, a, o: None)",
             "import torch\nx = torch.ones(2)\nx.register_hook(lambda g: g)",
             "library = {'a': 1}\nprint(library['a'])"]
    for code in flagged:
        assert any("changes what every later call does" in b for b in global_breaches(_ast.parse(code), "m.py")), code
    for code in clean:
        assert global_breaches(_ast.parse(code), "m.py") == [], code
