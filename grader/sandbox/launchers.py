"""Launchers: how the worker process is started, and which one this machine can use.

* **bubblewrap**: new pid, network, ipc, uts and cgroup namespaces (a user namespace too when
  the grader is not root), a root made of read-only bind mounts (the Python installation,
  `/usr`, `/lib*`, a few `/etc` files, the kit bundle at ``/kit``, the staged submission at
  ``/submission``) and then remounted read-only; writable only: a private tmpfs ``/tmp``, a
  second small tmpfs ``/scratch`` (another filesystem: ``KIT_OTHER_FS_DIR``) and a small
  ``/dev/shm``.  The bwrap options travel in a pipe (``--args FD``), never on a command line
  that ``/proc/1/cmdline`` would show; the seccomp filter goes in with ``--seccomp FD``.
* **landlock** (no namespaces needed: containers whose seccomp profile refuses them, kernels
  that forbid unprivileged user namespaces): a plain subprocess that restricts itself with
  Landlock to reading the Python installation, the bundle and the submission and writing its
  scratch folders (`grader.sandbox.landlock`), plus the seccomp filter (no network).
* **rlimits**: a plain subprocess with the seccomp filter, the rlimits and the uid, but no
  filesystem isolation: a loud warning on stderr and in every results.json.

`resolve_launcher("auto")` picks bubblewrap, then landlock, then rlimits.  All three: rlimits,
uid drop when root, memory cap (cgroup or watched from outside), wall-clock limits from outside.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader import KIT_ROOT
from grader.sandbox.config import (BUBBLEWRAP, LANDLOCK, LEVELS, RLIMITS, SANDBOX_FOLDER, SANDBOX_KIT, ZYGOTE_INBOX,
                                     SANDBOX_OTHER_FS, SANDBOX_TMP, Limits)
from grader.sandbox.uids import is_root

FALLBACK_WARNING = (
    "WARNING: bubblewrap (bwrap) is not available{why}: the sandbox falls back to rlimits alone. "
    "Submissions still run in a separate process with memory, CPU, process, file-size and output "
    "limits, a seccomp filter (no network) and per-call timeouts, but WITHOUT filesystem isolation: "
    "a submission can read the solutions, the hidden tests and other files on this machine. Install it "
    "(Debian/Ubuntu: apt-get install -y bubblewrap) before grading real submissions."
)
LANDLOCK_NOTE = (
    "NOTE: bubblewrap is not usable{why}: the sandbox uses Landlock instead (ABI {abi}): files outside the "
    "Python installation, the kit bundle and the submission cannot be read, the network is refused, but "
    "there are no namespaces (the submission sees this machine's process list and host paths in /proc)."
)


def namespace_flags() -> list[str]:
    flags = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not is_root():
        flags.append("--unshare-user")  # unprivileged bwrap needs a user namespace
    return flags


_bwrap_state: tuple[bool, str] | None = None


def bwrap_available(user_namespace: bool | None = None) -> tuple[bool, str]:
    """(usable, why not): bwrap is installed *and* can create the namespaces we use here.

    `user_namespace`: also try with (True) or without (False) --unshare-user (the doctor asks
    both); None: the flags the sandbox itself will use (cached)."""
    global _bwrap_state
    if user_namespace is None and _bwrap_state is not None:
        return _bwrap_state
    exe = shutil.which("bwrap")
    if exe is None:
        state = (False, " (bwrap is not installed)")
    else:
        flags = namespace_flags()
        if user_namespace is True and "--unshare-user" not in flags:
            flags.append("--unshare-user")
        if user_namespace is False and "--unshare-user" in flags:
            flags.remove("--unshare-user")
        cmd = [exe, *flags, "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
               "--dev", "/dev", "--tmpfs", "/tmp", "--", "/bin/true"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
            ok = proc.returncode == 0
            why = "" if ok else f" (bwrap cannot create a sandbox here: {proc.stderr.strip()[:200]})"
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, why = False, f" (bwrap failed: {exc})"
        state = (ok, why)
    if user_namespace is None:
        _bwrap_state = state
    return state


def landlock_available() -> tuple[int, str]:
    """(Landlock ABI, why not): 0 when this kernel has no usable Landlock."""
    from grader.sandbox.landlock import abi_version

    try:
        abi = abi_version()
    except OSError as exc:
        return 0, f"Landlock is not available ({exc})"
    if abi < 1:
        return 0, "Landlock is not enabled in this kernel (Linux >= 5.13 with lsm=...,landlock)"
    return abi, ""


_warned: set[str] = set()


def resolve_launcher(requested: str = "auto") -> tuple[str, str]:
    """(launcher, warning): bubblewrap where usable, else Landlock, else the loud rlimits fallback."""
    if requested == RLIMITS:
        return RLIMITS, FALLBACK_WARNING.format(why=" (the rlimits launcher was requested)")
    if requested in ("auto", BUBBLEWRAP):
        ok, why = bwrap_available()
        if ok:
            return BUBBLEWRAP, ""
        if requested == BUBBLEWRAP:
            raise RuntimeError(f"bubblewrap was requested but is not usable{why}")
    else:
        why = " (the landlock launcher was requested)"
    abi, why_not = landlock_available()
    if abi:
        return LANDLOCK, _warn_once(LANDLOCK_NOTE.format(why=why, abi=abi))
    if requested == LANDLOCK:
        raise RuntimeError(f"the landlock launcher was requested but {why_not}")
    return RLIMITS, _warn_once(FALLBACK_WARNING.format(why=why))


def _warn_once(text: str) -> str:
    if text not in _warned:
        print(text, file=sys.stderr, flush=True)
        _warned.add(text)
    return text


def level(launcher: str) -> int:
    return LEVELS.index(launcher)


# -- the kit bundle: what the worker may import -----------------------------------------------

_bundle: Path | None = None


def kit_bundle() -> Path:
    """A read-only copy of the `grader` package (subpackages included), `tests/probes/` and the
    other shipped helpers under `tests/` (built once per process).

    The repository itself is never mounted into the sandbox: it holds `solutions/` and
    `tests/hidden/`.  The `grader` package and the probes ship to students anyway.
    """
    global _bundle
    if _bundle is not None and _bundle.is_dir():
        return _bundle
    import compileall

    root = Path(tempfile.mkdtemp(prefix=f"kit-bundle-{os.getpid()}-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(KIT_ROOT / "grader", root / "grader", ignore=ignore)
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    from grader.release import RELEASE_PATHS

    for rel in RELEASE_PATHS:  # what ships under tests/, except the public tests themselves
        src = KIT_ROOT / rel
        if not rel.startswith("tests/") or rel == "tests/public" or not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, root / rel, ignore=ignore)
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
    """Folders of the Python installation and its site-packages (mounted / readable read-only)."""
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
    for p in sorted(roots, key=lambda r: len(r.parts)):
        if p in (Path("/"), Path("/tmp")) or str(p).startswith(("/usr/", "/proc/", "/dev/")) or str(p) == "/usr":
            continue  # (a venv under /tmp is fine: it is bound read-only on top of the private /tmp)
        if p == KIT_ROOT or (KIT_ROOT in p.parents and prefix not in (p, *p.parents)):
            continue
        if any(q in p.parents for q in out):
            continue
        out.append(p)
    return [str(p) for p in out]


SANDBOX_VENV = "/venv"


def venv_inside() -> str | None:
    """The virtual environment's folder when it lives inside the kit's repository (bubblewrap mounts
    it at /venv, so the worker's command line, /proc/1/cmdline inside, shows no host path)."""
    prefix = Path(sys.prefix).resolve()
    if sys.prefix == sys.base_prefix or KIT_ROOT not in prefix.parents or _exe_in(prefix) is None:
        return None
    return str(prefix) if str(prefix) in python_mounts() else None


def _exe_in(prefix: Path) -> Path | None:
    """sys.executable relative to `prefix` (its folder resolved, not the interpreter symlink)."""
    exe = Path(sys.executable)
    try:
        return (exe.parent.resolve() / exe.name).relative_to(prefix)
    except (ValueError, OSError):
        return None


def sandbox_python(launcher: str) -> str:
    """The interpreter path the worker is started with (inside the sandbox's view)."""
    venv = venv_inside() if launcher == BUBBLEWRAP else None
    if venv:
        return str(Path(SANDBOX_VENV) / _exe_in(Path(venv)))
    return sys.executable


ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "localtime", "alternatives",
             "passwd", "group")
SYSTEM_TOPS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def gpu_devices() -> list[str]:
    import glob

    return [d for d in sorted(glob.glob("/dev/nvidia*")) if not os.path.isdir(d)]


def bwrap_options(folder: Path, bundle: Path, limits: Limits, env: dict[str, str], gpu: bool = False,
                  zygote: bool = False) -> list[str]:
    """The bwrap options (they go through ``--args FD``): everything read-only except the tmpfs.

    `zygote`: the options of the sandbox zygote (`grader.sandbox.zygote`): `folder` is its inbox,
    bound at /kit-inbox, /submission is an empty mount point, and it keeps CAP_SYS_ADMIN to give
    each child fresh mounts (the child's setuid clears it with the others)."""
    argv = [*namespace_flags(), "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if is_root():  # the worker needs these two to drop to its uid; setuid clears them all
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if zygote:
            argv += ["--cap-add", "CAP_SYS_ADMIN"]
    argv.append("--clearenv")
    for key, value in env.items():
        argv += ["--setenv", key, value]
    binds: list[tuple[str, str]] = [("/usr", "/usr")]
    venv = venv_inside()
    for p in python_mounts():
        binds.append((p, SANDBOX_VENV if venv and p == venv else p))
    binds += [(str(bundle), SANDBOX_KIT), (str(folder), ZYGOTE_INBOX if zygote else SANDBOX_FOLDER)]
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
    for top in SYSTEM_TOPS:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for name in ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    if gpu:
        for dev in gpu_devices():
            argv += ["--dev-bind", dev, dev]
    argv += ["--remount-ro", "/dev",
             "--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm",
             "--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", SANDBOX_OTHER_FS,
             "--perms", "1777", "--size", str(limits.tmpfs_bytes), "--tmpfs", SANDBOX_TMP]
    for d in dirs:  # parents under /tmp (a venv there) are made inside the private tmpfs, after it is mounted
        if d.startswith(SANDBOX_TMP + "/"):
            argv += ["--perms", "0755", "--dir", d]
    for src, dest in binds[1:]:
        argv += ["--ro-bind", src, dest]
    if zygote:
        argv += ["--perms", "0755", "--dir", SANDBOX_FOLDER]
    argv += ["--remount-ro", "/", "--chdir", SANDBOX_TMP]
    return argv


#: What the landlock launcher's worker may read of /proc: its own /proc/PID (opened by the worker,
#: so "/proc/self" is the worker's), and the machine-wide files Python and torch read.  Not other
#: processes: their command lines and mount tables would show the grader's paths.
PROC_FILES = ("/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems", "/proc/sys/kernel",
              "/proc/sys/vm")


def landlock_rules(folder: Path, bundle: Path, scratch: list[str], gpu: bool = False) -> dict[str, list[str]]:
    """What the landlock launcher's worker may read and write."""
    read = [*python_mounts(), "/usr", *SYSTEM_TOPS, *(f"/etc/{n}" for n in ETC_FILES), *PROC_FILES,
            "/sys/devices/system/cpu", "/sys/fs/cgroup", str(bundle), str(folder)]
    devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]
    read_write: list[str] = []
    if gpu:
        read += ["/sys", "/dev/nvidia-caps", "/proc/driver/nvidia"]
        devices += gpu_devices()
        # CUDA's initialisation writes files of the process's own threads (cudaGetDeviceCount fails
        # with error 304 without it: found on an H100, torch 2.11, driver 580); only this process's
        read_write.append("/proc/self/task")
    return {"read": read, "write": list(scratch), "devices": devices, "read_write": read_write}


def other_filesystem_dir(scratch: str, uid: int | None) -> str:
    """A second scratch folder on another filesystem than `scratch` (landlock and rlimits).

    /dev/shm (a tmpfs) when the scratch is on disk, else /var/tmp; on the same filesystem only
    where no other writable one exists."""
    dev = os.stat(scratch).st_dev
    for base in ("/dev/shm", "/var/tmp", tempfile.gettempdir()):
        try:
            if os.stat(base).st_dev == dev and base != tempfile.gettempdir():
                continue
            path = tempfile.mkdtemp(prefix=f"kit-sandbox-tmp-{os.getpid()}-other-", dir=base)
        except OSError:
            continue
        if uid is not None:
            os.chown(path, uid, uid)
        return path
    raise OSError("no folder for a second scratch")


def sandbox_env(tmp: str, kit: str, other: str, gpu: bool = False) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": tmp,
        "TMPDIR": tmp,
        "KIT_OTHER_FS_DIR": other,
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
