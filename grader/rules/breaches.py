"""What counts as a *breach* of a static rule: a way to reach code that no reading of the source can see.

Two kinds (the scope a rule covers and which files are read: `grader.rules.scope`):

* `_breach`: a node inside a rule's scope that looks a name up at run time or reaches interpreter
  internals: `getattr`, `__dict__`, `sys.modules`, `importlib`, `eval`, `__subclasses__`, frame
  inspection, `gc`, `ctypes`, an import outside `ALLOWED_IMPORTS`, torch's private internals.
* `global_breaches`: what no file that can run may do, wherever it is written, because it changes
  what *other* code sees at run time, or looks names up where no reading can follow: a module
  `__getattr__`, importing the kit, loading code by a computed name or from source text
  (`_loader`: importlib, pickles, and torch's compilers of source and graphs, `CODE_LOADERS`), a
  class pattern (`case C(name=v)` fetches `subject.name` with no attribute in the tree, and a
  positional sub-pattern fetches whatever `C.__match_args__` names), a string that a library
  evaluates as code and that is not inert (`string_code`: beartype and typing evaluate string
  annotations, jaxtyping the symbolic axes of a shape); and monkeypatching, followed
  through aliases over the whole program by `grader.rules.monkeypatch` (which also follows an alias to
  torch's compilers: `T = torch; T.jit`).

Every syntax that looks a name up is seen: names and attributes, imports (`import torch._C as C`
is torch's private internals as much as `torch._C` is), decorators and annotations (expressions
in the tree; a string annotation is parsed, and what it names is in the rule's scope,
`string_names`), class patterns (a breach, above; their keyword names count as attributes for
every rule, `static.attribute_names`).  What remains, a lookup by a name held in a string, needs one of
the listed lookups or loaders.

Why torch's loaders are a denylist, not ruled scopes an allowlist of torch names.  An allowlist of
spellings has the weakness it would fix (`T = torch` spells nothing), and to pass every correct
formulation it must hold nearly all of torch's public namespace (a student reaches for
`torch.addcmul`, `torch.linalg.vector_norm`, `torch.nn.init`...): what it adds is the modules
nobody listed.  Those are covered from two sides instead.  torch's code loaders are a closed family
(what compiles source text, C++ or graphs, or loads files: `CODE_LOADERS`), a breach wherever they
are reached, followed by value through aliases (`grader.rules.monkeypatch`); everything else in torch runs
ops through the dispatcher, which the runtime layers watch while a ruled call runs
(`grader.rules.tripwire`: the views rules' ops, autograd, torch.optim's kernels, FlopCounterMode).
"""

from __future__ import annotations

import ast
import re

#: Names (bare, or as an attribute) that look a name up at run time or reach interpreter internals.
BREACH_NAMES = frozenset({
    "getattr", "setattr", "delattr", "vars", "globals", "locals", "eval", "exec", "compile", "__import__",
    "__getattribute__", "__getattr__", "__dict__", "__subclasses__", "__globals__", "__closure__", "__code__",
    "__builtins__", "__wrapped__", "__func__", "__mro__", "__bases__", "__base__", "__loader__",
    "__spec__", "__reduce__", "__reduce_ex__", "__setattr__", "__delattr__", "__self__", "__kwdefaults__",
    "__defaults__", "attrgetter", "methodcaller", "f_globals", "f_locals", "f_back", "f_builtins", "f_code",
    "currentframe", "_getframe", "resolve_name", "import_module", "get_referrers", "get_referents",
    "get_objects", "breakpoint", "__kit_tripwire__",
    # string-to-object lookups outside the usual suspects (found by a red-team pass)
    "get_type_hints", "ForwardRef", "_eval_type", "get_field", "Formatter",
    # autograd's engine and the saved-tensor hooks behind the runtime tripwire
    "_C", "_ImperativeEngine", "_execution_engine", "run_backward", "_EngineBase",
    "saved_tensors_hooks", "disable_saved_tensors_hooks",
    # other processes computing for the function
    "system", "popen", "spawnv", "spawnl", "execv", "execl", "execvp", "execlp", "fork", "posix_spawn",
})
#: Hooks that change what every later call does without writing an attribute (global module hooks,
#: tracers and profilers that see every frame): a breach of every rule wherever they are named, as a
#: monkeypatch is (`global_breaches`).
GLOBAL_HOOKS = frozenset({
    "register_module_forward_hook", "register_module_forward_pre_hook", "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook", "register_module_backward_hook",
    "register_module_buffer_registration_hook", "register_module_module_registration_hook",
    "register_module_parameter_registration_hook", "settrace", "setprofile",
})
#: torch's public registries of kernels and function/dispatch handlers: code there can change what a
#: torch op does for everyone (`torch.library`, `torch.overrides`' modes and handlers); a breach wherever
#: they are named.
REGISTRY_MODULES = (("torch", "library"), ("torch", "overrides"))
#: The only modules code under a rule may import (besides the submission's own): plain
#: computation.  Anything else (string, pickle, logging, sys, subprocess, ...) can turn a string
#: into an object or run code elsewhere, and no list of forbidden names can follow it there.
ALLOWED_IMPORTS = frozenset({
    "__future__", "torch", "einops", "jaxtyping", "beartype", "numpy", "math", "cmath", "typing", "collections",
    "dataclasses", "functools", "itertools", "operator", "numbers", "abc", "enum", "warnings", "time", "timeit",
    "os", "random", "tempfile", "pathlib", "io", "contextlib", "statistics", "copy", "fractions", "decimal",
    "heapq", "bisect", "json", "csv", "shutil", "glob", "struct", "hashlib", "sys", "array",
    "re",  # (patterns only: it imports nothing and looks no name up; `compile` stays a breach by its name)
})
#: Modules whose import alone is a breach (they exist to look things up dynamically).
BREACH_MODULES = frozenset({"importlib", "pkgutil", "gc", "ctypes", "inspect", "builtins", "runpy", "code",
                            "codeop", "marshal", "types", "imp", "zipimport", "_ctypes", "pydoc"})
#: Loading code by a computed name (a global breach in any file that can run, see the module doc):
#: modules that import or unpickle by name, and the names that do it.  `exec`, `eval` and
#: `compile` count as bare names only (`model.eval()`, `re.compile` are fine).
LOADER_MODULES = frozenset({"importlib", "imp", "_imp", "runpy", "pkgutil", "zipimport", "builtins", "marshal",
                            "pickle", "_pickle", "dill", "cloudpickle", "shelve", "copyreg", "code", "codeop",
                            "pydoc", "ctypes", "_ctypes"})
LOADER_NAMES = frozenset({"__import__", "import_module", "_import_dotted_name", "resolve_name", "locate",
                          "run_path", "run_module", "spec_from_file_location", "spec_from_loader",
                          "module_from_spec", "exec_module", "load_module", "SourceFileLoader", "load_by_key_path",
                          "__builtins__", "__loader__", "meta_path", "path_hooks", "_inductor"})
#: ... and, as attributes or imported names only (a variable of the student's may be called `jit`),
#: torch's compilers of source text, C++ and graphs under any alias of their module (`T.jit`).
LOADER_ATTRS = frozenset({"jit", "_dynamo", "cpp_extension", "jiterator", "load_inline", "load_library",
                          "CompilationUnit", "_jit_internal"})
#: torch's own code loaders: modules that compile source text (TorchScript strings, C++ through
#: `cpp_extension.load_inline`, CUDA through `jiterator`), trace or rewrite Python into graphs that
#: run as other code (`fx`, `export`, `compile`/`_dynamo`/`_inductor`), or load code and kernels from
#: files (`hub`, `package`, `ops.load_library`).  What runs there is no code the rules read: a global
#: breach, as `exec` of a string is.  (`grader.rules.monkeypatch` follows the same list through aliases.)
CODE_LOADERS = frozenset({"torch.jit", "torch.fx", "torch.export", "torch.compile", "torch.compiler",
                          "torch._dynamo", "torch._inductor", "torch._export", "torch._jit_internal",
                          "torch.utils.cpp_extension", "torch.cuda.jiterator", "torch.hub", "torch.package",
                          "torch.ops.load_library", "torch.classes.load_library", "torch.utils.mobile_optimizer",
                          "torch.onnx"})
_BARE_LOADERS = frozenset({"exec", "eval", "compile"})
#: The one public name of torch's private modules a submission may import: the base class of
#: `flops.MatmulFlopCounter` (`from torch.utils._python_dispatch import TorchDispatchMode`).
PRIVATE_TORCH_IMPORTS = frozenset({("torch.utils._python_dispatch", "TorchDispatchMode")})


def dotted_name(node: ast.AST) -> str:
    """`torch.optim.AdamW` -> "torch.optim.AdamW"; `x.transpose` -> "?.transpose"."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _private_torch(n: ast.Attribute) -> bool:
    """`torch._C`, `torch.Tensor._make_subclass`: torch's private internals (not its dunders)."""
    parts = dotted_name(n).split(".")
    return parts[0] == "torch" and any(_private(p) for p in parts[1:])


def _private_torch_import(n: ast.Import | ast.ImportFrom) -> str | None:
    """`import torch._C as C`, `from torch._C import _set_grad_enabled`, `from torch.utils._python_dispatch
    import _pop_mode`: torch's private internals under a name of the importer's choosing (the one
    public class `PRIVATE_TORCH_IMPORTS` names excepted)."""
    if isinstance(n, ast.Import):
        return next((f"import {a.name}" for a in n.names if a.name.split(".")[0] == "torch"
                     and any(_private(p) for p in a.name.split(".")[1:])), None)
    parts = (n.module or "").split(".")
    if n.level or parts[0] != "torch":
        return None
    bad = [a.name for a in n.names if (n.module, a.name) not in PRIVATE_TORCH_IMPORTS
           and (_private(a.name) or any(_private(p) for p in parts[1:]))]
    return f"from {n.module} import {', '.join(bad)}" if bad else None


def _breach(n: ast.AST, file: str, modules: frozenset[str]) -> str | None:
    """The breach node `n` is (see the module doc), with where it is; None for most nodes."""
    name = None
    if isinstance(n, ast.Name) and n.id in BREACH_NAMES:
        name = n.id
    elif isinstance(n, ast.Attribute) and n.attr in BREACH_NAMES:
        name = n.attr
    elif isinstance(n, ast.Attribute) and n.attr == "modules" and dotted_name(n.value).endswith("sys"):
        name = "sys.modules"
    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in ("__getattr__", "__getattribute__"):
        name = f"def {n.name}"
    elif isinstance(n, ast.Attribute) and _private_torch(n):
        name = dotted_name(n)
    elif isinstance(n, (ast.Import, ast.ImportFrom)) and (private := _private_torch_import(n)) is not None:
        name = private
    elif (hook := _global_hook(n)) is not None:
        name = hook
    elif isinstance(n, ast.Import):
        name = next((a.name for a in n.names if a.name.split(".")[0] in BREACH_MODULES
                     or a.name.split(".")[0] not in ALLOWED_IMPORTS and a.name.split(".")[0] not in modules), None)
        name = f"import {name}" if name else None
    elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and (
            n.module.split(".")[0] in BREACH_MODULES or n.module.split(".")[0] not in ALLOWED_IMPORTS
            or any(a.name in BREACH_NAMES or (n.module == "sys" and a.name == "modules") for a in n.names)):
        name = f"from {n.module} import"
    return None if name is None else f"{name} ({file}:{getattr(n, 'lineno', '?')})"


def _loader(n: ast.AST) -> str | None:
    """What loads code by a computed name at node `n` (a global breach, see the module doc)."""
    if isinstance(n, ast.Name) and (n.id in LOADER_NAMES or n.id in _BARE_LOADERS):
        return n.id
    if isinstance(n, ast.Attribute) and (n.attr in LOADER_NAMES or n.attr in LOADER_ATTRS):
        return dotted_name(n)
    if isinstance(n, ast.Attribute) and n.attr == "modules" and dotted_name(n.value).endswith("sys"):
        return "sys.modules"
    if isinstance(n, ast.Attribute) and code_loader(dotted_name(n)):
        return dotted_name(n)
    if isinstance(n, ast.Import):
        return next((f"import {a.name}" for a in n.names if a.name.split(".")[0] in LOADER_MODULES
                     or code_loader(a.name)), None)
    if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
        parts = n.module.split(".")
        names = ", ".join(a.name for a in n.names)[:80]
        if parts[0] in LOADER_MODULES or code_loader(n.module) \
                or any(code_loader(f"{n.module}.{a.name}") for a in n.names):
            return f"from {n.module} import {names}"
        if any(a.name in LOADER_NAMES or a.name in LOADER_ATTRS for a in n.names):
            return f"from {n.module} import {names}"
    if isinstance(n, ast.Call):  # a pickle load: torch.load(weights_only=False), numpy.load(allow_pickle=True)
        for k in n.keywords:
            safe = {"weights_only": True, "allow_pickle": False}.get(k.arg or "")
            if k.arg in ("weights_only", "allow_pickle") and not (isinstance(k.value, ast.Constant)
                                                                  and k.value.value is safe):
                return f"{k.arg}={'True' if safe is False else 'False'}" if isinstance(k.value, ast.Constant) \
                    else f"{k.arg}=<computed>"
    return None


def code_loader(chain: str) -> bool:
    """Whether the dotted name `chain` (``torch.jit.CompilationUnit``) is, or is inside, one of
    torch's code loaders (`CODE_LOADERS`)."""
    return any(chain == m or chain.startswith(m + ".") for m in CODE_LOADERS)


def class_pattern_names(n: ast.AST) -> list[str]:
    """The attribute names a class pattern `case C(a, name=v)` looks up on its subject: its keyword
    names (its positional sub-patterns look up whatever `C.__match_args__` holds, unknown here)."""
    return list(n.kwd_attrs) if isinstance(n, ast.MatchClass) else []


#: What an inert shape of jaxtyping or string annotation may hold (`inert_string`): arithmetic on names.
_INERT_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Name, ast.Constant, ast.Tuple,
                ast.List, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)
_TYPE_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.BinOp,
               ast.BitOr, ast.expr_context, ast.Slice)


def _inert_dims(text: str) -> bool:
    """Whether jaxtyping can read the shape `text` ("batch *rest n+1") without running code: a symbolic
    axis is evaluated (as an f-string, then with `eval`), so it may only be arithmetic on names."""
    for elem in text.split():
        core = elem.lstrip("#*_?")
        core = core.split("=", 1)[1] if core.count("=") == 1 else core
        if not core or core == "..." or core.isidentifier() or core.lstrip("+-").isdigit():
            continue
        if any(c in core for c in "{}'\"\\"):  # the f-string jaxtyping builds of it: code in braces
            return False
        try:
            tree = ast.parse(core, EVALUATED, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue  # eval refuses it too: no code runs
        if not all(isinstance(x, _INERT_NODES) and not (isinstance(x, ast.Name) and x.id.startswith("__"))
                   for x in ast.walk(tree)):
            return False
    return True


#: The file name a string a library evaluates is parsed under (each at most 2,000 characters; not a
#: file of the submission, which is parsed once, under its own name).
EVALUATED = "<evaluated string>"


def inert_string(text: str, depth: int = 0) -> bool:
    """Whether a string that a library under the rules evaluates as code (a string annotation, which
    `beartype` and `typing` evaluate; a jaxtyping shape) runs none: a type expression (names,
    attributes, subscripts, `|`, strings that are inert in turn) or an inert jaxtyping shape."""
    if len(text) > 2000 or depth > 4:
        return False
    try:
        tree = ast.parse(text.strip(), EVALUATED, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _inert_dims(text)
    for x in ast.walk(tree):
        if not isinstance(x, _TYPE_NODES) or (isinstance(x, ast.BinOp) and not isinstance(x.op, ast.BitOr)):
            return _inert_dims(text)
        if isinstance(x, (ast.Name, ast.Attribute)) and (getattr(x, "id", None) or getattr(x, "attr", "")).startswith("__"):
            return False
        if isinstance(x, ast.Constant) and isinstance(x.value, str) and not inert_string(x.value, depth + 1):
            return False
    return True


def evaluated_strings(n: ast.AST) -> list[ast.Constant]:
    """The string constants at node `n` that a library evaluates as code at run time: those of an
    annotation (`x: "K[0]"`, `-> Float[Tensor, "n m"]`; beartype, typing and jaxtyping evaluate them)
    and those beside another item in a subscript (`isinstance(x, Float[Tensor, "n"])`)."""
    roots: list[ast.AST] = []
    if isinstance(n, ast.arg) and n.annotation is not None:
        roots.append(n.annotation)
    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
        roots.append(n.returns)
    elif isinstance(n, ast.AnnAssign):
        roots.append(n.annotation)
    elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple):
        return [e for e in n.slice.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return [c for r in roots for c in ast.walk(r) if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def string_names(n: ast.AST) -> set[str]:
    """The names and attribute names that the strings evaluated at node `n` read (`x: "K[0]"` reads K:
    a rule's scope takes K's code in, as for `x: K[0]`)."""
    names: set[str] = set()
    for c in evaluated_strings(n):
        try:
            tree = ast.parse(c.value.strip(), EVALUATED, mode="eval") if len(c.value) <= 2000 else None
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for x in ast.walk(tree) if tree is not None else ():
            if isinstance(x, ast.Name):
                names.add(x.id)
            elif isinstance(x, ast.Attribute):
                names.add(x.attr)
    return names


def string_code(n: ast.AST) -> str | None:
    """A string evaluated as code at node `n` that is not inert (a global breach, see the module doc)."""
    for c in evaluated_strings(n):
        if not inert_string(c.value):
            return repr(c.value)[:60]
    return None


def _global_hook(n: ast.AST) -> str | None:
    """A global hook or torch's kernel and handler registries named at node `n`."""
    if isinstance(n, ast.Name) and n.id in GLOBAL_HOOKS:
        return n.id
    if isinstance(n, ast.Attribute) and (n.attr in GLOBAL_HOOKS
                                         or tuple(dotted_name(n).split(".")[:2]) in REGISTRY_MODULES):
        return dotted_name(n)
    if isinstance(n, (ast.Import, ast.ImportFrom)):
        named = [a.name for a in n.names] if isinstance(n, ast.Import) else \
            [n.module or "", *(f"{n.module}.{a.name}" for a in n.names)] if n.level == 0 else []
        if any(tuple(m.split(".")[:2]) in REGISTRY_MODULES or m.rsplit(".", 1)[-1] in GLOBAL_HOOKS for m in named):
            return "import of " + ", ".join(m for m in named if m)[:80]
    return None


def global_breaches(tree: ast.Module, file: str) -> list[str]:
    """What no file of a submission may do, wherever it is, because it changes what *other* code
    (a ruled function, the probes) sees at run time, as far as one file tells: define a module
    `__getattr__`, import the kit's own packages (`grader`, `tests`), or load code by a computed name
    (`importlib`, `__import__`, `exec`/`eval`/`compile`, `sys.modules`, pickles, `torch.hub`...) or from
    source text (torch's compilers, `CODE_LOADERS`), install what changes every later call
    (`GLOBAL_HOOKS`, `torch.library`, `torch.overrides`), or match a class pattern (a lookup by name
    with no attribute in the tree).
    Monkeypatching (writing to an imported module, class or function, under any alias) needs the
    whole program: `grader.rules.monkeypatch.monkeypatches`."""
    found: list[str] = []
    for stmt in tree.body:  # a module-level __getattr__ hands out names no reading can follow (PEP 562)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in ("__getattr__", "__dir__"):
            found.append(f"def {stmt.name} at module level ({file}:{stmt.lineno})")
    loader_lines: set[int | None] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            if any(a.name.split(".")[0] in ("grader", "tests") for a in n.names):
                found.append(f"imports the grader's own code ({file}:{n.lineno})")
        elif isinstance(n, ast.ImportFrom):
            if n.level == 0 and (n.module or "").split(".")[0] in ("grader", "tests"):
                found.append(f"imports the grader's own code ({file}:{n.lineno})")
        if isinstance(n, ast.MatchClass):  # case C(view=v): subject.view fetched with no attribute in the tree
            names = ", ".join([*(["__match_args__"] if n.patterns else []), *n.kwd_attrs]) or "isinstance only"
            found.append(f"looks attributes up in a class pattern case {dotted_name(n.cls)}(...) ({names}) "
                         f"({file}:{n.lineno})")
        if (code := string_code(n)) is not None:  # beartype/jaxtyping evaluate it: code the rules cannot read
            found.append(f"evaluates code in a string: {code} ({file}:{getattr(n, 'lineno', '?')})")
        if (loader := _loader(n)) is not None:
            if getattr(n, "lineno", None) not in loader_lines:  # torch.jit.CompilationUnit: once, not twice
                loader_lines.add(getattr(n, "lineno", None))
                words = set(re.split(r"[^\w.]+", loader))
                compiles = any(code_loader(w) or w.rsplit(".", 1)[-1] in LOADER_ATTRS for w in words) or any(
                    code_loader(f"{w}.{v}") for w in words for v in words)
                what = "from source text or a graph" if compiles else "by a computed name"
                found.append(f"loads code {what}: {loader} ({file}:{getattr(n, 'lineno', '?')})")
        elif (hook := _global_hook(n)) is not None:
            found.append(f"changes what every later call does: {hook} ({file}:{getattr(n, 'lineno', '?')})")
    return found
