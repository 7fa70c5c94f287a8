"""Runtime tripwires: did the code under test reach a forbidden callable while a probe ran it?

A static rule reads the source; a tripwire watches the program that runs.  Before any
submission code is imported (the sandbox worker and the in-process backend both call
`install()` first), each forbidden callable is replaced by a thin wrapper that records its
wire name in the active `watch()` blocks and then calls the original.  A probe wraps the
student's call:

    with tripwire.watch() as reached:
        grads = impl.gradients.two_layer_grads(...)
    return {"grads": grads, "reached": sorted(reached)}

and the trusted test asserts on the list.  Like every probe result, `reached` is an
observation, not a verdict: the test decides.  A submission could in principle restore the
originals, but only through the dynamic lookups the program-wide static rules
(`grader.rules.static.Scope`) already treat as a breach (`__wrapped__`, `getattr`, a class pattern
`case f(__wrapped__=g)`, torch's private modules...).

The wires are a small fixed table; add one by naming the callable and its wire here.

Ops, not callables: `watch_ops()` records the name of every aten op dispatched inside the block
(``"aten::view"``), by a `TorchDispatchMode` whose class is made by `install()`, before any
submission code is imported.  Whatever reaches an op (a method under any name, TorchScript, an FX
graph, a C++ path of torch) goes through the dispatcher, so the record follows what runs, not how it
is spelled.  Leaving the mode needs torch's private dispatch internals (`torch._C`,
`torch.utils._python_dispatch._pop_mode`...), which the rules treat as a breach.  The record is of
the calling thread (dispatch modes are thread-local): starting a thread or a process needs imports
(`threading`, `multiprocessing`, `subprocess`) that are breaches under a rule.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
from collections.abc import Iterator
from typing import Any, Callable

# wire name -> dotted paths of the callables it covers ("module:attr.attr")
_AUTOGRAD = {
    "torch.autograd.grad": ["torch.autograd:grad"],
    "torch.autograd.backward": ["torch.autograd:backward", "torch:Tensor.backward"],
    "torch.autograd.functional": [f"torch.autograd.functional:{f}" for f in
                                  ("jacobian", "hessian", "vjp", "jvp", "vhp", "hvp")],
    "torch.func": [f"torch.func:{f}" for f in ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian")],
}
_OPTIM_MODULES = ("adam", "adamw", "sgd", "adagrad", "rmsprop")
_FLOPS = {"FlopCounterMode": ["torch.utils.flop_counter:FlopCounterMode.__enter__",
                              "torch.utils.flop_counter:FlopCounterMode.__init__"]}

_lock = threading.Lock()
_active: list[set[str]] = []
_installed = False
_op_recorder: Any = None  # the TorchDispatchMode class of watch_ops, made by install()


def _optim_paths() -> list[str]:
    """torch.optim's update functions: the functional API and every single/multi-tensor/fused kernel."""
    paths = []
    for name in _OPTIM_MODULES:
        try:
            mod = importlib.import_module(f"torch.optim.{name}")
        except ImportError:
            continue
        for attr in dir(mod):
            if attr == name or attr.startswith(("_single_tensor_", "_multi_tensor_", "_fused_")):
                if callable(getattr(mod, attr, None)):
                    paths.append(f"torch.optim.{name}:{attr}")
    import torch

    for attr in dir(torch):
        if attr.startswith("_fused_") and attr.rstrip("_").split("_")[-1] in {"adam", "adamw", "sgd", "adagrad"}:
            paths.append(f"torch:{attr}")
    return paths


def wires() -> dict[str, list[str]]:
    """The table: wire name -> the callables it covers."""
    return {**_AUTOGRAD, "torch.optim.functional": _optim_paths(), **_FLOPS}


def _record(wire: str) -> None:
    with _lock:
        for reached in _active:
            reached.add(wire)


def _wrap(wire: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def tripwire(*args: Any, **kwargs: Any) -> Any:
        _record(wire)
        return original(*args, **kwargs)

    tripwire.__kit_tripwire__ = wire  # type: ignore[attr-defined]
    return tripwire


def _replace(path: str, wire: str) -> bool:
    module_name, _, attrs = path.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError:
        return False
    *parents, last = attrs.split(".")
    for part in parents:
        owner = getattr(owner, part, None)
        if owner is None:
            return False
    original = owner.__dict__.get(last) if isinstance(owner, type) else getattr(owner, last, None)
    if original is None or getattr(original, "__kit_tripwire__", None):
        return False
    if isinstance(original, (staticmethod, classmethod)):
        return False
    try:
        setattr(owner, last, _wrap(wire, original))
    except (AttributeError, TypeError):
        return False
    return True


def install() -> list[str]:
    """Wrap every wired callable (idempotent); the paths that were wrapped now."""
    global _installed
    done: list[str] = []
    with _lock:
        if _installed:
            return done
        _installed = True
    for wire, paths in wires().items():
        for path in paths:
            if _replace(path, wire):
                done.append(path)
    _rebind_aliases()
    _make_op_recorder()
    return done


def _make_op_recorder() -> Any:
    """The mode class of `watch_ops`, made once (by `install()`, before any submission code runs)."""
    global _op_recorder
    if _op_recorder is None:
        from torch.utils._python_dispatch import TorchDispatchMode

        class OpRecorder(TorchDispatchMode):
            """Adds the name of each aten op dispatched under it to `reached`, then runs it unchanged."""

            def __init__(self, reached: set[str]):
                super().__init__()
                self.reached = reached

            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                self.reached.add(func.name().split(".", 1)[0])  # aten::transpose.int -> aten::transpose
                return func(*args, **(kwargs or {}))

        _op_recorder = OpRecorder
    return _op_recorder


def _rebind_aliases() -> None:
    """Modules that imported a wired function by name before install() (torch.optim's `adam` in
    torch.optim.__init__, `grad` in torch.autograd's submodules) keep the original: point them
    at the wrapper too, so that every public spelling goes through the wire."""
    import sys

    wrapped: dict[int, Any] = {}
    for wire, paths in wires().items():
        for path in paths:
            module_name, _, attrs = path.partition(":")
            owner: Any = sys.modules.get(module_name)
            for part in attrs.split("."):
                owner = getattr(owner, part, None) if owner is not None else None
            original = getattr(owner, "__wrapped__", None)
            if original is not None and getattr(owner, "__kit_tripwire__", None):
                wrapped[id(original)] = owner
    if not wrapped:
        return
    for name, mod in list(sys.modules.items()):
        if not name.startswith("torch") or mod is None:
            continue
        namespace = getattr(mod, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attr, value in list(namespace.items()):
            replacement = wrapped.get(id(value))
            if replacement is not None:
                try:
                    setattr(mod, attr, replacement)
                except (AttributeError, TypeError):
                    pass


#: The wire `watch(autograd_graph=True)` adds when autograd records a graph inside the block.
AUTOGRAD_GRAPH = "torch.autograd.graph (a tensor was saved for a backward pass)"


@contextlib.contextmanager
def watch(autograd_graph: bool = False) -> Iterator[set[str]]:
    """Collect the wire names reached inside the block (on any thread).

    With `autograd_graph`, also notice autograd *recording* a graph at all: a saved-tensor hook
    (``torch.autograd.graph.saved_tensors_hooks``) sees every tensor an op saves for a backward
    pass, however that backward pass is later started (``.backward()``, ``torch.autograd.grad``,
    or the engine itself).  Code that computes gradients by hand records nothing."""
    reached: set[str] = set()
    with _lock:
        _active.append(reached)
    hooks = contextlib.nullcontext()
    if autograd_graph:
        import torch

        def pack(tensor: Any) -> Any:
            reached.add(AUTOGRAD_GRAPH)
            return tensor

        hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor)
    try:
        with hooks:
            yield reached
    finally:
        with _lock:
            _active.remove(reached)


@contextlib.contextmanager
def watch_ops() -> Iterator[set[str]]:
    """Collect the names of the aten ops dispatched inside the block on this thread
    (``{"aten::as_strided"}``): an observation, as `watch()`'s is; the test decides which are forbidden."""
    reached: set[str] = set()
    with _make_op_recorder()(reached):
        yield reached
