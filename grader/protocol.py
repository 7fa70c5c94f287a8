"""What may cross the probe boundary, and how it is encoded.

Probes run next to the code under test and return *data only*.  Whatever backend runs them
(in-process now, a sandbox for grading), the reply is serialised with `torch.save` and
decoded on the trusted side with `torch.load(weights_only=True)` under a size cap, then
type-checked, so a probe result can never smuggle code or live objects into the test process.
"""

from __future__ import annotations

import io
import traceback
from dataclasses import dataclass
from typing import Any

import torch

#: Largest reply the trusted side will decode (bytes).
MAX_REPLY_BYTES = 64 * 1024 * 1024

_SCALARS = (bool, int, float, str, type(None))


class BoundaryError(Exception):
    """A reply that is not plain data (wrong type, too large, undecodable)."""


def check_data(value: Any, path: str = "result") -> None:
    """Raise BoundaryError unless `value` is plain data: tensors, scalars, and containers of them."""
    t = type(value)
    if t is torch.Tensor:
        return
    if t in _SCALARS:
        return
    if t in (list, tuple):
        for i, item in enumerate(value):
            check_data(item, f"{path}[{i}]")
        return
    if t is dict:
        for key, item in value.items():
            if type(key) not in (str, int):
                raise BoundaryError(f"{path} has a key of type {type(key).__name__}")
            check_data(item, f"{path}[{key!r}]")
        return
    raise BoundaryError(f"{path} is a {t.__module__}.{t.__qualname__}, not plain data")


def encode(message: Any) -> bytes:
    """Serialise a message (plain data) for the trip across the boundary."""
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


def decode(payload: bytes, max_bytes: int = MAX_REPLY_BYTES) -> Any:
    """Decode a reply safely: size cap, `weights_only=True`, then a structural type check."""
    if len(payload) > max_bytes:
        raise BoundaryError(f"reply of {len(payload)} bytes exceeds the {max_bytes}-byte cap")
    try:
        value = torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception as exc:  # any decoding failure is a garbage reply
        raise BoundaryError(f"undecodable reply: {type(exc).__name__}: {exc}") from None
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
