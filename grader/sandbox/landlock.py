"""The Landlock layer: file access limited to a few trees, for machines without namespaces.

Landlock (Linux >= 5.13, unprivileged) lets a process give up access to everything but a list
of file hierarchies; the restriction holds for the process and everything it starts, and
cannot be lifted.  The landlock launcher runs the worker as a plain subprocess (no namespaces
needed: it works inside containers whose seccomp profile refuses them) and the worker calls
`restrict()` on itself, single-threaded, before it imports torch or any submission:

* read (and execute): the Python installation, /usr and /lib*, the few /etc files the loader
  and Python read, the worker's own /proc/PID and a few machine-wide /proc files (not other
  processes': their command lines would show the grader's paths; their memory and environment
  are out of reach anyway, Landlock refuses ptrace-class access outside its domain), CPU
  topology in /sys, /dev/null and the random devices, the kit bundle and the staged submission;
* write: the sandbox's own scratch folder and its second scratch on another filesystem;
* network (ABI >= 4): no TCP bind or connect (seccomp refuses non-unix sockets anyway);
* scopes (ABI >= 6): no signals to processes outside the sandbox (``kill(-1)`` cannot reach
  the grader when it runs under the same uid) and no abstract unix sockets outside it.

There is no maintained Python binding for Landlock, so this module calls the three system
calls (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self) through ctypes.  The
numbers are the same on every architecture (444-446).  Nothing here imports torch or the rest
of the kit: the worker imports it first.
"""

from __future__ import annotations

import ctypes
import os

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

#: Rights that apply to a file (the others only to directories).
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
DEVICE_RW = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV


def fs_rights(abi: int) -> int:
    """Every file-system right this ABI knows (all handled: what is not granted is refused)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The Landlock ABI of this kernel (0: Landlock is missing or disabled)."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    v = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return int(v) if v > 0 else 0


def restrict(read: list[str], write: list[str], devices: list[str] = (), extra_read_write: list[str] = (),
             listed: list[str] = ()) -> int:
    """Restrict this thread (call it single-threaded) and its future children; returns the ABI.

    `read`: trees readable (and executable); `write`: trees fully writable; `devices`: device
    files readable, writable and ioctl-able (/dev/null, the GPU); `listed`: folders whose entries
    may be listed, not read (the way to a file left out).  Missing paths are skipped.
    Raises OSError when Landlock is unavailable or refuses the ruleset.
    """
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = fs_rights(abi)
    attr = _RulesetAttr(handled, (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
                        (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, rights in ((read, READ), (write, handled), (devices, DEVICE_RW),
                              (extra_read_write, READ | WRITE_FILE | TRUNCATE), (listed, READ_DIR)):
            for path in paths:
                _add_rule(libc, ruleset, path, rights & handled)
        if libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        if libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                        ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)
