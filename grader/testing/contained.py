"""Trusted code on a submission's bytes, in a throwaway child: `contained(fn, *args)`.

A few trusted tests must hand a submission's bytes to a library: `torch.load(weights_only=True)`
on the student's checkpoint file is the point of a checkpointing test, and it cannot run in the
sandbox (code there could patch `torch.load` to report whatever it likes).  The code is trusted
but the bytes steer its work: an unpickler builds what the file describes (shared lists nested
to describe 10**7 items in 2 KB), a zip reader inflates what the file says (1 MiB to 1 GiB).
So `contained` runs `fn(*args)` in a child forked from this process and pays only a bounded wait:

* the child's address space is limited to what this process uses now plus `memory` bytes
  (RLIMIT_AS) and its CPU time to `seconds` (RLIMIT_CPU); it is killed at `seconds` of wall time
  and closes every inherited descriptor but its reply pipe (a trusted worker's sandbox pipes
  included);
* `fn`'s return value comes back in the kit's data-only wire format and is decoded here like any
  probe reply (`grader.boundary.messages.decode`: size and value caps, strings cut): this process never
  unpickles, inflates or walks anything the bytes describe.

The caller gets `Contained(value, error)`: `error` is None, or a plain sentence (the exception `fn`
raised, or that the child ran out of memory or time).  Off Linux (a student's own `pytest` or
`grader check` only, on their own files: Windows cannot fork, and a fork of a process that runs
torch is unsafe on macOS), `fn` runs here.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from grader.boundary.messages import MAX_REPLY_BYTES, BoundaryError, decode, encode


@dataclass(frozen=True)
class Contained:
    value: Any
    error: str | None


def contained(fn: Callable[..., Any], *args: Any, memory: int = 1 << 30, seconds: float = 30.0) -> Contained:
    """`fn(*args)` in a child under `memory` more bytes of address space and `seconds` of time
    (see the module docstring); its return value must be plain data (`grader.boundary.messages`)."""
    if not (hasattr(os, "fork") and sys.platform.startswith("linux")):
        try:
            return Contained(fn(*args), None)
        except Exception as exc:  # noqa: BLE001 - reported to the caller as data
            return Contained(None, _words(exc))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read_fd)
            _limit(memory, seconds)
            code = _child(fn, args, write_fd)
        finally:
            os._exit(code)
    os.close(write_fd)
    deadline = time.monotonic() + seconds
    payload, why = b"", "the grader stopped waiting"
    try:
        payload, why = _read_reply(read_fd, deadline)
    finally:
        os.close(read_fd)
        status = _reap(pid, deadline if why is None else 0.0)
    if why is None and not payload:
        why = _death(status, memory, seconds)
    if why is not None:
        return Contained(None, why)
    try:
        reply = decode(payload)
    except BoundaryError as exc:
        return Contained(None, f"its result could not be read back: {exc}")
    if not isinstance(reply, dict) or not ({"ok"} == set(reply) or {"error"} == set(reply)):
        return Contained(None, "its result could not be read back")
    return Contained(reply.get("ok"), reply.get("error"))


def _limit(memory: int, seconds: float) -> None:
    import resource

    used = _address_space()
    if used is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = used + memory
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    cpu = max(1, int(seconds))
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2 if hard == resource.RLIM_INFINITY else min(cpu + 2, hard)))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _address_space() -> int | None:
    """Bytes of address space this process maps now (VmSize), or None where /proc cannot say."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _child(fn: Callable[..., Any], args: tuple[Any, ...], write_fd: int) -> int:
    from grader.boundary.fresh import _close_other_fds

    _close_other_fds(keep={0, 1, 2, write_fd})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch = sys.modules.get("torch")  # (not imported here when this process never ran it: a second per child)
    if torch is not None:
        torch.set_num_threads(1)  # (OpenMP's pool does not survive a fork)
    try:
        reply: dict[str, Any] = {"ok": fn(*args)}
        payload = encode(reply)
    except MemoryError:
        return 3
    except Exception as exc:  # noqa: BLE001 - reported to the caller as data
        payload = encode({"error": _words(exc)})
    view = memoryview(payload)
    while view:
        view = view[os.write(write_fd, view):]
    return 0


def _words(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:1000]


def _read_reply(fd: int, deadline: float) -> tuple[bytes, str | None]:
    """Everything the child writes until it closes the pipe: (bytes, None), or (b"", why)."""
    chunks, total = [], 0
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            return b"", "it did not finish in time"
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), None
        total += len(chunk)
        if total > MAX_REPLY_BYTES:
            return b"", f"its result is larger than {MAX_REPLY_BYTES} bytes"
        chunks.append(chunk)


def _reap(pid: int, deadline: float) -> int:
    """The child's wait status once it has ended; killed first if still running at `deadline`."""
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.005)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return os.waitpid(pid, 0)[1]


def _death(status: int, memory: int, seconds: float) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code == -signal.SIGXCPU or code == -signal.SIGKILL:
        return f"it ran out of time ({seconds:g} s)"
    if code == 3 or code == -signal.SIGSEGV or code == -signal.SIGABRT:
        return f"it ran out of memory ({memory / 2**20:g} MiB more than the grader uses)"
    return f"it ended without a result (exit status {code})"
