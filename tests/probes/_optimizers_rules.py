"""The static rule of the `optimizers` module, read from the source (never run).

"Subclass ``torch.optim.Optimizer`` and use nothing else from ``torch.optim``": no
torch.optim optimizer (``torch.optim.AdamW``, ``from torch.optim import AdamW``), none of its
update functions (``torch.optim.adamw.adamw``, ``torch.optim._functional``,
``_single_tensor_*``, ``_multi_tensor_*``, ``_fused_*``), however ``torch`` or
``torch.optim`` is imported or aliased, and no dynamic escape (``getattr``, ``eval``,
``importlib``...) that could spell such a name at run time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from grader.rules.static import DYNAMIC_ESCAPES, dotted_name, run_cache

#: What may be imported from ``torch.optim``: the base class, and the module that defines it.
ALLOWED = frozenset({"Optimizer", "optimizer"})
#: What may be used from ``torch.optim.optimizer`` (the type of `params`, and the base class again).
ALLOWED_FROM_OPTIMIZER_MODULE = frozenset({"Optimizer", "ParamsT"})
FORBIDDEN_FRAGMENTS = ("_single_tensor_", "_multi_tensor_", "_fused_", "_functional")


def torch_optim_uses(tree: ast.AST) -> list[str]:
    """Every use of torch.optim beyond the Optimizer base class, and every dynamic escape."""
    return list(_uses_in((tree,)))


def torch_optim_uses_in(nodes: Iterable[ast.AST]) -> list[str]:
    """`torch_optim_uses` over a scope's nodes (`Student.scope(...).nodes`), kept per node tuple
    for this run only (`run_cache`: a suite checks the same class's scope in several tests; nodes
    compare by identity, and the cache holds them, so a key is never reused by other nodes)."""
    return list(_uses_in(tuple(nodes)))


@run_cache
def _uses_in(roots: tuple[ast.AST, ...]) -> tuple[str, ...]:
    hits: list[str] = []
    torch_names, optim_names = {"torch"}, set()
    # one walk (breadth first, as ast.walk) that also records each node's parent
    nodes: list[ast.AST] = list(roots)
    parents: dict[ast.AST, ast.AST] = {}
    for parent in nodes:  # (the list grows while it is read)
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
            nodes.append(child)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" and alias.asname:
                    torch_names.add(alias.asname)
                elif alias.name == "torch.optim" and alias.asname:
                    optim_names.add(alias.asname)
                elif alias.name.startswith("torch.optim.") and alias.name != "torch.optim.optimizer":
                    hits.append(f"import {alias.name}")
                elif alias.name == "torch.optim.optimizer" and alias.asname:
                    hits.append(f"import {alias.name} as {alias.asname}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                if module == "torch" and alias.name == "optim":
                    optim_names.add(alias.asname or "optim")
                elif module == "torch.optim" and alias.name not in ALLOWED:
                    hits.append(f"from torch.optim import {alias.name}")
                elif module == "torch.optim.optimizer" and alias.name not in ALLOWED_FROM_OPTIMIZER_MODULE:
                    hits.append(f"from torch.optim.optimizer import {alias.name}")
                elif module.startswith("torch.optim.") and module != "torch.optim.optimizer":
                    hits.append(f"from {module} import {alias.name}")
    for node in nodes:
        # a bare reference to torch.optim (or an alias of it) must be followed by `.Optimizer` / `.optimizer`
        is_optim = (isinstance(node, ast.Name) and node.id in optim_names) or (
            isinstance(node, ast.Attribute) and node.attr == "optim" and isinstance(node.value, ast.Name)
            and node.value.id in torch_names)
        if is_optim:
            attrs, top = [], node
            while isinstance(parents.get(top), ast.Attribute) and parents[top].value is top:
                top = parents[top]
                attrs.append(top.attr)
            if not (attrs[:1] == ["Optimizer"]
                    or (attrs[:1] == ["optimizer"] and attrs[1:2] and attrs[1] in ALLOWED_FROM_OPTIMIZER_MODULE)):
                hits.append(f"{dotted_name(top)} (line {node.lineno})")
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None:
            if any(fragment in name for fragment in FORBIDDEN_FRAGMENTS):
                hits.append(f"{name} (line {node.lineno})")
            if name in DYNAMIC_ESCAPES:
                hits.append(f"{name} (line {node.lineno}): dynamic lookups are not allowed here")
    return tuple(sorted(set(hits)))
