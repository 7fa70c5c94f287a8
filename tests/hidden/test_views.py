"""Hidden tests for `views`: more generated cases, other seeds, awkward strides."""

from __future__ import annotations

import pytest
import torch

from grader.expect import assert_cases, assert_equal, assert_tensor
from tests.generators import describe_spec, sliding_reference, torch_can_view, view_cases
from tests.probes._tensors import build


@pytest.mark.points(2)
def test_can_view_more_cases(student):
    """can_view agrees with torch's view() on 1200 more generated cases (seeds 1 and 2)"""
    cases = view_cases(seed=1, count=600) + view_cases(seed=2, count=600)
    want = [torch_can_view(spec, shape) for spec, shape in cases]
    got = student.probe("views.can_view", cases=cases)
    assert_cases(got, want, "can_view", lambda i: f"{describe_spec(cases[i][0])} viewed as {tuple(cases[i][1])}")


@pytest.mark.points(1)
def test_transpose_view_of_views(student):
    """transpose_view on sliced, stepped and 4-d tensors with negative dims"""
    for spec, d0, d1 in [({"shape": [4, 5, 6], "slices": [[1, 4, 2], [0, 5, 1], [2, 6, 3]]}, -3, -1),
                         ({"shape": [2, 3, 4, 5], "permute": [3, 1, 0, 2]}, 0, 3),
                         ({"shape": [7, 3]}, 1, 1)]:
        got = student.probe("views.transpose_view", spec=spec, dim0=d0, dim1=d1)
        want = build(spec).transpose(d0, d1)
        assert_tensor(got["value"], want, f"transpose_view({describe_spec(spec)}, {d0}, {d1})")
        assert_equal(got["offset"], want.storage_offset(), "storage offset of the result")


@pytest.mark.points(1)
def test_sliding_windows_edge_cases(student):
    """sliding_windows with step larger than size, a single window, a strided input; errors for bad sizes"""
    for spec, size, step in [({"shape": [30], "slices": [[3, 30, 3]]}, 4, 6), ({"shape": [5]}, 5, 1),
                             ({"shape": [8]}, 1, 1)]:
        got = student.probe("views.sliding_windows", spec=spec, size=size, step=step)
        assert_tensor(got["value"], sliding_reference(spec, size, step), f"sliding_windows({describe_spec(spec)}, {size}, {step})")
    student.raises("views.sliding_windows", "ValueError", spec={"shape": [5]}, size=2, step=0)
    student.raises("views.sliding_windows", "ValueError", spec={"shape": [2, 3]}, size=2, step=1)


@pytest.mark.points(1)
def test_offsets_and_strides_more(student):
    """element_offset with a storage offset and contiguous_strides of long shapes"""
    got = student.probe("views.element_offset", cases=[[[60, 12, 3, 1], [1, 2, 3, 2], 7], [[1], [0], 5]])
    assert_cases(got, [7 + 60 + 24 + 9 + 2, 5], "element_offset", lambda i: f"case {i}")
    shapes = [[1, 2, 3, 4, 5], [0], [3, 0, 0, 2]]
    assert_cases(student.probe("views.contiguous_strides", shapes=shapes),
                 [tuple(torch.empty(s).stride()) for s in shapes], "contiguous_strides", lambda i: f"shape {shapes[i]}")
