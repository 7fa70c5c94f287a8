"""The sandbox zygote's own process (``python -P -m grader.sandbox.zygote_process --fd N``).

Started by `grader.sandbox.zygote.Zygote` inside bubblewrap (see that module for the design and
why it is safe).  `preload` imports what every sandbox needs; `main` then only forks, one child
per request on its control socket, and reports each child's exit status; `_become_sandbox` is
what a child does before any student code: its own namespaces, mounts, init and worker.  No
request ever reaches this process, and it never imports a submission.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import sys
from typing import Any

from grader.sandbox.config import ZYGOTE_INBOX as INBOX

#: Largest control message (a child's configuration, or a report)
MAX_MESSAGE = 1 << 20

# linux/sched.h, linux/mount.h, linux/prctl.h
_CLONE_NEWNS, _CLONE_NEWCGROUP, _CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
_CLONE_NEWIPC, _CLONE_NEWPID, _CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_PR_SET_PDEATHSIG = 1
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2


def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def preload() -> None:
    """Everything a sandbox imports before (and, lazily, while) serving probes: trusted modules
    from the installation and the kit bundle only.  Order as in `grader.sandbox.worker.run`: torch, the
    tripwire, then the rest (imported after the wires, as they would be lazily)."""
    import torch

    torch.set_num_threads(1)
    from grader import MODULES
    from grader.rules import tripwire

    tripwire.install()
    import grader.boundary.serving  # noqa: F401

    for module in MODULES:
        try:
            __import__(f"tests.probes.{module}")
        except Exception:  # noqa: BLE001 - a broken probe module fails its own calls
            pass
    # imported lazily by torch on the first TorchDispatchMode call (1.2 s) and by solutions
    for name in ("torch._dynamo", "torch.utils.flop_counter", "numpy", "einops", "jaxtyping", "beartype"):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a library the machine lacks is imported (and fails) in the child
            pass


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _become_sandbox(config: dict[str, Any], fds: list[int], go: int) -> None:
    """In the forked child, before any student code: wait for the grader (cgroup), take fresh
    namespaces and mounts, and start the sandbox's own init, which starts the worker
    (`grader.sandbox.worker.run`: rlimits, uid, no_new_privs, seccomp, then probe calls).

    Three processes, as under a bubblewrap of its own: this one (in the zygote's pid namespace,
    the grader's handle: it exits with the worker's status), the init (pid 1 of a new pid
    namespace, with its own /proc; when it exits the kernel kills whatever is left in the
    namespace) and the worker (pid 2).  The first two run only this trusted code, as root."""
    req_r, rep_w, fault_w, out_w = fds
    os.setsid()
    for target in (1, 2):
        os.dup2(out_w, target)
    os.close(out_w)
    if os.read(go, 1) != b"g":  # the grader moved us into our cgroup (or gave up: exit)
        os._exit(0)
    os.close(go)
    libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # a cgroup namespace after the move: /proc/self/cgroup shows "/", not the grader's names
    _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWUTS
                        | _CLONE_NEWCGROUP), "unshare")
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "making mounts private")
    from grader.sandbox.config import SANDBOX_FOLDER, SANDBOX_OTHER_FS, SANDBOX_TMP

    sizes = config["tmpfs"]
    for path, size in ((SANDBOX_TMP, sizes["tmp"]), ("/dev/shm", sizes["shm"]), (SANDBOX_OTHER_FS, sizes["shm"])):
        data = f"mode=1777,size={int(size)}".encode()
        _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, data), f"tmpfs at {path}")
    source = f"{INBOX}/{config['inbox_name']}".encode()
    _check(libc.mount(source, SANDBOX_FOLDER.encode(), None, _MS_BIND | _MS_REC, None), "binding the submission")
    _check(libc.mount(None, SANDBOX_FOLDER.encode(), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV,
                      None), "remounting the submission read-only")
    _check(libc.umount2(INBOX.encode(), _MNT_DETACH), "unmounting the inbox")
    # pseudo-terminals of its own (bwrap's /dev/ptmx points into /dev/pts): not the zygote's, which
    # every child would share
    _check(libc.mount(b"devpts", b"/dev/pts", b"devpts", _MS_NOSUID | _MS_NOEXEC,
                      b"newinstance,ptmxmode=0666,mode=620"), "mounting /dev/pts")
    init = os.fork()
    if init == 0:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        _check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None), "mounting /proc")
        for path in (b"/proc/sys", b"/proc/sysrq-trigger", b"/proc/irq", b"/proc/bus"):  # read-only, as bwrap's
            if os.path.exists(path):
                _check(libc.mount(path, path, None, _MS_BIND | _MS_REC, None), f"covering {path.decode()}")
                _check(libc.mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
                                  | _MS_NOEXEC, None), f"covering {path.decode()} read-only")
        os.chdir(SANDBOX_TMP)
        worker = os.fork()
        if worker == 0:
            _fresh_random_state()
            from grader.sandbox import worker as worker_mod

            os._exit(worker_mod.run(config["worker"], req_r, rep_w, fault_w))
        for fd in (req_r, rep_w, fault_w):  # the grader must see EOF when the worker ends
            os.close(fd)
        os._exit(_wait_for(worker, reap_others=True))
    for fd in (req_r, rep_w, fault_w):
        os.close(fd)
    os._exit(_wait_for(init, reap_others=False))


def _wait_for(pid: int, reap_others: bool) -> int:
    """Wait for `pid` (reaping any other child on the way, as an init does); its exit status as a
    shell reports it (128 + the signal that killed it)."""
    while True:
        try:
            done, status = os.waitpid(-1 if reap_others else pid, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if done == pid:
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code


def _fresh_random_state() -> None:
    """Each sandbox starts as a new process would: the global generators of Python, numpy and
    torch seeded from the OS, not the zygote's state (which every child would share)."""
    import random

    random.seed()
    try:
        import numpy as np

        np.random.seed()
    except ImportError:
        pass
    import torch

    torch.seed()


def main(argv: list[str] | None = None) -> int:
    """``python -P -m grader.sandbox.zygote_process --fd N [--mother]``: preload, then fork a child
    per request (a sandbox; or, as the batch's *mother*, a zygote per grading worker)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3) or args[0] != "--fd" or args[2:] not in ([], ["--mother"]):
        print("usage: python -m grader.sandbox.zygote_process --fd N [--mother] (started by the grader)",
              file=sys.stderr)
        return 2
    ctl = socket.socket(fileno=int(args[1]))
    preload()
    # the preloaded heap is never garbage: a child's collections (and pytest-free probes that
    # allocate) then walk only its own objects, and the pages stay shared with the zygote
    gc.collect()
    gc.freeze()
    if args[2:] == ["--mother"]:
        return _mother(ctl)
    return _serve(ctl)


def _serve(ctl: socket.socket) -> int:
    """A zygote's life after its imports: report ready, then fork a sandbox per request on `ctl`
    and report how each ended."""
    if _threads() != 1:  # fork copies only the calling thread: refuse rather than risk a child deadlock
        ctl.send(json.dumps({"ready": False, "why": f"the zygote has {_threads()} threads after its imports"}).encode())
        return 1
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    ctl.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    import select

    while True:
        readable, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        for pid, status in reap_children():  # report every child that ended
            ctl.send(json.dumps({"exit": pid, "status": status}).encode())
        if ctl not in readable:
            continue
        message, fds, _, _ = socket.recv_fds(ctl, MAX_MESSAGE, 5)
        if not message:
            return 0  # the grader went away
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            ctl.send(json.dumps({"forked": None, "why": f"expected 5 descriptors, got {len(fds)}"}).encode())
            continue
        config = json.loads(message)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _keep_only(fds)
                _become_sandbox(config, fds[:4], fds[4])
            except BaseException as exc:  # noqa: BLE001 - the grader sees the start fail
                try:
                    os.write(2, f"the sandbox could not start in the zygote: {type(exc).__name__}: {exc}\n".encode())
                finally:
                    os._exit(70)
        for fd in fds:
            os.close(fd)
        ctl.send(json.dumps({"forked": pid}).encode())


def reap_children() -> list[tuple[int, int]]:
    """(pid, wait status) of every child that has ended, without blocking."""
    ended = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, status))


def _keep_only(fds: list[int]) -> None:
    """Close every descriptor above stderr but `fds` (in a freshly forked child)."""
    keep = set(fds)
    os.closerange(3, min(fds))
    for fd in range(min(fds) + 1, max(fds)):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    os.closerange(max(fds) + 1, 1 << 16)


def _mother(ctl: socket.socket) -> int:
    """The batch's mother zygote: one per `grader grade` run, so that the preload above is paid
    once per batch instead of once per grading worker.  Each request on `ctl` carries one
    descriptor, a socket: the mother forks a child that becomes an ordinary zygote serving on
    that socket alone (`_serve`; it never sees `ctl`).  The mother sends nothing back (several
    grading workers share `ctl`, each writing whole messages); a worker learns from its own
    socket whether its zygote started.  It never forks a sandbox itself."""
    if _threads() != 1:
        return 1  # the workers' requests then go unanswered: they start zygotes of their own
    import select

    while True:
        readable, _, _ = select.select([ctl], [], [], 1.0)
        reap_children()  # the zygotes that ended (their own children are theirs to reap)
        if not readable:
            continue
        message, fds, _, _ = socket.recv_fds(ctl, MAX_MESSAGE, 1)
        if not message:
            return 0  # the batch is over
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                _keep_only(fds)
                code = _serve(socket.socket(fileno=fds[0]))
            except BaseException as exc:  # noqa: BLE001 - the worker sees its zygote fail to start
                os.write(2, f"a zygote could not start in the mother: {type(exc).__name__}: {exc}\n".encode())
            finally:
                os._exit(code)
        os.close(fds[0])


if __name__ == "__main__":
    sys.exit(main())
