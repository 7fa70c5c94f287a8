"""The sandboxed probe backend (grader.sandbox + grader.sandbox.worker), driven directly.

A hand-written `memory.py` misbehaves on demand: `float_format(dtype)` hangs, exits, floods
output, segfaults or fork-bombs depending on the dtype; `rounds_to_zero(port, ...)` is a spy
that reports what the sandbox looks like from inside.  Each test checks what the trusted side
sees: a plain message for the broken call, a fresh sandbox for the next one, nothing left
running, nothing reachable that should not be.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import KIT_ROOT, sandbox
from grader.sandbox import BUBBLEWRAP, LANDLOCK, RLIMITS, SandboxBackend, SandboxSettings, launchers
from tests.adversarial.isolation import CONTAINER_NAMES

#: Per-call limit: 4 s on an idle machine, scaled by the load per core (at most 8x), so a memory bomb
#: reaches its limit before the wall clock on a busy 2-core CI machine.
TIMEOUT = round(4.0 * min(8.0, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))), 1)

MODULE = textwrap.dedent(f'''
    import ctypes, json, os, resource, socket, sys, time
    import torch

    def float_format(dtype):
        name = str(dtype).removeprefix("torch.")
        if name == "float16":
            return (1, 5, 10)
        if name == "float32":
            while True:
                pass
        if name == "float64":
            os._exit(3)
        if name == "bfloat16":
            for _ in range(2000):
                print("x" * 5000)
            sys.stderr.write("y" * 1_000_000)
            return (1, 8, 7)
        if name == "float8_e4m3fn":
            ctypes.string_at(0)
        if name == "float8_e5m2":
            while True:
                os.fork()
        if name == "int8":  # 200 MiB held for a moment: what call_measured must see
            block = bytearray(200 * 2**20)
            del block
            return (1, 5, 10)
        if name == "int16":  # shared anonymous memory: invisible to RLIMIT_DATA
            import mmap
            m = mmap.mmap(-1, 6 * 2**30)
            for i in range(0, len(m), 4096):
                m[i] = 1
            return (1, 5, 10)
        if name == "int64":  # host paths quoted in an exception
            seen = []
            for path in ("/proc/1/cmdline", f"/proc/{{os.getppid()}}/cmdline", "/proc/self/mountinfo",
                         "/proc/self/environ"):
                try:
                    seen.append(open(path, "rb").read().replace(b"\\0", b" ").decode(errors="replace")[:400])
                except OSError:
                    pass
            raise RuntimeError(" | ".join([__file__, os.getcwd(), *seen]))
        raise ValueError(name)

    def get_memory_usage(x):
        chunks = []
        while True:
            chunks.append(b"x" * 2**26)

    def storage_bytes(x):
        for fd in range(3, 1024):
            try:
                os.write(fd, b"\\xff" * 64)
            except OSError:
                pass
        return 0

    def rounds_to_zero(port, dtype):
        facts = {{}}
        status = open("/proc/self/status").read()
        for key in ("Uid", "CapEff", "NoNewPrivs"):
            facts[key] = status.split(key + ":")[1].split()[0]
        facts["limits"] = {{name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))[0]
                            for name in ("AS", "DATA", "NPROC", "FSIZE", "CORE", "CPU", "NOFILE")}}
        try:
            facts["root"] = sorted(os.listdir("/"))
        except OSError:
            facts["root"] = None
        facts["env"] = sorted(os.environ)
        facts["threads"] = torch.get_num_threads()
        paths = {{"solutions": "{KIT_ROOT / "solutions"}", "hidden": "{KIT_ROOT / "tests" / "hidden"}",
                  "mutants": "{KIT_ROOT / "tests" / "mutants"}", "repo": "{KIT_ROOT / "pyproject.toml"}",
                  "kit_hidden": "/kit/tests/hidden", "kit_probes": "/kit/tests/probes/memory.py",
                  "kit_grader": "/kit/grader/boundary/messages.py"}}
        facts["exists"] = {{k: os.path.exists(v) for k, v in paths.items()}}
        readable = {{}}
        for k, v in paths.items():
            try:
                os.listdir(v) if os.path.isdir(v) else open(v).read(1)
                readable[k] = True
            except OSError:
                readable[k] = False
        facts["readable"] = readable
        writable = {{}}
        for name in ("/submission/x.py", "/kit/x.py", "/tmp/x", "/usr/x", os.path.dirname(__file__) + "/x.py"):
            try:
                with open(name, "w") as f:
                    f.write("x")
                writable[name] = True
            except OSError:
                writable[name] = False
        facts["writable"] = writable
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
            facts["network"] = True
        except OSError:
            facts["network"] = False
        facts["Seccomp"] = status.split("Seccomp:")[1].split()[0]
        refused = {{}}
        for fam in ("AF_INET", "AF_INET6", "AF_PACKET", "AF_NETLINK", "AF_UNIX"):
            try:
                socket.socket(getattr(socket, fam), socket.SOCK_DGRAM if fam != "AF_PACKET" else socket.SOCK_RAW).close()
                refused[fam] = False
            except OSError:
                refused[fam] = True
        libc = ctypes.CDLL(None, use_errno=True)
        for call, args in (("unshare", (0x10000000,)), ("ptrace", (0, 0, 0, 0)),
                           ("personality", (0x0040000,)), ("shmget", (0, 4096, 0o1600))):
            refused[call] = getattr(libc, call)(*args) == -1
        refused["keyctl"] = libc.syscall({250 if os.uname().machine == "x86_64" else 219}, 0, -4, 0) == -1
        try:
            os.memfd_create("x")
            refused["memfd_create"] = False
        except OSError:
            refused["memfd_create"] = True
        facts["refused"] = refused
        shown = []  # host paths in the command lines and environment the submission can read
        for path in ("/proc/1/cmdline", f"/proc/{{os.getppid()}}/cmdline", "/proc/self/cmdline", "/proc/self/environ"):
            try:
                if "{KIT_ROOT}" in open(path, "rb").read().decode(errors="replace"):
                    shown.append(path)
            except OSError:
                pass
        facts["host_path_shown_in"] = shown
        try:  # a unix socket path that does not exist: ENOENT where connect() is allowed
            socket.socket(socket.AF_UNIX).connect("/run/kit-no-such-socket")
        except OSError as exc:
            facts["unix_connect_errno"] = exc.errno
        try:
            facts["cgroup_dirs"] = os.listdir("/sys/fs/cgroup")
        except OSError:
            facts["cgroup_dirs"] = None
        try:
            facts["own_cgroup"] = open("/proc/self/cgroup").read()
        except OSError:  # (unreadable where Landlock narrows /proc)
            facts["own_cgroup"] = None
        torch.set_num_threads(2)  # threads (clone without namespace flags) still work
        facts["threads_ok"] = float((torch.ones(300, 300) @ torch.ones(300, 300))[0, 0]) == 300.0
        torch.set_num_threads(1)
        other, tmp = os.environ["KIT_OTHER_FS_DIR"], os.environ["TMPDIR"]
        with open(os.path.join(other, "probe"), "w") as f:
            f.write("x")
        facts["other_fs"] = os.stat(other).st_dev != os.stat(tmp).st_dev
        return json.dumps(facts)
''')

HANGS_AT_IMPORT = "while True:\n    pass\n"
IMPORTS_MISSING = "from .views import transpose_view\n\ndef float_format(dtype):\n    return (1, 5, 10)\n"


def _bwrap_or_fail() -> None:
    ok, why = sandbox.bwrap_available()
    if not ok:
        if os.environ.get("KIT_ALLOW_NO_BWRAP") == "1":
            pytest.skip(f"bubblewrap is not usable{why} (KIT_ALLOW_NO_BWRAP=1)")
        pytest.fail(f"bubblewrap is not usable{why}: install it (apt-get install -y bubblewrap), "
                    "or set KIT_ALLOW_NO_BWRAP=1 to accept the rlimits fallback")


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A folder the unprivileged sandbox uid can traverse (pytest's tmp_path is 0700 for root)."""
    path = Path(tempfile.mkdtemp(prefix="kit-test-sandbox-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def submission(workdir: Path) -> Path:
    folder = workdir / "submission"
    folder.mkdir()
    (folder / "memory.py").write_text(MODULE)
    return folder


def _backend(folder: Path, launcher: str = "auto", **kw) -> SandboxBackend:
    settings = SandboxSettings(launcher=launcher, call_timeout=TIMEOUT, import_timeout=TIMEOUT, **kw)
    settings.limits.data_bytes = 2 * 2**30
    return SandboxBackend(folder, settings)


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
                seen.append(str(addr))
                conn.close()
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield srv.getsockname()[1], seen
    stop.set()
    thread.join()
    srv.close()


def _leftovers(backend: SandboxBackend) -> list[int]:
    if backend.uid is not None:
        return sandbox.processes_of_uid(backend.uid)
    from grader.boundary import fresh

    template = fresh.current()  # (this pytest's own fresh-process template, grader.testing.pytest_plugin's)
    return [p for p in sandbox.descendants(os.getpid()) if template is None or p != template.pid]


def _spy(backend: SandboxBackend, port: int) -> dict:
    reply = backend.call("memory.rounds_to_zero", {"cases": [[port, "float32"]]})
    assert "ok" in reply, reply
    return json.loads(reply["ok"][0])


def _landlock_or_fail() -> None:
    abi, why = sandbox.landlock_available()
    if not abi:
        if os.environ.get("KIT_ALLOW_NO_LANDLOCK") == "1":
            pytest.skip(f"{why} (KIT_ALLOW_NO_LANDLOCK=1)")
        pytest.fail(f"{why}: the landlock launcher cannot be tested here (KIT_ALLOW_NO_LANDLOCK=1 skips it)")


def launcher_python_hidden() -> bool:
    """The worker's interpreter path shows no host path of the kit (a venv inside the repository is
    mounted at /venv; an interpreter elsewhere is not the kit's path anyway)."""
    return str(KIT_ROOT) not in sandbox.bundle.sandbox_python(BUBBLEWRAP)


REFUSED = {"AF_INET": True, "AF_INET6": True, "AF_PACKET": True, "AF_NETLINK": True, "AF_UNIX": False,
           "unshare": True, "keyctl": True, "ptrace": True, "personality": True, "shmget": True, "memfd_create": True}


@pytest.mark.parametrize("launcher", [BUBBLEWRAP, LANDLOCK])
def test_isolation_seen_from_inside(launcher: str, submission: Path, server: tuple[int, list[str]]) -> None:
    _bwrap_or_fail() if launcher == BUBBLEWRAP else _landlock_or_fail()
    port, seen = server
    backend = _backend(submission, launcher=launcher)
    try:
        assert backend.launcher == launcher
        facts = _spy(backend, port)
        layers = backend.stats["layers"]
    finally:
        backend.close()
    if launcher == BUBBLEWRAP:
        assert backend.warning == ""
        assert facts["exists"] == {"solutions": False, "hidden": False, "mutants": False, "repo": False,
                                   "kit_hidden": False, "kit_probes": True, "kit_grader": True}
        # (where Landlock is, the worker lists nothing it was not given: not even /)
        assert set(facts["root"] or ()) <= {"usr", "bin", "lib", "lib64", "lib32", "libx32", "sbin", "etc", "proc", "dev",
                                      "tmp", "kit", "submission", "scratch", "venv", *Path(KIT_ROOT).parts[1:2], "root",
                                      "kit-inbox",  # (empty: a zygote's child unmounted it)
                                      "opt", "home"}
        assert facts["root"] is None or not sandbox.landlock_available()[0], facts["root"]
        assert facts["writable"] == {"/submission/x.py": False, "/kit/x.py": False, "/tmp/x": True, "/usr/x": False}
    else:  # no namespaces: the host's paths, but only the allowed trees can be opened
        assert "Landlock" in backend.warning and layers["landlock"] >= 1
        assert facts["root"] is None  # not even the listing of /
        assert {k: v for k, v in facts["readable"].items() if not k.startswith("kit_")} == {
            "solutions": False, "hidden": False, "mutants": False, "repo": False}
        assert not any(facts["writable"].values()), facts["writable"]  # /tmp itself is not the scratch
    assert facts["network"] is False and seen == []
    assert facts["refused"] == REFUSED and facts["Seccomp"] == "2" and facts["threads_ok"] is True
    if launcher == LANDLOCK:  # other processes' /proc is out of reach; its own interpreter path is the host's
        assert set(facts["host_path_shown_in"]) <= {"/proc/self/cmdline"}, facts["host_path_shown_in"]
    elif launcher_python_hidden():  # (/proc/1 is bwrap itself, running the worker)
        assert facts["host_path_shown_in"] == []
    assert facts["other_fs"] is True  # KIT_OTHER_FS_DIR is writable and on another filesystem than TMPDIR
    # connect() refused on every launcher (the same filter: no socket address is reachable)
    assert facts["unix_connect_errno"] == errno.EACCES
    # no /sys/fs/cgroup (other sandboxes' cgroup names), and its own cgroup's name tells nothing
    assert facts["cgroup_dirs"] is None, facts["cgroup_dirs"]
    assert not re.search(rf"\b{os.getpid()}\b|kit-sandbox-\d+-\d+", facts["own_cgroup"] or ""), facts["own_cgroup"]
    # /proc is narrowed to what Python, torch and the kit read wherever Landlock is (issue 30)
    assert facts["own_cgroup"] is None or not sandbox.landlock_available()[0]
    assert facts["CapEff"] in ("0000000000000000", "0000000000000004") and facts["NoNewPrivs"] == "1"
    if launcher == BUBBLEWRAP:
        assert facts["CapEff"] == "0000000000000000"
    if os.geteuid() == 0:
        assert int(facts["Uid"]) == backend.uid != 0 and layers["uid_drop"] is True
    assert layers["seccomp"] is True and layers["no_new_privs"] is True
    limits = facts["limits"]
    assert limits["DATA"] == 2 * 2**30 and limits["AS"] == sandbox.Limits().as_bytes
    # (without a uid of its own, RLIMIT_NPROC also counts the processes the user already has)
    assert limits["CORE"] == 0 and (limits["NPROC"] == 64 if os.geteuid() == 0 else limits["NPROC"] >= 64)
    assert limits["FSIZE"] == sandbox.Limits().fsize_bytes and limits["CPU"] == sandbox.Limits().cpu_seconds
    assert facts["threads"] == 1
    assert not any(k.startswith(("PYTEST", "VIRTUAL_ENV")) for k in facts["env"])
    assert not [k for k in facts["env"] if k.startswith("KIT_") and k != "KIT_OTHER_FS_DIR"]
    assert not (submission / "x.py").exists()


@pytest.mark.parametrize("launcher", [BUBBLEWRAP, LANDLOCK])
def test_host_paths_are_scrubbed_from_messages(launcher: str, submission: Path) -> None:
    _bwrap_or_fail() if launcher == BUBBLEWRAP else _landlock_or_fail()
    backend = _backend(submission, launcher=launcher)
    try:
        reply = backend.call("memory.float_format", {"dtype": "int64"})
    finally:
        backend.close()
    text = reply["error"]["message"]
    assert "memory.py" in text
    for host in (str(KIT_ROOT), str(submission), str(submission.parent), str(sandbox.kit_bundle())):
        assert host not in text, (host, text)


def test_call_measured_sees_the_peak_from_outside(submission: Path) -> None:
    for use_cgroup in (True, False):
        backend = _backend(submission, cgroup=use_cgroup)
        try:
            reply, mem = backend.call_measured("memory.float_format", {"dtype": "int8"})
            small, mem_small = backend.call_measured("memory.float_format", {"dtype": "float16"})
        finally:
            backend.close()
        assert reply == small == {"ok": (1, 5, 10)}
        cgroup = use_cgroup and os.geteuid() == 0 and sandbox.cgroups_available()[0]
        assert mem["method"].startswith("cgroup" if cgroup else "VmRSS"), mem
        assert 190 * 2**20 <= mem["peak_growth_bytes"] < 320 * 2**20, mem  # 200 MiB, sampled: a page or two may be missed
        assert 0 <= mem_small["peak_growth_bytes"] < 40 * 2**20, mem_small


def test_ballast_freed_during_a_measured_call_hides_nothing(workdir: Path) -> None:
    """300 MiB held since the import (and 100 MiB more from an earlier call), freed at the start of
    the measured call, which then allocates 200 MiB: the growth still shows the 200 MiB (the call
    runs in a fresh sandbox, measured from before the import)."""
    folder = workdir / "ballast"
    folder.mkdir()
    (folder / "memory.py").write_text(textwrap.dedent("""
        BALLAST = [bytearray(b"x" * (300 * 2**20))]

        def float_format(dtype):
            if str(dtype) == "torch.float16":  # an earlier call: more ballast
                BALLAST.append(bytearray(b"x" * (100 * 2**20)))
                return (1, 5, 10)
            BALLAST.clear()
            block = bytearray(b"y" * (200 * 2**20))
            del block
            return (1, 5, 10)
    """))
    for use_cgroup in (True, False):
        backend = _backend(folder, cgroup=use_cgroup)
        try:
            assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
            reply, mem = backend.call_measured("memory.float_format", {"dtype": "int8"})
        finally:
            backend.close()
        assert reply == {"ok": (1, 5, 10)}
        assert mem["peak_growth_bytes"] >= 190 * 2**20, mem


def test_memory_invisible_to_rlimits_is_capped(submission: Path) -> None:
    """6 GiB of shared anonymous memory (RLIMIT_DATA does not count it) against a 1 GiB cap:
    the cgroup's limit, or the watch from outside, kills the sandbox; the next call runs."""
    for use_cgroup in (True, False):
        backend = _backend(submission, cgroup=use_cgroup)
        backend.settings.limits.memory_bytes = 2**30
        try:
            reply = backend.call("memory.float_format", {"dtype": "int16"})
            assert "boundary" in reply and "killed" in reply["boundary"], reply
            assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
        finally:
            backend.close()
        assert _leftovers(backend) == []


def test_kernel_state_of_a_uid_does_not_outlive_its_sandbox() -> None:
    """Keys, SysV segments and /dev/shm files a uid holds are cleared when it goes back to the
    pool, and two backends in a row never share a uid (root only: a uid per submission)."""
    if os.geteuid() != 0:
        pytest.skip("uids of their own need root")
    from grader.sandbox import uids

    uid = uids.lease_uid()
    code = textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        assert libc.syscall(248, b"user", b"kit-left", b"secret", 6, -4) > 0  # add_key to the user keyring
        assert libc.shmget(0x4b495431, 4096, 0o1600) >= 0
        open("/dev/shm/kit-left-behind", "w").write("x")
        """)
    rc = uids._as_uid(uid, lambda: exec(code) or 0)
    assert rc == 0
    state = uids.uid_state(uid)
    assert state["keys"] >= 1 and state["sysvipc"] and state["files"], state
    uids.release_uid(uid)
    assert uids.uid_state(uid) == {"keys": 0, "sysvipc": [], "files": []}
    first = SandboxBackend(Path(tempfile.gettempdir()), SandboxSettings())
    second = SandboxBackend(Path(tempfile.gettempdir()), SandboxSettings())
    assert first.uid != second.uid and None not in (first.uid, second.uid)
    first.close()
    second.close()


ZYGOTE_SPY = textwrap.dedent("""
    import json, os, signal, socket, time

    def rounds_to_zero(action, dtype):
        other = os.environ["KIT_OTHER_FS_DIR"]
        if action == "pin":
            # 200 MiB of tmpfs and two pseudo-terminals pinned in flight on a unix socket pair whose
            # ends are closed: a cycle no process holds, which outlives the sandbox unless collected
            big = os.open("/tmp/big", os.O_RDWR | os.O_CREAT, 0o600)
            os.write(big, b"x" * (200 * 2**20))
            os.unlink("/tmp/big")
            a, b = socket.socketpair()
            try:  # (sendmsg is refused on every launcher: no descriptor can be sent at all)
                socket.send_fds(a, [b"x"], [big, *os.openpty(), *os.openpty(), a.fileno(), b.fileno()])
            except PermissionError:
                return "refused"
            a.close()
            b.close()
            return "pinned"
        if action == "plant":  # everything a submission could leave for the next one
            for folder in ("/tmp", "/dev/shm", other):
                with open(os.path.join(folder, "planted"), "w") as f:
                    f.write("x")
            if os.fork() == 0:  # a double-forked orphan in a session of its own, holding a socket
                os.setsid()
                if os.fork() == 0:
                    s = socket.socket(socket.AF_UNIX)
                    s.bind("\\0kit-planted")
                    s.listen()
                    time.sleep(300)
                os._exit(0)
            time.sleep(0.5)
            return json.dumps({"uid": os.getuid()})
        facts = {"uid": os.getuid(), "pid": os.getpid(), "files": [os.path.exists(os.path.join(f, "planted"))
                                                                  for f in ("/tmp", "/dev/shm", other)]}
        facts["submission"] = sorted(os.listdir("/submission"))
        facts["pts"] = sorted(os.listdir("/dev/pts"))
        try:
            facts["job_name"] = [line for line in open("/proc/self/mountinfo") if " /submission " in line]
        except OSError:  # the mount table names host folders: unreadable where Landlock narrows /proc
            facts["job_name"] = None
        try:
            facts["inbox"] = os.listdir("/kit-inbox") if os.path.isdir("/kit-inbox") else None
        except OSError:  # (out of reach where Landlock is: the worker's rules do not name it)
            facts["inbox"] = None
        uids, zygote = set(), None
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                status = open(f"/proc/{pid}/status").read()
                cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            uids.add(int(status.split("Uid:")[1].split()[0]))
            if b"grader.sandbox.zygote" in cmdline and status.split("Uid:")[1].split()[0] == "0":  # (its forks show its command line)
                zygote = int(pid)
        facts["uids"] = sorted(uids)
        try:
            os.kill(zygote, signal.SIGKILL) if zygote else None
            facts["kill_zygote"] = "killed" if zygote else "no zygote"
        except OSError as exc:
            facts["kill_zygote"] = type(exc).__name__
        try:
            socket.socket(socket.AF_UNIX).connect("\\0kit-planted")
            facts["socket"] = True
        except OSError:
            facts["socket"] = False
        facts["CapEff"] = open("/proc/self/status").read().split("CapEff:")[1].split()[0]
        try:
            facts["cgroups"] = sorted({line.rsplit(":", 1)[-1].strip() for line in open("/proc/self/cgroup")})
        except OSError:
            facts["cgroups"] = None
        try:
            facts["unix_names"] = "kit-planted" in open("/proc/net/unix").read()
        except OSError:  # (out of reach where Landlock narrows /proc)
            facts["unix_names"] = False
        facts["leaked_link"] = os.path.exists("/submission/link_to_kit")
        facts["random"] = [__import__("random").random(), float(__import__("numpy").random.rand()),
                           float(__import__("torch").rand(1))]
        return json.dumps(facts)
""")


def _host_shmem() -> int:
    """The host's shared memory (tmpfs and shared anonymous pages) in bytes, from /proc/meminfo."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_zygotes() -> None:
    """This process's zygotes stopped, what it remembers of failed ones and of a mother forgotten."""
    from grader.sandbox import zygotes

    zygotes.close_all()
    zygotes._failed.clear()
    zygotes._mother_link.clear()


@pytest.fixture(params=["own", "mother"])
def zygote_origin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Where this process's zygote comes from: started by itself ("own", as with one grading
    worker), or forked by a batch's mother zygote ("mother", as `grader grade` arranges: one
    mother per batch, a zygote per worker)."""
    from grader.sandbox import zygote, zygotes

    reset = _reset_zygotes
    reset()
    mother = None
    if request.param == "mother":
        if os.geteuid() != 0 or not sandbox.bwrap_available()[0]:
            pytest.skip("zygotes need root and bubblewrap (the own-zygote case checks the fallback)")
        mother = zygotes.MotherProcess(SandboxSettings(launcher=BUBBLEWRAP))
        monkeypatch.setenv(zygotes.Mother.ENV, mother.link.to_env())
    try:
        yield request.param
        if mother is not None:  # the zygote did come from the mother: its child, sharing its inbox
            made = list(zygotes._zygotes.values())
            assert made and all(not z.owns_inbox and isinstance(z.proc, zygote.NotOurChild) for z in made), made
            assert all(z.inbox == mother.inbox for z in made)
    finally:
        reset()
        if mother is not None:
            mother.close()


def test_zygote_children_share_nothing(workdir: Path, zygote_origin: str) -> None:
    """Sandboxes forked from one zygote (grader.sandbox.zygote) in a row: 200 MiB of tmpfs and two
    ptys cannot be pinned in a unix socket cycle (sendmsg, the only way to send a descriptor, is
    refused) and are freed once the sandbox ends (and another child, at the
    same time, sees ptys of its own); what the next one leaves (files in every writable folder,
    an orphan process in a session of its own holding an abstract socket) is gone for the one
    after, which has pid, network and cgroup namespaces of its own, sees only its own submission
    (a symbolic link in the folder is not followed), has no capability, cannot signal the
    zygote, and draws other random numbers than a third child.  Without root there is no
    zygote: sandboxes start the ordinary way."""
    _bwrap_or_fail()
    folders = []
    for name in ("first", "second"):
        folder = workdir / name
        folder.mkdir()
        (folder / "memory.py").write_text(ZYGOTE_SPY)
        (folder / f"{name}_helper.py").write_text("X = 1\n")
        (folder / "link_to_kit").symlink_to(KIT_ROOT / "pyproject.toml")  # copied into the inbox? never
        folders.append(folder)
    shmem = _host_shmem()
    zero = _backend(folders[0], launcher=BUBBLEWRAP)  # pins, and releases no unix socket of its own
    try:
        assert zero.call("memory.rounds_to_zero", {"cases": [["pin", "float32"]]}) == {"ok": ["refused"]}
        assert _host_shmem() > shmem + 150 * 2**20  # the 200 MiB, held by its descriptor
        peek = _backend(folders[1], launcher=BUBBLEWRAP)  # meanwhile, another child: its own ptys
        try:
            seen = json.loads(peek.call("memory.rounds_to_zero", {"cases": [["look", "float32"]]})["ok"][0])
        finally:
            peek.close()
        assert seen["pts"] == ["ptmx"], seen["pts"]
    finally:
        zero.close()
    deadline = time.monotonic() + 15  # the kernel's collector of unix socket cycles runs asynchronously
    while _host_shmem() > shmem + 100 * 2**20 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _host_shmem() <= shmem + 100 * 2**20, "tmpfs memory pinned by the sandbox outlived it"
    first = _backend(folders[0], launcher=BUBBLEWRAP)
    try:
        planted = first.call("memory.rounds_to_zero", {"cases": [["plant", "float32"]]})
        assert "ok" in planted, planted
    finally:
        first.close()
    if os.geteuid() != 0:
        assert first.stats["layers"]["zygote"] is False
        return
    assert first.stats["layers"]["zygote"] is True, first.stats
    second = _backend(folders[1], launcher=BUBBLEWRAP)
    try:
        reply = second.call("memory.rounds_to_zero", {"cases": [["look", "float32"]]})
        assert "ok" in reply, reply
        facts = json.loads(reply["ok"][0])
    finally:
        second.close()
    assert second.stats["layers"]["zygote"] is True
    assert facts["files"] == [False, False, False]
    assert facts["submission"] == ["memory.py", "second_helper.py"] and facts["inbox"] in ([], None)
    assert facts["leaked_link"] is False  # a symbolic link is not followed into the inbox
    assert facts["pts"] == ["ptmx"]  # pseudo-terminals of its own
    # the inbox folder it was copied to (its mountinfo may show it) is named at random: a counter
    # would tell how many sandboxes the worker started before
    if sandbox.landlock_available()[0]:
        assert facts["job_name"] is None, facts["job_name"]
    else:
        assert len(facts["job_name"]) == 1 and not re.search(r"job-\d+-\d+\b", facts["job_name"][0]), facts
    # a pid namespace of its own (pid 1: its init, root; pid 2: the worker; then the fresh-process
    # template): no pid counter, CPU times or processes of another submission to read
    assert facts["pid"] == 2 and set(facts["uids"]) <= {0, facts["uid"]}, facts
    assert facts["socket"] is False and facts["unix_names"] is False  # and a network namespace
    assert facts["kill_zygote"] in ("PermissionError", "no zygote") and facts["cgroups"] in (["/"], None)
    assert facts["CapEff"] == "0000000000000000" and facts["uid"] != json.loads(planted["ok"][0])["uid"]
    third = _backend(folders[1], launcher=BUBBLEWRAP)  # another child: its own random state, as a new process
    try:
        again = json.loads(third.call("memory.rounds_to_zero", {"cases": [["look", "float32"]]})["ok"][0])
    finally:
        third.close()
    assert all(a != b for a, b in zip(again["random"], facts["random"])), (again["random"], facts["random"])
    off = _backend(folders[1], launcher=BUBBLEWRAP, zygote=False)
    try:
        assert "ok" in off.call("memory.rounds_to_zero", {"cases": [["look", "float32"]]})
    finally:
        off.close()
    assert off.stats["layers"]["zygote"] is False


def test_a_dead_mother_zygote_is_noticed_and_the_worker_starts_its_own(submission: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A grading worker whose batch's mother zygote is gone (killed, or never started) notices it
    within seconds, not after the start-up timeout, and starts a zygote of its own."""
    from grader.sandbox import zygotes

    _bwrap_or_fail()
    if os.geteuid() != 0:
        pytest.skip("the zygote needs root")
    _reset_zygotes()
    mother = zygotes.MotherProcess(SandboxSettings(launcher=BUBBLEWRAP))
    try:
        monkeypatch.setenv(zygotes.Mother.ENV, mother.link.to_env())
        os.killpg(mother.proc.pid, signal.SIGKILL)
        mother.proc.wait()
        t0 = time.monotonic()
        backend = _backend(submission, launcher=BUBBLEWRAP)
        try:
            assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
        finally:
            backend.close()
        assert backend.stats["layers"]["zygote"] is True, backend.stats
        assert zygotes._MOTHER in zygotes._failed and time.monotonic() - t0 < 60, zygotes._failed
        assert all(z.owns_inbox for z in zygotes._zygotes.values())
    finally:
        _reset_zygotes()
        mother.close()


def test_a_folder_too_large_for_the_zygote_starts_the_ordinary_way(workdir: Path, submission: Path) -> None:
    """A folder over the inbox's cap (64 MiB) gets an ordinary sandbox; the next one still comes
    from the zygote (root and bubblewrap only: elsewhere there is no zygote to fall back from)."""
    _bwrap_or_fail()
    if os.geteuid() != 0:
        pytest.skip("the zygote needs root")
    large = workdir / "large"
    large.mkdir()
    (large / "memory.py").write_text(MODULE)
    with open(large / "data.bin", "wb") as f:
        f.truncate(65 * 2**20)  # sparse: no disk used
    for folder, zygote in ((large, False), (submission, True)):
        backend = _backend(folder, launcher=BUBBLEWRAP)
        try:
            assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
        finally:
            backend.close()
        assert backend.stats["layers"]["zygote"] is zygote, backend.stats
        assert ("64 MiB" in backend.stats.get("zygote_note", "")) is not zygote


def test_auto_picks_landlock_where_namespaces_are_refused() -> None:
    """An emulated container (a seccomp filter refusing unshare and clone's namespace flags, as
    Docker's default profile does): bubblewrap cannot start, auto picks landlock and says so."""
    import subprocess
    import sys

    _landlock_or_fail()
    code = ("from grader.sandbox import resolve_launcher, bwrap_available; import json; "
            "print(json.dumps([bwrap_available()[0], *resolve_launcher('auto')]))")
    proc = subprocess.run([sys.executable, "-m", "grader.sandbox.seccomp", "--no-namespaces", "--",
                           sys.executable, "-c", code], capture_output=True, text=True, cwd=KIT_ROOT, timeout=120)
    bwrap_ok, launcher, warning = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (bwrap_ok, launcher) == (False, LANDLOCK) and "Landlock" in warning, proc.stderr


def test_timeout_fails_the_call_and_the_next_call_gets_a_fresh_sandbox(submission: Path) -> None:
    backend = _backend(submission)
    try:
        assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
        t0 = time.monotonic()
        reply = backend.call("memory.float_format", {"dtype": "float32"})
        assert reply == {"boundary": f"timed out after {TIMEOUT:g} s"}
        assert time.monotonic() - t0 < TIMEOUT + 5
        assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
        assert backend.stats["starts"] == 2 and backend.stats["timeouts"] == 1
    finally:
        backend.close()
    assert _leftovers(backend) == []


def test_exit_and_segfault_are_reported_in_plain_words(submission: Path) -> None:
    backend = _backend(submission)
    try:
        reply = backend.call("memory.float_format", {"dtype": "float64"})
        assert reply == {"boundary": "your code ended the sandbox process (exit status 3)"}
        reply = backend.call("memory.float_format", {"dtype": "float8_e4m3fn"})
        assert "crashed the sandbox (segmentation fault) at memory.py:" in reply["boundary"]
        assert "in float_format" in reply["boundary"]
        assert backend.call("memory.float_format", {"dtype": "int32"})["error"]["type"] == "ValueError"
        assert backend.stats["crashes"] == 2 and backend.stats["starts"] == 3
    finally:
        backend.close()
    assert _leftovers(backend) == []


def test_fork_bomb_and_memory_bomb_are_contained(submission: Path) -> None:
    backend = _backend(submission)
    try:
        reply = backend.call("memory.float_format", {"dtype": "float8_e5m2"})
        assert reply["error"]["type"] == "BlockingIOError"  # RLIMIT_NPROC stops it
        reply = backend.call("memory.get_memory_usage", {"specs": [{"shape": [2], "dtype": "float32"}]})
        assert reply.get("error", {}).get("type") == "MemoryError", (reply, backend.stats["events"])
        assert "exceeded the sandbox memory limit of 2 GiB" in reply["error"]["message"]
        assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
        assert backend.stats["leftovers"] >= 1  # the fork bomb's survivors were killed with the sandbox
    finally:
        backend.close()
    assert _leftovers(backend) == []


def test_output_flood_is_capped_and_does_not_block(submission: Path, tmp_path: Path) -> None:
    log = tmp_path / "sandbox.log"
    backend = _backend(submission, log_path=str(log))
    try:
        assert backend.call("memory.float_format", {"dtype": "bfloat16"}) == {"ok": (1, 8, 7)}
    finally:
        backend.close()
    stats = sandbox.pop_finished()[-1]
    assert stats["output_bytes"] >= 11_000_000
    assert len(stats["output"]) < backend.settings.output_cap + 200
    assert log.stat().st_size < backend.settings.output_cap + 2000
    assert "bytes dropped" in log.read_text()


def test_garbage_on_the_reply_channel_fails_only_that_call(submission: Path) -> None:
    backend = _backend(submission)
    try:
        reply = backend.call("memory.storage_bytes", {"specs": [{"shape": [2], "dtype": "float32"}]})
        assert "not data" in reply["boundary"]
        assert backend.call("memory.float_format", {"dtype": "float16"}) == {"ok": (1, 5, 10)}
    finally:
        backend.close()


def test_hang_at_import_is_remembered(workdir: Path) -> None:
    folder = workdir / "s"
    folder.mkdir()
    (folder / "memory.py").write_text(HANGS_AT_IMPORT)
    backend = _backend(folder)
    try:
        first = backend.call("memory.float_format", {"dtype": "float16"})
        assert first == {"boundary": f"timed out after {TIMEOUT:g} s (while importing memory.py)"}
        t0 = time.monotonic()
        assert backend.call("memory.float_format", {"dtype": "float32"}) == first
        assert time.monotonic() - t0 < 0.5
        assert backend.stats["starts"] == 1
    finally:
        backend.close()


def test_missing_module_files_count_as_not_attempted(workdir: Path) -> None:
    folder = workdir / "s"
    folder.mkdir()
    (folder / "memory.py").write_text(IMPORTS_MISSING)
    backend = _backend(folder)
    try:
        reply = backend.call("views.contiguous_strides", {"shapes": [[2, 3]]})
        assert reply["error"]["not_implemented"] is True and "views.py is missing" in reply["error"]["message"]
        assert backend.stats["starts"] == 0  # nothing to run: no sandbox started
        reply = backend.call("memory.float_format", {"dtype": "float16"})
        assert reply["error"]["not_implemented"] is True
        assert reply["error"]["message"] == "views.py is missing from the submission"
        assert backend.source("views") is None and "transpose_view" in backend.source("memory")
    finally:
        backend.close()


def test_rlimits_fallback_says_so_and_still_limits(submission: Path, server: tuple[int, list[str]]) -> None:
    port, _ = server
    backend = _backend(submission, launcher=RLIMITS)
    try:
        assert backend.launcher == RLIMITS
        assert "WITHOUT filesystem isolation" in backend.warning
        facts = _spy(backend, port)
        assert backend.call("memory.float_format", {"dtype": "float32"})["boundary"].startswith("timed out")
        reply = backend.call("memory.float_format", {"dtype": "float8_e5m2"})
        assert reply["error"]["type"] == "BlockingIOError"
    finally:
        backend.close()
    assert facts["limits"]["DATA"] == 2 * 2**30 and facts["limits"]["CORE"] == 0
    # at most CAP_DAC_READ_SEARCH, kept only when the Python installation is not world-readable
    readable = all(sandbox._others_can_read(p) for p in sandbox.python_mounts())
    assert facts["CapEff"] == ("0000000000000000" if readable or os.geteuid() != 0 else "0000000000000004")
    assert facts["NoNewPrivs"] == "1"
    if os.geteuid() == 0:
        assert int(facts["Uid"]) == backend.uid != 0
    # (the host path of the submission comes back scrubbed to /submission, like every path in a reply);
    # without root the rlimits launcher has no uid of its own and no read-only mount: its submission can
    # write into its folder (the loud warning says so), which costs nothing since the trusted checks read
    # the sources frozen before it ran (tests/kit/test_sources_frozen.py)
    if os.geteuid() == 0:
        assert facts["writable"]["/submission/x.py"] is False and not (submission / "x.py").exists()
    assert _leftovers(backend) == []
    assert sandbox.pop_finished()[-1]["warning"] == backend.warning


def test_kit_bundle_holds_only_what_ships() -> None:
    bundle = sandbox.kit_bundle()
    names = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert "grader/sandbox/worker.py" in names and "tests/probes/memory.py" in names
    assert {"grader/sandbox/__init__.py", "grader/sandbox/landlock.py", "grader/sandbox/seccomp.py"} <= names
    assert not [n for n in names if n.startswith(("solutions", "tests/hidden", "tests/mutants", "tests/public",
                                                  "tests/kit", "tests/adversarial"))]
    mounts = sandbox.python_mounts()
    assert all(not (Path(m) == KIT_ROOT or (KIT_ROOT in Path(m).parents and ".venv" not in Path(m).parts))
               for m in mounts), mounts


# -- the launcher matrix ------------------------------------------------------------------------

MATRIX_USER = os.environ.get("KIT_MATRIX_USER", "kitci")


def _unprivileged_user() -> str | None:
    """An unprivileged account that can run this Python and read the kit (created when root)."""
    import pwd
    import subprocess
    import sys

    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(MATRIX_USER)
    except KeyError:
        subprocess.run(["useradd", "-m", MATRIX_USER], check=False, capture_output=True)
    probe = subprocess.run(["runuser", "-u", MATRIX_USER, "--", sys.executable, "-c", "import grader, torch"],
                           cwd=KIT_ROOT, capture_output=True, text=True, timeout=300)
    return MATRIX_USER if probe.returncode == 0 else None


def venv_outside_kit(base: Path) -> str:
    """A copy of this venv at `base`/venv (files hard-linked where the filesystem allows, else copied;
    bin/ only the interpreter's links; a pyvenv.cfg naming no path of the kit); its interpreter."""
    import subprocess
    import sys

    src, dest = Path(sys.prefix), base / "venv"
    (dest / "bin").mkdir(parents=True)
    for entry in (src / "bin").iterdir():
        if entry.name.startswith("python") and entry.is_symlink():
            (dest / "bin" / entry.name).symlink_to(os.readlink(entry))
    keep = ("home", "include-system-site-packages", "version")
    (dest / "pyvenv.cfg").write_text("".join(ln + "\n" for ln in (src / "pyvenv.cfg").read_text().splitlines()
                                             if ln.split("=")[0].strip() in keep))
    if subprocess.run(["cp", "-al", str(src / "lib"), str(dest / "lib")], capture_output=True).returncode != 0:
        shutil.rmtree(dest / "lib", ignore_errors=True)
        subprocess.run(["cp", "-a", str(src / "lib"), str(dest / "lib")], check=True)
    if (src / "lib64").is_symlink():
        (dest / "lib64").symlink_to(os.readlink(src / "lib64"))
    for d in (dest, dest / "bin"):
        os.chmod(d, 0o755)
    return str(dest / "bin" / Path(sys.executable).name)


def test_launcher_matrix() -> None:
    """The reduced adversarial set (tests/adversarial/isolation.py: MATRIX_NAMES) under each launcher
    the default suite does not cover: bubblewrap as an unprivileged user, landlock as root and as an
    unprivileged user, and an emulated container that cannot create namespaces (auto must pick
    landlock; only `CONTAINER_NAMES`, the cases a missing namespace could change), and bubblewrap as
    root with the zygote turned off (KIT_SANDBOX_ZYGOTE=0).  Bubblewrap as root with the zygote is the
    full adversarial suite in test_grade.py.  The entries run in parallel, one grading job each, started
    in the background at collection (tests/kit/background_matrix.py) or here when they were not."""
    from tests.kit import background_matrix

    found = background_matrix.result()
    if found is None:
        found = run_matrix()
    print("\n".join(found["reports"]))
    assert not found["problems"], "\n".join(found["problems"])
    if found["skip"]:
        pytest.skip(found["skip"])


def run_matrix() -> dict:
    """Every entry of the matrix, in parallel: {"problems": [...], "reports": [...], "skip": why or ""}."""
    import subprocess
    import sys

    try:
        _landlock_or_fail()
    except pytest.fail.Exception as exc:
        return {"problems": [str(exc)], "reports": [], "skip": ""}
    user = _unprivileged_user()
    entries: list[tuple[str, list[str], str]] = []
    mod = [sys.executable, "-m", "tests.adversarial.isolation"]
    if os.geteuid() == 0:
        entries.append(("landlock as root", [*mod, "--launcher", "landlock"], "landlock"))
        # bubblewrap as root starts each sandbox the ordinary way when the zygote is off or fails
        entries.append(("bubblewrap as root, no zygote", ["env", "KIT_SANDBOX_ZYGOTE=0", *mod, "--launcher",
                                                          "bubblewrap"], "bubblewrap"))
        # (the cases a missing namespace could change: the rest is the landlock-as-root entry's)
        entries.append(("container (no namespaces), auto", [sys.executable, "-m", "grader.sandbox.seccomp",
                                                            "--no-namespaces", "--", *mod, "--launcher", "auto",
                                                            "--cases", ",".join(CONTAINER_NAMES)], "landlock"))
    if user is not None or os.geteuid() != 0:
        as_user = ["runuser", "-u", user, "--"] if user else []
        entries.append(("bubblewrap unprivileged", [*as_user, *mod, "--launcher", "bubblewrap"], "bubblewrap"))
        entries.append(("landlock unprivileged", [*as_user, *mod, "--launcher", "landlock"], "landlock"))
    elif os.environ.get("KIT_REQUIRE_MATRIX") == "1":
        return {"problems": [f"no unprivileged user that can run {sys.executable} and read {KIT_ROOT}: "
                             f"useradd -m {MATRIX_USER} and make both readable by it (see .ci/run)"], "reports": [],
                "skip": ""}
    only = [w for w in os.environ.get("KIT_MATRIX_ENTRIES", "").split(",") if w]
    entries = [e for e in entries if not only or any(w in e[0] for w in only)]
    base = Path(tempfile.mkdtemp(prefix="kit-test-matrix-"))  # pytest's tmp_path is 0700 for root
    os.chmod(base, 0o755)
    # landlock hides the kit's folder only from a Python installed outside it (else it refuses): its
    # entries run from a venv outside the kit, with the kit installed editable (its files name the kit)
    python = venv_outside_kit(base) if sandbox.bundle.kit_root_visible() and any(
        e[2] == LANDLOCK for e in entries) else sys.executable
    procs = []
    for i, (name, cmd, expect) in enumerate(entries):
        work = base / f"entry{i}"
        work.mkdir()
        if cmd[0] == "runuser":
            import pwd

            pw = pwd.getpwnam(cmd[2])
            os.chown(work, pw.pw_uid, pw.pw_gid)
        if expect == LANDLOCK:
            cmd = [python if c == sys.executable else c for c in cmd]
        env = dict(os.environ, PYTHONPATH=str(KIT_ROOT))
        env.pop(launchers.SHOW_KIT_ROOT, None)
        procs.append((name, subprocess.Popen([*cmd, "--work", str(work), "--expect-launcher", expect], cwd=KIT_ROOT,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)))
    problems, reports = [], []
    for name, proc in procs:
        try:
            text, _ = proc.communicate(timeout=2400)
        finally:
            shutil.rmtree(base, ignore_errors=True) if proc is procs[-1][1] else None
        lines = [ln for ln in text.splitlines() if ln.startswith("MATRIX-REPORT ")]
        if not lines:
            problems.append(f"{name}: no report (exit {proc.returncode}): {text[-2000:]}")
            continue
        report = json.loads(lines[-1].removeprefix("MATRIX-REPORT "))
        reports.append(f"{name}: {report['launcher']} uid {report['uid']} {report['cases']} cases in "
                       f"{report['seconds']} s, layers {report['layers']}")
        problems += [f"{name}: {p}" for p in report["problems"]]
        if "no zygote" in name and report["layers"].get("zygote") is not False:
            problems.append(f"{name}: the sandbox came from a zygote ({report['layers']})")
    skip = (f"unprivileged entries not run: {MATRIX_USER} cannot run {sys.executable} or read {KIT_ROOT}"
            if user is None and os.geteuid() == 0 else "")
    return {"problems": problems, "reports": reports, "skip": skip}



def test_doctor_and_require(tmp_path: Path) -> None:
    """`grader doctor` lists every layer with a fix for the missing ones; `grade --require bubblewrap`
    refuses to grade inside an emulated container (no namespaces) before touching any submission."""
    import subprocess
    import sys

    from grader.sandbox.doctor import diagnose

    report = diagnose(cuda=False)
    assert set(report["layers"]) == {"bubblewrap (no user namespace)", "bubblewrap (user namespace)", "landlock",
                                     "seccomp", "between sandboxes", "uid drop", "cgroup memory limit",
                                     "zygote (fast sandbox start)"}
    between = report["layers"]["between sandboxes"]  # what the filter closes, and the timing channel it cannot
    assert between["ok"] == report["layers"]["seccomp"]["ok"] and "page cache" in between["detail"], between
    assert report["auto"] == sandbox.resolve_launcher("auto")[0]
    zygote = report["layers"]["zygote (fast sandbox start)"]
    if os.geteuid() == 0 and report["auto"] == BUBBLEWRAP:  # it started one (and stopped it)
        assert zygote["ok"] is True, zygote
    else:
        assert zygote["ok"] is None and zygote["detail"].startswith("not used"), zygote
    assert all(info["fix"] for info in report["layers"].values() if info["ok"] is False)
    (tmp_path / "subs").mkdir()
    proc = subprocess.run([sys.executable, "-m", "grader.sandbox.seccomp", "--no-namespaces", "--", sys.executable,
                           "-m", "grader.cli", "grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"),
                           "--require", "bubblewrap"], capture_output=True, text=True, cwd=KIT_ROOT, timeout=300)
    assert proc.returncode == 2 and "--require bubblewrap" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "landlock" in proc.stdout + proc.stderr and not (tmp_path / "out").exists()


def test_landlock_rules_for_cuda_allow_only_the_workers_own_thread_files(tmp_path: Path) -> None:
    """CUDA's initialisation writes files of its own threads under /proc/self/task (without that,
    cudaGetDeviceCount fails with error 304 under the landlock launcher: seen on an H100).  The
    `--device cuda` rules allow exactly that: a process locked down with them writes its own
    thread's comm, and still cannot write its /proc/self/oom_score_adj, the kit or the submission."""
    _landlock_or_fail()
    from grader.sandbox import launchers

    folder, scratch = tmp_path / "sub", tmp_path / "scratch"
    folder.mkdir()
    scratch.mkdir()
    rules = launchers.landlock_rules(folder, sandbox.kit_bundle(), [str(scratch)], gpu=True)
    script = textwrap.dedent(f"""
        import json, os, sys, threading
        from grader.sandbox.lockdown import lock_down
        lock_down({{"limits": {{}}, "uid": None, "landlock": json.loads(sys.argv[1])}})
        def attempt(path, text):
            try:
                with open(path, "w") as f:
                    f.write(text)
                return "written"
            except OSError as exc:
                return type(exc).__name__
        tid = threading.get_native_id()
        print(json.dumps({{
            "comm": attempt(f"/proc/self/task/{{tid}}/comm", "kit-probe"),
            "oom": attempt("/proc/self/oom_score_adj", "500"),
            "submission": attempt({str(folder / "x.py")!r}, "x"),
            "scratch": attempt({str(scratch / "x")!r}, "x"),
        }}))
    """)
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(rules)], capture_output=True, text=True,
                          timeout=120, cwd=KIT_ROOT, env={**os.environ, "PYTHONPATH": str(KIT_ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got == {"comm": "written", "oom": "PermissionError", "submission": "PermissionError",
                   "scratch": "written"}, got
    assert "/proc/self/task" not in launchers.landlock_rules(folder, sandbox.kit_bundle(), [str(scratch)])["read_write"]
