"""Public tests for `views`: every expected value is asked of torch itself."""

from __future__ import annotations

import random

import pytest
import torch

from grader.rules import static
from grader.testing.expect import assert_cases, assert_equal, assert_type
from tests.generators import check_view_of, describe_spec, describe_view_case, strided_spec, torch_can_view_all, view_cases
from tests.probes._tensors import build, derive

# The ONE list of each rule (the docstrings and the handout are checked against these by
# tests/kit/test_rule_lists_views_memory.py).
TRANSPOSE_FORBIDDEN = {"transpose", "permute", "t", "T", "mT", "mH", "H", "adjoint", "swapaxes", "swapdims", "movedim"}
VIEW_FORBIDDEN = {"view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "_reshape_alias"}
# ... and the aten ops behind those names, for the rule's runtime layer: what the call dispatched,
# however it was spelled (tests/kit/test_rules_syntax.py checks that each name above dispatches one).
TRANSPOSE_OPS = {f"aten::{op}" for op in ("transpose", "transpose_", "transpose_copy", "t", "t_", "t_copy", "permute",
                                          "permute_copy", "numpy_T", "matrix_H", "mT", "mH", "adjoint", "swapaxes",
                                          "swapaxes_", "swapdims", "swapdims_", "movedim", "moveaxis")}
VIEW_OPS = {f"aten::{op}" for op in ("view", "view_as", "view_copy", "reshape", "reshape_as", "flatten", "unflatten",
                                     "_reshape_alias", "_reshape_alias_copy", "_reshape_copy", "_unsafe_view")}


def _watched_cases(transpose: bool) -> tuple[int, list]:
    """Inputs for a rule's runtime layer, drawn from the graded cases' own generator with a fresh seed
    (the code cannot tell them from the graded ones): (seed, cases)."""
    seed = random.SystemRandom().randrange(2**32)
    cases = view_cases(seed=seed, count=120)
    if not transpose:
        return seed, [list(c) for c in cases] + [list(c) for c in CAN_VIEW_EDGES]
    rng = random.Random(seed)
    picked = []
    for spec, _ in cases[:40]:
        n = len(spec["shape"])
        picked.append([spec, rng.randint(-n, n - 1), rng.randint(-n, n - 1)])
    return seed, picked + [list(c) for c in TRANSPOSE_CASES + TRANSPOSE_EDGES]


def _dispatched(student, probe: str, transpose: bool) -> tuple[int, set[str]]:
    """(seed, the aten ops a watched run of `probe` dispatched)."""
    seed, cases = _watched_cases(transpose)
    ops = student.probe(probe, cases=cases)
    assert_type(ops, list, f"{probe}: the aten ops recorded")
    return seed, {op for op in ops if isinstance(op, str)}


def transpose_rule_gate(student) -> None:
    """The as_strided rule, over everything transpose_view reaches (a gate: it only takes points away);
    then at run time: no aten op behind a forbidden name dispatched while it ran, however it was reached,
    and as_strided did run."""
    scope = student.scope("views", "transpose_view")
    hits = static.forbidden_uses(scope, TRANSPOSE_FORBIDDEN)
    assert not hits, f"transpose_view (or code it reaches) must not use {', '.join(hits)}: build the view with as_strided"
    assert static.uses_any(scope, {"as_strided"}), "transpose_view must build its result with as_strided"
    seed, ops = _dispatched(student, "views.transpose_view_ops", True)
    ran = sorted(ops & TRANSPOSE_OPS)
    assert not ran, (f"transpose_view ran torch's {', '.join(ran)} (inputs drawn with seed {seed}): build the view "
                     "with as_strided")
    assert "aten::as_strided" in ops, (f"transpose_view never ran as_strided (inputs drawn with seed {seed}): build "
                                       "the view with x.as_strided(size, stride, storage_offset)")


def can_view_rule_gate(student) -> None:
    """can_view decides from shapes and strides: no view/reshape anywhere it reaches (a gate), and at
    run time no aten op behind those names dispatched while it ran, however it was reached."""
    hits = static.forbidden_uses(student.scope("views", "can_view"), VIEW_FORBIDDEN)
    assert not hits, f"can_view (or code it reaches) must not use {', '.join(hits)}: decide from x.shape and x.stride()"
    seed, ops = _dispatched(student, "views.can_view_ops", False)
    ran = sorted(ops & VIEW_OPS)
    assert not ran, (f"can_view asked torch: it ran {', '.join(ran)} (inputs drawn with seed {seed}); decide from "
                     "x.shape and x.stride()")


def _offset_cases(seed: int, count: int) -> list:
    """Seeded as_strided views (any strides, broadcast 0 included, offsets) with an index inside each."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        size = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
        stride = [rng.choice([0, 1, 2, 3, 5, 9, 12]) for _ in size]
        out.append((strided_spec(size, stride, rng.randint(0, 20)), [rng.randrange(n) for n in size]))
    return out


@pytest.mark.points(1)
def test_element_offset(student):
    """element_offset gives offset + Σ index·stride, checked against torch's own element addresses"""
    specs = [({"shape": [3, 4]}, [1, 2]), ({"shape": [4, 5], "permute": [1, 0]}, [3, 2]),
             ({"shape": [6, 4], "slices": [[1, 6, 2], [1, 4, 1]]}, [2, 1]),
             ({"shape": [2, 3, 4], "permute": [2, 0, 1]}, [3, 1, 2]), ({"shape": [5]}, [4]),
             ({"shape": [1, 8], "slices": [[0, 1, 1], [3, 8, 2]]}, [0, 2])] + _offset_cases(seed=0, count=30)
    cases, want = [], []
    for spec, index in specs:
        x = build(spec)
        cases.append([list(x.stride()), index, x.storage_offset()])
        # the storage element holding x[index] is arange-numbered, so its value *is* its offset
        want.append(int(x[tuple(index)].item()))
    cases.append([[4, 1], [2, 3], None])  # storage_offset left at its default, 0
    want.append(2 * 4 + 3)
    got = student.probe("views.element_offset", cases=cases)
    assert_cases(got, want, "element_offset", lambda i: f"stride {cases[i][0]}, index {cases[i][1]}, "
                 + (f"offset {cases[i][2]}" if cases[i][2] is not None else "no storage_offset given (default 0)"))
    student.raises("views.element_offset", "ValueError", cases=[[[4, 1], [1], 0]])


@pytest.mark.points(1)
def test_contiguous_strides(student):
    """contiguous_strides equals torch.empty(shape).stride(), including size-0 and 0-d shapes"""
    rng = random.Random(0)
    generated = [[rng.choice([0, 1, 2, 3, 5]) for _ in range(rng.randint(1, 5))] for _ in range(20)]
    shapes = []  # distinct shapes only: one reply may not hold the same object (e.g. the empty tuple) twice
    for shape in [[2, 3, 4], [5], [7, 1, 3], [1, 1], [], [2, 0, 3], [4, 3, 2, 5], [1, 6]] + generated:
        shapes += [shape] if shape not in shapes else []
    want = [tuple(torch.empty(s).stride()) for s in shapes]
    got = student.probe("views.contiguous_strides", shapes=shapes)
    assert_cases(got, want, "contiguous_strides", lambda i: f"shape {tuple(shapes[i])}")


SAME_STORAGE_OPS = ("self", "slice", "transpose", "view", "clone", "contiguous", "unrelated", "detach",
                    "from_numpy_twice", "empty_tail", "expand", "view_dtype")


def _same_storage_want(spec, op) -> bool:
    """Facts of torch's ops (tests/kit/test_rule_lists_views_memory.py checks them against torch):
    views, slices, detach(), from_numpy twice, expand and a view with another dtype (x.view(torch.uint8), the
    docstring's "any other view") share; clone() and zeros_like never do; view(-1) (flatten() otherwise) and
    contiguous() return views exactly when x is contiguous."""
    if op in ("self", "slice", "transpose", "detach", "from_numpy_twice", "empty_tail", "expand", "view_dtype"):
        return True
    if op in ("view", "contiguous"):
        return build(spec).is_contiguous()
    return False  # clone, unrelated


@pytest.mark.points(1)
def test_same_storage(student):
    """same_storage: True for slices, transposes, views (another dtype too), detach(), from_numpy twice; False for copies"""
    specs = ({"shape": [4, 6]}, {"shape": [3, 5], "permute": [1, 0]}, {"shape": [6, 5], "slices": [[2, 6, 2], [1, 5, 1]]})
    cases = [(spec, op) for spec in specs for op in SAME_STORAGE_OPS]
    want = [_same_storage_want(spec, op) for spec, op in cases]
    got = student.probe("views.same_storage", cases=cases)
    assert_cases(got, want, "same_storage", lambda i: f"x = {describe_spec(cases[i][0])} and y = its {cases[i][1]}")


TRANSPOSE_CASES = [({"shape": [3, 5]}, 0, 1), ({"shape": [2, 3, 4]}, 0, 2), ({"shape": [2, 3, 4]}, -1, 1),
                   ({"shape": [6, 5], "slices": [[2, 6, 1], [1, 5, 2]]}, 0, 1),
                   ({"shape": [4, 3, 2], "permute": [2, 0, 1]}, 1, 2), ({"shape": [5, 4], "slices": [[3, 5, 1]]}, -2, -1)]
TRANSPOSE_EDGES = [({"shape": [1, 4]}, 0, 1), ({"shape": [5], "slices": [[2, 3, 1]]}, 0, -1), ({"shape": []}, 0, -1),
                   ({"shape": [7], "as_strided": [[], [], 3]}, 0, 0), ({"shape": [3, 0, 2]}, 0, 2),
                   ({"shape": [4], "then": ["expand"]}, 0, 1)]


def check_transposes(student, cases) -> None:
    got = student.probe("views.transpose_view", cases=cases)
    assert_type(got, list, "transpose_view results")
    assert_equal(len(got), len(cases), "number of transpose_view results")
    for (spec, d0, d1), observed in zip(cases, got):
        check_view_of(observed, spec, lambda x, d0=d0, d1=d1: x.transpose(d0, d1),
                      f"transpose_view({describe_spec(spec)}, {d0}, {d1})")


@pytest.mark.points(2)
def test_transpose_view(student):
    """transpose_view equals x.transpose and is a view of x (same storage, offset, strides), built with as_strided"""
    check_transposes(student, TRANSPOSE_CASES)
    transpose_rule_gate(student)


@pytest.mark.points(1)
def test_transpose_view_edge_cases(student):
    """transpose_view of 0-d tensors (dims 0 and -1), size-0 and size-1 dimensions, a broadcast (stride-0) input"""
    check_transposes(student, TRANSPOSE_EDGES)
    transpose_rule_gate(student)


@pytest.mark.points(3)
def test_can_view_agrees_with_torch(student):
    """can_view agrees with torch's own view() on 400 generated shapes, permutations and slices"""
    cases = view_cases(seed=0, count=400)
    want = torch_can_view_all(cases)
    got = student.probe("views.can_view", cases=cases)
    assert_cases(got, want, "can_view", lambda i: describe_view_case(*cases[i]))
    can_view_rule_gate(student)


CAN_VIEW_EDGES = [({"shape": []}, []), ({"shape": []}, [1]), ({"shape": []}, [1, 1]), ({"shape": []}, [-1]),
                  ({"shape": []}, [2]), ({"shape": []}, [0]),
                  ({"shape": [0, 3]}, [0, -1]), ({"shape": [0, 3]}, [-1, 0]), ({"shape": [0, 3]}, [2, -1]),
                  ({"shape": [0, 3]}, [3, 0]), ({"shape": [0, 3]}, [-1]), ({"shape": [0, 3]}, [0, 3, -1]),
                  ({"shape": [2, 0, 3]}, [-1, 3, 0]), ({"shape": [2, 0], "permute": [1, 0]}, [0, 5]),
                  ({"shape": [4, 6]}, [-1, -1]), ({"shape": [4, 6]}, [-2, -12]), ({"shape": [4, 6]}, [2, -1, 3]),
                  ({"shape": [4, 6], "permute": [1, 0]}, [1, 6, 4]), ({"shape": [4, 6], "permute": [1, 0]}, [6, 4, 1]),
                  ({"shape": [4, 6], "permute": [1, 0]}, [3, 2, 1, 4]), ({"shape": [4, 6], "permute": [1, 0]}, [-1]),
                  ({"shape": [1, 8], "slices": [[0, 1, 1], [0, 8, 2]]}, [4, 1]),
                  ({"shape": [5, 4], "slices": [[2, 3, 1], [0, 4, 1]]}, [2, 2])]


@pytest.mark.points(1)
def test_can_view_edge_cases(student):
    """can_view on 0-d and empty tensors, -1 next to a 0, two -1s and negative sizes, size-1 dimensions"""
    want = torch_can_view_all(CAN_VIEW_EDGES)
    got = student.probe("views.can_view", cases=CAN_VIEW_EDGES)
    assert_cases(got, want, "can_view", lambda i: describe_view_case(*CAN_VIEW_EDGES[i]))
    can_view_rule_gate(student)


SLIDING_CASES = [({"shape": [10]}, 3, 1), ({"shape": [10]}, 4, 3), ({"shape": [9]}, 9, 2), ({"shape": [7]}, 2, 5),
                 ({"shape": [20], "slices": [[1, 20, 2]]}, 3, 2), ({"shape": [12], "slices": [[5, 12, 1]]}, 2, 2),
                 ({"shape": [1]}, 1, 1)]


def check_sliding_windows(student, cases) -> None:
    """Each (spec, size, step) case against x.unfold(0, size, step), as a view of x."""
    got = student.probe("views.sliding_windows", cases=cases)
    assert_type(got, list, "sliding_windows results")
    assert_equal(len(got), len(cases), "number of sliding_windows results")
    for (spec, size, step), observed in zip(cases, got):
        check_view_of(observed, spec, lambda x, size=size, step=step: x.unfold(0, size, step),
                      f"sliding_windows({describe_spec(spec)}, size={size}, step={step})")


@pytest.mark.points(2)
def test_sliding_windows(student):
    """sliding_windows equals x.unfold(0, size, step) as a view of x (same storage, offset, strides); rejects bad sizes"""
    check_sliding_windows(student, SLIDING_CASES)
    student.raises("views.sliding_windows", "ValueError", cases=[[{"shape": [5]}, 6, 1]])
    student.raises("views.sliding_windows", "ValueError", cases=[[{"shape": [5]}, 0, 1]])
