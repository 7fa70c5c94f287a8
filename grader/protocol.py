"""What may cross the probe boundary, and how it is encoded.

Probes run next to the code under test and return *data only*.  Whatever backend runs them
(in-process for `grader check`, a sandbox for grading), the reply is written in the kit's
data-only format (`grader.wire`: no pickle, nothing but scalars, lists, tuples, dicts and dense
tensors can be built from it), decoded on the trusted side under a size cap, then type-checked,
so a probe result can never smuggle code or live objects into the test process.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

import torch

from grader import wire

#: Largest reply the trusted side will decode (bytes).
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: Bounds on the decoded structure: a small pickle can describe a huge one (shared sub-lists,
#: a tensor expanded with stride 0), so the walk is bounded before anything iterates over it.
MAX_NODES = 1_000_000
MAX_DEPTH = 64
MAX_ELEMENTS = 1 << 28  # tensor elements in one reply, all tensors together
MAX_TENSOR_BYTES = 1 << 30  # their bytes as tensors (an expanded view of a few bytes can describe gigabytes)
MAX_STRING = 1 << 22  # characters in one string

_SCALARS = (bool, int, float, str, type(None))


class BoundaryError(Exception):
    """A reply that is not plain data (wrong type, too large, undecodable)."""


def check_data(value: Any, path: str = "result") -> None:
    """Raise BoundaryError unless `value` is plain data: tensors, scalars, and containers of them.

    The walk is iterative and bounded (nodes, depth, tensor elements, string length).  A
    container reached twice is walked (and counted) again: a correct implementation may well
    return one cached tuple for two equal cases, but a small reply that describes a huge
    structure through shared sub-lists (2**40 items in a few KB), or a cycle, runs into the node
    or depth bound at once and is refused.  Each tensor must lie inside its own storage (no
    strides that read past it)."""
    nodes, elements, nbytes = 0, 0, 0
    todo: list[tuple[Any, int, Any]] = [(value, 0, None)]  # (value, depth, (parent entry, key)): paths built on error

    def where(trail: Any) -> str:
        keys = []
        while trail is not None and len(keys) < 12:
            trail, key = trail
            keys.append(f"[{str(key)[:40]!r}]" if isinstance(key, str) else f"[{key}]")
        return (path + "".join(reversed(keys)) + ("..." if trail is not None else ""))[:200]

    while todo:
        v, depth, trail = todo.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise BoundaryError(f"{path} has more than {MAX_NODES} items")
        if depth > MAX_DEPTH:
            raise BoundaryError(f"{where(trail)} is nested deeper than {MAX_DEPTH} levels")
        t = type(v)
        if t is wire.Opaque:
            raise BoundaryError(f"{where(trail)} is a {v.what}, not plain data")
        if t is torch.Tensor:
            elements += v.numel()
            nbytes += v.numel() * v.element_size()
            if elements > MAX_ELEMENTS:
                raise BoundaryError(f"{path} holds more than {MAX_ELEMENTS} tensor elements")
            if nbytes > MAX_TENSOR_BYTES:
                raise BoundaryError(f"{path} holds tensors of more than {MAX_TENSOR_BYTES} bytes")
            _check_tensor_bounds(v, where(trail))
            continue
        if t is str:
            if len(v) > MAX_STRING:
                raise BoundaryError(f"{where(trail)} is a string of more than {MAX_STRING} characters")
            continue
        if t in _SCALARS:
            continue
        if t in (list, tuple, dict):
            if nodes + len(todo) + len(v) > MAX_NODES:
                raise BoundaryError(f"{path} has more than {MAX_NODES} items")
            if t is dict:
                for key, item in v.items():
                    if type(key) not in (str, int):
                        raise BoundaryError(f"{where(trail)} has a key of type {type(key).__name__}")
                    todo.append((item, depth + 1, (trail, key)))
            else:
                todo.extend((item, depth + 1, (trail, i)) for i, item in enumerate(v))
            continue
        raise BoundaryError(f"{where(trail)} is a {t.__module__}.{t.__qualname__}, not plain data")


def _check_tensor_bounds(t: torch.Tensor, where: str) -> None:
    if t.layout is not torch.strided:
        raise BoundaryError(f"{where[:200]} is a {t.layout} tensor (only dense tensors cross the boundary)")
    if t.device.type not in ("cpu", "meta"):
        raise BoundaryError(f"{where[:200]} is on {t.device} (replies hold CPU tensors)")
    if t.numel() == 0 or t.device.type == "meta":
        return
    if any(s < 0 for s in t.stride()) or t.storage_offset() < 0:
        raise BoundaryError(f"{where[:200]} has negative strides or offset")
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    if (last + 1) * t.element_size() > t.untyped_storage().nbytes():
        raise BoundaryError(f"{where[:200]} reads past the end of its storage")


def encode(message: Any) -> bytes:
    """Serialise a message (plain data) for the trip across the boundary (`grader.wire`).  Values
    that are not plain data travel as `wire.Opaque`, which `decode` refuses."""
    return wire.dumps(message)  # (a reply over the cap is refused by its length, on the trusted side)


def decode(payload: bytes, max_bytes: int = MAX_REPLY_BYTES) -> Any:
    """Decode a reply safely: size cap, the data-only decoder of `grader.wire`, then a structural
    type check."""
    if len(payload) > max_bytes:
        raise BoundaryError(f"reply of {len(payload)} bytes exceeds the {max_bytes}-byte cap")
    try:
        value = wire.loads(payload)
    except wire.WireError as exc:
        raise BoundaryError(f"undecodable reply: {exc}") from None
    check_data(value)
    return value


@dataclass(frozen=True)
class ErrorData:
    """An exception raised by the code under test, carried as data."""

    type: str
    bases: tuple[str, ...]
    message: str
    not_implemented: bool
    where: str  # "memory.py:12 in storage_bytes": the student's innermost frame, if any

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "bases": list(self.bases), "message": self.message,
                "not_implemented": self.not_implemented, "where": self.where}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ErrorData":
        return cls(type=str(d["type"]), bases=tuple(str(m) for m in d["bases"]),
                   message=str(d["message"])[:2000], not_implemented=bool(d["not_implemented"]),
                   where=str(d["where"])[:500])

    @classmethod
    def from_exception(cls, exc: BaseException, student_dir: str | None) -> "ErrorData":
        where = ""
        if student_dir is not None:
            for frame in reversed(traceback.extract_tb(exc.__traceback__)):
                if frame.filename.startswith(student_dir):
                    name = frame.filename[len(student_dir):].lstrip("/")
                    where = f"{name}:{frame.lineno} in {frame.name}"
                    break
        return cls(
            type=type(exc).__name__,
            bases=tuple(c.__name__ for c in type(exc).__mro__),
            message=str(exc)[:2000],
            not_implemented=isinstance(exc, NotImplementedError),
            where=where,
        )
