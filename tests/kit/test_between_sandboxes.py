"""Nothing one sandbox does is seen by another, and nothing outlives the grader (issue 30).

The two-student relays themselves (`relay_a_mark`, `relay_b_read`) are graded with the other
adversarial cases (`tests/kit/test_grade.py`, two jobs) and in the launcher matrix; here, each
mechanism on its own: the filter's refusals and their effect, the fresh-process template's
`settle`, the pool's orphan sweep, and a supervisor that ends its sandbox when the grader is
terminated.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader import KIT_ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is Linux-only")

_UNDER_FILTER = textwrap.dedent("""
    import errno, fcntl, json, mmap, os, struct, sys, ctypes
    from grader.sandbox.seccomp import load_program, program
    path = sys.argv[1]
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
    load_program(program())
    res = {}
    def t(name, fn):
        try:
            fn()
            res[name] = "ok"
        except OSError as e:
            res[name] = errno.errorcode.get(e.errno, str(e.errno))
    lock = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0)
    t("flock", lambda: fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB))
    t("F_SETLK", lambda: fcntl.fcntl(fd, fcntl.F_SETLK, lock))
    t("F_GETLK", lambda: fcntl.fcntl(fd, fcntl.F_GETLK, lock))
    t("F_OFD_SETLK", lambda: fcntl.fcntl(fd, 37, lock))
    t("F_OFD_GETLK", lambda: fcntl.fcntl(fd, 36, lock))
    t("F_GETLEASE", lambda: fcntl.fcntl(fd, 1025))
    t("F_NOTIFY", lambda: fcntl.fcntl(os.open(os.path.dirname(path), os.O_RDONLY), 1026, 1))
    t("fadvise", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
    t("madvise_pageout", lambda: m.madvise(21))
    t("madvise_cold", lambda: m.madvise(20))
    t("preadv2_nowait", lambda: os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT))
    cell = ctypes.c_char.from_buffer(m)
    vec = (ctypes.c_ubyte * 1)()
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.mincore(ctypes.c_void_p(ctypes.addressof(cell)), ctypes.c_size_t(1), vec)
    res["mincore"] = "ok" if rc == 0 else errno.errorcode[ctypes.get_errno()]
    libc.syscall.restype = ctypes.c_long
    rc = libc.syscall(451, fd, ctypes.create_string_buffer(16), ctypes.create_string_buffer(64), 0)
    res["cachestat"] = "ok" if rc == 0 else errno.errorcode[ctypes.get_errno()]
    # what stays: plain reads, madvise's other advice, preadv2 without RWF_NOWAIT
    t("pread", lambda: os.pread(fd, 1, 0))
    t("preadv2_plain", lambda: os.preadv(fd, [bytearray(1)], 0, 0))
    t("madvise_dontneed", lambda: m.madvise(mmap.MADV_DONTNEED))
    del cell
    print(json.dumps(res))
""")

REFUSED = {"flock": "ENOLCK", "F_SETLK": "ENOLCK", "F_GETLK": "ENOLCK", "F_OFD_SETLK": "ENOLCK", "F_OFD_GETLK": "ENOLCK",
           "F_GETLEASE": "ENOLCK", "F_NOTIFY": "ENOLCK", "fadvise": "EPERM", "madvise_pageout": "EPERM",
           "madvise_cold": "EPERM", "preadv2_nowait": "EOPNOTSUPP", "mincore": "EPERM", "cachestat": "EPERM"}


def _resident_pages(path: Path) -> int:
    """Pages of `path` in the page cache, probed from the trusted side (no filter here)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pages = (os.fstat(fd).st_size + 4095) // 4096
        count = 0
        for i in range(pages):
            try:
                os.preadv(fd, [bytearray(1)], i * 4096, os.RWF_NOWAIT)
                count += 1
            except BlockingIOError:
                pass
        return count
    finally:
        os.close(fd)


def test_shared_file_state_is_refused_and_the_cache_keeps_its_pages(tmp_path: Path) -> None:
    pytest.importorskip("pyseccomp")
    shared = tmp_path / "shared.bin"
    shared.write_bytes(os.urandom(64 * 4096))
    with open(shared, "rb") as f:
        f.read()  # resident
    before = _resident_pages(shared)
    proc = subprocess.run([sys.executable, "-c", _UNDER_FILTER, str(shared)], capture_output=True, text=True,
                          cwd=KIT_ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    expected = {**REFUSED, "pread": "ok", "preadv2_plain": "ok", "madvise_dontneed": "ok"}
    if got["cachestat"] == "ENOSYS":  # a kernel before 6.5 has no cachestat at all
        expected["cachestat"] = "ENOSYS"
    assert got == {k: expected[k].replace("EOPNOTSUPP", errno.errorcode[errno.EOPNOTSUPP]) for k in expected}
    assert before == 64 and _resident_pages(shared) == 64  # the refused advice evicted nothing


_TEMPLATE = textwrap.dedent("""
    import os, sys, time, json
    sys.path.insert(0, sys.argv[1])
    from grader.boundary import fresh
    from grader.sandbox.supervisor import _children, become_subreaper, end_descendants
    become_subreaper()  # as the sandbox worker is: what the killed template leaves comes to us
    t = fresh.start()
    assert t is not None
    idle = fresh.settle()
    # what student code in the worker can do: ask the template itself for a run nobody waits for
    # (the grandchild imports a submission whose import hangs)
    fresh._send(t.req_w, {"folder": sys.argv[2], "name": "memory.float_format", "kwargs": {"dtype": "float32"}, "reply": "/dev/null"})
    time.sleep(0.5)
    busy = fresh.settle()
    t.alive()  # (reaps it when killed)
    time.sleep(0.2)
    orphans = bool(_children())  # the worker sees them (`_has_children`): the grader ends the sandbox
    end_descendants(signal_all=False)
    print(json.dumps({"idle": idle, "busy": busy, "template_left": fresh.current() is not None, "orphans": orphans}))
""")


def test_a_fresh_run_the_submission_asked_for_itself_ends_before_the_next_call(tmp_path: Path) -> None:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "memory.py").write_text("import time\ntime.sleep(60)\n")
    proc = subprocess.run([sys.executable, "-c", _TEMPLATE, str(KIT_ROOT), str(folder)], capture_output=True,
                          text=True, cwd=KIT_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"idle": True, "busy": False, "template_left": False,
                                                                    "orphans": True}


_ORPHANS = textwrap.dedent("""
    import os, sys, time, json
    sys.path.insert(0, sys.argv[1])
    from grader.sandbox.supervisor import OrphanSweep
    before = os.fork()
    if before == 0:
        time.sleep(30); os._exit(0)
    sweep = OrphanSweep()
    sweep.start()
    r, w = os.pipe()
    mid = os.fork()
    if mid == 0:  # double-forks a sleeper away, as a sandbox whose supervisor was killed leaves one
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode()); time.sleep(60); os._exit(0)
        os._exit(0)
    os.waitpid(mid, 0)
    orphan = int(os.read(r, 32))
    time.sleep(0.2)
    swept = sweep.sweep()
    alive = lambda pid: os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    print(json.dumps({"swept": swept == [orphan], "orphan_alive": alive(orphan), "before_alive": alive(before)}))
    os.kill(before, 9); os.waitpid(before, 0)
""")


def test_the_pool_sweeps_what_a_killed_supervisor_left() -> None:
    proc = subprocess.run([sys.executable, "-c", _ORPHANS, str(KIT_ROOT)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"swept": True, "orphan_alive": False, "before_alive": True}


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("launcher", ["landlock"])
def test_a_terminated_grader_leaves_no_process_of_its_sandboxes(tmp_path: Path, launcher: str) -> None:
    """The reviewer's case: a submission double-forks a sleeper at import; the grader gets SIGTERM
    while the sandbox runs (CI's timeout, Ctrl-C, a hard budget).  Nothing of the sandbox may live on."""
    from grader.sandbox.launchers import landlock_acceptable

    if not landlock_acceptable()[0]:
        pytest.skip("landlock is not usable here")
    marker = f"kit-sleeper-{os.getpid()}"
    sub = tmp_path / "subs" / "sleeper" / "assignment"
    sub.mkdir(parents=True)
    (sub / "memory.py").write_text(textwrap.dedent(f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", "{marker}"])
            os._exit(0)
        time.sleep(60)
    """))
    os.chmod(tmp_path, 0o755)
    grader = subprocess.Popen([sys.executable, "-m", "grader.cli", "grade", str(tmp_path / "subs"), "--out",
                               str(tmp_path / "out"), "--sandbox", launcher, "--module", "memory", "-j", "1",
                               "--import-timeout", "90"], cwd=KIT_ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _sleepers(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _sleepers(marker), "the submission's sleeper never started"
        grader.send_signal(signal.SIGTERM)
        grader.wait(timeout=30)
        deadline = time.monotonic() + 15
        while _sleepers(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _sleepers(marker)
    finally:
        if grader.poll() is None:
            grader.kill()
        for pid in _sleepers(marker):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the sandbox outlived the grader: {left}"
