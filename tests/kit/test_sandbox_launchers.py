"""Every launcher gives the same guarantees (issue 23), checked on each: bubblewrap, landlock, rlimits.

One test per root cause the red team found under ``--sandbox landlock``: a datagram reached a
host service without connect(); one submission reached another's scratch folder and socket;
files in the scratch folders went past the memory cap; the names the grader chose (cgroup,
scratch folders, uid) reached results; a process double-forked in a fresh run outlived it.
Plus: `auto` and ``--sandbox landlock`` refuse Landlock without scopes (ABI < 6) unless a uid
per submission (root) stands in for them, and `grader doctor` says so.

The same attacks, as graded submissions, are cases of `tests/adversarial/isolation.py`, run on
every launcher by the launcher matrix (`tests/kit/test_sandbox.py::test_launcher_matrix`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import stat
import textwrap
import time
from pathlib import Path

import pytest

from grader import sandbox
from grader.sandbox import BUBBLEWRAP, LANDLOCK, RLIMITS, SandboxBackend, SandboxSettings
from grader.sandbox import launchers, seccomp
from tests.kit.test_sandbox import TIMEOUT, _bwrap_or_fail, _landlock_or_fail, workdir  # noqa: F401 (a fixture)

ALL = [BUBBLEWRAP, LANDLOCK, RLIMITS]

#: A submission that does what a test asks (as JSON, through memory.bytes_per_parameter) and says
#: what happened (JSON); checkpointing.load_checkpoint double-forks a process that sleeps.
SPY = textwrap.dedent('''
    import json, os, socket, time

    def bytes_per_parameter(optimizer):
        c = json.loads(optimizer)
        out = {}
        if c["do"] == "send":
            for target in c["targets"]:
                addr = "\\0" + target[1:] if target.startswith("@") else target
                for how in ("sendto", "sendmsg", "pair", "connect", "bind"):
                    try:
                        if how == "pair":
                            s, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
                        else:
                            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                        if how == "sendto":
                            s.sendto(b"leak", addr)
                        elif how in ("sendmsg", "pair"):
                            s.sendmsg([b"leak"], [], 0, addr)
                        elif how == "connect":
                            s.connect(addr)
                        else:
                            s.bind("\\0kit-squat-" + target.replace("/", "_"))
                        out[f"{target} {how}"] = "done"
                    except OSError as exc:
                        out[f"{target} {how}"] = exc.errno
            a, b = socket.socketpair()  # in-process use stays
            a.sendall(b"ping")
            out["pair"] = b.recv(4).decode()
        elif c["do"] == "plant":
            tmp = os.environ["TMPDIR"]
            with open(os.path.join(tmp, "secret"), "w") as f:
                f.write("kit-secret")
            for path, mode in ((tmp, 0o777), (os.path.dirname(tmp), 0o755), (os.path.join(tmp, "secret"), 0o644)):
                try:
                    os.chmod(path, mode)
                    out[f"chmod {mode:o}"] = "done"
                except OSError as exc:
                    out[f"chmod {mode:o}"] = exc.errno
        elif c["do"] == "peek":
            for path in c["paths"]:
                try:
                    out[path] = open(path).read() if not os.path.isdir(path) else os.listdir(path)
                except OSError as exc:
                    out[path] = exc.errno
        elif c["do"] == "fill":
            block = b"x" * 2**22
            fds = []
            for i in range(c["files"]):
                path = os.path.join(os.environ[c["where"]], f"fill{i}")
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                for _ in range(c["mib"] // 4):
                    os.write(fd, block)
                if c.get("unlink"):
                    os.unlink(path)
                    fds.append(fd)
                else:
                    os.close(fd)
            time.sleep(c.get("hold", 2.0))
            out["alive"] = True
        elif c["do"] == "chmod":
            for path in c["paths"]:
                try:
                    os.chmod(path, 0o700)
                    fd = os.open(path, os.O_RDONLY)
                    os.fchmod(fd, 0o700)
                    os.close(fd)
                    os.chown(path, os.getuid(), os.getgid())
                    out[path] = "done"
                except OSError as exc:
                    out[path] = exc.errno
        elif c["do"] == "syscalls":  # each [label, number, args]: 0 where it succeeded, else its errno
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            page = ctypes.create_string_buffer(3 * 4096)
            aligned = (ctypes.addressof(page) + 4095) & ~4095
            keep, fds = [], []

            def pid(value):
                return os.getppid() if value == "ppid" else int(value)

            def arg(a):  # an int, or "kind:value": a pointer to words, a page, a pidfd, a string
                if isinstance(a, int):
                    return ctypes.c_long(a)
                kind, _, value = a.partition(":")
                if kind == "pid":
                    return ctypes.c_long(pid(value))
                if kind == "pidfd":
                    try:
                        fds.append(os.pidfd_open(pid(value) or os.getpid()))
                    except OSError:
                        return ctypes.c_long(-1)  # (a pid another pid namespace hides)
                    return ctypes.c_long(fds[-1])
                if kind == "inotify":
                    fds.append(libc.inotify_init1(0))
                    return ctypes.c_long(fds[-1])
                if kind == "str":
                    keep.append(ctypes.create_string_buffer(value.encode()))
                elif kind == "fd":
                    fds.append(os.open(value, os.O_RDONLY))
                    return ctypes.c_long(fds[-1])
                elif kind == "mymask":
                    keep.append(ctypes.c_uint64(sum(1 << cpu for cpu in os.sched_getaffinity(0) if cpu < 64)))
                else:  # words (rlimit, cpu or node mask, sched_param/attr), the page, pointers to it
                    words = {"page": [aligned], "iov": [aligned, 4096]}.get(kind) or [int(v) for v in value.split(",") if v]
                    keep.append((ctypes.c_uint64 * max(8, len(words)))(*words))
                return ctypes.byref(keep[-1])

            for label, nr, args in c["calls"]:
                ctypes.set_errno(0)
                r = libc.syscall(nr, *[arg(a) for a in args])
                out[label] = 0 if r >= 0 else ctypes.get_errno()
                for fd in fds:
                    os.close(fd)
                fds.clear()
        elif c["do"] == "alive":
            try:
                os.kill(c["pid"], 0)
                out["alive"] = True
            except ProcessLookupError:
                out["alive"] = False
            except OSError as exc:
                out["alive"] = exc.errno
        return json.dumps(out)
''')

CHECKPOINTING = textwrap.dedent('''
    import os, time
    import torch

    _saved = []  # the worker saves first; a fresh process has not

    def save_checkpoint(model, optimizer, iteration, out):
        _saved.append(out)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}, out)

    def load_checkpoint(src, model, optimizer):
        if _saved:
            raise RuntimeError("not in a fresh process")
        r, w = os.pipe()
        middle = os.fork()
        if middle == 0:  # a grandchild in a session of its own, re-parented when the middle one exits
            os.setsid()
            if os.fork() == 0:
                os.close(r)
                os.write(w, str(os.getpid()).encode())
                os.close(w)
                time.sleep(120)
            os._exit(0)
        os.close(w)
        pid = int(os.read(r, 32))
        os.waitpid(middle, 0)
        raise RuntimeError(f"daemon {pid}")
''')


def _available(launcher: str) -> None:
    if launcher == BUBBLEWRAP:
        _bwrap_or_fail()
    elif launcher == LANDLOCK:
        _landlock_or_fail()


def _folder(workdir: Path, name: str) -> Path:
    folder = workdir / name
    folder.mkdir()
    (folder / "memory.py").write_text(SPY)
    (folder / "checkpointing.py").write_text(CHECKPOINTING)
    return folder


def _backend(folder: Path, launcher: str, **kw) -> SandboxBackend:
    settings = SandboxSettings(launcher=launcher, call_timeout=max(TIMEOUT, 20.0), import_timeout=max(TIMEOUT, 20.0),
                               **kw)
    settings.limits.data_bytes = 2**30
    return SandboxBackend(folder, settings)


def _ask(backend: SandboxBackend, **command) -> dict:
    reply = backend.call("memory.bytes_per_parameter", {"optimizer": json.dumps(command)})
    return json.loads(reply["ok"]) if "ok" in reply else reply


# -- 1. no socket address is reachable --------------------------------------------------------------

@pytest.mark.parametrize("launcher", ALL)
def test_no_datagram_or_connection_reaches_a_host_socket(launcher: str, workdir: Path) -> None:
    """A host service's datagram sockets (a path anyone may write to, an abstract name) receive
    nothing: sendto and sendmsg on an unconnected socket, sendmsg with an address on a datagram
    pair, connect, are refused (EACCES) by the seccomp filter on every launcher; so is bind (no
    abstract name squatted where the host's are); a socket pair still talks to itself."""
    _available(launcher)
    tag = secrets.token_hex(4)
    path = workdir / f"host-{tag}.sock"
    by_path, by_name = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    by_path.bind(str(path))
    os.chmod(path, 0o777)
    by_name.bind(f"\0kit-host-{tag}")
    backend = _backend(_folder(workdir, "s"), launcher)
    try:
        got = _ask(backend, do="send", targets=[str(path), f"@kit-host-{tag}"])
    finally:
        backend.close()
    received = []
    for s in (by_path, by_name):
        s.setblocking(False)
        try:
            received.append(s.recv(100))
        except BlockingIOError:
            pass
        s.close()
    assert received == []
    pair = got.pop("pair")
    assert got and set(got.values()) == {13}, got  # EACCES, every one
    assert pair == "ping"


# -- 2. sandboxes cannot reach each other ----------------------------------------------------------

@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_one_sandbox_cannot_reach_another_ones_scratch(launcher: str, workdir: Path) -> None:
    """Two sandboxes at once.  The first leaves a secret in its scratch folder and opens it to
    everyone it can; the second, told the exact paths, can neither read the secret nor list the
    folder or its parent, nor read the first one's environment or descriptors in /proc (no
    hidepid without a mount namespace: a uid of its own, and Landlock's rules, keep them out).  Each scratch folder sits in a parent of its own named at random: as
    root the parent is root's, mode 0710 with the sandbox's group (no other uid can pass), the
    folder the sandbox uid's, 0700; without root Landlock keeps them apart (rlimits then has no
    isolation at all: not tested)."""
    _available(launcher)
    if launcher == RLIMITS and os.geteuid() != 0:
        pytest.skip("rlimits without root: no isolation between sandboxes (the launcher's warning says so)")
    first, second = _backend(_folder(workdir, "a"), launcher), _backend(_folder(workdir, "b"), launcher)
    try:
        _ask(first, do="peek", paths=[])
        scratch = first.sandbox.scratch[0]
        parent = os.path.dirname(scratch)
        info, pinfo = os.stat(scratch), os.stat(parent)
        planted = _ask(first, do="plant")  # (without root its parent is its own uid's: it may chmod it)
        assert re.fullmatch(r"kit-scratch-[\w]{8}", os.path.basename(parent)), parent
        if os.geteuid() == 0:
            assert (pinfo.st_uid, pinfo.st_gid, stat.S_IMODE(pinfo.st_mode)) == (0, first.uid, 0o710)
            assert info.st_uid == first.uid and planted["chmod 755"] == 1  # EPERM: the parent is not its own
        else:
            assert stat.S_IMODE(pinfo.st_mode) == 0o700
        worker = first.sandbox.proc.pid  # (its supervisor: the same uid, the same rules)
        seen = _ask(second, do="peek", paths=[os.path.join(scratch, "secret"), scratch, parent,
                                              os.path.join(parent, "owner"), f"/proc/{worker}/environ",
                                              f"/proc/{worker}/fd", f"/proc/{worker}/cmdline"])
    finally:
        first.close()
        second.close()
    if launcher == RLIMITS:  # (no Landlock: another uid's command line is world-readable, as on any machine)
        assert "grader.sandbox.worker" in seen.pop(f"/proc/{worker}/cmdline")
    assert set(seen.values()) == {13}, seen  # EACCES: every path (the uid, and Landlock's rules)
    assert not os.path.exists(parent)  # removed with the sandbox


@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_the_graders_files_keep_their_modes(launcher: str, workdir: Path) -> None:
    """The kit bundle every later sandbox imports and the submission's staged folder belong to the
    grader: a sandbox cannot chmod them, by path or through a descriptor it opened for reading
    (as root its uid owns neither; under the grader's own uid chmod and chown do nothing)."""
    _available(launcher)
    folder = _folder(workdir, "s")
    bundle = sandbox.kit_bundle()
    targets = [str(bundle), str(bundle / "grader" / "__init__.py"), str(folder)]
    before = [stat.S_IMODE(os.stat(p).st_mode) for p in targets]
    backend = _backend(folder, launcher)
    try:
        got = _ask(backend, do="chmod", paths=targets)
    finally:
        backend.close()
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in targets] == before, got


# -- 3. scratch files count against the caps ----------------------------------------------------------

@pytest.mark.parametrize("cgroup", [True, False])
@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_scratch_files_count_against_the_caps(launcher: str, cgroup: bool, workdir: Path) -> None:
    """The scratch folders on the host hold at most what bubblewrap's tmpfs would (TMPDIR 256 MiB,
    the second one 64 MiB), deleted files kept open included, with or without a memory cgroup (a
    cgroup never refuses page cache: files on disk would hold no limit at all).  Over any of them
    the sandbox is killed, in plain words, and the next call runs in a fresh one."""
    _available(launcher)
    backend = _backend(_folder(workdir, "s"), launcher, cgroup=cgroup)
    attempts = {  # what is written, and the words of the kill
        "to a scratch folder (the limit is 256 MiB": dict(where="TMPDIR", files=5, mib=64),
        "to a scratch folder (the limit is 64 MiB": dict(where="KIT_OTHER_FS_DIR", files=2, mib=48),
        "in files, deleted ones kept open included (the limit is 320 MiB": dict(where="TMPDIR", files=8, mib=48,
                                                                               unlink=True),
    }
    try:
        for what, command in attempts.items():
            t0 = time.monotonic()
            reply = _ask(backend, do="fill", hold=5.0, **command)
            assert "the sandbox was killed" in reply.get("boundary", "") and what in reply["boundary"], (what, reply)
            assert time.monotonic() - t0 < 5.0 + TIMEOUT, what
        assert _ask(backend, do="peek", paths=[]) == {}  # the next call runs
        assert backend.stats["starts"] == len(attempts) + 1
        parents = [os.path.dirname(p) for p in backend.sandbox.scratch]
    finally:
        backend.close()
    assert not any(os.path.exists(p) for p in parents)


@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_scratch_files_count_with_memory_where_no_cgroup_does(launcher: str, workdir: Path) -> None:
    """Without a cgroup the memory cap is watched from outside: resident memory plus the files the
    sandbox holds.  192 MiB of files (under the scratch folders' own limits) with a cap 150 MiB
    above the sandbox's resident memory: killed."""
    _available(launcher)
    backend = _backend(_folder(workdir, "s"), launcher, cgroup=False)
    try:
        _ask(backend, do="peek", paths=[])
        box = backend.sandbox
        resident = sandbox.watch.held_bytes(box._pids())  # (shared pages once: what the watch counts)
        box.monitor.cap = resident + 150 * 2**20
        reply = _ask(backend, do="fill", where="TMPDIR", files=4, mib=48, hold=5.0)
    finally:
        backend.close()
    assert "boundary" in reply and "of memory and files" in reply["boundary"], reply


# -- 4. the names the grader chose say nothing, and never reach a reply ---------------------------------

@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_chosen_names_are_random_and_scrubbed(launcher: str, workdir: Path) -> None:
    """The sandbox's cgroup and scratch folders are named at random (no grader pid, no counter),
    its uid drawn at random from the pool; a reply quoting its cgroup path or a scratch folder
    comes back without them."""
    _available(launcher)
    backend = _backend(_folder(workdir, "s"), launcher)
    try:
        _ask(backend, do="peek", paths=[])
        box = backend.sandbox
        names = [os.path.basename(os.path.dirname(p)) for p in box.scratch]
        cgroup = str(box.cgroup.path) if box.cgroup is not None else None
        if cgroup is not None:
            assert re.fullmatch(r"kit-sandbox-[0-9a-f]{16}", os.path.basename(cgroup)), cgroup
        quoted = backend.scrub(" ".join([*box.scratch, cgroup or "", "4:memory:/x/" + os.path.basename(cgroup or "kit-sandbox-0123456789abcdef")]))
    finally:
        backend.close()
    assert all(re.fullmatch(r"kit-scratch-\w{8}", n) and str(os.getpid()) not in n for n in names), names
    assert "kit-sandbox-" not in quoted and "kit-scratch-" not in quoted, quoted


# -- 5. nothing a fresh run starts outlives it ----------------------------------------------------------

@pytest.mark.parametrize("launcher", ALL)
def test_a_fresh_runs_grandchild_is_gone_before_the_next_call(launcher: str, workdir: Path) -> None:
    """The fresh process of the checkpointing probe double-forks a process in a session of its own
    (re-parented away from the run); it is gone before the next probe call, in the same sandbox
    (the fresh-process template ends what each run leaves), on every launcher."""
    _available(launcher)
    backend = _backend(_folder(workdir, "s"), launcher)
    try:
        reply = backend.call("checkpointing.resume_in_fresh_process", {"seed": 3, "total": 12, "k": 5})
        assert "ok" in reply, reply
        found = re.search(r"daemon (\d+)", json.dumps(reply["ok"]))
        assert found, reply
        after = _ask(backend, do="alive", pid=int(found.group(1)))
        assert after["alive"] is False
        assert backend.stats["starts"] == 1, (backend.stats["events"], backend.stats.get("leftovers"), backend.output.text()[-2000:])
    finally:
        backend.close()


@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_a_process_that_double_forks_away_does_not_outlive_its_sandbox(launcher: str, workdir: Path) -> None:
    """Without a pid namespace (and without root, without a uid of its own) the sandbox's
    supervisor ends every process of the sandbox: one that double-forked and called setsid() is
    gone when the sandbox ends.  Under Landlock the supervisor is out of the submission's reach
    (its scopes); under rlimits only a uid of its own (root) ends them when it is killed."""
    _available(launcher)
    if launcher == RLIMITS and os.geteuid() != 0:
        pytest.skip("rlimits without root: nothing keeps the submission from killing the supervisor")
    folder = _folder(workdir, "s")
    (folder / "memory.py").write_text(SPY + textwrap.dedent('''
        import signal

        def float_format(dtype):
            r, w = os.pipe()
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.write(w, str(os.getpid()).encode())
                    time.sleep(120)
                os._exit(0)
            os.wait()
            daemon = int(os.read(r, 32))
            try:
                os.kill(os.getppid(), signal.SIGKILL)  # the supervisor
                return (1, 1, daemon)
            except OSError:
                return (1, 5, daemon)
    '''))
    backend = _backend(folder, launcher)
    try:
        reply = backend.call("memory.float_format", {"dtype": "float16"})
        assert backend.stats["layers"]["supervisor"] is True
    finally:
        backend.close()
    if launcher == LANDLOCK:
        assert "ok" in reply and reply["ok"][:2] == (1, 5), reply  # the kill was refused
        daemon = reply["ok"][2]
        assert not os.path.exists(f"/proc/{daemon}") or "grader.sandbox.worker" not in _cmdline(daemon)
    else:  # (the supervisor died, the worker with it: the uid is what ends the rest)
        assert sandbox.processes_of_uid(backend.uid) == []


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


# -- 6. other processes are out of reach: a call that names its target acts on the caller alone -------

RLIMIT_CORE = 4
PRIO_PROCESS, PRIO_PGRP, PRIO_USER, SCHED_BATCH = 0, 1, 2, 3
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP, IOPRIO_WHO_USER, IOPRIO_IDLE = 1, 2, 3, 3 << 13
MADV_COLD, KCMP_VM, F_SETLEASE, F_RDLCK, IN_ALL_EVENTS = 20, 1, 1024, 0, 0xFFF

#: Per class of system call: (label, name, arguments) on a target `t` ("ppid", or a pid), in the
#: spy's notation ("pid:T", "pidfd:T", "words:...", "page:", "iov:", "mymask:").
CLASSES = {
    "resource limits": lambda t: [
        ("prlimit64 set", "prlimit64", [f"pid:{t}", RLIMIT_CORE, "words:0,0", 0]),
        ("prlimit64 get", "prlimit64", [f"pid:{t}", RLIMIT_CORE, 0, "words:0,0"])],
    "scheduling": lambda t: [
        ("setpriority", "setpriority", [PRIO_PROCESS, f"pid:{t}", 1]),
        ("sched_setaffinity", "sched_setaffinity", [f"pid:{t}", 8, "words:1"]),
        ("sched_setscheduler", "sched_setscheduler", [f"pid:{t}", SCHED_BATCH, "words:0"]),
        ("sched_setparam", "sched_setparam", [f"pid:{t}", "words:0"]),
        ("sched_setattr", "sched_setattr", [f"pid:{t}", "words:56,0,1", 0])],  # size 56, SCHED_OTHER, nice 1
    "I/O priority": lambda t: [("ioprio_set", "ioprio_set", [IOPRIO_WHO_PROCESS, f"pid:{t}", IOPRIO_IDLE])],
    "memory and process state": lambda t: [
        ("migrate_pages", "migrate_pages", [f"pid:{t}", 64, "words:1", "words:1"]),
        ("move_pages", "move_pages", [f"pid:{t}", 1, "page:", "words:0", "words:0", 0]),
        ("get_robust_list", "get_robust_list", [f"pid:{t}", "words:0", "words:0"]),
        ("kcmp", "kcmp", [f"pid:{t}", f"pid:{t}", KCMP_VM, 0, 0]),
        ("process_madvise", "process_madvise", [f"pidfd:{t}", "iov:", 1, MADV_COLD, 0]),
        ("process_mrelease", "process_mrelease", [f"pidfd:{t}", 0]),
        ("pidfd_getfd", "pidfd_getfd", [f"pidfd:{t}", 0, 0])],
}
#: What 0 means "every process of the caller's process group, or uid" for.
WIDE = {
    "scheduling": [("setpriority PRIO_PGRP", "setpriority", [PRIO_PGRP, 0, 0]),
                   ("setpriority PRIO_USER", "setpriority", [PRIO_USER, 0, 0])],
    "I/O priority": [("ioprio_set IOPRIO_WHO_PGRP", "ioprio_set", [IOPRIO_WHO_PGRP, 0, 0]),
                     ("ioprio_set IOPRIO_WHO_USER", "ioprio_set", [IOPRIO_WHO_USER, 0, 0])],
}
#: The same calls on the caller itself (target 0): they work.
OWN = {
    "resource limits": CLASSES["resource limits"](0),
    "scheduling": [("setpriority", "setpriority", [PRIO_PROCESS, 0, 1]),
                   ("sched_setaffinity", "sched_setaffinity", [0, 8, "mymask:"]),
                   ("sched_setparam", "sched_setparam", [0, "words:0"]),
                   ("sched_setattr", "sched_setattr", [0, "words:56,0,2", 0]),
                   ("sched_setscheduler", "sched_setscheduler", [0, SCHED_BATCH, "words:0"])],
    "I/O priority": CLASSES["I/O priority"](0),
    "memory and process state": [("migrate_pages", "migrate_pages", [0, 64, "words:1", "words:1"]),
                                 ("move_pages", "move_pages", [0, 1, "page:", 0, "words:0", 0]),
                                 ("get_robust_list", "get_robust_list", [0, "words:0", "words:0"])],
}


def _process_state(pid: int) -> dict:
    import ctypes
    import resource

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return {"core": resource.prlimit(pid, RLIMIT_CORE), "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "cpus": sorted(os.sched_getaffinity(pid)), "policy": os.sched_getscheduler(pid),
            "ioprio": libc.syscall(seccomp.syscall_number("ioprio_get"), IOPRIO_WHO_PROCESS, pid)}


@pytest.mark.parametrize("launcher", ALL)
@pytest.mark.parametrize("kind", list(CLASSES))
def test_other_processes_are_out_of_reach(kind: str, launcher: str, workdir: Path) -> None:
    """A call that names the process it acts on (pid, pidfd, process group, uid) reaches the caller
    alone, on every launcher: on the grader (this process, under the same uid without root), a
    process of the grader's, the sandbox's own parent (its supervisor, or bubblewrap's init) and
    another sandbox, each is EPERM (the seccomp filter, before any uid, Landlock or pid namespace
    is asked), and so are the forms that mean every process of the caller's group or uid; the
    grader's process is unchanged; the same calls on the caller itself (0) work.  (The red team's
    k2: RLIMIT_CPU of 1 s set on every process near its pid killed a whole batch under landlock.)"""
    import resource
    import subprocess
    import sys

    _available(launcher)
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    first = second = None
    try:
        resource.prlimit(helper.pid, RLIMIT_CORE, (0, resource.RLIM_INFINITY))
        first, second = _backend(_folder(workdir, "a"), launcher), _backend(_folder(workdir, "b"), launcher)
        _ask(second, do="peek", paths=[])
        targets = {"the grader": os.getpid(), "a process of the grader's": helper.pid, "its own parent": "ppid",
                   "another sandbox": second.sandbox.proc.pid}
        number = seccomp.syscall_number
        calls = [[f"{label} on {who}", number(name), args] for who, t in targets.items()
                 for label, name, args in CLASSES[kind](t)]
        calls += [[label, number(name), args] for label, name, args in WIDE.get(kind, [])]
        own = [[f"own {label}", number(name), args] for label, name, args in OWN[kind]]
        before = _process_state(helper.pid)
        got = _ask(first, do="syscalls", calls=calls + own)
        after = _process_state(helper.pid)
    finally:
        for backend in (first, second):
            if backend is not None:
                backend.close()
        helper.kill()
        helper.wait()
    refused = {k: v for k, v in got.items() if not k.startswith("own ")}
    assert len(refused) == len(calls) and set(refused.values()) == {1}, refused  # EPERM, every one
    assert after == before
    assert {k: v for k, v in got.items() if k.startswith("own ")} == {c[0]: 0 for c in own}, got


@pytest.mark.parametrize("launcher", [LANDLOCK, RLIMITS])
def test_the_graders_files_keep_their_attributes_and_times(launcher: str, workdir: Path) -> None:
    """What a file's owner may do and Landlock does not govern: under the grader's own uid a
    sandbox stored data in the extended attributes of the kit bundle (every later sandbox reads
    it) and of a file outside its rules, and set their times.  Now no attribute is set and no time
    changes (as root the sandbox's uid owns none of them); on every launcher a lease on a file of
    the kit (it would stall the next open for writing) and an inotify watch on the kit's folder
    are EPERM."""
    _available(launcher)
    folder = _folder(workdir, "s")
    bundle = sandbox.kit_bundle()
    outside = workdir / "graders-file"  # the grader's, outside the sandbox's Landlock rules
    outside.write_text("x")
    targets = [str(bundle / "grader" / "__init__.py"), str(folder / "memory.py"), str(outside)]
    times = [os.stat(p).st_mtime_ns for p in targets]
    number = seccomp.syscall_number
    calls = []
    for i, path in enumerate(targets):
        calls += [[f"setxattr {i}", number("setxattr"), [f"str:{path}", "str:user.kit", "str:stash", 5, 0]],
                  [f"utimensat {i}", number("utimensat"), [-100, f"str:{path}", "words:0,0,0,0", 0]]]
    calls += [["lease", number("fcntl"), [f"fd:{targets[0]}", F_SETLEASE, F_RDLCK]],
              ["inotify", number("inotify_add_watch"), ["inotify:", f"str:{bundle}", IN_ALL_EVENTS]]]
    backend = _backend(folder, launcher)
    try:
        got = _ask(backend, do="syscalls", calls=calls)
    finally:
        backend.close()
    assert [os.listxattr(p) for p in targets] == [[], [], []], got
    assert [os.stat(p).st_mtime_ns for p in targets] == times, got
    assert (got["lease"], got["inotify"]) == (1, 1), got


@pytest.mark.parametrize("launcher", ALL)
def test_no_message_queue_reaches_another_sandbox(launcher: str, workdir: Path) -> None:
    """A POSIX message queue outlives its sandbox and, without an IPC namespace or Landlock (which
    refuses it: EACCES), another sandbox opens it by name (rlimits; as root too, with mode 0666):
    mq_open is EPERM on every launcher."""
    _available(launcher)
    backend = _backend(_folder(workdir, "s"), launcher)
    try:
        got = _ask(backend, do="syscalls", calls=[["mq_open", seccomp.syscall_number("mq_open"),
                                                   ["str:kit-stash", os.O_CREAT | os.O_RDWR, 0o666, 0]]])
    finally:
        backend.close()
    assert got == {"mq_open": 1}, got


# -- Landlock without scopes -------------------------------------------------------------------------

def test_landlock_without_scopes_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Landlock below ABI 6 cannot keep a sandbox's signals and abstract sockets to itself: without
    root (no uid per submission) `auto` and ``--sandbox landlock`` refuse it and say why, and so
    does `grader doctor`; as root it is accepted; ABI 6 and later always."""
    from grader.sandbox.doctor import diagnose
    from grader.sandbox import landlock

    monkeypatch.setattr(launchers, "bwrap_available", lambda user_namespace=None: (False, " (emulated: none)"))
    for abi, root, accepted in ((5, False, False), (5, True, True), (6, False, True), (3, True, True)):
        monkeypatch.setattr(landlock, "abi_version", lambda abi=abi: abi)
        monkeypatch.setattr(launchers, "is_root", lambda root=root: root)
        if accepted:
            assert launchers.resolve_launcher("auto")[0] == LANDLOCK
            assert launchers.resolve_launcher(LANDLOCK)[0] == LANDLOCK
            continue
        for requested in ("auto", LANDLOCK):
            with pytest.raises(RuntimeError) as refused:
                launchers.resolve_launcher(requested)
            assert f"ABI {abi}" in str(refused.value) and "root" in str(refused.value)
        assert "--sandbox rlimits" in str(pytest.raises(RuntimeError, launchers.resolve_launcher, "auto").value)
        assert launchers.resolve_launcher(RLIMITS)[0] == RLIMITS  # only by name, with its warning
        report = diagnose(cuda=False)
        assert report["auto"] == "" and "ABI 5" in report["warning"]
        assert report["layers"]["landlock"]["ok"] is False and "refused" in report["layers"]["landlock"]["detail"]


def test_doctor_says_what_the_graders_uid_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Landlock without root runs the sandbox under the grader's uid, and is accepted: `grader doctor`
    says what Landlock and the seccomp filter keep to the sandbox and what remains (`SHARED_UID`);
    as root (a uid per submission) it does not."""
    from grader.sandbox.doctor import diagnose
    from grader.sandbox import landlock, uids

    monkeypatch.setattr(launchers, "bwrap_available", lambda user_namespace=None: (False, " (emulated: none)"))
    monkeypatch.setattr(landlock, "abi_version", lambda: 7)
    for root in (False, True):
        monkeypatch.setattr(launchers, "is_root", lambda root=root: root)
        monkeypatch.setattr(uids, "is_root", lambda root=root: root)
        report = diagnose(cuda=False)
        assert report["auto"] == LANDLOCK and report["layers"]["landlock"]["ok"] is True
        assert (launchers.SHARED_UID in report["layers"]["landlock"]["detail"]) is not root, report["layers"]["landlock"]
    assert "what remains" in launchers.SHARED_UID and "process ids exist" in launchers.SHARED_UID


def test_landlock_refuses_where_the_kit_folder_would_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a mount namespace a sandbox sees the paths Python loads from (its memory, map_files, the
    symlinks to them): with the Python installation inside the kit's folder (a venv in the repository)
    `--sandbox landlock` and `auto` refuse and say why, and `grader doctor` says it (issue 30)."""
    import sys

    from grader.sandbox.doctor import diagnose
    from grader.sandbox import bundle

    _landlock_or_fail()
    monkeypatch.delenv(launchers.SHOW_KIT_ROOT, raising=False)
    if not bundle.kit_root_visible():  # a venv outside the kit: put the kit's folder around it
        monkeypatch.setattr(bundle, "KIT_ROOT", Path(sys.prefix).resolve().parent)
    assert "inside the kit's folder" in bundle.kit_root_visible()
    with pytest.raises(RuntimeError, match="inside the kit's folder.*outside the kit"):
        launchers.resolve_launcher(LANDLOCK)
    monkeypatch.setattr(launchers, "_bwrap_state", (False, " (emulated)"))
    with pytest.raises(RuntimeError, match="inside the kit's folder"):
        launchers.resolve_launcher("auto")
    layer = diagnose(cuda=False)["layers"]["landlock"]
    assert layer["ok"] is False and "inside the kit's folder" in json.dumps(layer), layer


def test_the_kits_install_files_are_out_of_every_sandboxs_reach(workdir: Path) -> None:
    """An editable install leaves files naming the kit's folder in site-packages (its finder, the
    finder's bytecode, direct_url.json): bubblewrap binds /dev/null over each, Landlock leaves them out."""
    from grader import KIT_ROOT
    from grader.sandbox import bundle

    hidden = bundle.kit_install_files()
    for path in hidden:
        assert str(KIT_ROOT) in Path(path).read_text(errors="replace")
    if not any("__editable__" in h for h in hidden):
        pytest.skip("the kit is not installed editable here (pip install -e .): nothing names its folder")
    options = launchers.bwrap_options(workdir, sandbox.kit_bundle(), sandbox.Limits(), {})
    nulled = {options[i + 2] for i, o in enumerate(options) if o == "--ro-bind" and options[i + 1] == "/dev/null"}
    venv = bundle.venv_inside()
    assert nulled == {bundle.SANDBOX_VENV + h[len(venv):] if venv and h.startswith(venv + "/") else h for h in hidden}
    rules = launchers.landlock_rules(workdir, sandbox.kit_bundle(), [])
    for path in hidden:
        assert not any(path == r or path.startswith(r.rstrip("/") + "/") or os.path.realpath(r) == path
                       or path.startswith(os.path.realpath(r) + "/") for r in rules["read"]), path
    assert "/proc/self" not in rules["read"] and "/proc/self/mountinfo" not in rules["read"]
