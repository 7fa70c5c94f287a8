"""Expected values computed once per trusted worker, reused for every submission.

A graded test's expected value is usually torch's own run on the test's fixed inputs
(torch.optim's trajectory, a reference training loop, torch's FLOP counter).  `grader grade`
runs the tests for submission after submission in one trusted worker process, so recomputing
those runs for every submission is waste.  `@reference` memoizes such a function:

* its arguments must be plain data (numbers, strings, None, lists/tuples/dicts of them): the key
  is their JSON text, so nothing a submission produced (a tensor, an object) can be part of it,
  and a cached value cannot depend on a submission -- only on the test's own constants;
* every call returns a deep copy (tensors cloned), so a test that alters what it got cannot
  change what the next submission is compared with;
* with ``KIT_CHECK_REFERENCE=1`` every call is also recomputed and compared with the cached
  value (bit for bit): the kit's self-test runs a suite twice that way, which proves the
  functions deterministic, i.e. that caching them changes no verdict.

The cache is trusted data in the trusted process: it never crosses into a sandbox, and it
holds nothing of any submission (so no state of one submission survives into the next).

`grader grade` computes them before its workers exist: a worker records which calls its first
submission made (`computed`: each function's name and its key, i.e. the arguments' text, never a
value), the batch keeps that list beside the suite's digest (`grader.batch.warm`), and the next
batch's trusted fork-server makes those calls again (`precompute`) before it forks the workers, so
every worker inherits the values and none computes them for its first submission.  A key parses
back to plain arguments or is skipped, and a function is only ever called with arguments whose
key it gave: whatever that list holds, a value is what the function computes from the test's
own constants.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import torch

F = TypeVar("F", bound=Callable[..., Any])
_MAX_ENTRIES = 256


def _plain(value: Any) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return True
    if type(value) in (list, tuple):
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return False


def _key(args: tuple, kwargs: dict) -> str:
    if not (_plain(args) and _plain(kwargs)):
        raise TypeError("@reference functions take plain data only (numbers, strings, lists, dicts): "
                        "their value must not depend on anything a submission produced")
    return repr((args, sorted(kwargs.items())))  # exact for plain data: floats round-trip, (…) ≠ […]


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a.nan_to_num(), b.nan_to_num())) \
            and bool(torch.equal(a.isnan(), b.isnan()))
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b or (a != a and b != b)  # NaN equals NaN here


class _NotPlain(Exception):
    pass


def _copy(value: Any) -> Any:
    """A deep copy of an expected value.  Most are plain containers of numbers (a worker hands out
    ~200 per submission, some long lists of floats): those are copied directly, 3-4x faster than
    `copy.deepcopy` with its per-object memo.  A value holding anything else (a tensor: two may
    share a storage, which only deepcopy's memo keeps) goes through `copy.deepcopy` whole."""
    try:
        return _copy_plain(value)
    except _NotPlain:
        return copy.deepcopy(value)


def _copy_plain(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is list:
        return [_copy_plain(v) for v in value]
    if kind is tuple:
        return tuple(_copy_plain(v) for v in value)
    if kind is dict:
        return {k: _copy_plain(v) for k, v in value.items()}
    raise _NotPlain


def reference(fn: F) -> F:
    """Memoize a trusted expected-value function (see the module docstring)."""
    cache: dict[str, Any] = {}

    asked: set[str] = set()  # the keys a caller asked for in this process (`computed`)

    def fill(*args: Any, **kwargs: Any) -> None:
        """Compute into the cache without counting as asked (`precompute`)."""
        key = _key(args, kwargs)
        if key not in cache and len(cache) < _MAX_ENTRIES:
            cache[key] = fn(*args, **kwargs)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = _key(args, kwargs)
        asked.add(key)
        if key not in cache:
            if len(cache) >= _MAX_ENTRIES:
                cache.pop(next(iter(cache)))
            cache[key] = fn(*args, **kwargs)
        elif os.environ.get("KIT_CHECK_REFERENCE") == "1":
            again = fn(*args, **kwargs)
            if not _same(again, cache[key]):
                raise AssertionError(f"{fn.__qualname__}{args} is not deterministic: it cannot be cached")
        return _copy(cache[key])

    wrapper.cache = cache  # type: ignore[attr-defined]
    wrapper.asked = asked  # type: ignore[attr-defined]
    wrapper.fill = fill  # type: ignore[attr-defined]
    _REGISTRY[f"{fn.__module__}.{fn.__qualname__}"] = wrapper
    return wrapper  # type: ignore[return-value]


#: Every @reference function defined in this process, by "module.qualname".
_REGISTRY: dict[str, Any] = {}

#: The longest key `precompute` parses (a call's arguments, as text).
MAX_KEY = 64 * 1024


def computed() -> list[list[str]]:
    """[name, key] of every call a caller made in this process (a test, or a module's import): which
    calls, never what they returned.  Values `precompute` filled and no caller asked for are not
    among them, so an entry of `grader.batch.warm`'s file that no test makes any more is dropped by
    the next batch that records (a planted or stale entry costs one batch at most)."""
    return [[name, key] for name, wrapper in _REGISTRY.items() for key in wrapper.asked]


def precompute(entries: Any, seconds: float) -> int:
    """Make the calls `entries` names (from `computed`, in an earlier process) that are not cached
    yet, until `seconds` have passed; returns how many.  An entry is skipped unless it names a
    function defined here and its key parses back (`ast.literal_eval`) to plain arguments whose key
    it is; a call that fails is skipped (the test meets the same failure when it makes it)."""
    import ast
    import time

    deadline, done = time.monotonic() + seconds, 0
    for entry in entries if isinstance(entries, list) else []:
        if time.monotonic() > deadline:
            break
        if not (isinstance(entry, list) and len(entry) == 2 and all(type(x) is str for x in entry)):
            continue
        name, key = entry
        wrapper = _REGISTRY.get(name)
        if wrapper is None or key in wrapper.cache or len(key) > MAX_KEY:
            continue
        try:
            args, items = ast.literal_eval(key)
            kwargs = dict(items)
            if type(args) is not tuple or _key(args, kwargs) != key:
                continue
            wrapper.fill(*args, **kwargs)
        except Exception:  # noqa: BLE001 - computed when a test asks for it, as before (MemoryError too)
            continue
        done += 1
    return done
