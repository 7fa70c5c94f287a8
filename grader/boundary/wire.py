"""The bytes of the probe boundary: a data-only encoding of plain values and dense tensors.

Every probe request and reply (`grader.boundary.messages.encode` / `decode`) is written in this format
(written by `grader.boundary.wire_write.dumps`, read by `loads` here).
It replaces ``torch.save`` / ``torch.load(weights_only=True)`` for two reasons:

- the decoder can build nothing but the values listed below.  ``weights_only`` is an unpickler
  held back by an allowlist: a pickle machine, whose history includes remote code execution
  (CVE-2025-32434, torch < 2.6), and it also inflates zip records before checking them;
- it is quick: a grading run sends about 350 messages per submission, and the zip archive and
  pickle machinery cost about 1 ms per message on each side (a tenth of a second per side and
  submission, from 2 to 0.3 for the whole exchange; `bench/grade_throughput.py`).

Layout (little-endian)::

    MAGIC, u32 number of storages, u64 size of each, u64 size of the structure,
    the structure, then each storage's bytes one after another

The structure is one tag byte per value, then its body:

    N None   T True   F False   i int64   I other int (u32 length, signed)   f float64
    s str (u32 length, UTF-8, lone surrogates kept)
    l list   t tuple (u32 count, the items)   d dict (u32 count, key value key value ...)
    X tensor: u8 dtype code (`DTYPES`), u8 flags (1: requires_grad, 2: on the meta device),
      u8 number of dims, the shape and the strides (int64 each), int64 storage offset, u32 storage
    O a value that is not plain data: a str saying what it was (decoded as `Opaque`, which
      `grader.boundary.messages.check_data` refuses, naming where it was)

Tensors that shared a storage share one after the trip (views stay views of one another); a
CUDA tensor arrives on the CPU (as ``map_location="cpu"`` did); a conjugate or negative view is
resolved first.  Shared sub-lists are written out once per use, and a structure deeper than
`MAX_DEPTH` + 1 is cut there with an `Opaque` (so a cycle ends too).

The decoder bounds its own work: values (`MAX_NODES`, or the caller's `max_values`), depth,
tensors (`MAX_TENSORS`, or `max_tensors`) and storages per message, ints (`MAX_BIG_INT`), dict
keys (str, or int within int64: keys chosen to share a hash would make building the dict
quadratic), and each tensor must lie inside its storage.  A whole storage travels with a view of
part of it (as with torch.save).  With no back-references, decoding is linear in the bytes: each
value read costs at least one byte, and what the decoder builds holds no shared sub-list (a
reply that shared sub-lists in the sandbox arrives expanded, counted against `max_values`).
With `max_string`, every string (dict keys included) is cut there by `cut`, so a consumer never
meets a longer one (replies: `grader.boundary.messages.MAX_STRING`); a `Tally` says what was read.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass
from typing import Any

import torch

MAGIC = b"KIT-WIRE-1\n"

#: Tensor dtypes that may cross, by code (the index).  Append only: both sides use this table.
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int8", "int16", "int32",
               "int64", "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
               "uint16", "uint32", "uint64", "complex32", "float8_e8m0fnu")
DTYPES = tuple(getattr(torch, name, None) for name in DTYPE_NAMES)
CODE = {dtype: code for code, dtype in enumerate(DTYPES) if isinstance(dtype, torch.dtype)}

MAX_DEPTH = 64
MAX_NODES = 1_000_000
MAX_DIMS = 64
#: Tensors and storages in one message: a tensor costs microseconds to build, so a million of
#: them (15 MiB of message) would hold the grader for seconds.  The largest reply of the suite
#: holds about a hundred.
MAX_TENSORS = 20_000
MAX_STORAGES = 20_000
#: Bytes of one int outside int64: 1 KiB is 2466 decimal digits, under the 4300 that str() of an
#: int allows (so a message quoting it cannot fail).
MAX_BIG_INT = 1 << 10

U8, U32, U64, I64, F64 = (struct.Struct(f) for f in ("<B", "<I", "<Q", "<q", "<d"))
REQUIRES_GRAD, META = 1, 2


class WireError(ValueError):
    """Bytes that are not a well-formed message (decoding), or a value too large to send (encoding)."""


@dataclass
class Tally:
    """What one `loads` read, also when it raised: values and tensors (the trusted side charges
    them to a submission's decoding budget, `grader.boundary.messages.DecodeBudget`)."""

    values: int = 0
    tensors: int = 0


def cut(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters, else its start and a note saying how many
    characters were cut, `limit` characters in all (so cutting again changes nothing, and a cut
    string never equals the one that was sent).  The one function that caps untrusted strings on
    the trusted side: every string of a reply (`loads` with `max_string`), every field of
    `grader.boundary.messages.ErrorData`, a failure's detail, what results.json holds."""
    if len(text) <= limit:
        return text
    note = f"… [{len(text)} characters, cut]"
    return text[:max(0, limit - len(note))] + note[:limit]


@dataclass(frozen=True)
class Opaque:
    """Where the sender had a value that is not plain data: `what` it was (``torch.nn.Linear``)."""

    what: str


# -- decoding -------------------------------------------------------------------------------

def loads(payload: bytes | bytearray | memoryview, *, max_values: int = MAX_NODES, max_tensors: int = MAX_TENSORS,
          max_string: int | None = None, tally: Tally | None = None) -> Any:
    """The value `payload` holds (`Opaque` where the sender had something else).  Raises
    WireError for anything malformed or past `max_values` values / `max_tensors` tensors (both at
    most the format's own `MAX_NODES` / `MAX_TENSORS`); never builds anything but the values
    listed above.  Strings longer than `max_string` characters are `cut`.  `tally`, when given,
    receives the values and tensors read (also when this raises)."""
    view = memoryview(payload).cast("B")
    size = len(view)
    if bytes(view[:len(MAGIC)]) != MAGIC:
        raise WireError("not a kit message (bad magic)")
    pos = len(MAGIC)
    count = _take(U32, view, pos, size)
    pos += 4
    if count > MAX_STORAGES:
        raise WireError(f"more than {MAX_STORAGES} storages")
    if count > (size - pos) // 8:
        raise WireError("storage table larger than the message")
    lengths = [_take(U64, view, pos + 8 * i, size) for i in range(count)]
    pos += 8 * count
    body_len = _take(U64, view, pos, size)
    pos += 8
    if body_len + sum(lengths) != size - pos:
        raise WireError("sizes in the header do not add up to the message")
    starts, at = [], pos + body_len
    for n in lengths:
        starts.append(at)
        at += n
    decoder = _Decoder(view, pos, pos + body_len, starts, lengths, min(max_values, MAX_NODES),
                       min(max_tensors, MAX_TENSORS), max_string)
    try:
        return decoder.run()
    finally:
        if tally is not None:
            tally.values, tally.tensors = decoder.nodes, decoder.tensors


def _take(fmt: struct.Struct, view: memoryview, pos: int, end: int) -> Any:
    if pos + fmt.size > end:
        raise WireError("truncated message")
    return fmt.unpack_from(view, pos)[0]


class _Decoder:
    def __init__(self, view: memoryview, pos: int, end: int, starts: list[int], lengths: list[int],
                 max_values: int, max_tensors: int, max_string: int | None):
        self.view, self.pos, self.end = view, pos, end
        self.starts, self.lengths = starts, lengths
        self.max_values, self.max_tensors, self.max_string = max_values, max_tensors, max_string
        self.made: dict[tuple[int, bool], Any] = {}  # (storage, as bool) -> UntypedStorage
        self.nodes = 0
        self.tensors = 0

    def u32(self) -> int:
        n = _take(U32, self.view, self.pos, self.end)
        self.pos += 4
        return n

    def raw(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise WireError("truncated message")
        data = bytes(self.view[self.pos:self.pos + n])
        self.pos += n
        return data

    def run(self) -> Any:
        # frames: [tag, items, items still to read]; a container is built when its last item is read
        root: list[Any] = []
        stack: list[list[Any]] = [["l", root, 1]]
        nodes, max_values = 0, self.max_values
        try:  # (free in CPython 3.11+: the count reaches the Tally also when this raises)
            while True:
                frame = stack[-1]
                if frame[2] == 0:
                    stack.pop()
                    tag, items = frame[0], frame[1]
                    value = items if tag == "l" else tuple(items) if tag == "t" else self.mapping(items)
                    if not stack:
                        break
                    stack[-1][1].append(value)
                    continue
                frame[2] -= 1
                nodes += 1
                if nodes > max_values:
                    raise WireError(f"more than {max_values} values")
                if self.pos >= self.end:
                    raise WireError("truncated message")
                tag = chr(self.view[self.pos])
                self.pos += 1
                if tag in "ltd":
                    if len(stack) > MAX_DEPTH + 3:
                        raise WireError(f"nested deeper than {MAX_DEPTH} levels")
                    n = self.u32()
                    items_to_read = 2 * n if tag == "d" else n
                    if items_to_read > self.end - self.pos:  # every value takes at least one byte
                        raise WireError("a container larger than the message")
                    stack.append([tag, [], items_to_read])
                    continue
                frame[1].append(self.scalar(tag))
        finally:
            self.nodes = nodes
        if self.pos != self.end:
            raise WireError("bytes left over after the value")
        if len(root) != 1:
            raise WireError("not one value")
        return root[0]

    def mapping(self, items: list[Any]) -> dict[Any, Any]:
        keys = items[0::2]
        for key in keys:  # str or int64: ints chosen to share a hash (k * (2**61 - 1)) make dict() quadratic
            if not (type(key) is str or (type(key) is int and -(1 << 63) <= key < (1 << 63))):
                raise WireError(f"a dict key of type {type(key).__name__}" + (" outside int64" if type(key) is int else ""))
        return dict(zip(keys, items[1::2]))

    def scalar(self, tag: str) -> Any:
        if tag == "N":
            return None
        if tag == "T":
            return True
        if tag == "F":
            return False
        if tag == "i":
            v = _take(I64, self.view, self.pos, self.end)
            self.pos += 8
            return v
        if tag == "f":
            v = _take(F64, self.view, self.pos, self.end)
            self.pos += 8
            return v
        if tag == "s":
            try:
                text = self.raw(self.u32()).decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise WireError("a string that is not UTF-8") from None
            if self.max_string is not None and len(text) > self.max_string:
                return cut(text, self.max_string)
            return text
        if tag == "I":
            n = self.u32()
            if n > MAX_BIG_INT:
                raise WireError(f"an int of more than {MAX_BIG_INT} bytes")
            return int.from_bytes(self.raw(n), "little", signed=True)
        if tag == "O":
            return Opaque(self.raw(min(self.u32(), 1000)).decode("utf-8", "replace"))
        if tag == "X":
            return self.tensor()
        raise WireError(f"unknown tag {tag!r}")

    def tensor(self) -> torch.Tensor:
        self.tensors += 1
        if self.tensors > self.max_tensors:
            raise WireError(f"more than {self.max_tensors} tensors")
        code, flags, ndim = self.raw(3)
        dtype = DTYPES[code] if code < len(DTYPES) else None
        if not isinstance(dtype, torch.dtype) or flags > 3 or ndim > MAX_DIMS:
            raise WireError("a tensor with a bad header")
        numbers = [_take(I64, self.view, self.pos + 8 * i, self.end) for i in range(2 * ndim + 1)]
        self.pos += 8 * (2 * ndim + 1)
        shape, stride, offset = numbers[:ndim], numbers[ndim:2 * ndim], numbers[-1]
        which = self.u32()
        if min(numbers, default=0) < 0:
            raise WireError("a tensor with a negative size, stride or offset")
        numel = 1
        for n in shape:
            numel *= n
        if numel > 1 << 62:
            raise WireError("a tensor with more than 2**62 elements")
        if flags & META:
            t = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        else:
            if which >= len(self.lengths):
                raise WireError("a tensor whose storage is not in the message")
            nbytes = self.lengths[which]
            if numel:
                last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
                if (last + 1) * dtype.itemsize > nbytes:
                    raise WireError("a tensor that reads past the end of its storage")
            with warnings.catch_warnings():  # complex32: "ComplexHalf support is experimental"
                warnings.simplefilter("ignore")
                t = torch.empty(0, dtype=dtype)
            t.set_(self.storage(which, dtype is torch.bool), offset, shape, stride)
        if flags & REQUIRES_GRAD:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise WireError(f"a {dtype} tensor that requires grad")
            t.requires_grad_(True)
        return t

    def storage(self, which: int, boolean: bool) -> torch.UntypedStorage:
        """Storage `which`, copied into memory of its own (aligned, writable, not holding the
        message alive); each storage once.  Bool tensors read bytes as 0 or 1 only: where the
        storage holds other bytes (torch.empty's leftovers beyond a view, or a uint8 view), bool
        tensors get a copy of it with every nonzero byte made 1 (a byte other than 0 or 1 is no
        bool value, and torch's kernels assume there is none)."""
        key = (which, False)
        if key not in self.made:
            start, n = self.starts[which], self.lengths[which]
            if n == 0:
                self.made[key] = torch.empty(0, dtype=torch.uint8).untyped_storage()
            else:
                self.made[key] = torch.frombuffer(bytearray(self.view[start:start + n]), dtype=torch.uint8).untyped_storage()
        if not boolean:
            return self.made[key]
        if (which, True) not in self.made:
            start, n = self.starts[which], self.lengths[which]
            raw = bytes(self.view[start:start + n])
            if not raw.translate(None, b"\x00\x01"):
                self.made[(which, True)] = self.made[key]
            else:
                clean = raw.translate(_TO_BOOL)
                self.made[(which, True)] = torch.frombuffer(bytearray(clean), dtype=torch.uint8).untyped_storage()
        return self.made[(which, True)]


_TO_BOOL = bytes([0] + [1] * 255)
