"""The batch's tests in this process: ``pytest.main`` over the suite, for one staged submission.

A trusted worker (`grader.batch.submission`) runs the public then the hidden test files with
``--backend sandbox`` against the staged folder; the trusted fork-server collects them once
(`collect`) so that its forks find the test modules imported and rewritten.  Every run seeds each
test from its node id (`GradePlugin`) and runs hypothesis derandomised (`derandomise_hypothesis`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from grader import KIT_ROOT
from grader.batch.options import GradeError, GradeOptions, suite_args, test_files


class GradePlugin:
    """Per-test RNG seeds from the node id, and a record of collection errors."""

    def __init__(self) -> None:
        self.collect_errors: list[str] = []

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {str(report.longrepr)[-1500:]}")

    def pytest_runtest_setup(self, item: Any) -> None:
        import hashlib
        import random

        import numpy as np
        import torch

        seed = int(hashlib.sha256(item.nodeid.encode()).hexdigest()[:8], 16)
        random.seed(seed)
        np.random.seed(seed)
        if torch.cuda.is_available():
            torch.manual_seed(seed)
        else:  # torch.manual_seed would also queue a lazy CUDA/XPU/MTIA seeding, with a stack trace, per test
            torch.random.default_generator.manual_seed(seed)


def derandomise_hypothesis() -> None:
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:
        return
    settings.register_profile("kit-grade", derandomize=True, database=None, deadline=None, print_blob=False,
                              suppress_health_check=list(HealthCheck))
    settings.load_profile("kit-grade")


def run_pytest(files: list[str], target: Path, report: Path, plugin: Any, collect_only: bool = False,
               quiet: str = "-q", extra: tuple[str, ...] = ()) -> int:
    """``pytest.main`` over `files` for the submission staged at `target`, in this process."""
    import pytest

    # the trusted worker imported hypothesis (and, from the second submission on, everything) before
    # pytest.main: pytest's "already imported, cannot be rewritten" warnings are noise in the log.
    # No logging capture: no test logs, and its per-test handlers cost 0.1-0.2 s per submission.
    # No unraisable-exception hook: it only warns (no verdict), and its forced collections at
    # the end of every run cost 0.07 s per submission (no student code runs in this process).
    args = [*files, f"--target={target}", "--backend=sandbox", f"--kit-report={report}",
            f"--rootdir={KIT_ROOT}", quiet, "--tb=short", "-p", "no:cacheprovider", "-p", "no:randomly",
            "-p", "no:xdist", "-p", "no:logging", "-p", "no:unraisableexception",
            "-W", "ignore::pytest.PytestAssertRewriteWarning", *extra]
    if collect_only:
        args.append("--collect-only")
    cwd = os.getcwd()
    os.chdir(KIT_ROOT)
    try:
        return int(pytest.main(args, plugins=[plugin]))
    finally:
        os.chdir(cwd)


def collect(options: GradeOptions) -> None:
    """Import and collect the batch's test files without running any (the trusted fork-server's
    warm-up: the workers it forks find the test modules imported and rewritten)."""
    files = test_files(options.modules, options.hidden)
    with tempfile.TemporaryDirectory(prefix="kit-collect-") as folder:
        empty = Path(folder) / "empty"
        empty.mkdir()
        plugin = GradePlugin()
        run_pytest(files, empty, Path(folder) / "report.json", plugin, collect_only=True, quiet="-qq",
                   extra=suite_args(options))
        if plugin.collect_errors:
            raise GradeError("the tests could not be collected: " + " | ".join(plugin.collect_errors)[:2000])
