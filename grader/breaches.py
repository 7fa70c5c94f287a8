"""What counts as a *breach* of a static rule: a way to reach code that no reading of the source can see.

Two kinds (the scope a rule covers and which files are read: `grader.scope`):

* `_breach`: a node inside a rule's scope that looks a name up at run time or reaches interpreter
  internals: `getattr`, `__dict__`, `sys.modules`, `importlib`, `eval`, `__subclasses__`, frame
  inspection, `gc`, `ctypes`, an import outside `ALLOWED_IMPORTS`, torch's private internals.
* `global_breaches`: what no file that can run may do, wherever it is written, because it changes
  what *other* code sees at run time: a module `__getattr__`, importing the kit, loading code by a
  computed name (`_loader`); and monkeypatching, followed through aliases over the whole program
  by `grader.aliases`.
"""

from __future__ import annotations

import ast

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
_BARE_LOADERS = frozenset({"exec", "eval", "compile"})


def dotted_name(node: ast.AST) -> str:
    """`torch.optim.AdamW` -> "torch.optim.AdamW"; `x.transpose` -> "?.transpose"."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def _private_torch(n: ast.Attribute) -> bool:
    """`torch._C`, `torch.Tensor._make_subclass`: torch's private internals (not its dunders)."""
    parts = dotted_name(n).split(".")
    return parts[0] == "torch" and any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
                                       for p in parts[1:])


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
    if isinstance(n, ast.Attribute) and n.attr in LOADER_NAMES:
        return dotted_name(n)
    if isinstance(n, ast.Attribute) and n.attr == "modules" and dotted_name(n.value).endswith("sys"):
        return "sys.modules"
    if isinstance(n, ast.Attribute) and dotted_name(n).split(".")[:2] in (["torch", "hub"], ["torch", "package"]):
        return dotted_name(n)
    if isinstance(n, ast.Import):
        return next((f"import {a.name}" for a in n.names if a.name.split(".")[0] in LOADER_MODULES
                     or a.name.split(".")[:2] in (["torch", "hub"], ["torch", "package"])), None)
    if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
        parts = n.module.split(".")
        if parts[0] in LOADER_MODULES or parts[:2] in (["torch", "hub"], ["torch", "package"]) or (
                n.module == "torch" and any(a.name in ("hub", "package") for a in n.names)):
            return f"from {n.module} import"
        if any(a.name in LOADER_NAMES for a in n.names):
            return f"from {n.module} import"
    if isinstance(n, ast.Call):  # a pickle load: torch.load(weights_only=False), numpy.load(allow_pickle=True)
        for k in n.keywords:
            safe = {"weights_only": True, "allow_pickle": False}.get(k.arg or "")
            if k.arg in ("weights_only", "allow_pickle") and not (isinstance(k.value, ast.Constant)
                                                                  and k.value.value is safe):
                return f"{k.arg}={'True' if safe is False else 'False'}" if isinstance(k.value, ast.Constant) \
                    else f"{k.arg}=<computed>"
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
    (`importlib`, `__import__`, `exec`/`eval`/`compile`, `sys.modules`, pickles, `torch.hub`...), or
    install what changes every later call (`GLOBAL_HOOKS`, `torch.library`, `torch.overrides`).
    Monkeypatching (writing to an imported module, class or function, under any alias) needs the
    whole program: `grader.aliases.monkeypatches`."""
    found: list[str] = []
    for stmt in tree.body:  # a module-level __getattr__ hands out names no reading can follow (PEP 562)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in ("__getattr__", "__dir__"):
            found.append(f"def {stmt.name} at module level ({file}:{stmt.lineno})")
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            if any(a.name.split(".")[0] in ("grader", "tests") for a in n.names):
                found.append(f"imports the grader's own code ({file}:{n.lineno})")
        elif isinstance(n, ast.ImportFrom):
            if n.level == 0 and (n.module or "").split(".")[0] in ("grader", "tests"):
                found.append(f"imports the grader's own code ({file}:{n.lineno})")
        if (loader := _loader(n)) is not None:
            found.append(f"loads code by a computed name: {loader} ({file}:{getattr(n, 'lineno', '?')})")
        elif (hook := _global_hook(n)) is not None:
            found.append(f"changes what every later call does: {hook} ({file}:{getattr(n, 'lineno', '?')})")
    return found
