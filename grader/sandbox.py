"""The sandboxed probe backend: one locked-down subprocess per submission.

`SandboxBackend(folder)` has the `grader.backends.Backend` interface (`call`, `source`,
`close`).  Behind it, `Sandbox` runs `grader.worker` in a child process that imports only the
submission's staged module files and serves probe calls; everything it sends back crosses
`grader.protocol.decode` (size cap, `torch.load(weights_only=True)`, structural type check)
before a test sees it.

Two launchers:

* **bubblewrap** (Debian package ``bubblewrap``): new pid, network, ipc, uts and cgroup
  namespaces (no network at all), read-only bind mounts of the Python installation, its
  site-packages and the system (`/usr`, `/lib*`, a few files of `/etc`), a read-only copy of
  the `grader` package and `tests/probes/` (the *kit bundle*, never the repository, so
  `solutions/`, `tests/hidden/`, other submissions and the results folder are not there),
  the staged submission read-only at ``/submission``, a small private tmpfs at ``/tmp``,
  a cleared environment, all capabilities dropped, ``--die-with-parent``, ``--new-session``.
* **rlimits** (the fallback where bubblewrap is missing or cannot create namespaces): a plain
  subprocess with the same rlimits and uid, no filesystem or network isolation.  The grader
  says so loudly on stderr and in every results.json (``extra_data.sandbox``).

Both: rlimits on memory (data segment and address space), CPU time, processes, file size and open
files, no core
dumps; when the grader runs as root the worker drops to a uid of its own (one per job slot,
allocated with a lock file), so RLIMIT_NPROC binds and every process the submission leaves
behind is killed by uid.  A wall-clock limit per probe call is enforced from outside with
`poll`; the child's stdout/stderr go to a pipe drained into a capped buffer (a flood cannot
block the child or fill the disk).  On a timeout, a crash or a garbage reply the whole
sandbox is killed, that call fails with a plain message (``{"boundary": ...}``), and the next
call starts a fresh sandbox.  A module that hangs or kills the sandbox while being imported
is remembered, so its remaining calls fail at once.  Exit codes and output of the sandbox
are never a verdict: only the trusted tests' assertions are.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import pwd
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, MODULES
from grader.backends import read_module_source
from grader.protocol import MAX_REPLY_BYTES, BoundaryError, ErrorData, decode, encode

BUBBLEWRAP = "bubblewrap"
RLIMITS = "rlimits"

FALLBACK_WARNING = (
    "WARNING: bubblewrap (bwrap) is not available{why}: the sandbox falls back to rlimits alone. "
    "Submissions still run in a separate process with memory, CPU, process, file-size and output "
    "limits and per-call timeouts, but WITHOUT filesystem or network isolation: a submission can "
    "read the solutions, the hidden tests and other files on this machine. Install it "
    "(Debian/Ubuntu: apt-get install -y bubblewrap) before grading real submissions."
)

_HEADER = struct.Struct(">Q")
SANDBOX_FOLDER = "/submission"
SANDBOX_KIT = "/kit"
SANDBOX_TMP = "/tmp"


@dataclass
class Limits:
    """Per-sandbox resource limits (all enforced by the kernel)."""

    data_bytes: int = 4 * 2**30  # memory: RLIMIT_DATA (heap and anonymous mappings, what a memory bomb grows)
    as_bytes: int = 16 * 2**30  # address space, a backstop (file mappings count here: a multi-GB memmap is fine)
    cpu_seconds: int = 600  # CPU time of the whole sandbox (torch import + every call)
    nproc: int = 64  # processes *and threads* of the sandbox uid
    fsize_bytes: int = 256 * 2**20  # largest file the submission may write
    nofile: int = 256
    core: int = 0
    tmpfs_bytes: int = 256 * 2**20  # the private /tmp (bubblewrap only)


@dataclass
class SandboxSettings:
    """How sandboxes are launched and limited.  `grader grade` sets these per job slot."""

    launcher: str = "auto"  # auto | bubblewrap | rlimits
    call_timeout: float = 30.0  # wall seconds per probe call
    import_timeout: float = 30.0  # wall seconds to import one submission module
    startup_timeout: float = 120.0  # wall seconds for the sandbox to start (python + torch)
    submission_budget: float = 900.0  # wall seconds of calls per submission; later calls fail fast
    max_restarts: int = 30  # after this many crashes/timeouts the remaining calls fail fast
    output_cap: int = 64 * 1024  # bytes of the submission's stdout/stderr kept for the log
    limits: Limits = field(default_factory=Limits)
    uid: int | None = None  # sandbox uid when root (None: allocate one from the pool)
    log_path: str | None = None  # where close() writes the captured output (None: nowhere)
    gpu: bool = False  # `grader grade --device cuda`: expose /dev/nvidia*, no memory rlimits (CUDA maps huge ranges)

    @classmethod
    def from_env(cls) -> "SandboxSettings":
        s = cls()
        env = os.environ
        s.launcher = env.get("KIT_SANDBOX_LAUNCHER", s.launcher)
        for name, attr in (("KIT_CALL_TIMEOUT", "call_timeout"), ("KIT_IMPORT_TIMEOUT", "import_timeout"),
                           ("KIT_STARTUP_TIMEOUT", "startup_timeout")):
            if env.get(name):
                setattr(s, attr, float(env[name]))
        s.log_path = env.get("KIT_SANDBOX_LOG") or None
        return s


_settings: SandboxSettings | None = None
_finished: list[dict[str, Any]] = []


def configure(settings: SandboxSettings) -> None:
    """Settings for the SandboxBackends created from now on in this process."""
    global _settings
    _settings = settings


def settings() -> SandboxSettings:
    return _settings if _settings is not None else SandboxSettings.from_env()


def pop_finished() -> list[dict[str, Any]]:
    """Stats of the backends closed since the last call (the grade driver reads them)."""
    out = list(_finished)
    _finished.clear()
    return out


# -- launcher detection -----------------------------------------------------------------------

def _is_root() -> bool:
    return os.geteuid() == 0


def _namespace_flags() -> list[str]:
    flags = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not _is_root():
        flags.append("--unshare-user")  # unprivileged bwrap needs a user namespace
    return flags


_bwrap_state: tuple[bool, str] | None = None


def bwrap_available() -> tuple[bool, str]:
    """(usable, why not): bwrap is installed *and* can create the namespaces we use here."""
    global _bwrap_state
    if _bwrap_state is None:
        exe = shutil.which("bwrap")
        if exe is None:
            _bwrap_state = (False, " (bwrap is not installed)")
        else:
            cmd = [exe, *_namespace_flags(), "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                   "--dev", "/dev", "--tmpfs", "/tmp", "--", "/bin/true"]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
                ok = proc.returncode == 0
                why = "" if ok else f" (bwrap cannot create a sandbox here: {proc.stderr.strip()[:200]})"
            except (OSError, subprocess.TimeoutExpired) as exc:
                ok, why = False, f" (bwrap failed: {exc})"
            _bwrap_state = (ok, why)
    return _bwrap_state


_warned = False


def resolve_launcher(requested: str = "auto") -> tuple[str, str]:
    """(launcher, warning): bubblewrap where usable, else the loud rlimits fallback."""
    global _warned
    if requested == RLIMITS:
        return RLIMITS, FALLBACK_WARNING.format(why=" (the rlimits launcher was requested)")
    ok, why = bwrap_available()
    if ok:
        return BUBBLEWRAP, ""
    if requested == BUBBLEWRAP:
        raise RuntimeError(f"bubblewrap was requested but is not usable{why}")
    warning = FALLBACK_WARNING.format(why=why)
    if not _warned:
        print(warning, file=sys.stderr, flush=True)
        _warned = True
    return RLIMITS, warning


# -- sandbox uids (root only) -----------------------------------------------------------------

UID_BASE = int(os.environ.get("KIT_SANDBOX_UID_BASE", "64100"))
UID_COUNT = 200
_LOCK_DIR = Path(tempfile.gettempdir()) / "kit-sandbox-uids"
_held_uids: dict[int, int] = {}  # uid -> lock fd


def acquire_uid() -> int | None:
    """A sandbox uid that no other grader process on this machine holds (None when not root).

    Held with an flock for the life of this process; any process still running under it (left
    behind by a grader that was killed) is killed first.
    """
    if not _is_root():
        return None
    if _held_uids:
        return next(iter(_held_uids))
    _LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    for uid in range(UID_BASE, UID_BASE + UID_COUNT):
        try:
            pwd.getpwuid(uid)
            continue  # a real account: never borrow it
        except KeyError:
            pass
        fd = os.open(_LOCK_DIR / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _held_uids[uid] = fd
        kill_uid(uid)
        return uid
    raise RuntimeError(f"no free sandbox uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")


def processes_of_uid(uid: int) -> list[int]:
    """Pids whose real uid is `uid` (from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            pids.append(int(entry))
                        break
        except (OSError, ValueError):
            continue
    return pids


def kill_uid(uid: int, attempts: int = 50) -> bool:
    """SIGKILL every process of `uid` (root only); True when none is left.

    A forked helper becomes `uid` and calls kill(-1, SIGKILL): the kernel signals every process
    of that uid in one pass under the tasklist lock, so a fork bomb cannot outrun it.  No exec
    happens after setuid, so RLIMIT_NPROC cannot stop the helper.
    """
    if not _is_root():
        return True
    for _ in range(attempts):
        if not processes_of_uid(uid):
            return True
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.02)
    return not processes_of_uid(uid)


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(pid: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


# -- the kit bundle: what the worker may import -----------------------------------------------

_bundle: Path | None = None


def kit_bundle() -> Path:
    """A read-only copy of `grader/*.py`, `tests/probes/` and the other shipped helpers under
    `tests/` (built once per process).

    The repository itself is never mounted into the sandbox: it holds `solutions/` and
    `tests/hidden/`.  The `grader` package and the probes ship to students anyway.
    """
    global _bundle
    if _bundle is not None and _bundle.is_dir():
        return _bundle
    import compileall

    root = Path(tempfile.mkdtemp(prefix=f"kit-bundle-{os.getpid()}-"))
    (root / "grader").mkdir()
    for src in sorted((KIT_ROOT / "grader").glob("*.py")):
        shutil.copy2(src, root / "grader" / src.name)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    from grader.release import RELEASE_PATHS

    for rel in RELEASE_PATHS:  # what ships under tests/, except the public tests themselves
        src = KIT_ROOT / rel
        if not rel.startswith("tests/") or rel == "tests/public" or not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, root / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, root / rel)
    compileall.compile_dir(str(root), quiet=2)
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    _bundle = root
    atexit.register(shutil.rmtree, root, True)
    return root


def python_mounts() -> list[str]:
    """Folders of the Python installation and its site-packages (mounted read-only)."""
    roots: set[Path] = set()
    exe = Path(sys.executable)
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix, exe.parent.parent,
              Path(os.path.realpath(exe)).parent.parent):
        roots.add(Path(p))
    prefix = Path(sys.prefix).resolve()
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        p = Path(entry).resolve()
        if p == KIT_ROOT or (KIT_ROOT in p.parents and prefix not in (p, *p.parents)):
            continue  # never the repository (solutions/, tests/hidden/)
        roots.add(p)
    out: list[Path] = []
    for p in sorted({r for r in roots}, key=lambda r: len(r.parts)):
        if p in (Path("/"), Path("/tmp")) or str(p).startswith(("/usr/", "/proc/", "/dev/")) or str(p) == "/usr":
            continue  # (a venv under /tmp is fine: it is bound read-only on top of the private /tmp)
        if p == KIT_ROOT or (KIT_ROOT in p.parents and prefix not in (p, *p.parents)):
            continue
        if any(q in p.parents for q in out):
            continue
        out.append(p)
    return [str(p) for p in out]


_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "localtime", "alternatives",
              "passwd", "group")


def bwrap_argv(folder: Path, bundle: Path, limits: Limits, env: dict[str, str]) -> list[str]:
    """The bwrap command line up to `--` (everything read-only except the private /tmp)."""
    argv = [shutil.which("bwrap") or "bwrap", *_namespace_flags(), "--die-with-parent", "--new-session",
            "--cap-drop", "ALL"]
    if _is_root():  # the worker needs these two to drop to its uid; setuid clears them all
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    argv.append("--clearenv")
    for key, value in env.items():
        argv += ["--setenv", key, value]
    binds: list[tuple[str, str]] = [("/usr", "/usr")]
    for p in python_mounts():
        binds.append((p, p))
    binds += [(str(bundle), SANDBOX_KIT), (str(folder), SANDBOX_FOLDER)]
    made: set[str] = {"/"}
    dirs: list[str] = []
    for _, dest in binds:
        for parent in reversed(Path(dest).parents):
            if str(parent) not in made:
                made.add(str(parent))
                dirs.append(str(parent))
    for d in dirs:  # bwrap would create them 0700: the unprivileged sandbox uid must traverse them
        if not (d == SANDBOX_TMP or d.startswith(SANDBOX_TMP + "/")):
            argv += ["--perms", "0755", "--dir", d]
    argv += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for name in _ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(limits.tmpfs_bytes), "--tmpfs", SANDBOX_TMP]
    for d in dirs:  # parents under /tmp (a venv there) are made inside the private tmpfs, after it is mounted
        if d.startswith(SANDBOX_TMP + "/"):
            argv += ["--perms", "0755", "--dir", d]
    for src, dest in binds[1:]:
        argv += ["--ro-bind", src, dest]
    argv += ["--chdir", SANDBOX_TMP, "--"]
    return argv


def sandbox_env(tmp: str, kit: str, gpu: bool = False) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": tmp,
        "TMPDIR": tmp,
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "PYTHONPATH": kit,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    if gpu:
        del env["CUDA_VISIBLE_DEVICES"]
    return env


def gpu_device_binds() -> list[str]:
    """bwrap arguments exposing the NVIDIA device nodes (for the GPU-only grading run)."""
    import glob

    argv: list[str] = []
    for dev in sorted(glob.glob("/dev/nvidia*")):
        if not os.path.isdir(dev):
            argv += ["--dev-bind", dev, dev]
    return argv


# -- captured output --------------------------------------------------------------------------

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


class _Drain(threading.Thread):
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


# -- one sandbox process ----------------------------------------------------------------------

class _Timeout(Exception):
    pass


class _Garbage(Exception):
    pass


class SandboxStartError(Exception):
    """The sandbox could not start (before any student code ran): a grader problem."""


_SIGNAL_WORDS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "floating-point exception",
    signal.SIGABRT: "abort",
    signal.SIGKILL: "killed",
    signal.SIGXCPU: "CPU-time limit exceeded",
    signal.SIGXFSZ: "file-size limit exceeded",
}


class Sandbox:
    """One running worker process; `request()` sends a message and waits for its reply."""

    def __init__(self, folder: Path, settings_: SandboxSettings, launcher: str, uid: int | None,
                 output: CappedBuffer, fault: CappedBuffer):
        self.folder = folder
        self.settings = settings_
        self.launcher = launcher
        self.uid = uid
        self.seq = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.scratch: str | None = None
        self.output = output
        self.fault = fault
        self.fault_mark = 0
        self.drain: _Drain | None = None
        self.dirty = False  # the student's code left processes running: restart before the next call

    # lifecycle ------------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        limits = self.settings.limits
        lim = {"as_bytes": limits.as_bytes, "data_bytes": limits.data_bytes, "cpu_seconds": limits.cpu_seconds,
               "fsize_bytes": limits.fsize_bytes,
               "nofile": limits.nofile, "core": limits.core, "nproc": limits.nproc}
        if self.uid is None and not _is_root():
            # without a uid of our own RLIMIT_NPROC counts all of this user's processes
            lim["nproc"] = limits.nproc + _count_own_processes() if self.launcher == RLIMITS else limits.nproc
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        fault_r, fault_w = os.pipe()
        bundle = kit_bundle()
        if self.launcher == BUBBLEWRAP:
            env = sandbox_env(SANDBOX_TMP, SANDBOX_KIT, gpu=self.settings.gpu)
            folder_inside = SANDBOX_FOLDER
            prefix = bwrap_argv(self.folder, bundle, limits, env)
            if self.settings.gpu:  # insert the device binds before the final "--"
                prefix[-1:-1] = gpu_device_binds()
            cwd = None
        else:
            self.scratch = tempfile.mkdtemp(prefix=f"kit-sandbox-tmp-{os.getpid()}-")
            if self.uid is not None:
                os.chown(self.scratch, self.uid, self.uid)
            env = sandbox_env(self.scratch, str(bundle), gpu=self.settings.gpu)
            folder_inside = str(self.folder)
            prefix = []
            cwd = self.scratch
        argv = [*prefix, sys.executable, "-P", "-m", "grader.worker", "--fd-in", str(req_r), "--fd-out", str(rep_w),
                "--fd-fault", str(fault_w), "--folder", folder_inside, "--limits", json.dumps(lim)]
        if self.uid is not None:
            argv += ["--uid", str(self.uid), "--gid", str(self.uid)]
            if self.launcher == RLIMITS and not all(_others_can_read(p) for p in python_mounts()):
                argv.append("--keep-read-cap")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, env=env, cwd=cwd,
                                         pass_fds=(req_r, rep_w, fault_w), start_new_session=True, close_fds=True)
        except OSError as exc:
            for fd in (req_r, req_w, rep_r, rep_w, out_r, out_w, fault_r, fault_w):
                os.close(fd)
            raise SandboxStartError(f"cannot start the sandbox: {exc}") from None
        for fd in (req_r, rep_w, out_w, fault_w):
            os.close(fd)
        self.req_w, self.rep_r = req_w, rep_r
        os.set_blocking(self.req_w, False)
        self.drain = _Drain(out_r, fault_r, self.output, self.fault)
        self.drain.start()
        try:
            ready = self._read_message(time.monotonic() + self.settings.startup_timeout)
        except (_Timeout, EOFError, _Garbage) as exc:
            detail = self.fault.text()[-500:] or self.output.text()[-1500:]
            self.kill()
            kind = "timed out" if isinstance(exc, _Timeout) else f"failed ({type(exc).__name__}: {exc})"
            raise SandboxStartError(f"the sandbox ({self.launcher}) {kind} while starting; {detail.strip()}") from None
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            self.kill()
            raise SandboxStartError("the sandbox sent no ready message")
        return ready

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> int | None:
        """Kill the sandbox and everything it started; returns the launcher's exit status."""
        rc = None
        if self.proc is not None:
            pid = self.proc.pid
            stragglers = descendants(pid) if self.uid is None else []
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for p in stragglers:  # processes that left the process group (no uid of our own)
                try:
                    os.kill(p, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = None
            self.proc = None
        if self.uid is not None:
            kill_uid(self.uid)
        for fd_name in ("req_w", "rep_r"):
            fd = getattr(self, fd_name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, fd_name, None)
        if self.drain is not None:
            self.drain.join(timeout=5)
            self.drain = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        return rc

    def wait_exit(self, timeout: float) -> int | None:
        """The launcher's exit status if it ends within `timeout` (None if it is still running)."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """Ask the worker to exit, then make sure everything is gone."""
        if self.alive():
            try:
                self._write_message({"op": "bye"}, time.monotonic() + 1.0)
                self.proc.wait(timeout=2)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - killed below either way
                pass
        self.kill()

    # messages ------------------------------------------------------------------------------
    def _write_message(self, message: dict[str, Any], deadline: float) -> None:
        payload = encode(message)
        view = memoryview(_HEADER.pack(len(payload)) + payload)
        poller = _poller(self.req_w, write=True)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                raise _Timeout
            try:
                n = os.write(self.req_w, view)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                raise EOFError from None
            view = view[n:]

    def _read_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        poller = _poller(self.rep_r, write=False)
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                raise _Timeout
            chunk = os.read(self.rep_r, min(n - len(buf), 1 << 20))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def _read_message(self, deadline: float) -> Any:
        (n,) = _HEADER.unpack(self._read_exact(_HEADER.size, deadline))
        if n > MAX_REPLY_BYTES:
            raise _Garbage(f"a reply of {n} bytes (the cap is {MAX_REPLY_BYTES})")
        payload = self._read_exact(n, deadline)
        try:
            return decode(payload)
        except BoundaryError as exc:
            raise _Garbage(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on absurdly nested data
            raise _Garbage(f"{type(exc).__name__} while decoding") from None

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request; the reply dict, or raise _Timeout / EOFError / _Garbage."""
        self.seq += 1
        message = dict(message, seq=self.seq)
        self.fault_mark = self.fault.total
        deadline = time.monotonic() + timeout
        self._write_message(message, deadline)
        answer = self._read_message(deadline)
        if not isinstance(answer, dict) or answer.get("seq") != self.seq or not isinstance(answer.get("reply"), dict):
            raise _Garbage("a reply that does not answer the request")
        reply = answer["reply"]
        if len(reply) != 1 or next(iter(reply)) not in ("ok", "error", "boundary"):
            raise _Garbage("a reply of the wrong shape")
        if "error" in reply:
            try:
                ErrorData.from_dict(reply["error"])
            except Exception as exc:  # noqa: BLE001 - malformed error record
                raise _Garbage(f"a malformed error record ({type(exc).__name__})") from None
        if "boundary" in reply and type(reply["boundary"]) is not str:
            raise _Garbage("a malformed boundary record")
        self.dirty = answer.get("children") is not False
        return reply

    def death_words(self, rc: int | None) -> str:
        """Plain words for why the sandbox died (a message for the student, never a verdict)."""
        words = "your code ended the sandbox process"
        if rc is not None:
            sig = -rc if rc < 0 else (rc - 128 if rc > 128 and self.launcher == BUBBLEWRAP else 0)
            if sig > 0:
                try:
                    name = _SIGNAL_WORDS.get(signal.Signals(sig), signal.Signals(sig).name)
                except ValueError:
                    name = f"signal {sig}"
                words = f"your code crashed the sandbox ({name})"
                if sig == signal.SIGKILL:
                    words = "the sandbox was killed (memory, CPU-time or process limit)"
            else:
                words = f"your code ended the sandbox process (exit status {rc})"
        where = _student_frame(self.fault.text()[self.fault_mark:] if self.fault.total > self.fault_mark else "")
        return words + (f" at {where}" if where else "")


def _poller(fd: int, write: bool) -> Any:
    import select

    p = select.poll()
    p.register(fd, select.POLLOUT if write else select.POLLIN)
    return p


def _others_can_read(path: str) -> bool:
    """Whether any uid can reach `path` (every ancestor searchable by others)."""
    p = Path(path)
    for q in (p, *p.parents):
        try:
            if not os.stat(q).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _count_own_processes() -> int:
    uid = os.getuid()
    return len(processes_of_uid(uid))


def _student_frame(fault_text: str) -> str:
    """The innermost frame in the submission from a faulthandler dump ("memory.py:7 in boom")."""
    import re

    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', fault_text)
    for filename, line, func in frames:  # faulthandler lists the innermost frame first
        name = os.path.basename(filename)
        if name.removesuffix(".py") in MODULES and "/tests/" not in filename and "/grader/" not in filename:
            return f"{name}:{line} in {func}"
    return ""


# -- the backend ------------------------------------------------------------------------------

class SandboxBackend:
    """Probe calls run in a locked-down subprocess; one per submission, restarted after a crash."""

    def __init__(self, folder: Path, settings_: SandboxSettings | None = None):
        self.folder = Path(folder).resolve()
        self.settings = settings_ or settings()
        self.launcher, self.warning = resolve_launcher(self.settings.launcher)
        self.uid = self.settings.uid if self.settings.uid is not None else acquire_uid()
        self.output = CappedBuffer(self.settings.output_cap)
        self.fault = CappedBuffer(16 * 1024)
        self.sandbox: Sandbox | None = None
        self.imported: set[str] = set()
        self.broken: dict[str, str] = {}  # module -> why its import never completes
        self.started_at = time.monotonic()
        self.call_seconds = 0.0
        self.stats: dict[str, Any] = {"launcher": self.launcher, "warning": self.warning, "uid": self.uid,
                                      "starts": 0, "calls": 0,
                                      "timeouts": 0, "crashes": 0, "garbage": 0, "infra_error": "", "events": []}
        self.closed = False

    # Backend interface ------------------------------------------------------------------------
    def source(self, module: str) -> str | None:
        return read_module_source(self.folder, module)

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        self.stats["calls"] += 1
        module = name.partition(".")[0]
        if module in MODULES and not (self.folder / f"{module}.py").is_file():
            return {"error": ErrorData("ModuleNotFoundError", ("ModuleNotFoundError", "ImportError", "Exception"),
                                       f"{module}.py is missing from the submission", True, "").as_dict()}
        if module in self.broken:
            return {"boundary": self.broken[module]}
        if self.stats["infra_error"]:
            return {"boundary": f"the grader could not run your code: {self.stats['infra_error']}"}
        if self.call_seconds > self.settings.submission_budget:
            return {"boundary": f"the submission used up its total time budget ({self.settings.submission_budget:g} s)"}
        if self.stats["timeouts"] + self.stats["crashes"] + self.stats["garbage"] >= self.settings.max_restarts:
            return {"boundary": "the sandbox crashed or timed out too many times; later calls are not run"}
        try:
            sandbox = self._ensure_started()
        except SandboxStartError as exc:
            self.stats["infra_error"] = str(exc)
            return {"boundary": f"the grader could not run your code: {exc}"}
        t0 = time.monotonic()
        try:
            if module in MODULES and module not in self.imported:
                reply = self._request(sandbox, {"op": "import", "module": module}, self.settings.import_timeout,
                                      f"importing {module}.py", module)
                if "ok" not in reply:
                    return reply
                self.imported.add(module)
            return self._request(sandbox, {"op": "call", "name": name, "kwargs": kwargs}, self.settings.call_timeout,
                                 name, None)
        finally:
            self.call_seconds += time.monotonic() - t0

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.sandbox is not None:
            self.sandbox.stop()
            self.sandbox = None
        text = self.output.text()
        self.stats["output_bytes"] = self.output.total
        self.stats["output"] = text
        self.stats["seconds"] = round(time.monotonic() - self.started_at, 3)
        if self.settings.log_path:
            _write_log(Path(self.settings.log_path), self)
        _finished.append(dict(self.stats))

    # internals --------------------------------------------------------------------------------
    def _ensure_started(self) -> Sandbox:
        if self.sandbox is not None and self.sandbox.alive():
            return self.sandbox
        if self.sandbox is not None:
            self.sandbox.kill()
        self.imported.clear()
        sandbox = Sandbox(self.folder, self.settings, self.launcher, self.uid, self.output, self.fault)
        self.stats["starts"] += 1
        sandbox.start()
        self.sandbox = sandbox
        return sandbox

    def _fail(self, kind: str, what: str, message: str, module: str | None) -> dict[str, Any]:
        self.stats[kind] += 1
        self.stats["events"].append({"call": what, "kind": kind, "message": message})
        if module is not None:
            self.broken[module] = f"{message} (while importing {module}.py)"
            return {"boundary": self.broken[module]}
        return {"boundary": message}

    def _request(self, sandbox: Sandbox, message: dict[str, Any], timeout: float, what: str,
                 module: str | None) -> dict[str, Any]:
        try:
            reply = sandbox.request(message, timeout)
            if sandbox.dirty and message["op"] == "call":  # processes left behind: not into the next call
                self.stats["leftovers"] = self.stats.get("leftovers", 0) + 1
                sandbox.kill()
                self.sandbox = None
            return reply
        except _Timeout:
            sandbox.kill()
            self.sandbox = None
            return self._fail("timeouts", what, f"timed out after {timeout:g} s", module)
        except EOFError:
            rc = sandbox.wait_exit(2.0)  # its own exit status first (the words say why), then kill the rest
            sandbox.kill()
            self.sandbox = None
            return self._fail("crashes", what, sandbox.death_words(rc), module)
        except _Garbage as exc:
            sandbox.kill()
            self.sandbox = None
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            return self._fail("garbage", what, f"the sandbox sent back something that is not data: {first}", None)


def _write_log(path: Path, backend: SandboxBackend) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    s = backend.stats
    lines = [f"sandbox: {backend.launcher}", *( [backend.warning] if backend.warning else []),
             f"starts: {s['starts']}  calls: {s['calls']}  timeouts: {s['timeouts']}  crashes: {s['crashes']}  "
             f"garbage replies: {s['garbage']}",
             *(f"event: {e['kind']} in {e['call']}: {e['message']}" for e in s["events"]),
             *( [f"infrastructure error: {s['infra_error']}"] if s["infra_error"] else []),
             f"--- output of the submission ({backend.output.total} bytes; at most {backend.settings.output_cap} kept; "
             "written by student code, not by the grader) ---", backend.output.text()]
    from grader.results import write_atomic

    write_atomic(path, "\n".join(lines))


def settings_dict(s: SandboxSettings) -> dict[str, Any]:
    d = asdict(s)
    d.pop("log_path", None)
    d.pop("uid", None)
    return d
