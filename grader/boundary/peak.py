"""A probe call's peak memory growth where this machine's /proc cannot say: macOS, most students'.

The in-process backend (a student's own `pytest` and `grader check`) measures a call's memory by
resetting the kernel's high-water mark through /proc/self/clear_refs (Linux).  Elsewhere the call
runs in a *fresh interpreter* (`python -m grader.boundary.peak`, started with subprocess: spawned, never
forked, which is unsafe with torch on macOS and absent on Windows) that reports its own peak
resident memory before and after the call (`resource.getrusage`: KiB on Linux, bytes on macOS).
A fresh interpreter's peak is its current memory once the imports are done (measured on Linux:
220 MiB both), so the growth is the call's own.  While the code under test runs, a watchdog
thread ends the call with a MemoryError once it has grown by `WATCH_LIMIT_BYTES` (the probe's own
RLIMIT_DATA cap needs /proc), so a copy of a large file fails at once instead of filling the
student's machine.

Where `resource` is absent too (Windows), nothing here can measure: `call_measured` says so
without running the call, and the test is reported as checked only when graded
(`grader.testing.student.CheckedWhenGraded`: pending, no points lost or given).  The grading machine
never gets here: the sandbox measures every call from outside (`grader.sandbox`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

#: Growth at which the fresh interpreter stops the call with a MemoryError (what the probes' own
#: RLIMIT_DATA cap allows, where /proc lets them set it).
WATCH_LIMIT_BYTES = 1 << 30
#: Seconds a measured call may take, the fresh interpreter's start-up (torch's import) included.
TIMEOUT = 300.0
#: Why a test that needs a measurement is not checked here (Windows).
NOT_HERE = ("checked only when graded: this machine cannot measure a call's peak memory (no /proc, no "
            "`resource` module: Windows); the grading machine measures it")
METHOD = "peak RSS of a fresh interpreter (getrusage)"


def can_measure() -> bool:
    """Whether a fresh interpreter here can report its peak memory (everywhere but Windows)."""
    try:
        import resource  # noqa: F401
    except ImportError:
        return False
    return True


def call_measured(folder: Path, name: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Probe `name` in a fresh interpreter: its reply (a reply dict, as `Backend.call`) and
    `{"peak_growth_bytes", "method"}`.  Where nothing can measure, the reply is
    `{"graded_only": why}` and the call never ran."""
    import subprocess

    from grader.boundary.messages import BoundaryError, decode
    from grader.boundary.fresh import _run_interpreter

    unmeasured = {"peak_growth_bytes": -1, "method": "not measured"}
    if not can_measure():
        return {"graded_only": NOT_HERE}, dict(unmeasured, method="unavailable here (Windows)")
    with tempfile.TemporaryDirectory(prefix="kit-peak-") as tmp:
        request, reply = os.path.join(tmp, "request"), os.path.join(tmp, "reply")
        try:
            _run_interpreter(str(folder), name, kwargs, request, reply, TIMEOUT, module="grader.boundary.peak")
        except subprocess.TimeoutExpired:
            return {"boundary": f"the call did not end within {TIMEOUT:g} s"}, unmeasured
        if not os.path.exists(reply):
            return {"boundary": "the fresh interpreter running the call died without replying"}, unmeasured
        try:
            with open(reply, "rb") as f:
                got = decode(f.read())
        except BoundaryError as exc:
            return {"boundary": str(exc)}, unmeasured
    if got.get("growth") is None:
        return got["reply"], unmeasured
    return got["reply"], {"peak_growth_bytes": int(got["growth"]), "method": METHOD}


def _peak_bytes() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS: bytes; Linux and the BSDs: KiB


def _watch(baseline: int, reply_path: str, done: threading.Event) -> None:
    """Until `done`: end this process with a MemoryError reply once it grew past the limit."""
    from grader.boundary.messages import ErrorData, encode

    while not done.wait(0.005):
        grown = _peak_bytes() - baseline
        if grown > WATCH_LIMIT_BYTES:
            error = ErrorData("MemoryError", ("MemoryError", "Exception", "BaseException"),
                              f"the call grew memory by more than {WATCH_LIMIT_BYTES >> 20} MiB "
                              f"({grown >> 20} MiB) and was stopped", False, "")
            with open(reply_path, "wb") as f:
                f.write(encode({"reply": {"error": error.as_dict()}, "growth": grown}))
            os._exit(0)


def _main(argv: list[str]) -> int:
    from grader.rules import tripwire
    from grader.boundary.messages import decode, encode
    from grader.boundary.serving import find_probe, serve
    from grader.boundary.target import Implementation

    tripwire.install()  # before the implementation is imported, as everywhere else
    request_path, reply_path = argv
    with open(request_path, "rb") as f:
        request = decode(f.read())
    impl = Implementation(Path(request["folder"]))
    try:  # imported before the baseline, as in a test process where earlier tests imported them
        find_probe(request["name"])
        getattr(impl, request["name"].partition(".")[0])
    except BaseException:  # noqa: BLE001 - the call below reports it as data
        pass
    baseline = _peak_bytes()
    done = threading.Event()
    watch = threading.Thread(target=_watch, args=(baseline, reply_path, done), daemon=True)
    watch.start()
    reply = serve(impl, request["name"], request["kwargs"])
    growth = _peak_bytes() - baseline
    done.set()
    watch.join()
    with open(reply_path, "wb") as f:
        f.write(encode({"reply": reply, "growth": growth}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
