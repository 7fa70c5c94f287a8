"""Run many pytest sessions cheaply and in isolation: import once, fork per session.

`grader validate` grades every mutant with its module's tests.  A fresh interpreter per
mutant spends most of its time importing torch, pytest and the tests; here one server
process imports them once and forks a child per run, so every run starts from the same
clean state (no leakage between mutants) without paying the imports again.

Protocol: the parent writes a JSON list of runs (`{"args": [...pytest args...]}`) on stdin, or
`{"runs": [...], "warm": [[...pytest args...], ...]}`; the server forks at most `jobs` children
at a time, each runs `pytest.main(args)` with its output discarded, and the server prints one
JSON line per finished run: `{"index", "code"}`.

Warm: before it forks, the server runs each `warm` session twice in its own process (the
reference solutions' runs, output discarded), so every child inherits what a grading worker has
after its first submissions: the expected values (`grader.testing.reference`, keyed by the tests'
constants only, never by the code under test) and the hypothesis examples replayed
(`grader.testing.replay`).  A later run of a module's tests on the solutions takes a third to a sixth
of the first (views 2.3 s -> 0.6 s, flops 2.0 -> 0.4, training 1.5 -> 0.4).  Each target is
imported under its own path-derived package (`grader.boundary.target`), so the solutions the server
imported are never what a child grades.  Not where an NVIDIA device exists: a run there may
initialise CUDA, which a forked child then cannot use.
"""

from __future__ import annotations

import importlib
import json
import os
import sys


def _preimport(files: list[str]) -> None:
    import pytest  # noqa: F401
    import torch  # noqa: F401

    try:  # its pytest plugin imports it at the end of every session: pay that once, here
        import hypothesis  # noqa: F401
    except ImportError:
        pass

    import grader.testing.pytest_plugin  # noqa: F401

    for f in sorted(set(files)):
        rel = os.path.relpath(f, os.getcwd())
        if rel.endswith(".py") and not rel.startswith(".."):
            try:
                importlib.import_module(rel[:-3].replace(os.sep, "."))
            except Exception:  # noqa: BLE001 - the child will report it properly
                pass


def _child(args: list[str]) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    code = 3
    try:
        import pytest
        import torch

        torch.set_num_threads(1)
        code = int(pytest.main(args))
    finally:
        os._exit(code)


def _warm(sessions: list[list[str]]) -> None:
    """Run each session twice here (the second run lets hypothesis' examples replay), with stdout and
    stderr, the protocol's channel among them, sent to /dev/null meanwhile."""
    if not sessions or os.path.exists("/dev/nvidiactl"):
        return
    import pytest
    import torch

    torch.set_num_threads(1)
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        for args in sessions:
            for _ in range(2):
                try:
                    pytest.main(list(args))
                except BaseException:  # noqa: BLE001 - a warm-up that fails only leaves the children cold
                    break
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def serve(runs: list[dict], jobs: int, warm: list[list[str]] | None = None) -> None:
    _preimport([a for r in runs for a in r["args"] if a.endswith(".py")])
    _warm(warm or [])
    running: dict[int, int] = {}
    pending = list(enumerate(runs))
    while pending or running:
        while pending and len(running) < jobs:
            index, run = pending.pop(0)
            pid = os.fork()
            if pid == 0:
                _child(run["args"])
            running[pid] = index
        pid, status = os.wait()
        if pid in running:
            index = running.pop(pid)
            print(json.dumps({"index": index, "code": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    request = json.loads(sys.stdin.read())
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    if isinstance(request, dict):
        serve(request["runs"], jobs, request.get("warm"))
    else:
        serve(request, jobs)
