"""What a grade depends on, as one digest: the suite's bytes and every setting that changes a verdict.

`grader grade` keeps a submission graded before (no regrade without --force) only when that
earlier grade was made by the same suite with the same settings.  A version string is not
enough: a TA who adds a hidden test and bumps pyproject without reinstalling leaves the
installed version unchanged, and `grade --device cuda` into a folder graded on the CPU would
keep the CPU results with their GPU tests pending.  So the key is a sha256 over

* the bytes of every file that decides a verdict: the grader's own code (``grader/**/*.py``) and
  the graded side of ``tests/`` (the public and hidden tests, the probes, the shared helpers at the
  top of ``tests/``), named by their paths; not the kit's self-tests, mutants, variants or
  adversarial cases, which never grade a submission;
* the settings that change a verdict: modules, hidden tests or not, device, the course assignment and
  whether its GPU tests count, launcher, per-call and import timeouts, the sandbox's memory limit, the trusted side's budgets;
* the versions of Python and torch (their arithmetic is what the tolerances were set against).

The late policy is not in it: it is applied afterwards, to kept results too.  The digest is
written into each student's instructor.json (``suite``), never into results.json.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path
from typing import Any

from grader import KIT_ROOT

#: Folders of tests/ that never grade a submission.
NOT_GRADING = frozenset({"kit", "mutants", "variants", "adversarial"})


def verdict_files(root: Path = KIT_ROOT) -> list[Path]:
    """The files whose bytes decide a verdict, in a fixed order."""
    files = sorted((root / "grader").rglob("*.py"))
    tests = root / "tests"
    files += sorted(p for p in tests.rglob("*.py")
                    if p.relative_to(tests).parts[0] not in NOT_GRADING and "__pycache__" not in p.parts)
    return files


def suite_digest(options: Any, root: Path = KIT_ROOT) -> str:
    """The sha256 (hex) of what grades a submission with `options` (a `GradeOptions`)."""
    h = hashlib.sha256()
    for path in verdict_files(root):
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    h.update(json.dumps(suite_settings(options), sort_keys=True).encode())
    return h.hexdigest()


def suite_settings(options: Any) -> dict[str, Any]:
    """The settings part of the digest (written beside it, in ``instructor/suite.json``, so that the
    next batch can say which of them changed: `why_regraded`)."""
    return {"modules": list(options.modules), "hidden": options.hidden, "device": options.device,
            "launcher": options.launcher, "call_timeout": options.call_timeout,
            "import_timeout": options.import_timeout, "memory_mb": options.memory_mb,
            "submission_budget": options.submission_budget, "worker_memory_mb": options.worker_memory_mb,
            "assignment": options.assignment, "gpu_tests": options.gpu_tests,
            "python": platform.python_version(), "torch": torch_version()}


def why_regraded(graded_by: Any, last: Any, digest: str, settings: dict[str, Any]) -> str:
    """Why a result graded by the suite `graded_by` is not kept under `digest`/`settings`, in words;
    `last` is the previous batch's ``instructor/suite.json`` ({"suite", "settings"}), or None."""
    if not isinstance(last, dict) or last.get("suite") != graded_by or not isinstance(last.get("settings"), dict):
        return "graded by an earlier suite or other settings"
    before = last["settings"]
    changed = [f"{k} {before.get(k)!r} -> {settings.get(k)!r}" for k in sorted(set(before) | set(settings))
               if before.get(k) != settings.get(k)]
    if changed:
        return "settings changed: " + ", ".join(changed)
    return "the tests, probes or grader changed since it was graded"


def torch_version() -> str:
    """The installed torch's version, read from its package metadata: `grader grade` computes the
    digest before anything imports torch, and importing it costs the parent 1.3 s on the critical
    path of every batch (the workers import it anyway).  A torch without metadata is imported."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        import torch

        return str(torch.__version__)
