"""Hypothesis strategies over shapes, strides and offsets for the hidden `memory` and `views`
tests (trusted side).  Hidden only: hypothesis is a dev dependency, and the student release
(`pip install -e .`) must collect the public tests without it.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from tests.generators import strided_spec
from tests.probes._tensors import build


# -- hypothesis strategies over shapes, strides and offsets (trusted side) ---------------------
# Each graded property test draws a LIST of cases per example and sends it in one probe call.
# The composites are defined once, here (defining them per call costs a source parse each).


@st.composite
def _strided_spec(draw, min_size: int = 0, max_dims: int = 4, max_offset: int = 5, min_dims: int = 0):
    ndim = draw(st.integers(min_dims, max_dims))
    sizes = [draw(st.sampled_from([s for s in (1, 2, 3, 4, 1, 2, 3, 0) if s >= min_size])) for _ in range(ndim)]
    strides = [0] * ndim
    for d in range(ndim - 1, -1, -1):
        if d < ndim - 1 and draw(st.integers(0, 2)):  # 2 in 3: contiguous with the next dimension
            strides[d] = strides[d + 1] * sizes[d + 1]
        else:
            strides[d] = draw(st.sampled_from([1, 1, 2, 3, 0, 5, 7, 12, 30]))
    return strided_spec(sizes, strides, draw(st.integers(0, max_offset)))


def strided_specs(min_size: int = 0, max_dims: int = 4, max_offset: int = 5, min_dims: int = 0):
    """Descriptions of `as_strided` views of an arange storage: 0 to `max_dims` dimensions, sizes
    `min_size`..4, strides that are often contiguous with the next dimension (so views are
    possible) and otherwise anything from 0 (broadcast) to 30, and a storage offset."""
    return _strided_spec(min_size, max_dims, max_offset, min_dims)


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


_EMPTY_TARGETS = [[0], [-1], [0, 3], [3, 0], [2, 0, 2], [-1, 0], [0, -1], [2, -1], [1, 0, -1], [3], [1]]


@st.composite
def view_targets(draw, n: int):
    """Requested shapes for a tensor of n elements: factorizations with 1s, a -1, a wrong count,
    and the invalid forms (two -1s, -2, -1 next to a 0)."""
    if n == 0:
        return list(draw(st.sampled_from(_EMPTY_TARGETS)))
    count = n + 1 if draw(st.integers(0, 9)) == 0 else n
    dims, rest = [], count
    while rest > 1 and len(dims) < 4:
        d = draw(st.sampled_from(_divisors(rest)))
        dims.append(d)
        rest //= d
    for _ in range(draw(st.integers(0, 2))):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    kind = draw(st.integers(0, 19))
    if dims and kind < 4:
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    elif len(dims) >= 2 and kind == 4:
        dims[0] = dims[-1] = -1
    elif dims and kind == 5:
        dims[0] = -2
    return dims


@st.composite
def _view_case(draw):
    spec = draw(_strided_spec())
    return spec, draw(view_targets(build(spec).numel()))


def view_case_lists(min_cases: int, max_cases: int):
    """Lists of (strided tensor description, requested shape) pairs."""
    return st.lists(_view_case(), min_size=min_cases, max_size=max_cases)


@st.composite
def _transpose_case(draw):
    spec = draw(_strided_spec(min_dims=1))  # 0-d inputs have their own public test
    ndim = max(len(spec["as_strided"][0]), 1)
    return [spec, draw(st.integers(-ndim, ndim - 1)), draw(st.integers(-ndim, ndim - 1))]


def transpose_case_lists(min_cases: int, max_cases: int):
    """Lists of [strided tensor description, dim0, dim1] (dims in torch's range, negative ones too)."""
    return st.lists(_transpose_case(), min_size=min_cases, max_size=max_cases)


_MEMORY_DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "int64", "bool", "complex64", "uint8",
                  "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


@st.composite
def memory_specs(draw):
    """A tensor for the memory questions: an as_strided view (any strides, broadcast and offsets
    included), or a contiguous tensor sliced to a batch of 1, then maybe detached or expanded."""
    dtype = draw(st.sampled_from(_MEMORY_DTYPES))
    if draw(st.booleans()):
        spec = {**draw(_strided_spec(max_offset=9)), "dtype": dtype}
        spec["shape"] = [spec["shape"][0] + draw(st.integers(0, 7))]  # storage longer than the view needs
    else:
        shape = [draw(st.integers(1, 5)) for _ in range(draw(st.integers(1, 3)))]
        spec = {"shape": shape, "dtype": dtype, "slices": [[0, 1, 1]] + [[0, n, 1] for n in shape[1:]]}
    then = draw(st.sampled_from([[], [], ["detach"], ["expand"], ["detach", "expand"]]))
    return {**spec, "then": then} if then else spec


def property_settings(examples: int):
    """Deterministic, fast hypothesis settings for a graded test: no database, no deadline, no
    shrinking (each example is one probe call; the failure message names the first wrong case)."""
    # health checks off: a slow grading machine must never fail a student's test (too_slow, large base example)
    return settings(derandomize=True, max_examples=examples, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False,
                    suppress_health_check=list(HealthCheck))
