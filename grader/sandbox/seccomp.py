"""The seccomp layer: system calls a probe never needs and attacks use, refused on every launcher.

The filter is built with libseccomp (the `pyseccomp` binding over the system's libseccomp2),
never as hand-written BPF, and exported as a BPF program:

* bubblewrap installs it with ``--seccomp FD`` right before it execs the worker;
* the landlock and rlimits launchers hand the same program to the worker, which loads it with
  ``prctl(PR_SET_SECCOMP)`` after no_new_privs and before it imports torch or any submission
  (`load_program`; loading a ready BPF program needs no libseccomp inside the sandbox).

Refused (errno, so a probe sees an ordinary OSError): kernel keyrings (state that would outlive
the sandbox), ptrace and process_vm_* (other processes' memory), bpf, perf_event_open,
userfaultfd, io_uring (it would run socket operations past this filter), mount and the new mount
API, unshare/setns/chroot/pivot_root, clone with any namespace flag, clone3 (ENOSYS: its flags
live in memory the filter cannot read, and glibc falls back to clone), memfd_create (memory in
memfd files escapes RLIMIT_DATA/AS), SysV IPC segments (they outlive the process), personality
changes, kexec and kernel modules, open_by_handle_at, POSIX message queues (mq_open: they outlive
the sandbox and, without an IPC namespace or Landlock -- the rlimits launcher -- another sandbox
opens them by name), and sockets of any family but AF_UNIX (no network);
fallocate answers EOPNOTSUPP (it would allocate gigabytes of scratch at once, faster than the
landlock and rlimits launchers' watch can see; glibc's posix_fallocate then writes the blocks);
inotify watches and file leases (F_SETLEASE) are refused (a watch sees the names of files made in
a folder the sandbox may not list; a lease on a file of the kit stalls the next open for writing
of it); where the sandbox runs under the grader's own uid (landlock and rlimits without root),
chmod, chown and a file's times succeed and do nothing, and extended attributes cannot be set or
removed (see `build`).
System calls of another ABI (i386 via int 0x80, x32) kill the process.

Shared file state (issue 30): a file's locks, leases and page-cache residency belong to the file, not to
the process or the namespace that made them, so they cross pid, mount and user namespaces and uids:
one sandbox that locks a byte range of a file every sandbox may read (torch's own headers), or evicts
chosen pages of it from the page cache, writes a message the next sandbox -- at the same time, or a
minute later, the same student's regrade included -- reads back.  Refused: ``flock`` and the fcntl
lock, lease and notification commands (`FILE_LOCK_COMMANDS`: ENOLCK, "no locks here"); the cache
advice (fadvise64, madvise's MADV_COLD and MADV_PAGEOUT: EPERM) and the residency probes (mincore,
cachestat: EPERM; preadv2/pwritev2 with RWF_NOWAIT: EOPNOTSUPP, as where a filesystem lacks it).
Measured first (strace -f of ``grader grade`` on the reference solutions, every module, hidden tests,
under bubblewrap and landlock): the sandboxed workers and their children made none of these calls (the
grader's own flock calls run on the trusted side).  What is left is timing: a page one sandbox *reads*
into the cache is faster for the next to read; `grader doctor` and docs/ARCHITECTURE.md give its
measured bandwidth (bench/page_cache_channel.py).

Other processes: a call that names its target process by an argument acts on the caller alone
(`SELF_ONLY`: the argument must be 0, which the kernel reads as "the caller"; anything else is
EPERM): prlimit64, setpriority (PRIO_PROCESS only: PRIO_USER and PRIO_PGRP with 0 mean every
process of the caller's uid or group), sched_setaffinity, sched_setscheduler, sched_setparam,
sched_setattr, ioprio_set (IOPRIO_WHO_PROCESS only), migrate_pages, move_pages, get_robust_list;
the calls that name it by a pidfd, which no filter can compare with the caller (process_madvise,
process_mrelease, pidfd_getfd), and kcmp are refused.  Under the grader's own uid these calls
reached the grader, its workers and the other sandboxes: the kernel checks only the uid, and
Landlock (up to ABI 7) mediates none of them (measured on Linux 6.18 from a landlock sandbox:
lowering RLIMIT_CPU of the grader's parent killed a whole batch).  migrate_pages, move_pages,
get_robust_list, kcmp and pidfd_getfd are also ptrace-checked, which Landlock does mediate; the
filter refuses them for the rlimits launcher, which has no Landlock.  What stays: signals (kill,
pidfd_send_signal, F_SETOWN's SIGIO) are kept to the sandbox by Landlock's scopes, a pid
namespace or a uid of its own; setpgid only reaches the caller and its children; reading
another process's priority, affinity or process group changes nothing.  Measured (strace -f of
`grader check solutions --sandbox --hidden` under each launcher, as root and as an unprivileged
user): the probes, torch and Python call these only on themselves (pid 0).

No socket reaches an address, on every launcher: connect(), bind() and listen() are refused,
sendto() with a destination (its fifth argument, which the filter can read) is refused, and
sendmsg()/sendmmsg() are refused outright (their destination, msghdr.msg_name, is behind a
pointer no seccomp filter can read).  Without a network namespace (landlock, rlimits) the
host's unix sockets -- path ones such as /dev/log or systemd's notify socket, abstract ones,
another sandbox's -- would otherwise be one datagram away: an unconnected AF_UNIX datagram
socket needs no connect().  What stays: socket(AF_UNIX) and socketpair() (a pair talks only to
itself), send()/recv() on them, and every pipe.  Measured (strace -f of the sandboxed workers
while `grader check solutions --sandbox --hidden` graded all twelve modules): the probes and
torch made none of these calls at all, so nothing a probe needs is refused; fd passing
(SCM_RIGHTS, sendmsg only) goes with sendmsg, and with it the unix socket cycles that could
pin memory past a sandbox's end.
"""

from __future__ import annotations

import errno
import os
from typing import Any

#: Refused outright with EPERM.
DENIED = (
    "add_key", "keyctl", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount2", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "unshare", "setns", "chroot", "pivot_root",
    "memfd_create", "memfd_secret",
    "shmget", "msgget", "semget",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at",
    "acct", "swapon", "swapoff", "reboot", "quotactl", "lookup_dcookie", "fanotify_init",
    "process_madvise", "process_mrelease", "mq_open",
)

PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1
#: Calls that act on a process named by an argument: allowed only on the caller itself.  Each
#: (argument, value) must hold, else EPERM; a target of 0 is "the caller" for all of them.
SELF_ONLY = {
    "prlimit64": ((0, 0),),
    "setpriority": ((0, PRIO_PROCESS), (1, 0)),
    "sched_setaffinity": ((0, 0),),
    "sched_setscheduler": ((0, 0),),
    "sched_setparam": ((0, 0),),
    "sched_setattr": ((0, 0),),
    "ioprio_set": ((0, IOPRIO_WHO_PROCESS), (1, 0)),
    "migrate_pages": ((0, 0),),
    "move_pages": ((0, 0),),
    "get_robust_list": ((0, 0),),
}

#: clone() flags that create namespaces (CLONE_NEWTIME is 0x80, the exit-signal byte of clone():
#: it only reaches the kernel through clone3 or unshare, both refused).
CLONE_NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
AF_UNIX = 1
PERSONALITY_QUERY = 0xFFFFFFFF
#: Refused with EACCES: every call that names a socket address or makes a socket reachable by one
#: (sendto is refused only with a destination: its fifth argument).
ADDRESSED = ("connect", "bind", "listen", "sendmsg", "sendmmsg")
#: A file's mode, owner and times: no-ops where the sandbox runs under the grader's uid (`build`'s `shared_uid`).
OWNERSHIP = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
             "utime", "utimes", "futimesat", "utimensat")
#: Extended attributes, refused where the sandbox runs under the grader's uid (setxattrat and
#: removexattrat, Linux 6.13, by number: newer than Debian 12's libseccomp; the same on every architecture).
XATTR_WRITES = ("setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", 463, 466)
F_SETLEASE = 1024
#: fcntl commands on the state of a file that every opener shares (`SHARED_FILE_STATE` in the module's docstring):
#: record locks (F_GETLK/F_SETLK/F_SETLKW, the same numbers as their 64-bit forms on 64-bit ABIs), open file
#: description locks (F_OFD_*), leases (F_GETLEASE; F_SETLEASE above) and directory notifications (F_NOTIFY).
FILE_LOCK_COMMANDS = {"F_GETLK": 5, "F_SETLK": 6, "F_SETLKW": 7, "F_OFD_GETLK": 36, "F_OFD_SETLK": 37,
                      "F_OFD_SETLKW": 38, "F_GETLEASE": 1025, "F_NOTIFY": 1026}
#: madvise advice that evicts or ages pages of the page cache a file's other readers share.
MADV_COLD, MADV_PAGEOUT = 20, 21
#: preadv2/pwritev2 flag that answers EAGAIN rather than wait for a page: a residency probe.
RWF_NOWAIT = 0x8
#: cachestat (Linux 6.5), by number: newer than Debian 12's libseccomp; the same on every architecture.
CACHESTAT = 451


def available() -> tuple[bool, str]:
    """(usable, why not): libseccomp and its Python binding can build a filter here."""
    try:
        import pyseccomp  # noqa: F401
    except ImportError:
        return False, "the pyseccomp package is missing (pip install pyseccomp)"
    except (OSError, RuntimeError) as exc:
        return False, f"libseccomp is missing ({exc}; apt-get install -y libseccomp2)"
    return True, ""


def build(namespaces_only: bool = False, shared_uid: bool = False) -> Any:
    """The filter as a `pyseccomp.SyscallFilter` (default: allow); the same on every launcher.

    `namespaces_only`: only unshare/setns/clone namespace flags/clone3 (the "container" used to
    test that the grader falls back to Landlock where it cannot create namespaces).
    `shared_uid`: the sandbox runs under the grader's own uid, outside any mount namespace
    (landlock and rlimits without root): what a file's owner may do to it, and Landlock (up to
    ABI 7) does not govern, the sandbox could do to the grader's files (the kit bundle every
    later sandbox imports, other students' staged folders) by their paths, or through a
    descriptor opened for reading: change their mode, owner and times, store data in their
    extended attributes for the next sandbox to read (measured: user.* xattrs on the kit bundle
    and on a file outside Landlock's rules).  There chmod, chown and the utime calls succeed and
    change nothing (so shutil.copy2 still works), and setting or removing an extended attribute
    is EPERM (shutil's copystat ignores EPERM on xattrs); elsewhere a uid of its own or
    read-only mounts refuse them where it matters.
    """
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    f.set_attr(sc.Attr.CTL_NNP, 0)  # no_new_privs is set by the caller (bwrap sets it itself)
    eperm = sc.ERRNO(errno.EPERM)
    denied = ("unshare", "setns") if namespaces_only else DENIED
    for name in denied:
        try:
            f.add_rule(eperm, name)
        except (OSError, RuntimeError, ValueError):
            pass  # a system call this architecture does not have
    for flag in CLONE_NAMESPACE_FLAGS.values():
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    if namespaces_only:
        return f
    f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.NE, AF_UNIX))
    f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    f.add_rule(eperm, "personality", sc.Arg(0, sc.NE, PERSONALITY_QUERY))
    for name in ADDRESSED:  # no socket reaches an address (see the module's docstring)
        f.add_rule(sc.ERRNO(errno.EACCES), name)
    f.add_rule(sc.ERRNO(errno.EACCES), "sendto", sc.Arg(4, sc.NE, 0))  # dest_addr: only NULL (a plain send)
    # gigabytes of scratch in a millisecond, faster than any watch from outside can see (landlock and
    # rlimits: no tmpfs size); glibc's posix_fallocate falls back to writing the blocks on EOPNOTSUPP
    f.add_rule(sc.ERRNO(errno.EOPNOTSUPP), "fallocate")
    for name, required in SELF_ONLY.items():  # other processes are out of reach (see the module's docstring)
        for arg, value in required:
            _add(f, eperm, name, sc.Arg(arg, sc.NE, value))
    f.add_rule(eperm, "inotify_add_watch")
    f.add_rule(eperm, "fcntl", sc.Arg(1, sc.EQ, F_SETLEASE))
    _shared_file_state(f, sc)
    if shared_uid:
        for name in OWNERSHIP:
            _add(f, sc.ERRNO(0), name)  # "done", and nothing done
        for name in XATTR_WRITES:
            _add(f, eperm, name)
    return f


def _shared_file_state(f: Any, sc: Any) -> None:
    """No sandbox changes or reads the state a file keeps for all its openers (see `SHARED_FILE_STATE`)."""
    enolck = sc.ERRNO(errno.ENOLCK)
    f.add_rule(enolck, "flock")
    for command in FILE_LOCK_COMMANDS.values():
        _add(f, enolck, "fcntl", sc.Arg(1, sc.EQ, command))
    eperm = sc.ERRNO(errno.EPERM)
    for name in ("fadvise64", "mincore", CACHESTAT):
        _add(f, eperm, name)
    for advice in (MADV_COLD, MADV_PAGEOUT):
        f.add_rule(eperm, "madvise", sc.Arg(2, sc.EQ, advice))
    for name in ("preadv2", "pwritev2"):
        _add(f, sc.ERRNO(errno.EOPNOTSUPP), name, sc.Arg(5, sc.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT))


def _add(f: Any, action: Any, syscall: str | int, *args: Any) -> None:
    """One rule; a system call this architecture (or this libseccomp, by name) does not have is skipped."""
    try:
        f.add_rule(action, syscall, *args)
    except (OSError, RuntimeError, ValueError):
        pass


_programs: dict[tuple[bool, bool], bytes] = {}


def program(namespaces_only: bool = False, shared_uid: bool = False) -> bytes:
    """The filter as a raw BPF program (an array of struct sock_filter), built once per variant."""
    key = (namespaces_only, shared_uid)
    if key not in _programs:
        r, w = os.pipe()
        try:
            build(namespaces_only, shared_uid).export_bpf(os.fdopen(os.dup(w), "wb"))
        finally:
            os.close(w)
        with os.fdopen(r, "rb") as f:
            _programs[key] = f.read()
    return _programs[key]


def program_fd(namespaces_only: bool = False) -> int:
    """A readable fd holding the program (for ``bwrap --seccomp FD``); the caller closes it."""
    data = program(namespaces_only)
    r, w = os.pipe()
    os.write(w, data)  # a few KiB: fits in the pipe buffer
    os.close(w)
    return r


_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


def load_program(data: bytes) -> None:
    """Install a BPF program exported by `program()` on this process (and every thread/child
    it creates from now on).  Sets no_new_privs first, as the kernel requires without
    CAP_SYS_ADMIN."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    if not data or len(data) % 8:
        raise ValueError("not a BPF program")
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(data, len(data))
    prog = SockFprog(len(data) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def syscall_number(name: str) -> int:
    """The native number of a system call (from libseccomp's tables)."""
    import pyseccomp as sc

    return int(sc.resolve_syscall(sc.Arch.NATIVE, name))


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.sandbox.seccomp --no-namespaces -- CMD...``: run CMD where namespaces
    cannot be created (Docker's default profile does the same), to test the Landlock fallback."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.seccomp")
    parser.add_argument("--no-namespaces", action="store_true", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        parser.error("no command")
    load_program(program(namespaces_only=True))
    os.execvp(cmd[0], cmd)
    return 127  # pragma: no cover


if __name__ == "__main__":
    raise SystemExit(main())
