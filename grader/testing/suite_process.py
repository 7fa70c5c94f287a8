"""Run the graded suites in a child pytest process and read back the plugin's JSON report.

The child runs the kit's own tests (trusted) against a target; the report file is written by
`grader.testing.pytest_plugin`, never by the code under test's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, MODULES


def test_files(modules: tuple[str, ...] = MODULES, hidden: bool = True, root: Path = KIT_ROOT) -> list[str]:
    """The graded test files for these modules that exist (public, then hidden)."""
    kinds = ("public", "hidden") if hidden else ("public",)
    return [str(root / "tests" / k / f"test_{m}.py") for m in modules for k in kinds
            if (root / "tests" / k / f"test_{m}.py").exists()]


@dataclass
class SuiteRun:
    records: list[dict[str, Any]] = field(default_factory=list)
    returncode: int = 0
    log: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def run_suite(target: str | Path, files: list[str], *, extra: tuple[str, ...] = (), timeout: float = 1800,
              env: dict[str, str] | None = None, cwd: Path | None = None) -> SuiteRun:
    """Run pytest on `files` against `target`; the per-test records of the plugin's report.  `cwd`:
    the copy of the kit to run in (its grader and tests are imported; `grader.authoring.snapshot`)."""
    if not files:
        return SuiteRun()
    with tempfile.TemporaryDirectory(prefix="kit-run-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", *files, f"--target={target}", f"--kit-report={report}",
               "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", *extra]
        proc = subprocess.run(cmd, cwd=cwd or KIT_ROOT, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        if not report.exists():
            return SuiteRun(returncode=proc.returncode, log=proc.stdout[-5000:] + proc.stderr[-5000:])
        data = json.loads(report.read_text())
    meta = {k: v for k, v in data.items() if k != "tests"}
    return SuiteRun(records=data["tests"], returncode=proc.returncode, log=proc.stdout[-5000:] + proc.stderr[-3000:], meta=meta)
