"""Kit self-tests of the two shortcuts a grading worker takes: fresh processes forked from a
template (grader/fresh.py) and expected values cached per worker (grader/reference.py).
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

from grader import KIT_ROOT, fresh
from grader.reference import reference
from grader.serve import serve_fresh
from grader.target import Implementation

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
        from grader import fresh
        from pathlib import Path
        from grader.target import Implementation
        Implementation(Path({str(tmp_path)!r})).memory
        assert fresh.start() is None
        from grader.serve import serve_fresh
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
    time from the cache, each cached value recomputed and compared (KIT_CHECK_REFERENCE=1)."""
    files = [f"tests/public/test_{m}.py" for m in ("optimizers", "flops", "checkpointing")]
    script = textwrap.dedent(f"""
        import json, sys, pytest
        codes = [pytest.main([*{files!r}, "-q", "-p", "no:cacheprovider", "--target=solutions"]) for _ in range(2)]
        from tests.public import test_optimizers, test_flops, test_checkpointing
        hits = [len(f.cache) for f in (test_optimizers.torch_trajectory, test_flops.expected_flop_count,
                                        test_checkpointing.uninterrupted)]
        print("RESULT", json.dumps({{"codes": codes, "cached": hits}}))
        sys.exit(max(codes))
    """)
    env = dict(os.environ, KIT_CHECK_REFERENCE="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=KIT_ROOT, capture_output=True, text=True,
                         timeout=900, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    result = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert result["codes"] == [0, 0] and all(n > 0 for n in result["cached"]), result
