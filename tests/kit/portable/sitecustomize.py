"""A machine without Linux's /proc and without fork, for `tests/kit/test_portable.py`.

On PYTHONPATH, this runs in every interpreter started there (the test, `grader check`, its
pytest child, fresh interpreters): paths under /proc do not exist (open, os.open, os.stat,
os.listdir, os.readlink, os.scandir, os.access), and `os.fork` is gone (as on Windows; macOS has
one, but a fork of a process running torch is unsafe there, and the kit forks only on Linux).
With KIT_NO_POSIX=1 it is more like Windows: no `resource` or `fcntl` module, no O_NOFOLLOW.
"""

import builtins
import io
import os
import sys


def _under_proc(path) -> bool:
    if isinstance(path, int):
        return False
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        return False
    return path == "/proc" or path.startswith("/proc/")


def _no_proc(fn):
    def wrapped(path=".", *args, **kwargs):
        if _under_proc(path):
            raise FileNotFoundError(2, "No such file or directory (no /proc on this machine)", str(path))
        return fn(path, *args, **kwargs)

    wrapped.__wrapped__ = fn
    return wrapped


builtins.open = io.open = _no_proc(builtins.open)
for _name in ("open", "listdir", "readlink", "stat", "lstat", "scandir", "access"):
    setattr(os, _name, _no_proc(getattr(os, _name)))
for _name in ("fork", "forkpty"):
    if hasattr(os, _name):
        delattr(os, _name)
if os.environ.get("KIT_NO_POSIX") == "1":
    sys.modules["resource"] = None  # import resource: ImportError
    sys.modules["fcntl"] = None
    if hasattr(os, "O_NOFOLLOW"):
        del os.O_NOFOLLOW
