"""The message channel between the grader and the worker, and the capture of the worker's output.

Requests and replies travel on two dedicated pipes (never stdout/stderr), each message an
8-byte big-endian length followed by a `grader.boundary.messages.encode` payload.  The trusted side
reads with a deadline (`poll`), refuses a length over `MAX_REPLY_BYTES` before reading it, and
decodes with `grader.boundary.messages.decode` (`grader.boundary.wire`'s data-only decoder and a type check).
The worker's stdout/stderr go to one pipe drained into a `CappedBuffer` (first and last part
kept), so a flood can neither block the worker nor fill the disk.
"""

from __future__ import annotations

import os
import select
import selectors
import struct
import threading
import time
from typing import Any

HEADER = struct.Struct(">Q")


class ChannelTimeout(Exception):
    pass


class Garbage(Exception):
    """The worker sent something that is not a well-formed message."""


def _poller(fd: int, write: bool) -> Any:
    p = select.poll()
    p.register(fd, select.POLLOUT if write else select.POLLIN)
    return p


def write_message(fd: int, message: dict[str, Any], deadline: float) -> None:
    """(Trusted side, fd non-blocking) send one message before `deadline` (monotonic)."""
    from grader.boundary.messages import encode

    payload = encode(message)
    view = memoryview(HEADER.pack(len(payload)) + payload)
    poller = _poller(fd, write=True)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            raise ChannelTimeout
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            continue
        except OSError:
            raise EOFError from None
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray()
    poller = _poller(fd, write=False)
    while len(buf) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            raise ChannelTimeout
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def read_message(fd: int, deadline: float, budget: Any = None, module: str = "") -> Any:
    """(Trusted side) one decoded message; ChannelTimeout, EOFError or Garbage otherwise (or
    `grader.boundary.messages.BudgetSpent`: a well-formed reply past `budget`, read whole, so the channel
    stays in step)."""
    from grader.boundary.messages import MAX_REPLY_BYTES, BoundaryError, BudgetSpent, decode

    (n,) = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    if n > MAX_REPLY_BYTES:
        raise Garbage(f"a reply of {n} bytes (the cap is {MAX_REPLY_BYTES})")
    payload = _read_exact(fd, n, deadline)
    try:
        return decode(payload, budget=budget, module=module)
    except BudgetSpent:
        raise
    except BoundaryError as exc:
        raise Garbage(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on absurdly nested data
        raise Garbage(f"{type(exc).__name__} while decoding") from None


class Channel:
    """(Worker side) length-prefixed messages on two pipe fds, blocking."""

    def __init__(self, fd_in: int, fd_out: int):
        self.fd_in = fd_in
        self.fd_out = fd_out

    def send(self, message: dict[str, Any]) -> None:
        from grader.boundary.messages import encode

        payload = encode(message)
        view = memoryview(HEADER.pack(len(payload)) + payload)
        while view:
            n = os.write(self.fd_out, view)
            view = view[n:]

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = os.read(self.fd_in, min(n, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> dict[str, Any]:
        """A request from the grader.  Not `protocol.decode`: its structural check is for replies
        (a request may share sub-lists, e.g. the same case twice), and nothing here is a trust
        boundary (the submission runs in this very process)."""
        from grader.boundary import wire

        (n,) = HEADER.unpack(self._read_exact(HEADER.size))
        return wire.loads(self._read_exact(n))


class CappedBuffer:
    """Keeps the first and the last part of a stream, at most `cap` bytes in all."""

    def __init__(self, cap: int):
        self.head_cap = cap * 3 // 4
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self.lock:
            self.total += len(data)
            room = self.head_cap - len(self.head)
            if room > 0:
                self.head += data[:room]
                data = data[room:]
            if data:
                self.tail += data
                if len(self.tail) > self.tail_cap:
                    del self.tail[: len(self.tail) - self.tail_cap]

    def text(self) -> str:
        with self.lock:
            kept = len(self.head) + len(self.tail)
            middle = f"\n[... {self.total - kept} bytes dropped ...]\n" if self.total > kept else ""
            return (bytes(self.head).decode("utf-8", "replace") + middle
                    + bytes(self.tail).decode("utf-8", "replace"))


class Drain(threading.Thread):
    """Reads the child's output and fault pipes until they close (all writers gone)."""

    def __init__(self, output_fd: int, fault_fd: int, output: CappedBuffer, fault: CappedBuffer):
        super().__init__(daemon=True, name="sandbox-drain")
        self.fds = {output_fd: output, fault_fd: fault}

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        for fd in self.fds:
            sel.register(fd, selectors.EVENT_READ)
        open_fds = set(self.fds)
        try:
            while open_fds:
                for key, _ in sel.select():
                    try:
                        data = os.read(key.fd, 65536)
                    except OSError:
                        data = b""
                    if data:
                        self.fds[key.fd].add(data)
                    else:
                        sel.unregister(key.fd)
                        open_fds.discard(key.fd)
        finally:
            sel.close()
            for fd in self.fds:
                try:
                    os.close(fd)
                except OSError:
                    pass


def grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Best effort: a pipe buffer of `size` bytes (capped by /proc/sys/fs/pipe-max-size)."""
    import fcntl

    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except OSError:
        pass
