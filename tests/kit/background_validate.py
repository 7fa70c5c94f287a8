"""The whole `grader validate` of `test_validate_all_modules`, started in the background as soon as
a pytest run knows it will run that test (`tests/kit/conftest.py`), and waited for by the test.

Why: validate is the longest self-test (about 9 minutes on a quiet 2-core machine: two grading
processes, both cores busy), and the rest of the kit's tests mostly keep one core busy (the whole
run used 139% of 2 cores).  Started at collection, validate's runs fill the core the rest leaves
idle, and the test, near the end of the run, finds them done or nearly.  Nothing is skipped or
weakened: the test asserts on exactly what it asserted on when it called `validate` itself, and
where the background run was not started (another pytest plugin order, a `-k` selection made
after collection) the test runs validate in its own process as before.

    python -m tests.kit.background_validate --detach OUT.json LOG   (what the conftest starts)
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, MODULES

_started: dict[str, Any] = {}
#: The module `start` runs (its `main(argv)` writes the result to argv[0]); tests.kit.background_matrix
#: reuses this file's machinery with its own.
MODULE = "tests.kit.background_validate"


def modules() -> tuple[str, ...]:
    return tuple(m for m in MODULES if (KIT_ROOT / "solutions" / f"{m}.py").exists())


def start(module: str = MODULE, started: dict[str, Any] | None = None) -> None:
    """Start the run (once per pytest process), its result and log in a folder of its own.  The run
    is detached (a session of its own, not a descendant of this process): the self-tests that check
    that nothing they started outlives them look at this process's descendants."""
    _started = started if started is not None else globals()["_started"]
    if _started:
        return
    name = module.rpartition(".")[2]
    folder = Path(tempfile.mkdtemp(prefix=f"kit-{name.replace('_', '-')}-"))
    out, log = folder / "result.json", folder / "run.log"
    launcher = subprocess.run([sys.executable, "-m", module, "--detach", str(out), str(log)],
                              cwd=KIT_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    pid = int(launcher.stdout.strip() or 0)
    if launcher.returncode != 0 or pid <= 0:
        shutil.rmtree(folder, ignore_errors=True)
        return  # the test runs validate itself
    _started.update(pid=pid, pidfd=os.pidfd_open(pid), out=out, log=log, folder=folder, t0=time.monotonic())


def result(timeout: float = 4 * 3600, started: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The background run's result (waits for it); None when none was started."""
    import select

    _started = started if started is not None else globals()["_started"]
    if not _started:
        return None
    left = max(1.0, timeout - (time.monotonic() - _started["t0"]))
    if not select.select([_started["pidfd"]], [], [], left)[0]:
        stop(_started)
    out: Path = _started["out"]
    if out.exists():
        return json.loads(out.read_text())
    tail = _started["log"].read_text(errors="replace")[-4000:] if _started["log"].exists() else ""
    return {"ok": False, "counts": {}, "text": f"the background validate ended without a result:\n{tail}"}


def stop(started: dict[str, Any] | None = None) -> None:
    """Kill the run and everything it started, if it still runs (a pytest run that ended without
    waiting for it), and remove its folder."""
    import select

    _started = started if started is not None else globals()["_started"]
    if "pidfd" in _started:
        if not select.select([_started["pidfd"]], [], [], 0)[0]:
            try:
                os.killpg(_started["pid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        os.close(_started.pop("pidfd"))
    if "folder" in _started:
        shutil.rmtree(_started["folder"], ignore_errors=True)


def detach(out: str, log: str, module: str = MODULE) -> int:
    """In the launcher: start the run as a grandchild in a session of its own, print its pid, exit
    (the run is then nobody's descendant but init's, or the nearest subreaper's)."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(sys.executable, [sys.executable, "-m", module, out])
    print(pid, flush=True)
    return 0


def main(argv: list[str]) -> int:
    from rich.console import Console

    from grader.authoring.validate import validate

    console = Console(record=True, width=200, file=io.StringIO())
    found = validate(modules(), jobs=2, console=console)
    Path(argv[0]).write_text(json.dumps({"ok": found.ok, "counts": found.counts, "text": console.export_text()}))
    return 0


if __name__ == "__main__":
    sys.exit(detach(*sys.argv[2:4]) if sys.argv[1:2] == ["--detach"] else main(sys.argv[1:]))
