"""Hidden tests for `views`: more generated cases, other seeds, awkward strides."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grader.testing.expect import assert_cases, assert_equal, assert_type
from tests.generators import check_view_of, describe_spec, describe_view_case, torch_can_view, torch_can_view_all, view_cases
from tests.hidden.strategies_memory_views import property_settings, strided_specs, transpose_case_lists, view_case_lists
from tests.probes._tensors import build
from tests.public.test_views import can_view_rule_gate, check_sliding_windows, transpose_rule_gate


@pytest.mark.points(1)
def test_can_view_more_cases(student):
    """can_view agrees with torch's view() on 1200 more generated cases (seeds 1 and 2)"""
    cases = view_cases(seed=1, count=600) + view_cases(seed=2, count=600)
    want = torch_can_view_all(cases)
    got = student.probe("views.can_view", cases=cases)
    assert_cases(got, want, "can_view", lambda i: describe_view_case(*cases[i]))
    can_view_rule_gate(student)


# (hypothesis derandomizes by the source of the test: editing a @given test's body draws other
# examples, which the held-out mutants were never run against; change such a body on purpose only)
@pytest.mark.points(1)
@property_settings(2)
@given(cases=view_case_lists(50, 80))
def test_can_view_any_strides(student, cases):
    """can_view agrees with torch's view() on as_strided views: broadcast (stride 0), gaps, offsets, size 0 and 1"""
    want = [torch_can_view(spec, shape) for spec, shape in cases]
    got = student.probe("views.can_view", cases=cases)
    assert_cases(got, want, "can_view", lambda i: describe_view_case(*cases[i]))
    can_view_rule_gate(student)


@pytest.mark.points(1)
@property_settings(2)
@given(generated=transpose_case_lists(20, 40))
def test_transpose_view_of_views(student, generated):
    """transpose_view on sliced, stepped, 4-d, broadcast and offset tensors with negative dims"""
    cases = [[{"shape": [4, 5, 6], "slices": [[1, 4, 2], [0, 5, 1], [2, 6, 3]]}, -3, -1],
             [{"shape": [2, 3, 4, 5], "permute": [3, 1, 0, 2]}, 0, 3], [{"shape": [7, 3]}, 1, 1],
             [{"shape": [3], "then": ["expand"]}, 1, 0], [{"shape": [4, 6], "then": ["detach"]}, -2, -1]] + generated
    got = student.probe("views.transpose_view", cases=cases)
    assert_type(got, list, "transpose_view results")
    assert_equal(len(got), len(cases), "number of transpose_view results")
    for (spec, d0, d1), observed in zip(cases, got):
        check_view_of(observed, spec, lambda x, d0=d0, d1=d1: x.transpose(d0, d1),
                      f"transpose_view({describe_spec(spec)}, {d0}, {d1})")
    transpose_rule_gate(student)


@pytest.mark.points(1)
def test_sliding_windows_edge_cases(student):
    """sliding_windows with step larger than size, a single window, strided and offset inputs; errors for bad sizes"""
    cases = [[{"shape": [30], "slices": [[3, 30, 3]]}, 4, 6], [{"shape": [5]}, 5, 1], [{"shape": [8]}, 1, 1],
             [{"shape": [9], "as_strided": [[4], [2], 1]}, 2, 1], [{"shape": [24], "as_strided": [[6], [4], 2]}, 3, 2],
             [{"shape": [11]}, 3, 4], [{"shape": [7], "slices": [[6, 7, 1]]}, 1, 3]]
    check_sliding_windows(student, cases)
    student.raises("views.sliding_windows", "ValueError", cases=[[{"shape": [5]}, 2, 0]])
    student.raises("views.sliding_windows", "ValueError", cases=[[{"shape": [5]}, 2, -1]])
    student.raises("views.sliding_windows", "ValueError", cases=[[{"shape": [2, 3]}, 2, 1]])
    student.raises("views.sliding_windows", "ValueError", cases=[[{"shape": []}, 1, 1]])


@st.composite
def _offset_case(draw):
    spec = draw(strided_specs(min_size=1))
    size = spec["as_strided"][0]
    return spec, [draw(st.integers(0, n - 1)) for n in size]


@pytest.mark.points(1)
@property_settings(2)
@given(generated=st.lists(_offset_case(), min_size=20, max_size=40),
       shapes=st.lists(st.lists(st.integers(0, 6), max_size=6), min_size=10, max_size=20, unique_by=tuple))
def test_offsets_and_strides_more(student, generated, shapes):
    """element_offset with storage offsets, broadcast strides and 0-d indices; contiguous_strides of long shapes"""
    cases, want = [[[60, 12, 3, 1], [1, 2, 3, 2], 7], [[1], [0], 5], [[], [], 4]], [7 + 60 + 24 + 9 + 2, 5, 4]
    # past 2**31: Python ints never overflow, so neither may the answer (int32 arithmetic would)
    cases += [[[2**31, 1], [3, 5], 2**33], [[3 * 2**30, 2**20], [2, 4095], 7]]
    want += [2**33 + 3 * 2**31 + 5, 7 + 6 * 2**30 + 4095 * 2**20]
    for spec, index in generated:
        x = build(spec)
        cases.append([list(x.stride()), index, x.storage_offset()])
        want.append(int(x[tuple(index)].item()))  # arange storage: the value is the position
    got = student.probe("views.element_offset", cases=cases)
    assert_cases(got, want, "element_offset", lambda i: f"stride {cases[i][0]}, index {cases[i][1]}, offset {cases[i][2]}")
    for stride, index in (([3, 1], [0, 1, 2]), ([], [0])):
        student.raises("views.element_offset", "ValueError", cases=[[stride, index, 0]])
    shapes = [s for s in shapes if s not in ([1, 2, 3, 4, 5], [0], [3, 0, 0, 2])] + [[1, 2, 3, 4, 5], [0], [3, 0, 0, 2]]
    assert_cases(student.probe("views.contiguous_strides", shapes=shapes),
                 [tuple(torch.empty(s).stride()) for s in shapes], "contiguous_strides", lambda i: f"shape {tuple(shapes[i])}")
