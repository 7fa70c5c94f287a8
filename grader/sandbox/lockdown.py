"""The sandbox worker locking itself down, before any student code (steps 1-3 of `grader.sandbox.worker`).

`lock_down` sets the rlimits, drops to the sandbox's uid (a fresh session keyring,
no_new_privs, the parent-death signal armed again), restricts itself with Landlock where the
launcher asks for it and installs the seccomp filter; it returns the layers that are active, for
the worker's ready message.  Only the standard library and `grader.sandbox.landlock` /
`grader.sandbox.seccomp` are imported here (no torch): the worker runs it first.
"""

from __future__ import annotations

import os
import signal
from typing import Any

#: Kernel constants (linux/prctl.h)
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39


def _prctl(option: int, arg: int) -> int:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0))
    except Exception:  # noqa: BLE001 - best effort hardening; the outer limits still hold
        return -1


def apply_limits(limits: dict[str, int]) -> None:
    """Set the rlimits (soft = hard except CPU, whose soft limit sends SIGXCPU first)."""
    import resource

    table = {
        "as_bytes": resource.RLIMIT_AS,
        "data_bytes": resource.RLIMIT_DATA,
        "fsize_bytes": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
        "nproc": resource.RLIMIT_NPROC,
        "core": resource.RLIMIT_CORE,
    }
    for key, which in table.items():
        if key in limits and limits[key] is not None:
            value = int(limits[key])
            resource.setrlimit(which, (value, value))
    if limits.get("cpu_seconds"):
        cpu = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


_PR_SET_KEEPCAPS = 8
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_RAISE = 2
_CAP_DAC_READ_SEARCH = 2


def _keep_read_capability() -> None:
    """Keep only CAP_DAC_READ_SEARCH (also across exec, as an ambient capability).

    Used by the landlock and rlimits launchers when the Python installation is not readable by
    other users (e.g. under /root): the sandbox uid could not even import the standard library
    otherwise.  (open_by_handle_at, which would turn it into reading any file, is refused by the
    seccomp filter; Landlock still limits what can be opened.)
    """
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    bit = 1 << _CAP_DAC_READ_SEARCH
    data = (Data * 2)(Data(bit, bit, bit), Data(0, 0, 0))
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _CAP_DAC_READ_SEARCH, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "raising the ambient capability failed")


def _join_fresh_session_keyring(nr: int | None = None) -> None:
    """A new anonymous session keyring: nothing is shared with the grader's (keyctl is also
    refused by the seccomp filter; this holds where no filter could be installed).  `nr`: keyctl's
    number, found by the grader (looking it up here loads libseccomp, which runs ldconfig, gcc
    and ld inside the sandbox at every start: measured with strace)."""
    try:
        import ctypes

        if nr is None:
            from grader.sandbox.uids import keyctl_nr

            nr = keyctl_nr()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall(int(nr), 1, None)  # KEYCTL_JOIN_SESSION_KEYRING, anonymous
    except Exception:  # noqa: BLE001
        pass


def drop_privileges(uid: int | None, gid: int | None, keep_read: bool = False, keyctl: int | None = None) -> None:
    """Become the sandbox uid/gid (only possible, and only needed, when started as root)."""
    if uid is not None and os.geteuid() == 0:
        if keep_read:
            _prctl(_PR_SET_KEEPCAPS, 1)
        os.setgroups([])
        g = gid if gid is not None else uid
        os.setresgid(g, g, g)
        os.setresuid(uid, uid, uid)
        if keep_read:
            _keep_read_capability()
    _join_fresh_session_keyring(keyctl)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    # a credential change clears the parent-death signal: arm it again, then make sure the
    # parent did not die in between (we would then be adopted and never get the signal)
    _prctl(_PR_SET_PDEATHSIG, 9)


def _seccomp_mode() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Seccomp:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def restrict(rules: dict[str, list[str]]) -> int:
    from grader.sandbox.landlock import restrict

    return restrict(rules["read"], rules["write"], rules.get("devices", []), rules.get("read_write", []),
                    rules.get("list", []))


def lock_down(config: dict[str, Any]) -> dict[str, Any]:
    """Steps 1-3 of `grader.sandbox.worker`; returns the layers that are active (reported in the ready
    message).  With a supervisor (``config["supervisor"]``, see `grader.sandbox.worker.run`) the Landlock
    domain made here is the supervisor's (its rules: ``config["supervisor"]["landlock"]``); the
    worker nests its own (`restrict`)."""
    apply_limits(config.get("limits") or {})
    drop_privileges(config.get("uid"), config.get("gid"), bool(config.get("keep_read_cap")), config.get("keyctl"))
    supervisor = config.get("supervisor")
    if supervisor:
        # the supervisor-to-be ends the sandbox when the grader dies (SIGTERM, Ctrl-C, a hard budget):
        # a catchable parent-death signal (`grader.sandbox.supervisor` catches it and ends every
        # process below it; SIGKILL would end it first, and a double-forked process would outlive it)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if supervisor.get("parent") and os.getppid() != supervisor["parent"]:
            os._exit(128 + signal.SIGTERM)  # the grader died before the signal was armed
    layers: dict[str, Any] = {"uid": os.getuid(), "landlock": 0}
    rules = (config.get("supervisor") or {}).get("landlock") or config.get("landlock")
    if rules:
        layers["landlock"] = restrict(rules)
    if config.get("seccomp"):
        from grader.sandbox.seccomp import load_program

        load_program(bytes.fromhex(config["seccomp"]))
    layers["seccomp"] = _seccomp_mode() == 2
    layers["no_new_privs"] = _prctl(_PR_GET_NO_NEW_PRIVS, 0) == 1
    return layers
