"""Kit self-tests: only data crosses the probe boundary, and static checks read source only."""

from __future__ import annotations

import ast
import io
import pickle
import re
import struct

import numpy as np
import pytest
import torch

from grader import protocol, static, wire
from grader.protocol import BoundaryError, ErrorData, check_data, decode, encode


class Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_plain_data_round_trips():
    value = {"a": [1, 2.5, True, None, "s"], "t": torch.arange(3), 3: (torch.ones(2, 2),)}
    back = decode(encode(value))
    assert back["a"] == [1, 2.5, True, None, "s"] and torch.equal(back["t"], torch.arange(3))


@pytest.mark.parametrize("value", [np.zeros(3), torch.nn.Linear(2, 2), {1.5: 1}, object(), torch.float32])
def test_non_data_is_rejected(value):
    with pytest.raises(BoundaryError):
        check_data(value)


def test_pickled_code_is_not_executed(capsys):
    payload = io.BytesIO()
    torch.save({"ok": 1}, payload)
    raw = pickle.dumps(Evil())
    with pytest.raises(BoundaryError):
        decode(raw)
    assert "never run" not in capsys.readouterr().out


def test_reply_size_cap():
    with pytest.raises(BoundaryError, match="cap"):
        decode(encode(torch.zeros(1000)), max_bytes=100)


def test_error_data_names_the_students_frame(tmp_path):
    def student_code():
        raise ValueError("bad dtype")

    try:
        student_code()
    except ValueError as exc:
        err = ErrorData.from_exception(exc, str(tmp_path))
    assert (err.type, err.message, err.not_implemented, "ValueError" in err.bases) == ("ValueError", "bad dtype", False, True)
    assert ErrorData.from_dict(err.as_dict()) == err


def _fn(src: str, name: str = "f"):
    tree = ast.parse(src)
    return tree, static.find_definition(tree, name)


def test_stub_detection():
    assert static.is_stub(_fn('def f():\n    """doc"""\n    raise NotImplementedError()\n')[1])
    assert not static.is_stub(_fn('def f():\n    """doc"""\n    return 1\n')[1])
    tree = ast.parse("class A:\n    def g(self):\n        raise NotImplementedError\n")
    assert static.is_stub(static.find_definition(tree, "A")) and static.find_definition(tree, "A.g") is not None


def test_forbidden_uses_and_escapes():
    _, node = _fn("def f(x):\n    t = x\n    return t.mT + getattr(x, 'trans' + 'pose')(0, 1)\n")
    assert static.forbidden_uses(node, {"t", "mT", "transpose"}) == ["getattr", "mT"]


def test_calls_from_package():
    tree, node = _fn("import einops as E\nfrom einops import rearrange as r\nimport torch\n"
                     "def f(x):\n    return r(x, 'a b -> b a') + E.reduce(x, 'a b -> a', 'sum') + torch.einsum('ij->ji', x)\n")
    assert static.calls_from(node, tree, "einops", {"rearrange", "reduce", "einsum"}) == {"rearrange", "reduce"}


# -- the wire format (grader/wire.py) -------------------------------------------------------

def _wire_sample():
    x = torch.randn(4, 5)
    return x, {
        "scalars": [1, 2.5, True, False, None, "s\udc80é", -0.0, 2**70, -2**63, 2**63],
        "nested": (1, (2, [3, {"k": ()}])), 7: "int key",
        "x": x, "view": x[1:, ::2],
        "dtypes": [torch.arange(3, dtype=d) if not d.is_floating_point else torch.randn(3).to(d)
                   for d in (torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int32, torch.int64,
                             torch.uint8, torch.float8_e4m3fn, torch.float8_e5m2)],
        "bool": torch.tensor([True, False]), "complex": torch.randn(2, dtype=torch.complex64).conj(),
        "meta": torch.empty(2, 3, device="meta"), "grad": torch.randn(2, requires_grad=True) * 2,
        "empty": torch.empty(0, 3), "scalar": torch.tensor(3.0), "expanded": torch.zeros(1).expand(10),
    }


def test_wire_round_trips_values_types_and_shared_storage():
    x, value = _wire_sample()
    back = decode(encode(value))
    assert back["scalars"][:6] == value["scalars"][:6] and back["scalars"][6:] == value["scalars"][6:]
    assert [type(v) for v in back["scalars"]] == [type(v) for v in value["scalars"]]
    assert str(back["scalars"][6]) == "-0.0" and back["nested"] == value["nested"] and back[7] == "int key"
    assert type(back["nested"]) is tuple and type(back["nested"][1][1]) is list
    got, want = back["view"], value["view"]
    assert torch.equal(got, want) and got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
    assert got.untyped_storage().data_ptr() == back["x"].untyped_storage().data_ptr()  # still a view of x
    for a, b in zip(back["dtypes"], value["dtypes"]):
        assert a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8))
    assert torch.equal(back["complex"], value["complex"].resolve_conj()) and not back["complex"].is_conj()
    assert back["meta"].is_meta and back["meta"].shape == (2, 3)
    assert back["grad"].requires_grad and back["grad"].is_leaf and not back["x"].requires_grad
    assert back["empty"].shape == (0, 3) and back["scalar"].shape == () and back["expanded"].stride() == (0,)
    back["x"].add_(1)  # decoded tensors own writable memory


@pytest.mark.parametrize("value, where", [
    ({"m": torch.nn.Linear(2, 2)}, "result['m'] is a torch.nn.modules.linear.Linear"),
    ([1, torch.nn.Parameter(torch.ones(1))], "result[1] is a torch.nn.parameter.Parameter"),
    ({"s": torch.ones(2).to_sparse()}, "result['s'] is a torch.sparse_coo tensor"),
    ({"d": torch.float32}, "result['d'] is a torch.dtype"),
    ([np.float64(1.0)], "result[0] is a numpy.float64"),
])
def test_wire_carries_what_is_not_data_only_as_its_name(value, where):
    with pytest.raises(BoundaryError, match=re.escape(where)):
        decode(encode(value))


def test_wire_cuts_cycles_and_deep_nesting():
    cycle: list = []
    cycle.append(cycle)
    deep: list = []
    cur = deep
    for _ in range(200):
        cur.append([])
        cur = cur[0]
    for value in (cycle, deep):
        with pytest.raises(BoundaryError, match="nested deeper"):
            decode(encode(value))


def test_wire_refuses_malformed_messages_with_boundary_errors_only():
    """Truncations and byte flips of a real message, and hand-made headers: every one either
    decodes to plain data or is refused as a BoundaryError (never another exception, never a crash)."""
    import random

    payload = encode(_wire_sample()[1])
    rng = random.Random(0)
    for i in range(2000):
        damaged = bytearray(payload)
        if i % 2:
            damaged = damaged[:rng.randrange(len(damaged))]
        else:
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            decode(bytes(damaged))
        except BoundaryError:
            pass

    def message(body: bytes, storages: list[bytes] = ()) -> bytes:
        head = wire.MAGIC + struct.pack("<I", len(storages)) + b"".join(struct.pack("<Q", len(s)) for s in storages)
        return head + struct.pack("<Q", len(body)) + body + b"".join(storages)

    def tensor(code: int, shape, stride, offset: int, storage: int = 0, flags: int = 0) -> bytes:
        return (b"X" + bytes((code, flags, len(shape))) + struct.pack(f"<{2 * len(shape) + 1}q", *shape, *stride, offset)
                + struct.pack("<I", storage))

    f32, boolean = wire.DTYPE_NAMES.index("float32"), wire.DTYPE_NAMES.index("bool")
    refused = {
        "reads past its storage": message(tensor(f32, [5], [1], 0), [b"\0" * 16]),
        "offset past the end": message(tensor(f32, [1], [1], 4), [b"\0" * 16]),
        "negative stride": message(tensor(f32, [2], [-1], 1), [b"\0" * 16]),
        "storage not in the message": message(tensor(f32, [1], [1], 0, storage=3), [b"\0" * 16]),
        "int dtype requiring grad": message(tensor(boolean, [1], [1], 0, flags=1), [b"\x01"]),
        "unknown dtype code": message(tensor(250, [1], [1], 0), [b"\0" * 4]),
        "a list longer than the message": message(b"l" + struct.pack("<I", 2**31)),
        "an int key outside int64": message(b"d" + struct.pack("<I", 1) + b"I" + struct.pack("<I", 9) + b"\0" * 8
                                            + b"\x01" + b"N"),
        "an int of more than MAX_BIG_INT bytes": message(b"I" + struct.pack("<I", wire.MAX_BIG_INT + 1)
                                                         + b"\x01" * (wire.MAX_BIG_INT + 1)),
        "more than MAX_TENSORS tensors": message(b"l" + struct.pack("<I", wire.MAX_TENSORS + 1)
                                                 + tensor(f32, [], [], 0) * (wire.MAX_TENSORS + 1), [b"\0" * 4]),
        "a list key": message(b"d" + struct.pack("<I", 1) + b"l" + struct.pack("<I", 0) + b"N"),
        "two values": message(b"NN"),
        "sizes that do not add up": message(b"N", [b"abc"])[:-1],
        "unknown tag": message(b"?"),
        "a pickle": pickle.dumps({"ok": 1}),
    }
    for what, payload in refused.items():
        with pytest.raises(BoundaryError):
            decode(payload)
            pytest.fail(f"accepted: {what}")

    # bytes other than 0 and 1 under a bool tensor (torch.empty's leftovers, a uint8 view) read as bools
    payload = message(b"l" + struct.pack("<I", 2) + tensor(boolean, [2], [1], 0) + tensor(wire.DTYPE_NAMES.index("uint8"),
                      [3], [1], 0), [b"\x01\x07\x09"])
    flags, raw = decode(payload)
    assert flags.tolist() == [True, True] and raw.tolist() == [1, 7, 9]


def test_requests_are_not_capped_replies_are():
    """The trusted side's requests may be large (the GPU training probe sends 64 MiB of initial
    weights); only replies are capped, by their length before anything is decoded."""
    big = {"init": torch.zeros(17 * 2**20)}  # 68 MiB
    payload = encode(big)
    assert len(payload) > protocol.MAX_REPLY_BYTES
    assert torch.equal(wire.loads(payload)["init"], big["init"])  # what the sandbox's worker does with a request
    with pytest.raises(BoundaryError, match="cap"):
        decode(payload)
