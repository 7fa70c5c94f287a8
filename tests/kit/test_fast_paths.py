"""Kit self-tests of the two shortcuts a grading worker takes: fresh processes forked from a
template (grader/boundary/fresh.py) and expected values cached per worker (grader/testing/reference.py).
Each shortcut must change no verdict: a forked fresh process is as fresh as a new interpreter,
and a cached expected value equals the recomputed one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from grader import KIT_ROOT
from grader.boundary import fresh
from grader.testing.reference import reference
from grader.boundary.fresh import serve_fresh
from grader.boundary.target import Implementation

COUNTING_MODULE = textwrap.dedent("""
    CALLS = []

    def bytes_per_parameter(optimizer, mixed_precision=False):
        CALLS.append(optimizer)
        return len(CALLS)  # 1 in a fresh process; more where this module was used before
""")


def test_fresh_process_from_the_template_is_fresh(tmp_path: Path):
    (tmp_path / "memory.py").write_text(COUNTING_MODULE)
    impl = Implementation(tmp_path)
    assert [impl.memory.bytes_per_parameter("sgd") for _ in range(2)] == [1, 2]
    template = fresh.current()
    assert template is not None, "the kit's pytest plugin starts a template in pytest_configure"
    # the template was forked before this process imported the module: the fresh run imports it anew
    assert serve_fresh(str(tmp_path), "memory.bytes_per_parameter", {"optimizer": "sgd"}) == 1
    assert serve_fresh(str(tmp_path), "memory.bytes_per_parameter", {"optimizer": "adam"}) == 1
    assert template.alive()


def test_no_template_once_a_submission_is_loaded(tmp_path: Path):
    """Forking a template after student code ran would hand that code's state to every
    'fresh' process: start() refuses (this script imports a submission first)."""
    (tmp_path / "memory.py").write_text(COUNTING_MODULE)
    script = textwrap.dedent(f"""
        from grader.boundary import fresh
        from pathlib import Path
        from grader.boundary.target import Implementation
        Implementation(Path({str(tmp_path)!r})).memory
        assert fresh.start() is None
        from grader.boundary.fresh import serve_fresh
        print(serve_fresh({str(tmp_path)!r}, "memory.bytes_per_parameter", {{"optimizer": "sgd"}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1"], "without a template, a new interpreter is fresh too"


def test_reference_takes_plain_data_only():
    @reference
    def double(x):
        return [2 * x]

    assert double(3) == [6]
    with pytest.raises(TypeError, match="plain data"):
        double(torch.ones(2))
    with pytest.raises(TypeError, match="plain data"):
        double(object())


def test_reference_hands_out_copies():
    @reference
    def zeros(n):
        return {"t": torch.zeros(n)}

    first = zeros(3)
    first["t"] += 1  # a test that changes what it got ...
    assert torch.equal(zeros(3)["t"], torch.zeros(3))  # ... changes nothing for the next submission
    assert len(zeros.cache) == 1


def test_precompute_makes_exactly_the_calls_named_and_no_other(tmp_path: Path, monkeypatch):
    """grader.testing.reference.precompute (what the trusted fork-server does with grader.batch.warm's file):
    the calls an earlier process made, computed again here by the function itself; an entry that
    names another function, or whose key does not parse back to the same plain arguments, is
    skipped; only calls a caller made are recorded again (not what was precomputed); the file the
    batch keeps round-trips through grader.batch.warm."""
    from grader.testing import reference as ref
    from grader.batch import warm

    seen = []

    @reference
    def scaled(n, factor=2.0, names=("a",)):
        seen.append((n, factor, names))
        return [n * factor]

    scaled(3)
    scaled(4, factor=0.5, names=("b", "c"))
    name = f"{scaled.__module__}.{scaled.__qualname__}"
    entries = [e for e in ref.computed() if e[0] == name]
    assert len(entries) == 2
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    progress = tmp_path / "progress"
    progress.mkdir()
    (progress / "reference-calls-1.json").write_text(json.dumps(entries + [["no.such.function", "((1,), [])"]]))
    warm.merge(progress, "ab" * 32)
    kept = warm.load("ab" * 32)
    assert sorted(kept) == sorted(entries + [["no.such.function", "((1,), [])"]])
    scaled.cache.clear()
    scaled.asked.clear()
    seen.clear()
    bad = [[name, "((5,), [('factor', __import__('os').getpid())])"],  # not a literal: refused by literal_eval
           [name, "((6,),[])"],  # parses, but is not the key those arguments have: skipped
           [name, "((7,), {})"]]  # not (args, items): skipped
    assert ref.precompute(kept + bad, 60) == 2
    assert sorted(seen, key=repr) == [(3, 2.0, ("a",)), (4, 0.5, ("b", "c"))]
    # what was filled and no caller asked for is not recorded: a planted entry lives one batch at most
    assert [e for e in ref.computed() if e[0] == name] == []
    assert scaled(3) == [6.0] and scaled(4, factor=0.5, names=("b", "c")) == [2.0] and len(seen) == 2  # cached
    assert sorted(e for e in ref.computed() if e[0] == name) == sorted(entries)
    (warm.cache_file("ab" * 32)).write_text("[1, 2")  # a damaged file is no file
    assert warm.load("ab" * 32) == [] and warm.cache_file("../x") is None


def test_reference_check_mode_catches_a_nondeterministic_function(monkeypatch):
    @reference
    def noisy(n):
        return torch.rand(n)

    noisy(4)
    monkeypatch.setenv("KIT_CHECK_REFERENCE", "1")
    with pytest.raises(AssertionError, match="not deterministic"):
        noisy(4)


def test_cached_expected_values_change_no_verdict():
    """As a grading worker does: the suites twice in one process on the solutions, the second
    time from the cache, each cached value recomputed and compared, and each property test's
    examples drawn again and compared with the recorded ones (KIT_CHECK_REFERENCE=1)."""
    files = [f"tests/public/test_{m}.py" for m in ("optimizers", "flops", "checkpointing")] + [
        "tests/hidden/test_views.py", "tests/hidden/test_memory.py"]  # (their @given tests: grader.testing.replay)
    script = textwrap.dedent(f"""
        import json, sys, pytest
        codes = [pytest.main([*{files!r}, "-q", "-p", "no:cacheprovider", "--target=solutions"]) for _ in range(2)]
        from tests.public import test_optimizers, test_flops, test_checkpointing
        hits = [len(f.cache) for f in (test_optimizers.torch_trajectory, test_flops.expected_flop_count,
                                        test_checkpointing.uninterrupted)]
        from grader.testing import replay
        hits.append(len(replay._recorded))
        print("RESULT", json.dumps({{"codes": codes, "cached": hits}}))
        sys.exit(max(codes))
    """)
    env = dict(os.environ, KIT_CHECK_REFERENCE="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True,
                         timeout=900, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    result = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert result["codes"] == [0, 0] and all(n > 0 for n in result["cached"]), result


PROPERTY_TEST = textwrap.dedent("""
    from hypothesis import HealthCheck, Phase, given, settings, strategies as st

    SEEN = []  # (run, example) for every call of the body
    RUN = [0]
    FAIL = [None]  # (run, n): the n-th example of that run fails

    def body(xs):
        SEEN.append((RUN[0], list(xs)))
        xs.append(-1)  # a test that changes its example changes nothing for the next run
        if FAIL[0] == (RUN[0], sum(run == RUN[0] for run, _ in SEEN)):
            raise AssertionError("the third example is wrong")

    @settings(derandomize=True, max_examples=6, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(xs=st.lists(st.integers(0, 9), min_size=1))
    def test_replayed(xs):
        body(xs)

    @settings(derandomize=True, max_examples=6, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(xs=st.lists(st.integers(0, 9), min_size=1))
    def test_shrinks(xs):  # a shrink phase: a failure's report depends on the code, so never replayed
        body(xs)
""")


@pytest.mark.parametrize("check", [False, True])
def test_property_examples_drawn_once_per_process(tmp_path: Path, check: bool):
    """grader.testing.replay: once two passing runs of a derandomized, unshrunk @given test drew the same
    examples in this process, the next runs call the body with them in the same order (unchanged
    by what the body did to them) and fail at the same example, without drawing.  With
    KIT_CHECK_REFERENCE=1 every run draws, and the drawn examples must equal the recorded ones."""
    (tmp_path / "test_prop.py").write_text(PROPERTY_TEST)
    script = textwrap.dedent(f"""
        import json, sys, pytest
        sys.path.insert(0, {str(tmp_path)!r})
        from hypothesis import core
        engines = []
        run_engine = core.StateForActualGivenExecution.run_engine
        def counted(self, *a, **k):
            engines.append(self.test.__name__)
            return run_engine(self, *a, **k)
        core.StateForActualGivenExecution.run_engine = counted
        import test_prop
        test_prop.FAIL[0] = (3, 3)
        codes = []
        for run in range(4):
            test_prop.RUN[0] = run
            codes.append(int(pytest.main([{str(tmp_path / "test_prop.py")!r}, "-q", "-p", "no:cacheprovider",
                                          "-p", "grader.testing.pytest_plugin", "-k", "replayed", "--tb=short"])))
        print("RESULT", json.dumps({{"codes": codes, "engines": engines, "seen": test_prop.SEEN}}))
    """)
    env = dict(os.environ, KIT_CHECK_REFERENCE="1" if check else "0")
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    result = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    runs = [[xs for run, xs in result["seen"] if run == r] for r in range(4)]
    assert result["codes"] == [0, 0, 0, 1]
    assert len(runs[0]) >= 4 and runs[2] == runs[1] == runs[0]
    # the failing (third) example runs again, as hypothesis's final run does; it passes the second
    # time here (the body fails only once): FlakyFailure, whether replayed or drawn
    assert runs[3] == runs[0][:3] + [runs[0][2]]
    assert "FlakyFailure" in out.stdout and "the third example is wrong" in out.stdout
    assert all(-1 not in xs for xs in runs[0]), "examples are recorded before the body changes them"
    # drawn twice (a second passing run confirms the first: one submission never decides alone), then replayed
    assert result["engines"] == ["test_replayed"] * (4 if check else 2)


def test_property_tests_with_a_shrink_phase_are_never_replayed(tmp_path: Path):
    (tmp_path / "test_prop.py").write_text(PROPERTY_TEST)
    script = textwrap.dedent(f"""
        import sys, pytest
        sys.path.insert(0, {str(tmp_path)!r})
        from grader.testing import replay
        codes = [int(pytest.main([{str(tmp_path / "test_prop.py")!r}, "-q", "-p", "no:cacheprovider",
                                  "-p", "grader.testing.pytest_plugin", "-k", "shrinks"])) for _ in range(2)]
        print("RESULT", codes, sorted(replay._recorded))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "RESULT [0, 0] []" in out.stdout


@pytest.mark.parametrize("check", [False, True])
def test_replay_refuses_examples_two_runs_disagree_on(tmp_path: Path, check: bool):
    """A record that a second passing run does not draw again (here, altered by hand) is never
    replayed: the test keeps going through hypothesis; KIT_CHECK_REFERENCE=1 fails it instead."""
    (tmp_path / "test_prop.py").write_text(PROPERTY_TEST)
    script = textwrap.dedent(f"""
        import sys, pytest
        sys.path.insert(0, {str(tmp_path)!r})
        from grader.testing import replay
        import test_prop
        args = [{str(tmp_path / "test_prop.py")!r}, "-q", "-p", "no:cacheprovider", "-p", "grader.testing.pytest_plugin",
                "-k", "replayed"]
        codes = [int(pytest.main(args))]
        [examples] = replay._recorded.values()
        examples[0]["xs"] = [42]
        codes += [int(pytest.main(args)) for _ in range(2)]
        print("RESULT", codes, len(replay._refused), len(replay._confirmed), [42] in [xs for _, xs in test_prop.SEEN])
    """)
    env = dict(os.environ, KIT_CHECK_REFERENCE="1" if check else "0")
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True,
                         timeout=300, env=env)
    if check:
        assert "RESULT [0, 1, 0] 1 0 False" in out.stdout and "hypothesis drew other examples" in out.stdout, \
            out.stdout[-3000:]
    else:
        assert "RESULT [0, 0, 0] 1 0 False" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]


def test_validate_runs_warm_and_cold_give_the_same_records(tmp_path: Path):
    """grader.authoring.forkrun's warm-up (the reference solutions' tests run twice in the server before it
    forks, so every mutant run starts with the expected values and examples cached) changes no
    record: the same tests, statuses and messages as runs forked from a cold server, for the
    solutions and for mutants of three modules whose tests cache the most (views' hypothesis
    examples, flops' FlopCounterMode counts, optimizers' torch.optim trajectories)."""
    from grader.authoring.mutants import build_target, load_mutants
    from grader.authoring.validate import grade_targets

    targets: list[tuple[Path, str]] = [(KIT_ROOT / "solutions", "views")]
    for module in ("views", "flops", "optimizers"):
        for i, m in enumerate(load_mutants((module,))[:4]):
            targets.append((build_target(m, tmp_path / f"{module}{i}", KIT_ROOT / "solutions"), module))
    warm = grade_targets(targets, 2, maxfail=True, warm=True)
    cold = grade_targets(targets, 2, maxfail=True, warm=False)

    def shown(runs):
        return [[(r["id"], r["status"], r["message"]) for r in recs] for recs in runs]

    assert all(warm) and shown(warm) == shown(cold)


def test_the_fork_servers_precompute_is_bounded_in_memory_and_time():
    """grader.batch.forkserver._bounded: while the fork-server computes from the cache file, an
    allocation past its budget fails (and precompute skips that entry), and past its time the process
    ends (SIGALRM's default action), whatever a single call does."""
    script = textwrap.dedent("""
        import signal, sys, time
        from grader.batch.forkserver import _bounded
        with _bounded(30, 256 * 2**20):
            try:
                bytearray(1024 * 2**20)
                print("ALLOCATED")
            except MemoryError:
                print("REFUSED")
        bytearray(512 * 2**20)  # the limit is lifted after
        print("AFTER")
        sys.stdout.flush()
        with _bounded(1, 256 * 2**20):
            time.sleep(30)
        print("NOT STOPPED")
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["REFUSED", "AFTER"], out.stdout + out.stderr
    assert out.returncode == -14, out.returncode  # SIGALRM
