"""What may cross the probe boundary, and how it is encoded.

Probes run next to the code under test and return *data only*.  Whatever backend runs them
(in-process for `grader check`, a sandbox for grading), the reply is written in the kit's
data-only format (`grader.boundary.wire`: no pickle, nothing but scalars, lists, tuples, dicts and dense
tensors can be built from it), decoded on the trusted side under caps per reply (bytes, values,
tensors; strings cut) and a budget per submission (`DecodeBudget`), then type-checked, so a probe
result can never smuggle code or live objects into the test process, nor make it work without
bound.  A probe's reply must stay within the caps below: a new probe returning more (a large
tensor as nested lists, thousands of tensors) fails its call on every submission.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

import torch

from grader.boundary import wire
from grader.boundary import wire_write

# Bounds on one reply.  Measured over every probe call of the whole suite on the reference
# solutions (`pytest -m "not kit"`) and of `grader validate` (714 mutants, every variant): the
# largest reply holds 1,203 values (views.can_view on the solutions), 128 tensors
# (mixed_precision.scaled_fp16_steps), 524 KB (cruncher.linear_weights) and a 1,000-character
# string (a probe's own cut of an error; 571 on the solutions).  Each cap leaves a margin of 4x or
# more; what a submission returns beyond them is refused (a plain message) or, for a string, cut,
# before anything on the trusted side walks it.
#: Largest reply the trusted side will read (bytes): 32x the largest.
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: Values in one reply as `grader.boundary.wire` counts them (every list, tuple, dict, dict key, scalar and
#: tensor; a shared sub-list once per use): 40x the largest.  Decoding and checking cost about
#: 4 us per value on the trusted side, so one reply costs at most about 0.2 s.
MAX_NODES = 50_000
#: Tensors in one reply (about 50 us each to build on the trusted side): 15x the largest.
MAX_TENSORS = 2_000
MAX_DEPTH = 64
#: Tensor elements in one reply, all tensors together, and their bytes as tensors: an expanded view
#: of a few bytes can describe gigabytes, which a test comparing it (in float64) would make real.
#: The largest reply holds 65,536 (256 KB): 256x and 512x that.
MAX_ELEMENTS = 1 << 24
MAX_TENSOR_BYTES = 1 << 27
#: Characters kept of each string of a reply (`grader.boundary.wire.cut`, at the decoder): 4x the largest.
MAX_STRING = 4096
#: The reply's envelope around the probe's value ({"seq", "reply": {"ok": ...}, "children"}).
_ENVELOPE = 16
#: Fields of an exception carried as data (`ErrorData`), cut by `grader.boundary.wire.cut`.
MAX_ERROR_TYPE, MAX_ERROR_BASES, MAX_ERROR_MESSAGE, MAX_ERROR_WHERE = 200, 64, 2000, 500

_SCALARS = (bool, int, float, str, type(None))


class BoundaryError(Exception):
    """A reply that is not plain data (wrong type, too large, undecodable)."""


def check_data(value: Any, path: str = "result", max_nodes: int = MAX_NODES) -> None:
    """Raise BoundaryError unless `value` is plain data: tensors, scalars, and containers of them.

    The walk is iterative and bounded (values as `grader.boundary.wire` counts them, dict keys included:
    `MAX_NODES`; tensors, depth, tensor elements).  A container reached twice is walked (and
    counted) again, as the encoder writes it once per use: a correct implementation may well
    return one cached tuple for two equal cases, but a small reply that describes a huge
    structure through shared sub-lists (2**40 items in a few KB), or a cycle, runs into the node
    or depth bound at once and is refused.  Each tensor must lie inside its own storage (no
    strides that read past it).  Strings are not refused for their length: the trusted decoder
    cuts them (`MAX_STRING`).  `max_nodes`: `MAX_NODES` for a probe's value, a little more for a
    whole reply (its envelope)."""
    nodes, elements, nbytes, tensors = 0, 0, 0, 0
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
        if nodes > max_nodes:
            raise BoundaryError(f"{path} has more than {max_nodes} items")
        if depth > MAX_DEPTH:
            raise BoundaryError(f"{where(trail)} is nested deeper than {MAX_DEPTH} levels")
        t = type(v)
        if t is wire.Opaque:
            raise BoundaryError(f"{where(trail)} is a {v.what}, not plain data")
        if t is torch.Tensor:
            tensors += 1
            if tensors > MAX_TENSORS:
                raise BoundaryError(f"{path} holds more than {MAX_TENSORS} tensors")
            elements += v.numel()
            nbytes += v.numel() * v.element_size()
            if elements > MAX_ELEMENTS:
                raise BoundaryError(f"{path} holds more than {MAX_ELEMENTS} tensor elements")
            if nbytes > MAX_TENSOR_BYTES:
                raise BoundaryError(f"{path} holds tensors of more than {MAX_TENSOR_BYTES} bytes")
            _check_tensor_bounds(v, where(trail))
            continue
        if t in _SCALARS:
            continue
        if t in (list, tuple, dict):
            if t is dict:
                nodes += len(v)  # the keys
            if nodes + len(todo) + len(v) > max_nodes:
                raise BoundaryError(f"{path} has more than {max_nodes} items")
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
    """Serialise a message (plain data) for the trip across the boundary (`grader.boundary.wire`).  Values
    that are not plain data travel as `wire.Opaque`, which `decode` refuses."""
    return wire_write.dumps(message)  # (a reply over the cap is refused by its length, on the trusted side)


def decode(payload: bytes, max_bytes: int = MAX_REPLY_BYTES, budget: "DecodeBudget | None" = None,
           module: str = "") -> Any:
    """Decode a reply safely: size cap, the data-only decoder of `grader.boundary.wire` (at most
    `MAX_NODES` values and `MAX_TENSORS` tensors, every string cut at `MAX_STRING` characters),
    then a structural type check.  With a `budget` (the sandboxed backend's, one per submission),
    the work is charged to `module`'s share of it, and a reply past what is left raises
    `BudgetSpent` as soon as the decoder reaches the limit (never walked further)."""
    if len(payload) > max_bytes:
        raise BoundaryError(f"reply of {len(payload)} bytes exceeds the {max_bytes}-byte cap")
    values, tensors = MAX_NODES + _ENVELOPE, MAX_TENSORS
    if budget is not None:
        values, tensors = budget.allow(module, len(payload), values, tensors)
    tally = wire.Tally()
    try:
        value = wire.loads(payload, max_values=values, max_tensors=tensors, max_string=MAX_STRING, tally=tally)
    except wire.WireError as exc:
        if budget is not None and budget.charge(module, tally.values, tally.tensors, len(payload)):
            raise BudgetSpent(budget.refusal(module) or "") from None
        raise BoundaryError(f"undecodable reply: {exc}") from None
    if budget is not None:
        budget.charge(module, tally.values, tally.tensors, len(payload))
    check_data(value, max_nodes=MAX_NODES + _ENVELOPE)
    return value


class BudgetSpent(BoundaryError):
    """The replies of a submission (or of one of its modules) used up their `DecodeBudget`: this
    reply is refused, and so is every later call that would charge the same budget."""


class DecodeBudget:
    """The trusted work one submission's replies may cost, all replies together: values and
    tensors decoded, bytes read.  Each module has its own share (a bug in one module's code costs
    points in that module only), and the submission a few modules' worth in all.

    The per-reply caps bound one reply; this bounds how often a submission can send the largest
    one (a reply at the caps costs the trusted side about 0.2 s; a suite sends hundreds).  In the
    same measurement as the caps above, one run of a whole module's suite decodes at most 2,813
    values (mixed_precision), 460 tensors (mixed_precision) and 957 KB (cruncher): a module's
    share is 10x that or more (tensors) and 33-70x (bytes, values), and the whole budget costs the
    trusted side about a second (a submission whose every function returns a reply at the caps:
    5.3 s of trusted work against 4.5 s for its twin of stubs, where it was 58 s).  Once a share is spent, calls that would charge it are refused (`refusal`)
    with a plain message, without running."""

    #: (values, tensors, bytes) per module, and for the whole submission
    MODULE = (200_000, 5_000, 32 * 2**20)
    SUBMISSION = (600_000, 15_000, 96 * 2**20)
    _WHAT = ("values", "tensors", "bytes")

    def __init__(self, module: tuple[int, int, int] = MODULE, submission: tuple[int, int, int] = SUBMISSION):
        self.limits = {"module": module, "submission": submission}
        self.used: dict[str, list[int]] = {"": [0, 0, 0]}  # module -> [values, tensors, bytes]; "": all of them

    def _shares(self, module: str) -> list[tuple[str, list[int], tuple[int, int, int]]]:
        used = self.used.setdefault(module, [0, 0, 0])
        return [(f"the replies of {module}.py" if module else "the replies", used, self.limits["module"]),
                ("the replies of the whole submission", self.used[""], self.limits["submission"])]

    def refusal(self, module: str) -> str | None:
        """Why no further reply of `module` is decoded (a plain sentence), or None."""
        for whose, used, limits in self._shares(module):
            for what, n, limit in zip(self._WHAT, used, limits):
                if n >= limit:
                    return (f"{whose} used up the grader's budget for reading them ({limit} {what}): this call "
                            "and the later ones were not run")
        return None

    def allow(self, module: str, nbytes: int, values: int, tensors: int) -> tuple[int, int]:
        """The values and tensors one reply of `nbytes` may hold (at most `values`, `tensors`);
        BudgetSpent if nothing is left."""
        for _, used, limits in self._shares(module):
            if used[2] + nbytes > limits[2]:
                used[2] = limits[2]  # the bytes were read: nothing more of this share
            values, tensors = min(values, limits[0] - used[0]), min(tensors, limits[1] - used[1])
        spent = self.refusal(module)
        if spent:
            raise BudgetSpent(spent)
        return values, tensors

    def charge(self, module: str, values: int, tensors: int, nbytes: int) -> bool:
        """Count one reply's work; True when that spent a share (the reply ran into its limit)."""
        for _, used, _limits in self._shares(module):
            used[0] += values
            used[1] += tensors
            used[2] += nbytes
        return self.refusal(module) is not None


@dataclass(frozen=True)
class ErrorData:
    """An exception raised by the code under test, carried as data."""

    type: str
    bases: tuple[str, ...]
    message: str
    not_implemented: bool
    where: str  # "memory.py:12 in storage_bytes": the student's innermost frame, if any

    def __post_init__(self) -> None:
        """Every field capped, however the record was made (`from_dict` on a reply, `from_exception`
        in the sandbox, a test): the class name and each base to MAX_ERROR_TYPE characters, at
        most MAX_ERROR_BASES bases (the nearest first: the class's own MRO order), the message
        and `where` to theirs.  Text that is not a str becomes a short description of it."""
        bases = self.bases if type(self.bases) in (tuple, list) else ()
        for name, value in (("type", _text(self.type, MAX_ERROR_TYPE)),
                            ("bases", tuple(_text(b, MAX_ERROR_TYPE) for b in bases[:MAX_ERROR_BASES])),
                            ("message", _text(self.message, MAX_ERROR_MESSAGE)),
                            ("where", _text(self.where, MAX_ERROR_WHERE)),
                            ("not_implemented", self.not_implemented is True)):
            object.__setattr__(self, name, value)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "bases": list(self.bases), "message": self.message,
                "not_implemented": self.not_implemented, "where": self.where}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ErrorData":
        """The record of a reply (KeyError / TypeError where a field is missing; every field capped)."""
        return cls(type=d["type"], bases=d["bases"], message=d["message"],
                   not_implemented=bool(d["not_implemented"]), where=d["where"])

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
            bases=tuple(c.__name__ for c in type(exc).__mro__[:MAX_ERROR_BASES]),
            message=str(exc),
            not_implemented=isinstance(exc, NotImplementedError),
            where=where,
        )


def _text(value: Any, limit: int) -> str:
    """An ErrorData field as a str of at most about `limit` characters (`grader.boundary.wire.cut`)."""
    if type(value) is not str:
        value = str(value) if type(value) in _SCALARS else f"<{type(value).__name__}>"
    return wire.cut(value, limit)
