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

from grader.boundary import messages
from grader.rules import static
from grader.boundary import wire
from grader.boundary import wire_write
from grader.boundary.messages import BoundaryError, ErrorData, check_data, decode, encode


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


# -- the wire format (grader/boundary/wire.py) -------------------------------------------------------

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
    assert len(payload) > messages.MAX_REPLY_BYTES
    assert torch.equal(wire.loads(payload)["init"], big["init"])  # what the sandbox's worker does with a request
    with pytest.raises(BoundaryError, match="cap"):
        decode(payload)


# -- budgets of the trusted decoder (issue 23: no reply or run of replies expands past a budget) -----

def _shared_list(values: int) -> list:
    """A list of about `values` values built from one shared row (the wire writes it once per use)."""
    side = int(values ** 0.5)
    row = [0] * side
    return [row] * side


def test_a_reply_past_the_value_cap_is_refused_at_the_cap_not_walked():
    """One reply holds at most MAX_NODES values (the suite's largest holds 1,203): a reply of shared
    rows that expands past it is refused once the decoder reaches the cap."""
    payload = wire_write.dumps({"seq": 1, "reply": {"ok": _shared_list(4 * messages.MAX_NODES)}})
    tally = wire.Tally()
    with pytest.raises(wire.WireError, match="more than"):
        wire.loads(payload, max_values=messages.MAX_NODES, tally=tally)
    assert tally.values == messages.MAX_NODES + 1  # stopped there: the rest was never read
    with pytest.raises(BoundaryError, match="more than"):
        decode(payload)
    legit = {"seq": 1, "reply": {"ok": _shared_list(messages.MAX_NODES // 2)}, "children": False}
    assert decode(encode(legit)) == legit
    with pytest.raises(BoundaryError, match="more than"):  # the sandbox refuses it too (serve's check)
        check_data(_shared_list(2 * messages.MAX_NODES))
    with pytest.raises(BoundaryError, match="tensors"):
        check_data([torch.zeros(1)] * (messages.MAX_TENSORS + 1))
    with pytest.raises(BoundaryError, match="elements"):  # 4 bytes that describe 16M values
        decode(encode(torch.zeros(1).expand(messages.MAX_ELEMENTS + 1)))


def test_decode_budget_per_module_and_per_submission():
    """Each module's replies decode at most DecodeBudget.MODULE (values, tensors, bytes) in all, the
    whole submission DecodeBudget.SUBMISSION; past them a reply raises BudgetSpent when the decoder
    reaches what is left, and later calls are refused without running."""
    budget = messages.DecodeBudget(module=(1000, 10, 10**6), submission=(2000, 25, 10**7))
    reply = encode({"seq": 1, "reply": {"ok": list(range(400))}})  # 407 values
    for _ in range(2):
        decode(reply, budget=budget, module="memory")
    assert budget.refusal("memory") is None
    with pytest.raises(messages.BudgetSpent, match="memory.py"):
        decode(reply, budget=budget, module="memory")  # only 186 values left
    assert budget.used["memory"][0] == 1001  # the third reply was read only up to the budget
    assert "memory.py" in budget.refusal("memory") and budget.refusal("views") is None
    with pytest.raises(messages.BudgetSpent):
        decode(encode({"seq": 2, "reply": {"ok": None}}), budget=budget, module="memory")  # nothing left at all
    for _ in range(2):  # another module has its own share...
        decode(reply, budget=budget, module="views")
    with pytest.raises(messages.BudgetSpent, match="whole submission"):  # ...and the submission's runs out
        decode(reply, budget=budget, module="flops")
    assert "whole submission" in budget.refusal("data")
    tensors = messages.DecodeBudget(module=(10**6, 10, 10**6))
    with pytest.raises(messages.BudgetSpent, match="tensors"):
        decode(encode([torch.zeros(1)] * 11), budget=tensors, module="fp8")
    nbytes = messages.DecodeBudget(module=(10**6, 10, 1000))
    with pytest.raises(messages.BudgetSpent, match="bytes"):
        decode(encode(torch.zeros(1000)), budget=nbytes, module="fp8")


def test_a_budget_refusal_is_not_garbage_and_leaves_the_channel_in_step():
    """read_message hands BudgetSpent on (the backend answers the call with its sentence and does
    not count the sandbox's reply as garbage); the reply was read whole."""
    import os
    import time

    from grader.sandbox.channel import HEADER, read_message

    budget = messages.DecodeBudget(module=(100, 10, 10**6))
    r, w = os.pipe()
    try:
        for value in (list(range(200)), "next"):
            payload = encode({"seq": 1, "reply": {"ok": value}})
            os.write(w, HEADER.pack(len(payload)) + payload)
        with pytest.raises(messages.BudgetSpent):
            read_message(r, time.monotonic() + 5, budget, "memory")
        assert read_message(r, time.monotonic() + 5) == {"seq": 1, "reply": {"ok": "next"}}
    finally:
        os.close(r)
        os.close(w)


def test_every_string_of_a_reply_is_cut_at_the_decoder():
    """Every string a reply holds (values, dict keys, inside an error record) is cut once, at the
    decoder, to MAX_STRING characters and a note: no consumer needs to cap it again."""
    n = messages.MAX_STRING
    long = "é" * (10 * n)
    back = decode(encode({"ok": [long, {long: (long,)}], "short": "x" * n}))
    cut = wire.cut(long, n)
    assert back["ok"][0] == cut and list(back["ok"][1]) == [cut] and back["ok"][1][cut] == (cut,)
    assert back["short"] == "x" * n and cut.startswith("é" * (n - 40)) and cut != long and len(cut) == n
    assert wire.cut(cut, n) == cut and "40960 characters, cut" in cut
    assert wire.loads(encode(long)) == long  # requests (decoded in the sandbox) are not cut


def test_error_data_fields_are_capped_however_it_is_made():
    """ErrorData caps every field (a 1 MB class name once reached results.json): from a reply's
    record, from an exception, or built directly."""
    huge = "E" * 10**6
    record = {"type": huge, "bases": [huge] * 10_000, "message": huge, "not_implemented": 1, "where": huge}
    sent = dict(record, bases=["B" * 1000] * 1000)  # (10,000 bases of 1 MB would be 10 GB on the wire)
    for err in (ErrorData.from_dict(record), ErrorData(huge, tuple(record["bases"]), huge, True, huge),
                ErrorData.from_dict(decode(encode(sent)))):
        assert len(err.type) < messages.MAX_ERROR_TYPE + 50 and len(err.bases) == messages.MAX_ERROR_BASES
        assert all(len(b) < messages.MAX_ERROR_TYPE + 50 for b in err.bases)
        assert len(err.message) < messages.MAX_ERROR_MESSAGE + 50 and len(err.where) < messages.MAX_ERROR_WHERE + 50
        assert err.not_implemented is True
    odd = ErrorData.from_dict({"type": [1] * 10, "bases": 7, "message": 12, "not_implemented": "yes", "where": None})
    assert (odd.type, odd.bases, odd.message, odd.not_implemented, odd.where) == ("<list>", (), "12", True, "None")

    deep = type("Deep0", (ValueError,), {})
    for i in range(1, 200):
        deep = type(f"Deep{i}", (deep,), {})
    try:
        raise type("X" * 10**5, (deep,), {})("boom")
    except ValueError as exc:
        err = ErrorData.from_exception(exc, None)
    assert len(err.type) < messages.MAX_ERROR_TYPE + 50 and len(err.bases) == messages.MAX_ERROR_BASES


def test_a_probe_error_s_detail_is_capped():
    """What reaches a test's output from a failed call is capped (ProbeError.detail)."""
    from grader.testing.student import MAX_DETAIL, ProbeError

    detail = ProbeError("memory.storage_bytes", detail="d" * 10**6).detail
    assert len(detail) < MAX_DETAIL + 50
    err = ErrorData("T" * 10**6, ("ValueError",), "m" * 10**6, False, "w" * 10**6)
    assert len(str(ProbeError("memory.storage_bytes", err))) < MAX_DETAIL + 50


def test_the_worker_counts_a_shared_storage_once():
    """The sandbox's size check counts what the wire sends: a storage once, however many views."""
    from grader.sandbox.worker import _cap_reply

    base = torch.zeros(2**20)  # 4 MiB, 40 views of it: 4 MiB on the wire
    assert "ok" in _cap_reply({"ok": [base[i:] for i in range(40)]})
    assert "boundary" in _cap_reply({"ok": [torch.zeros(2**20) for _ in range(5)]})  # 20 MiB
    assert "boundary" in _cap_reply({"ok": ["é" * (9 * 2**20)]})  # 18 MiB of UTF-8


def test_contained_child_bounds_memory_and_time():
    """grader.testing.contained runs trusted code on untrusted bytes in a child: past its memory or time it
    reports a sentence, and its result comes back through the reply decoder."""
    from grader.testing.contained import contained

    grow = contained(lambda: torch.ones(2**31 // 4).sum().item(), memory=1 << 28)
    assert grow.value is None and "allocate" in grow.error
    assert contained(_spin, seconds=1).error == "it did not finish in time"
    ok = contained(lambda x: {"t": torch.ones(2) * x, "s": "s" * 10**5}, 3.0)
    assert ok.error is None and torch.equal(ok.value["t"], torch.full((2,), 3.0))
    assert len(ok.value["s"]) < messages.MAX_STRING + 50  # cut like every reply's strings
    assert contained(_raises).error == "KeyError: 'nope'"


def _spin():
    while True:
        pass


def _raises():
    raise KeyError("nope")


def _checkpoint_bytes(obj, **kwargs) -> torch.Tensor:
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8).clone()


def test_the_checkpoint_test_reads_student_files_within_bounds():
    """The trusted checkpointing test loads the student's file with torch.load(weights_only=True)
    in a contained child: shared lists describing 2**40 items are walked once per object, a zip
    with deflated or overlapping records is refused before anything is inflated, and what an
    honest checkpoint holds (either format) is found."""
    import zipfile

    from tests.public.test_checkpointing import _weights_only_tensors

    w = torch.arange(12.0).reshape(4, 3)
    for kwargs in ({}, {"_use_new_zipfile_serialization": False}):
        got = _weights_only_tensors(_checkpoint_bytes({"model": {"w": w.clone()}, "step": 3}, **kwargs), [w])
        assert len(got) == 1 and torch.equal(got[0], w)
    laughs: list = [w.clone()]
    for _ in range(40):
        laughs = [laughs, laughs]
    assert [torch.equal(t, w) for t in _weights_only_tensors(_checkpoint_bytes({"x": laughs}), [w])] == [True]

    plain = _checkpoint_bytes({"w": torch.zeros(2**20)}).numpy().tobytes()
    source, deflated = zipfile.ZipFile(io.BytesIO(plain)), io.BytesIO()
    with zipfile.ZipFile(deflated, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, source.read(info.filename))
    bomb = torch.frombuffer(bytearray(deflated.getvalue()), dtype=torch.uint8)
    with pytest.raises(AssertionError, match="compressed"):
        _weights_only_tensors(bomb, [w])
    overlapping = io.BytesIO()
    with zipfile.ZipFile(overlapping, "w") as archive:
        for info in source.infolist():
            archive.writestr(info, source.read(info.filename))
    raw = bytearray(overlapping.getvalue())  # a second central-directory entry for the 4 MiB record
    with pytest.raises(AssertionError, match="declare"):
        _weights_only_tensors(torch.frombuffer(_duplicate_largest_entry(raw), dtype=torch.uint8), [w])
    with pytest.raises(AssertionError, match="refuses the file"):
        _weights_only_tensors(_checkpoint_bytes({"e": Evil()}), [w])


def _duplicate_largest_entry(raw: bytearray) -> bytearray:
    """`raw` (a zip) with one more central-directory entry, named "archive/data/copy", for the
    same bytes as its largest record (stored records that overlap)."""
    end = raw.rindex(b"PK\x05\x06")
    count, size, offset = struct.unpack_from("<HII", raw, end + 10)
    entries, pos = [], offset
    for _ in range(count):
        fixed = raw[pos:pos + 46]
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", fixed, 28)
        entries.append(bytes(raw[pos:pos + 46 + name_len + extra_len + comment_len]))
        pos += 46 + name_len + extra_len + comment_len
    largest = max(entries, key=lambda e: struct.unpack_from("<I", e, 24)[0])
    name = b"archive/data/copy"
    copy = bytearray(largest[:46]) + name
    struct.pack_into("<HHH", copy, 28, len(name), 0, 0)
    directory = b"".join(entries) + copy
    tail = bytearray(raw[end:end + 22])
    struct.pack_into("<HHII", tail, 8, count + 1, count + 1, len(directory), offset)
    return bytearray(raw[:offset]) + directory + tail



def test_what_one_student_s_files_hold_is_bounded():
    """A test's message is cut at MESSAGE_LIMIT characters, and past SUBMISSION_MESSAGES_LIMIT for the
    whole submission later messages are left out with a note (one results.json once held a
    1,000,179-character message: an exception class name, then uncapped): outcomes and points stay."""
    import json

    from grader.results.results_json import MESSAGE_LIMIT, SUBMISSION_MESSAGES_LIMIT, bounded_messages, build_results

    records = [{"id": f"tests/public/test_memory.py::test_{i}", "module": "memory", "name": f"test_{i}",
                "points": 1, "status": "failed", "message": "m" * 10**6, "hidden": False} for i in range(300)]
    bounded = bounded_messages(records)
    assert [r["status"] for r in bounded] == ["failed"] * 300 and records[0]["message"] == "m" * 10**6
    assert all(len(r["message"]) < MESSAGE_LIMIT + 50 for r in bounded)
    kept = [r["message"] for r in bounded if "left out" not in r["message"]]
    assert sum(map(len, kept)) <= SUBMISSION_MESSAGES_LIMIT and len(kept) == SUBMISSION_MESSAGES_LIMIT // MESSAGE_LIMIT
    assert "left out" in bounded[-1]["message"] and bounded[0]["message"].startswith("m" * (MESSAGE_LIMIT - 40))
    doc = build_results(records, student="s", kit_version="0", sandbox={}, submission={})
    assert len(json.dumps(doc)) < SUBMISSION_MESSAGES_LIMIT + 200_000 and doc["max_score"] == 300
    assert bounded_messages(bounded) == bounded  # (applied twice: no change)
