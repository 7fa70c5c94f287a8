"""Hypothesis examples drawn once per trusted worker, replayed for every later submission.

A graded property test (`@given` under `tests.hidden.strategies_memory_views.property_settings`:
derandomized, no database, no shrinking) tries the same examples for every submission that
passes it: hypothesis seeds a derandomized run from the test's own source, and without a shrink
phase nothing the code under test does changes what is drawn -- only a failure ends the run
early.  Drawing them costs ~0.1 s of trusted CPU per test and submission, so a grading worker
(`grader grade` runs many submissions in one process) draws them once:

* a test's first run in a process goes through hypothesis as always, and its examples are
  recorded (deep copies, before the test body sees them) if every one of them passed;
* a later run calls the test's body with those examples, in the same order (fresh deep copies).
  The first one that fails fails the test with its own exception, as hypothesis would report it
  (it stops at the first failure: nothing is shrunk), so verdicts and messages are unchanged;
* only tests whose settings make this exact (derandomize, no shrink phase, no database) and
  whose examples are plain data are replayed; anything else always runs through hypothesis;
* with ``KIT_CHECK_REFERENCE=1`` nothing is replayed: every run goes through hypothesis and its
  examples are compared with the recorded ones (the kit's self-test proves them the same).

Like `grader.reference`, this is trusted data in the trusted process: the examples are the
tests' own inputs, never anything a submission produced, and nothing of one submission's run is
kept for the next.
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any

import pytest

from grader.reference import _plain, _same

#: node id -> the keyword arguments hypothesis drew, in the order it ran them
_recorded: dict[str, list[dict[str, Any]]] = {}


class ReplayMismatch(AssertionError):
    """KIT_CHECK_REFERENCE=1 found hypothesis drawing other examples than the recorded ones."""


def _replayable(function: Any) -> bool:
    from hypothesis import Phase

    handle = getattr(function, "hypothesis", None)
    settings = getattr(function, "_hypothesis_internal_use_settings", None)
    return (handle is not None and settings is not None and settings.derandomize
            and settings.database is None and Phase.shrink not in settings.phases
            and getattr(function, "_hypothesis_internal_use_seed", None) is None)


def pyfunc_call(item: pytest.Function) -> bool | None:
    """`pytest_pyfunc_call` for a hypothesis test: True once it ran (from recorded examples),
    None to let pytest call it as usual (recording its examples)."""
    function = item.obj
    if not _replayable(function):
        return None
    given = set(function.hypothesis._given_kwargs)
    fixtures = {name: item.funcargs[name] for name in item._fixtureinfo.argnames if name not in given}
    check = os.environ.get("KIT_CHECK_REFERENCE") == "1"
    examples = _recorded.get(item.nodeid)
    if examples is not None and not check:
        for example in examples:
            function.hypothesis.inner_test(**fixtures, **copy.deepcopy(example))
        return True
    _record(item, function, given, fixtures, examples)
    return True


def _record(item: pytest.Function, function: Any, given: set[str], fixtures: dict[str, Any],
            earlier: list[dict[str, Any]] | None) -> None:
    inner = function.hypothesis.inner_test
    drawn: list[dict[str, Any]] = []
    exact = [True]  # every example plain data, and every call returned (none rejected by assume())

    @functools.wraps(inner)  # the same name, source and signature: hypothesis's derandomized seed
    def recording(*args: Any, **kwargs: Any) -> Any:  # is a digest of them, so it draws the same
        example = {k: v for k, v in kwargs.items() if k in given}
        exact[0] = exact[0] and _plain(example)
        drawn.append(copy.deepcopy(example))
        try:
            return inner(*args, **kwargs)
        except BaseException:
            exact[0] = False
            raise

    if not _same_seed(recording, inner):  # (a hypothesis that seeds otherwise: run it as it is)
        function(**fixtures)
        return
    function.hypothesis.inner_test = recording
    try:
        function(**fixtures)  # raises on the first failing example, as without replay
    finally:
        function.hypothesis.inner_test = inner
    if not exact[0]:
        return
    if earlier is not None:
        if not (len(earlier) == len(drawn) and all(_same(a, b) for a, b in zip(earlier, drawn))):
            raise ReplayMismatch(f"{item.nodeid}: hypothesis drew other examples than on its first run: "
                                 "they cannot be replayed")
        return
    _recorded[item.nodeid] = drawn


def _same_seed(wrapper: Any, inner: Any) -> bool:
    """Whether hypothesis derives the same derandomized seed from the recording wrapper as from
    the test itself (it hashes the function's source, name and signature)."""
    try:
        from hypothesis.internal.reflection import function_digest
    except ImportError:
        return False
    return function_digest(wrapper) == function_digest(inner)
