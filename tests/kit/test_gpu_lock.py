"""Kit self-test of the GPU lock (`grader.testing.pytest_plugin.gpu_lock`): `gpu` tests of different
processes on one machine never run at the same time (their timings and memory readings assume
the GPU to themselves).  Runs without a GPU: the lock is an advisory file lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from grader import KIT_ROOT


def test_gpu_tests_of_different_processes_never_overlap(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import json, sys, time
        from grader.testing.pytest_plugin import gpu_lock
        spans = []
        for _ in range(3):
            with gpu_lock():
                start = time.monotonic()
                time.sleep(0.15)
                spans.append((start, time.monotonic()))
        print(json.dumps(spans))
    """)
    env = {**os.environ, "PYTHONPATH": str(KIT_ROOT), "KIT_GPU_LOCK": str(tmp_path / "gpu.lock")}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    spans = sorted(span for p in procs for span in json.loads(p.communicate(timeout=120)[0]))
    assert all(p.returncode == 0 for p in procs) and len(spans) == 9
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, f"two holders of the GPU lock overlapped: {spans}"
