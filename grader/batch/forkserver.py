"""The trusted fork-server of `grader grade`: one warmed-up process that forks the trusted workers.

    python -m grader.batch.forkserver FD OPTIONS_JSON        (started by `grader.batch.pool`)

A trusted worker's first submission used to cost three times a later one: importing torch,
pytest and the test modules, the first dispatch-mode call (torch imports torch._dynamo: 1.6 s),
hypothesis's first run.  With N workers that start-up was paid N times at once.  This process
pays it once per batch, then forks each worker (and each replacement of a worker that died or
was recycled) from that state.  Like the workers it descends from the grading process and never
runs student code: its forks are ordinary trusted workers (`grader.batch.trusted._worker_main`),
whose sandboxes start exactly as before.

Protocol, on a SOCK_SEQPACKET socket: the parent sends ``{"spawn": {"env": {...}, "fd": NAME}}``
with two descriptors (the worker's connection, its log file) and, with ``fd``, a third one (the
batch's mother zygote's socket, which the parent starts after this server: its number, as the
child receives it, goes into the ``"fd"`` of the JSON in the environment variable ``NAME``); the
child adds ``env`` to its environment (the batch's kit bundle, the mother's link).  The server
answers ``{"pid": N}`` once the child exists, or
``{"error": "..."}`` when it cannot fork safely (the parent then starts that worker the ordinary
way, `python -m grader.batch.trusted`).  The server ends when the parent's end closes, and dies
with the parent (its parent-death signal); each worker dies with the server.

Fork safety: the warm-up imports and collects, counts FLOPs on meta tensors, and computes the
expected values the last batch of the same suite named (`grader.batch.warm`; CPU tensors, with
torch on one thread, so no thread pool exists); the server refuses to fork with more than one
thread.  That computing is bounded: RLIMIT_AS at 512 MiB above the server's size while it runs
(a call that needs more fails and is skipped) and SIGALRM's default action past
`warm.PRECOMPUTE_SECONDS` plus 10 s (the server ends; the workers then start as processes of
their own).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from grader.sandbox.zygote import NotOurChild  # (the worker is the server's child: handled by pidfd)

#: Largest request or answer
_MAX = 1 << 16


class ForkServer:
    """The grading pool's handle on the fork-server."""

    def __init__(self, options_json: str, env: dict[str, str], log: Path, inherit: list[int]):
        from grader import KIT_ROOT

        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.broken = ""
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "grader.batch.forkserver", str(theirs.fileno()),
                                          options_json], pass_fds=[theirs.fileno(), *inherit],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=KIT_ROOT, env=env)
        theirs.close()

    def spawn(self, conn_fd: int, log_fd: int, env: dict[str, str] | None = None, fds: list[int] = (),
              timeout: float = 300.0) -> NotOurChild | None:
        """A worker serving on `conn_fd`, writing to `log_fd`, with `env` added to its environment and
        `fds` (at most one: the mother zygote's socket, named by `env`'s KIT_ZYGOTE_MOTHER); None when
        the server cannot make one (then it is not asked again: `broken` says why)."""
        if self.broken:
            return None
        env = dict(env or {})
        request: dict[str, Any] = {"env": env}
        if fds:
            from grader.sandbox.zygotes import Mother

            request["fd"] = Mother.ENV
        try:
            socket.send_fds(self.sock, [json.dumps({"spawn": request}).encode()], [conn_fd, log_fd, *fds][:3])
            deadline = time.monotonic() + timeout
            while True:  # the first answer waits for the warm-up: notice the server dying meanwhile
                if select.select([self.sock], [], [], 1.0)[0]:
                    answer = json.loads(self.sock.recv(_MAX) or b'{"error": "the fork-server ended"}')
                    break
                if self.proc.poll() is not None:
                    answer = {"error": f"the fork-server ended (exit status {self.proc.returncode})"}
                    break
                if time.monotonic() > deadline:
                    answer = {"error": f"no answer from the fork-server in {timeout:g} s"}
                    break
        except (OSError, ValueError) as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        if not isinstance(answer.get("pid"), int):
            self.broken = str(answer.get("error", answer))
            return None
        return NotOurChild(answer["pid"])

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the server ---------------------------------------------------------------------------------

def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def warm_up(options: Any) -> None:
    """What every trusted worker does before (and during) its first submission that depends on no
    submission: imports, test collection (assertion rewriting included), hypothesis's set-up, torch's
    lazy import on the first dispatch mode."""
    import torch
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from torch.utils.flop_counter import FlopCounterMode

    from grader.batch import testrun

    testrun.derandomise_hypothesis()
    testrun.collect(options)
    _import_what_a_worker_imports()
    _expected_values(options)
    with FlopCounterMode(display=False):  # meta tensors: no compute, no thread pool
        torch.empty(2, 3, device="meta") @ torch.empty(3, 4, device="meta")

    @settings(max_examples=1, database=None, deadline=None)
    @given(st.integers())
    def _first_run(_: int) -> None:  # hypothesis registers its random generators on a first run
        pass

    _first_run()
    import gc

    gc.collect()
    gc.freeze()


#: What a worker imports during its first submission that collecting the tests does not: the sandbox's
#: grading side, the replay of property tests, and libraries the tests reach lazily.
WORKER_IMPORTS = ("grader.testing.replay", "grader.sandbox.backend", "grader.sandbox.zygotes", "grader.sandbox.seccomp",
                  "torch.utils.serialization", "einops._torch_specific")


def _import_what_a_worker_imports() -> None:
    """`WORKER_IMPORTS`, and the seccomp filter built (each worker would build it for its first
    sandbox; it is the same program for all): paid once here, inherited by every fork."""
    import importlib

    for name in WORKER_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the worker imports it (and says why it cannot) when it needs it
            pass
    from grader.sandbox import seccomp

    if seccomp.available()[0]:
        seccomp.program()


def _expected_values(options: Any) -> None:
    """The expected values the last batch graded by this suite computed (`grader.batch.warm`), computed
    here once (every fork inherits them) instead of in each worker's first submission.  Only with
    torch on one thread (the workers' setting whenever the jobs fill the machine), as a worker
    would compute them, and so that no thread pool exists when this process forks."""
    import torch

    from grader.testing import reference
    from grader.batch import warm

    entries = warm.load(options.suite)
    if entries and torch.get_num_threads() == 1:
        with _bounded(warm.PRECOMPUTE_SECONDS + 10, warm.PRECOMPUTE_BYTES):
            reference.precompute(entries, warm.PRECOMPUTE_SECONDS)


@contextlib.contextmanager
def _bounded(seconds: float, extra_bytes: int):
    """While the fork-server computes from the cache file: its address space at most `extra_bytes`
    above what it is now (a call that wants more fails with MemoryError, which `precompute` skips),
    and SIGALRM's default action (the process ends) past `seconds` (a call that `precompute`'s
    deadline, checked between calls, cannot stop)."""
    import resource
    import signal

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    size = 0
    try:
        with open("/proc/self/status") as f:
            size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        pass
    limited = bool(size) and (hard == resource.RLIM_INFINITY or size + extra_bytes <= hard)
    if limited:
        resource.setrlimit(resource.RLIMIT_AS, (size + extra_bytes, hard))
    previous = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, int(seconds)))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if limited:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _child(conn_fd: int, log_fd: int, options_dict: dict[str, Any], request: dict[str, Any],
           extra_fd: int | None) -> None:
    """In the fork: become an ordinary trusted worker (never returns)."""
    import atexit

    code = 0
    try:
        atexit._clear()  # the server's exit handlers are not this worker's
        _take_environment(request, extra_fd)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        from multiprocessing.connection import Connection

        from grader.batch.trusted import _worker_main

        _worker_main(Connection(conn_fd), options_dict)
    except BaseException:  # noqa: BLE001 - the pool sees the connection close and respawns
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()  # the worker's own (zygotes, temporary folders)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _take_environment(request: dict[str, Any], extra_fd: int | None) -> None:
    """The spawn request's environment, in this worker: the batch's bundle, and the mother zygote's
    link with the number its socket has here."""
    env = {str(k): str(v) for k, v in (request.get("env") or {}).items()}
    name = request.get("fd")
    if isinstance(name, str) and extra_fd is not None and name in env:
        link = json.loads(env[name])
        link["fd"] = extra_fd
        env[name] = json.dumps(link)
    os.environ.update(env)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m grader.batch.forkserver FD OPTIONS_JSON (started by `grader grade`)", file=sys.stderr)
        return 2
    from grader.batch.trusted import _set_parent_death_signal
    from grader.sandbox.zygote_process import reap_children

    _set_parent_death_signal()
    sock = socket.socket(fileno=int(argv[0]))
    options_dict = json.loads(argv[1])
    why = ""
    try:
        from grader.batch.options import grade_options

        warm_up(grade_options(options_dict))
        if _threads() != 1:
            why = f"the fork-server has {_threads()} threads after its warm-up"
    except Exception as exc:  # noqa: BLE001 - reported to the pool, which starts workers the ordinary way
        why = f"the fork-server's warm-up failed: {type(exc).__name__}: {exc}"
    while True:
        readable = select.select([sock], [], [], 1.0)[0]
        reap_children()  # the workers that ended
        if not readable:
            continue
        message, fds, _, _ = socket.recv_fds(sock, _MAX, 3)
        if not message:
            return 0
        try:
            request = json.loads(message)["spawn"]
            wanted = 3 if request.get("fd") else 2
        except (ValueError, KeyError, TypeError, AttributeError):
            request, wanted = {}, -1
        if why or len(fds) != wanted:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": why or f"a spawn request with {len(fds)} descriptors"}).encode())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(fds[0], fds[1], options_dict, request, fds[2] if wanted == 3 else None)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
