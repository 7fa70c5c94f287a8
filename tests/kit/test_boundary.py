"""Kit self-tests: only data crosses the probe boundary, and static checks read source only."""

from __future__ import annotations

import ast
import io
import pickle

import numpy as np
import pytest
import torch

from grader import static
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
