"""The probe boundary's format, written: `dumps` (the format and its decoder: `grader.boundary.wire`).

Every probe request and reply is written here (`grader.boundary.messages.encode`) and read by
`grader.boundary.wire.loads`.  A value that is not plain data is written as an opaque marker naming its
type; a structure deeper than `grader.boundary.wire.MAX_DEPTH` + 1 is cut there the same way (so a cycle
ends too); tensors that share a storage are written with one copy of it.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from grader.boundary.wire import (CODE, F64, I64, MAGIC, MAX_DEPTH, MAX_DIMS, MAX_NODES, META, REQUIRES_GRAD, U32, U64,
                         WireError)


def dumps(value: Any) -> bytes:
    """`value` as bytes.  Values that are not plain data are written as `Opaque` (the decoding
    side refuses them); WireError if it would need more than MAX_NODES values.  No size cap here:
    requests may be large, and a reply over the cap is refused by its length on the trusted side."""
    encoder = _Encoder()
    encoder.write(value, 0)
    sizes = b"".join(U64.pack(len(raw)) for raw in encoder.storages)
    body = bytes(encoder.out)
    head = MAGIC + U32.pack(len(encoder.storages)) + sizes + U64.pack(len(body))
    return b"".join([head, body, *encoder.storages])


class _Encoder:
    def __init__(self) -> None:
        self.out = bytearray()
        self.storages: list[bytes] = []
        self.index: dict[tuple[str, int, int], int] = {}
        self.nodes = 0

    def write(self, v: Any, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise WireError(f"more than {MAX_NODES} values")
        out, t = self.out, type(v)
        if depth > MAX_DEPTH + 1:
            self.opaque(f"structure nested deeper than {MAX_DEPTH} levels")
        elif v is None:
            out += b"N"
        elif t is bool:
            out += b"T" if v else b"F"
        elif t is int:
            if -(1 << 63) <= v < (1 << 63):
                out += b"i"
                out += I64.pack(v)
            else:
                raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
                out += b"I"
                out += U32.pack(len(raw))
                out += raw
        elif t is float:
            out += b"f"
            out += F64.pack(v)
        elif t is str:
            raw = v.encode("utf-8", "surrogatepass")
            out += b"s"
            out += U32.pack(len(raw))
            out += raw
        elif t is list or t is tuple:
            items = list(v)  # (the count written is the count of what follows, whatever runs meanwhile)
            out += b"l" if t is list else b"t"
            out += U32.pack(len(items))
            for item in items:
                self.write(item, depth + 1)
        elif t is dict:
            pairs = list(v.items())
            out += b"d"
            out += U32.pack(len(pairs))
            for key, item in pairs:
                self.write(key, depth + 1)
                self.write(item, depth + 1)
        elif t is torch.Tensor:
            self.tensor(v)
        else:
            self.opaque(f"{t.__module__}.{t.__qualname__}")

    def opaque(self, what: str) -> None:
        raw = what[:200].encode("utf-8", "replace")
        self.out += b"O"
        self.out += U32.pack(len(raw))
        self.out += raw

    def tensor(self, t: torch.Tensor) -> None:
        if t.layout is not torch.strided:
            return self.opaque(f"{t.layout} tensor (only dense tensors cross the boundary)")
        code = CODE.get(t.dtype)
        if code is None:
            return self.opaque(f"tensor of dtype {t.dtype}")
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        meta = t.device.type == "meta"
        flags = (REQUIRES_GRAD if t.requires_grad else 0) | (META if meta else 0)
        shape, stride = [int(n) for n in t.shape], [int(n) for n in t.stride()]
        if len(shape) != len(stride) or len(shape) > MAX_DIMS:
            return self.opaque("tensor whose shape and strides disagree")
        head = bytearray(b"X")
        head += bytes((code, flags, len(shape)))
        for n in (*shape, *stride, int(t.storage_offset())):
            head += I64.pack(n)
        if meta:
            head += U32.pack(0)
        else:
            storage = t.untyped_storage()
            key = (str(t.device), storage.data_ptr(), storage.nbytes())
            if key not in self.index or storage.nbytes() == 0:
                if t.device.type != "cpu":
                    storage = storage.cpu()
                nbytes = storage.nbytes()
                self.index[key] = len(self.storages)
                self.storages.append(ctypes.string_at(storage.data_ptr(), nbytes) if nbytes else b"")
            head += U32.pack(self.index[key])
        self.out += head
