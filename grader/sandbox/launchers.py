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
  scratch folders (`grader.sandbox.landlock`), plus the seccomp filter (no network, no socket
  address).  Refused where the Python installation lies inside the kit's folder (a venv in the
  repository: `bundle.kit_root_visible`): without a mount namespace the paths it loads from show.  Accepted only where it keeps a sandbox's signals and abstract unix sockets to
  itself: Landlock ABI >= 6 (its scopes), or root (a uid per submission); elsewhere `auto` and
  ``--sandbox landlock`` refuse and say why.  Without root the sandbox runs under the grader's
  own uid (`SHARED_UID` says what that leaves; `landlock_acceptable` why it is accepted).
* **rlimits**: a plain subprocess with the seccomp filter, the rlimits and the uid, but no
  filesystem isolation: only when requested by name, with a loud warning on stderr and in every
  results.json.

What no sandbox can learn (issue 30): the kit's folder, the submissions and results folders, a
grader's pid.  Temporary folders are named at random (`scratch.owned_tempdir`); the worker runs
with -S (no .pth file: an editable install's finder names the kit); both launchers' workers lock
themselves down with Landlock (bubblewrap: `sandbox_rules`, in the sandbox's view), /proc narrowed
to `PROC_FILES` (never the mount table); bubblewrap hides a venv's bin/ and pyvenv.cfg and binds
/dev/null over the kit's install files (`_hide_kit_root`); Landlock leaves them out (`_grants`).

`resolve_launcher("auto")` picks bubblewrap, then landlock; where neither gives the guarantees
above it refuses (RuntimeError with the reasons and the fixes), never silently weaker.  All
three: the same seccomp filter, rlimits, uid drop when root, memory cap (cgroup or watched from
outside, scratch files included), wall-clock limits from outside, and every process of a
sandbox killed when it ends (bubblewrap: its pid namespace; landlock and rlimits: the worker's
supervisor, `grader.sandbox.worker`, and the uid when root).

What the sandbox may read besides the system: the kit bundle and the Python installation
(`grader.sandbox.bundle`); the scratch folders of the landlock and rlimits launchers:
`grader.sandbox.scratch`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.sandbox.bundle import (SANDBOX_VENV, kit_install_files, kit_root_visible, python_mounts, venv_config,
                                   venv_inside)
from grader.sandbox.config import (BUBBLEWRAP, LANDLOCK, LEVELS, RLIMITS, SANDBOX_FOLDER, SANDBOX_KIT, ZYGOTE_INBOX,
                                     SANDBOX_OTHER_FS, SANDBOX_TMP, Limits)
from grader.sandbox.uids import is_root

FALLBACK_WARNING = (
    "WARNING: the sandbox runs with rlimits alone{why}. Submissions still run in a separate process "
    "with memory, CPU, process, file-size and output limits, a seccomp filter (no network) and per-call "
    "timeouts, but WITHOUT filesystem isolation: a submission can read the solutions, the hidden tests "
    "and other files on this machine (and, without root, signal the grader's processes). Use bubblewrap "
    "(apt-get install -y bubblewrap) or Landlock (`grader doctor`) before grading real submissions."
)
LANDLOCK_NOTE = (
    "NOTE: bubblewrap is not usable{why}: the sandbox uses Landlock instead (ABI {abi}): files outside the "
    "Python installation, the kit bundle and the submission cannot be read, no socket address can be reached, "
    "but there are no namespaces (the submission can tell which process ids exist, and sees the paths of the Python "
    "installation, the bundle, its own folders and unix socket names)."
)
#: What a landlock sandbox under the grader's own uid (no root) can still do to, or learn of, the grader's
#: processes and files (measured on Linux 6.18, ABI 7; `grader doctor` and docs/ARCHITECTURE.md, *The sandbox.s guarantees*, say the same).
SHARED_UID = (
    "the sandbox runs under this user's uid: Landlock keeps its signals, ptrace-class access and /proc to itself, "
    "the seccomp filter keeps resource limits, priorities, CPU affinity and I/O priority to itself and makes the mode, "
    "owner, times and extended attributes of this user's files out of its reach; what remains: it can tell which "
    "process ids exist and read their priority, CPU affinity, process group and CPU time, it can stat any path (as "
    "under any uid), and a system call a later kernel adds that acts on another process of the same uid is not in "
    "the filter (as root each submission has a uid of its own)"
)
#: Accept the landlock launcher where a sandbox would learn the kit's folder (`kit_root_visible`):
#: the kit's own tests, run from a venv inside the repository, set it; the launcher matrix does not.
SHOW_KIT_ROOT = "KIT_LANDLOCK_SHOWS_KIT_ROOT"
#: The first Landlock ABI that scopes signals and abstract unix sockets to the sandbox (Linux 6.12).
LANDLOCK_SCOPED_ABI = 6
NO_LAUNCHER = (
    "no sandbox launcher isolates submissions here: bubblewrap is not usable{bwrap_why}, and {landlock_why}. "
    "Run `grader doctor` for the fixes, or accept a sandbox WITHOUT filesystem isolation by asking for it: "
    "grader grade --sandbox rlimits (grader check --sandbox-launcher rlimits)."
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


def landlock_acceptable() -> tuple[int, str]:
    """(Landlock ABI, why not): Landlock is usable *and* gives the launchers' guarantees here.

    Without a uid of its own (root gives each submission one) a sandbox runs under the grader's
    uid: only Landlock's scopes (ABI >= 6) then keep its signals (``kill(-1)``) and its abstract
    unix sockets away from the grader and from other sandboxes, and only they let the sandbox's
    supervisor kill exactly its own processes.  Below that, without root: refused.

    A sandbox under the grader's uid is accepted (ABI >= 6) rather than refused for want of a uid of
    its own: without root nothing can give it one (a user namespace is bubblewrap's, and Landlock is
    for machines that refuse namespaces), and refusing would leave only rlimits, which isolates
    nothing.  What the shared uid would let it reach, Landlock or the seccomp filter stops
    (`grader.sandbox.seccomp`: a call that names another process acts on the caller alone; a file's
    mode, owner, times and extended attributes are out of reach); `SHARED_UID` says what remains."""
    abi, why = landlock_available()
    if not abi:
        return 0, why
    visible = kit_root_visible()
    if visible and os.environ.get(SHOW_KIT_ROOT) != "1":
        return 0, (f"{visible}: make the virtual environment outside the kit (python -m venv /opt/kit-venv) "
                   f"or use bubblewrap ({SHOW_KIT_ROOT}=1 accepts it: the kit's tests do)")
    if abi < LANDLOCK_SCOPED_ABI and not is_root():
        return 0, (f"Landlock ABI {abi} cannot keep a sandbox's signals and abstract unix sockets to itself "
                   f"(ABI {LANDLOCK_SCOPED_ABI}, Linux >= 6.12, can), and without root there is no uid per "
                   "submission to do it")
    return abi, ""


_warned: set[str] = set()


def resolve_launcher(requested: str = "auto") -> tuple[str, str]:
    """(launcher, warning): bubblewrap where usable, else Landlock where it gives the same guarantees
    (`landlock_acceptable`); rlimits only when requested by name.  Raises RuntimeError (the reasons,
    the fixes) rather than pick something weaker than asked."""
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
    abi, why_not = landlock_acceptable()
    if abi:
        return LANDLOCK, _warn_once(LANDLOCK_NOTE.format(why=why, abi=abi))
    if requested == LANDLOCK:
        raise RuntimeError(f"the landlock launcher was requested but {why_not}")
    raise RuntimeError(NO_LAUNCHER.format(bwrap_why=why, landlock_why=why_not[:1].lower() + why_not[1:]))


def _warn_once(text: str) -> str:
    if text not in _warned:
        print(text, file=sys.stderr, flush=True)
        _warned.add(text)
    return text


def level(launcher: str) -> int:
    return LEVELS.index(launcher)


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
    argv += _hide_kit_root(bundle)
    if zygote:
        argv += ["--perms", "0755", "--dir", SANDBOX_FOLDER]
    argv += ["--remount-ro", "/", "--chdir", SANDBOX_TMP]
    return argv


def _hide_kit_root(bundle: Path) -> list[str]:
    """bwrap options that keep the kit's folder out of what the sandbox can read (a venv inside the
    repository is bound at /venv): /venv/bin holds only the interpreter (the scripts' first lines
    name the venv's path), /venv/pyvenv.cfg is `venv_config`'s copy, and /dev/null is bound over the
    files an editable install of the kit left in site-packages (`kit_install_files`).  (The mount
    table names the folders bound, /proc/self/mountinfo: `sandbox_rules` keeps it unreadable.)"""
    from grader import KIT_ROOT

    argv: list[str] = []
    venv = venv_inside()
    if venv:
        argv += ["--tmpfs", f"{SANDBOX_VENV}/bin"]
        for name in sorted(os.listdir(Path(venv) / "bin")):
            src = Path(venv) / "bin" / name
            if not name.startswith("python"):
                continue
            target = os.readlink(src) if src.is_symlink() else ""
            if target and ("/" not in target or not src.resolve().is_relative_to(KIT_ROOT)):
                argv += ["--symlink", target, f"{SANDBOX_VENV}/bin/{name}"]  # to a sibling, or out of the kit
            elif src.exists():
                argv += ["--ro-bind", str(src.resolve()), f"{SANDBOX_VENV}/bin/{name}"]
        argv += ["--remount-ro", f"{SANDBOX_VENV}/bin"]
        cfg = venv_config(bundle)
        if cfg is not None:
            argv += ["--ro-bind", str(cfg), f"{SANDBOX_VENV}/pyvenv.cfg"]
    for path in kit_install_files():
        inside = SANDBOX_VENV + path[len(venv):] if venv and path.startswith(venv + "/") else path
        argv += ["--ro-bind", "/dev/null", inside]
    return argv


#: What a worker may read of /proc (both launchers: the worker locks itself down with Landlock): the
#: files of its own /proc/PID that Python, torch and the kit read (opened by the worker, so "/proc/self"
#: is the worker's; measured with strace -f; libgomp reads maps at import), and the machine-wide files
#: Python and torch read.  Never mountinfo, mounts, mountstats, environ, cmdline or other processes':
#: they name the folders bound into the sandbox and the grader's paths.
PROC_SELF = ("status", "stat", "statm", "maps", "task", "fd")
PROC_FILES = (*(f"/proc/self/{name}" for name in PROC_SELF), "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
              "/proc/filesystems", "/proc/sys/kernel", "/proc/sys/vm")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def sandbox_rules(gpu: bool = False) -> dict[str, list[str]]:
    """The Landlock rules a bubblewrap worker applies to itself, in the sandbox's own view: everything
    bwrap mounts but /proc, of which only `PROC_FILES` (bwrap's namespaces keep the rest of the host
    out already; this keeps the mount table, which names the host folders bound, unreadable)."""
    venv = venv_inside()
    mounts = [SANDBOX_VENV if venv and p == venv else p for p in python_mounts()]
    read = ["/usr", *SYSTEM_TOPS, *(f"/etc/{n}" for n in ETC_FILES), *mounts, *PROC_FILES, SANDBOX_KIT, SANDBOX_FOLDER,
            "/dev"]
    devices, read_write = ["/dev"], []  # (bwrap's own /dev: null, zero, random, tty, ptmx, pts, shm)
    if gpu:
        read.append("/proc/driver/nvidia")
        devices += gpu_devices()
        read_write.append("/proc/self/task")  # (see `landlock_rules`)
    return {"read": read, "write": [SANDBOX_TMP, SANDBOX_OTHER_FS, "/dev/shm"], "devices": devices,
            "read_write": read_write, "list": ["/proc"]}  # (the process ids of its own pid namespace)


def _grants(mounts: list[str], hidden: list[str]) -> tuple[list[str], list[str]]:
    """(trees readable, folders only listable): `mounts` less the files `hidden` (a Landlock rule
    grants a whole tree: the folders on the way to a hidden file are listed, their other entries
    granted one by one)."""
    read, listed = [], []

    def walk(folder: str) -> None:
        listed.append(folder)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            real = os.path.realpath(path)  # (a rule on a symlink grants where it leads: lib64 -> lib)
            if path in hidden or real in hidden or (os.path.islink(path) and any(h.startswith(real + "/") for h in hidden)):
                continue
            if any(h.startswith(path + "/") for h in hidden):
                walk(path)
            else:
                read.append(path)

    for m in mounts:
        if any(h.startswith(m.rstrip("/") + "/") for h in hidden):
            walk(m)
        else:
            read.append(m)
    return read, listed


def landlock_rules(folder: Path, bundle: Path, scratch: list[str], gpu: bool = False) -> dict[str, list[str]]:
    """What the landlock launcher's worker may read and write.  Not /sys/fs/cgroup: the names of
    other sandboxes' cgroups are none of its business (its own /proc/self/cgroup shows its path,
    named at random)."""
    python, listed = _grants(python_mounts(), kit_install_files())
    read = [*python, "/usr", *SYSTEM_TOPS, *(f"/etc/{n}" for n in ETC_FILES), *PROC_FILES,
            "/sys/devices/system/cpu", str(bundle), str(folder)]
    devices = list(DEVICES)
    read_write: list[str] = []
    if gpu:
        read += ["/sys", "/dev/nvidia-caps", "/proc/driver/nvidia"]
        devices += gpu_devices()
        # CUDA's initialisation writes files of the process's own threads (cudaGetDeviceCount fails
        # with error 304 without it: found on an H100, torch 2.11, driver 580); only this process's
        read_write.append("/proc/self/task")
    return {"read": read, "write": list(scratch), "devices": devices, "read_write": read_write, "list": listed}


def supervisor_rules(rules: dict[str, list[str]]) -> dict[str, list[str]]:
    """The Landlock rules of the sandbox's supervisor (`grader.sandbox.worker`): the worker's, with all of
    /proc instead of its own /proc/PID (the worker's domain is nested in the supervisor's, and a
    nested domain only keeps what every enclosing one grants; the supervisor runs no student code)."""
    def widen(paths: list[str]) -> list[str]:
        return sorted({"/proc" if p == "/proc/self" or p.startswith("/proc/self/") else p for p in paths})

    return {**rules, "read": widen(rules["read"]), "read_write": widen(rules.get("read_write", []))}


def sandbox_env(tmp: str, kit: str, other: str, gpu: bool = False, site: list[str] = ()) -> dict[str, str]:
    """The worker's whole environment; `site`: the site-packages folders, in its view (it runs with
    -S: no .pth file runs in it, an editable install's finder names the kit's folder)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": tmp,
        "TMPDIR": tmp,
        "KIT_OTHER_FS_DIR": other,
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join([kit, *site]),
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
