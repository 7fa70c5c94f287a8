"""The sandboxed probe backend (grader.sandbox + grader.worker), driven directly.

A hand-written `memory.py` misbehaves on demand: `float_format(dtype)` hangs, exits, floods
output, segfaults or fork-bombs depending on the dtype; `rounds_to_zero(port, ...)` is a spy
that reports what the sandbox looks like from inside.  Each test checks what the trusted side
sees: a plain message for the broken call, a fresh sandbox for the next one, nothing left
running, nothing reachable that should not be.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import KIT_ROOT, sandbox
from grader.sandbox import BUBBLEWRAP, RLIMITS, SandboxBackend, SandboxSettings

TIMEOUT = 4.0

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
        facts["root"] = sorted(os.listdir("/"))
        facts["env"] = sorted(os.environ)
        facts["threads"] = torch.get_num_threads()
        paths = {{"solutions": "{KIT_ROOT / "solutions"}", "hidden": "{KIT_ROOT / "tests" / "hidden"}",
                  "mutants": "{KIT_ROOT / "tests" / "mutants"}", "repo": "{KIT_ROOT / "pyproject.toml"}",
                  "kit_hidden": "/kit/tests/hidden", "kit_probes": "/kit/tests/probes/memory.py",
                  "kit_grader": "/kit/grader/protocol.py"}}
        facts["exists"] = {{k: os.path.exists(v) for k, v in paths.items()}}
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
    return sandbox.descendants(os.getpid())


def _spy(backend: SandboxBackend, port: int) -> dict:
    reply = backend.call("memory.rounds_to_zero", {"cases": [[port, "float32"]]})
    assert "ok" in reply, reply
    return json.loads(reply["ok"][0])


def test_isolation_seen_from_inside(submission: Path, server: tuple[int, list[str]]) -> None:
    _bwrap_or_fail()
    port, seen = server
    backend = _backend(submission)
    try:
        assert backend.launcher == BUBBLEWRAP and backend.warning == ""
        facts = _spy(backend, port)
    finally:
        backend.close()
    assert facts["exists"] == {"solutions": False, "hidden": False, "mutants": False, "repo": False,
                               "kit_hidden": False, "kit_probes": True, "kit_grader": True}
    assert set(facts["root"]) <= {"usr", "bin", "lib", "lib64", "lib32", "libx32", "sbin", "etc", "proc", "dev", "tmp",
                                  "kit", "submission", *Path(KIT_ROOT).parts[1:2], "root", "opt", "home"}
    assert facts["writable"] == {"/submission/x.py": False, "/kit/x.py": False, "/tmp/x": True, "/usr/x": False}
    assert facts["network"] is False and seen == []
    assert facts["CapEff"] == "0000000000000000" and facts["NoNewPrivs"] == "1"
    if os.geteuid() == 0:
        assert int(facts["Uid"]) == backend.uid != 0
    limits = facts["limits"]
    assert limits["DATA"] == 2 * 2**30 and limits["AS"] == sandbox.Limits().as_bytes
    assert limits["CORE"] == 0 and limits["NPROC"] == 64
    assert limits["FSIZE"] == sandbox.Limits().fsize_bytes and limits["CPU"] == sandbox.Limits().cpu_seconds
    assert facts["threads"] == 1
    assert not any(k.startswith(("KIT_", "PYTEST", "VIRTUAL_ENV")) for k in facts["env"])
    assert not (submission / "x.py").exists()


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
        assert reply["error"]["type"] == "MemoryError"
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
        assert "WITHOUT filesystem or network isolation" in backend.warning
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
    assert facts["writable"][str(submission / "x.py")] is False
    assert _leftovers(backend) == []
    assert sandbox.pop_finished()[-1]["warning"] == backend.warning


def test_kit_bundle_holds_only_what_ships() -> None:
    bundle = sandbox.kit_bundle()
    names = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert "grader/worker.py" in names and "tests/probes/memory.py" in names
    assert not [n for n in names if n.startswith(("solutions", "tests/hidden", "tests/mutants", "tests/public",
                                                  "tests/kit", "tests/adversarial"))]
    mounts = sandbox.python_mounts()
    assert all(not (Path(m) == KIT_ROOT or (KIT_ROOT in Path(m).parents and ".venv" not in Path(m).parts))
               for m in mounts), mounts
