"""Public tests for `views`: every expected value is asked of torch itself."""

from __future__ import annotations

import pytest
import torch

from grader import static
from grader.expect import assert_cases, assert_equal, assert_tensor
from tests.generators import describe_spec, sliding_reference, torch_can_view, view_cases
from tests.probes._tensors import build, derive

TRANSPOSE_FORBIDDEN = {"transpose", "permute", "t", "T", "mT", "mH", "H", "adjoint", "swapaxes", "swapdims", "movedim"}
VIEW_FORBIDDEN = {"view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "_reshape_alias"}


@pytest.mark.points(1)
def test_element_offset(student):
    """element_offset gives offset + Σ index·stride, checked against torch's own element addresses"""
    cases, want = [], []
    for spec, index in [({"shape": [3, 4]}, [1, 2]), ({"shape": [4, 5], "permute": [1, 0]}, [3, 2]),
                        ({"shape": [6, 4], "slices": [[1, 6, 2], [1, 4, 1]]}, [2, 1]),
                        ({"shape": [2, 3, 4], "permute": [2, 0, 1]}, [3, 1, 2]), ({"shape": [5]}, [4])]:
        x = build(spec)
        cases.append([list(x.stride()), index, x.storage_offset()])
        # the storage element holding x[index] is arange-numbered, so its value *is* its offset
        want.append(int(x[tuple(index)].item()))
    got = student.probe("views.element_offset", cases=cases)
    assert_cases(got, want, "element_offset", lambda i: f"stride {cases[i][0]}, index {cases[i][1]}, offset {cases[i][2]}")


@pytest.mark.points(1)
def test_contiguous_strides(student):
    """contiguous_strides equals torch.empty(shape).stride(), including size-0 and 0-d shapes"""
    shapes = [[2, 3, 4], [5], [7, 1, 3], [1, 1], [], [2, 0, 3], [4, 3, 2, 5]]
    want = [tuple(torch.empty(s).stride()) for s in shapes]
    got = student.probe("views.contiguous_strides", shapes=shapes)
    assert_cases(got, want, "contiguous_strides", lambda i: f"shape {tuple(shapes[i])}")


@pytest.mark.points(1)
def test_same_storage(student):
    """same_storage is True for slices, transposes and views, False for clones and copies"""
    cases = [(spec, op) for spec in ({"shape": [4, 6]}, {"shape": [3, 5], "permute": [1, 0]})
             for op in ("self", "slice", "transpose", "view", "clone", "contiguous", "unrelated")]
    want = []
    for spec, op in cases:
        x = build(spec)
        want.append(x.untyped_storage().data_ptr() == derive(x, op).untyped_storage().data_ptr())
    got = student.probe("views.same_storage", cases=cases)
    assert_cases(got, want, "same_storage", lambda i: f"x = {describe_spec(cases[i][0])} and y = its {cases[i][1]}")


TRANSPOSE_CASES = [({"shape": [3, 5]}, 0, 1), ({"shape": [2, 3, 4]}, 0, 2), ({"shape": [2, 3, 4]}, -1, 1),
                   ({"shape": [6, 5], "slices": [[2, 6, 1], [1, 5, 2]]}, 0, 1),
                   ({"shape": [4, 3, 2], "permute": [2, 0, 1]}, 1, 2)]


@pytest.mark.points(2)
def test_transpose_view(student):
    """transpose_view equals x.transpose, keeps the storage offset and shares x's storage"""
    for spec, d0, d1 in TRANSPOSE_CASES:
        what = f"transpose_view({describe_spec(spec)}, {d0}, {d1})"
        got = student.probe("views.transpose_view", spec=spec, dim0=d0, dim1=d1)
        want = build(spec).transpose(d0, d1)
        assert_tensor(got["value"], want, what)
        assert_equal(got["shares"], True, f"{what} shares x's storage")
        assert_equal(got["stride"], list(want.stride()), f"{what} strides")


@pytest.mark.points(1)
def test_transpose_view_uses_as_strided_only(student):
    """transpose_view builds the view with as_strided, without transpose/permute/t/mT/swapaxes"""
    node = student.function("views", "transpose_view")
    hits = static.forbidden_uses(node, TRANSPOSE_FORBIDDEN)
    assert not hits, f"transpose_view must not use {', '.join(hits)}"
    assert static.uses_any(node, {"as_strided"}), "transpose_view must build its result with as_strided"


@pytest.mark.points(3)
def test_can_view_agrees_with_torch(student):
    """can_view agrees with torch's own view() on 400 generated shapes, permutations and slices"""
    cases = view_cases(seed=0, count=400)
    want = [torch_can_view(spec, shape) for spec, shape in cases]
    got = student.probe("views.can_view", cases=cases)
    assert_cases(got, want, "can_view", lambda i: f"{describe_spec(cases[i][0])} viewed as {tuple(cases[i][1])}")


@pytest.mark.points(1)
def test_can_view_decides_without_asking_torch(student):
    """can_view decides from shapes and strides, without calling view/reshape itself"""
    node = student.function("views", "can_view")
    hits = static.forbidden_uses(node, VIEW_FORBIDDEN)
    assert not hits, f"can_view must not call {', '.join(hits)}: decide from x.shape and x.stride()"
    want = [torch_can_view(spec, shape) for spec, shape in view_cases(seed=0, count=20)]
    got = student.probe("views.can_view", cases=view_cases(seed=0, count=20))
    assert_cases(got, want, "can_view", lambda i: f"case {i}")


SLIDING_CASES = [({"shape": [10]}, 3, 1), ({"shape": [10]}, 4, 3), ({"shape": [9]}, 9, 2), ({"shape": [7]}, 2, 5),
                 ({"shape": [20], "slices": [[1, 20, 2]]}, 3, 2), ({"shape": [12], "slices": [[5, 12, 1]]}, 2, 2)]


@pytest.mark.points(2)
def test_sliding_windows(student):
    """sliding_windows equals x.unfold(0, size, step), shares x's storage, and rejects bad sizes"""
    for spec, size, step in SLIDING_CASES:
        what = f"sliding_windows({describe_spec(spec)}, size={size}, step={step})"
        got = student.probe("views.sliding_windows", spec=spec, size=size, step=step)
        assert_tensor(got["value"], sliding_reference(spec, size, step), what)
        assert_equal(got["shares"], True, f"{what} is a zero-copy view of x")
    student.raises("views.sliding_windows", "ValueError", spec={"shape": [5]}, size=6, step=1)
