"""Hypothesis examples drawn once per trusted worker, replayed for every later submission.

A graded property test (`@given` under `tests.hidden.strategies_memory_views.property_settings`:
derandomized, no database, no shrinking) tries the same examples for every submission that
passes it: hypothesis seeds a derandomized run from the test's own source, and without a shrink
phase nothing the code under test does changes what is drawn -- only a failure ends the run
early.  Drawing them costs ~0.1 s of trusted CPU per test and submission, so a grading worker
(`grader grade` runs many submissions in one process) draws them once:

* a test's runs in a process go through hypothesis as always until two passing runs drew the
  same examples (recorded as deep copies, before the test body sees them): one submission's run
  alone never decides what the next submissions are tested on.  Runs that disagree (which a
  derandomized, unshrunk test cannot do) stop the replay of that test in this process;
* from then on a run calls the test's body with those examples, in the same order (fresh deep
  copies).  At the first one that fails it does what hypothesis does (it stops at the first
  failure: nothing is shrunk): it runs that example once more and raises the second run's
  exception, or FlakyFailure if it passed.  The code under test gets the same calls in the same
  order either way, so a stateful submission cannot tell the two apart, and verdicts and
  messages are unchanged;
* only tests whose settings make this exact (derandomize, no shrink phase, no database) and
  whose examples are plain data are replayed; anything else always runs through hypothesis;
* with ``KIT_CHECK_REFERENCE=1`` nothing is replayed: every run goes through hypothesis and its
  examples must equal the recorded ones, or the test fails (the kit's self-test proves them the same).

Like `grader.testing.reference`, this is trusted data in the trusted process: the examples are the
tests' own inputs, never anything a submission produced, and nothing of one submission's run is
kept for the next.
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any

import pytest

from grader.testing.reference import _plain, _same

#: node id -> the keyword arguments hypothesis drew, in the order it ran them
_recorded: dict[str, list[dict[str, Any]]] = {}
#: node ids whose recorded examples a second passing run drew again (replayed from then on)
_confirmed: set[str] = set()
#: node ids never replayed in this process (two passing runs drew different examples)
_refused: set[str] = set()


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
    """`pytest_pyfunc_call`: None for a test that is not replayable (pytest calls it as usual);
    otherwise run it here (replayed, or through hypothesis while recording) and return True."""
    function = item.obj
    if not _replayable(function):
        return None
    given = set(function.hypothesis._given_kwargs)
    fixtures = {name: item.funcargs[name] for name in item._fixtureinfo.argnames if name not in given}
    check = os.environ.get("KIT_CHECK_REFERENCE") == "1"
    if item.nodeid in _confirmed and not check:
        for example in _recorded[item.nodeid]:
            _run_example(function.hypothesis.inner_test, fixtures, example)
        return True
    if item.nodeid in _refused:
        function(**fixtures)
        return True
    drawn = _record(function, given, fixtures)
    if drawn is None:  # (it failed, or an example was not plain data: nothing to learn from this run)
        return True
    earlier = _recorded.get(item.nodeid)
    if earlier is None:
        _recorded[item.nodeid] = drawn
    elif len(earlier) == len(drawn) and all(_same(a, b) for a, b in zip(earlier, drawn)):
        _confirmed.add(item.nodeid)
    else:
        _refused.add(item.nodeid)
        _confirmed.discard(item.nodeid)
        if check:
            raise ReplayMismatch(f"{item.nodeid}: hypothesis drew other examples than on an earlier run: "
                                 "they cannot be replayed")
    return True


def _run_example(test: Any, fixtures: dict[str, Any], example: dict[str, Any]) -> None:
    """One example, and what hypothesis does when it fails: it runs the failing example once more
    (its "final" run, which prints it) and raises that run's exception, or FlakyFailure when the
    second run passed.  So the code under test gets the same calls, in the same order, as under
    hypothesis, and a failure reads the same."""
    from hypothesis.core import failure_exceptions_to_catch
    from hypothesis.errors import FlakyFailure

    try:
        test(**fixtures, **copy.deepcopy(example))
    except failure_exceptions_to_catch() as first:  # (others, e.g. a skip, propagate as under hypothesis)
        test(**fixtures, **copy.deepcopy(example))  # raises the second run's exception
        from hypothesis.internal.reflection import repr_call

        raise FlakyFailure(f"Hypothesis {repr_call(test, (), {**fixtures, **example})} produces unreliable "
                           "results: Failed on the first call but did not on a subsequent one", [first]) from None


def _record(function: Any, given: set[str], fixtures: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Run the test through hypothesis; the examples it drew, if it passed and all were plain data."""
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
        return None
    function.hypothesis.inner_test = recording
    try:
        function(**fixtures)  # raises on the first failing example, as without replay
    finally:
        function.hypothesis.inner_test = inner
    return drawn if exact[0] else None


def _same_seed(wrapper: Any, inner: Any) -> bool:
    """Whether hypothesis derives the same derandomized seed from the recording wrapper as from
    the test itself (it hashes the function's source, name and signature)."""
    try:
        from hypothesis.internal.reflection import function_digest
    except ImportError:
        return False
    return function_digest(wrapper) == function_digest(inner)
