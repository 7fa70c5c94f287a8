"""Which zygote a sandbox uses, and the batch's mother zygote (`grader.sandbox.zygote`: one zygote).

`why_not` says why sandboxes with some settings do not come from a zygote; `shared` is this
process's zygote for them: forked by the batch's mother where `grader grade` started one and
handed it to this worker (`Mother`, ``KIT_ZYGOTE_MOTHER``), else started here; `give_up` and
`close_all` stop them.  `MotherProcess` is the grading pool's handle on the mother
(`zygote_process --mother`): it forks zygotes only, one per trusted worker.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

from grader.sandbox.config import ZYGOTE_INBOX as INBOX
from grader.sandbox.scratch import owned_tempdir
from grader.sandbox.zygote import Zygote, ZygoteError


class Mother:
    """The batch's mother zygote (`zygote_process --mother`), as the grading workers see it: the
    shared socket to ask it for a zygote, the pid of its launcher (bubblewrap), its inbox.
    `grader grade` starts it (`start_mother`) and hands it to every worker (``KIT_ZYGOTE_MOTHER``);
    a worker without one, or whose mother cannot serve, starts a zygote of its own."""

    ENV = "KIT_ZYGOTE_MOTHER"

    def __init__(self, sock: socket.socket, launcher_pid: int, inbox: Path, bundle: str, python: str):
        self.sock, self.launcher_pid, self.inbox, self.bundle, self.python = sock, launcher_pid, inbox, bundle, python

    def alive(self) -> bool:
        try:
            os.kill(self.launcher_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        try:
            with open(f"/proc/{self.launcher_pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def to_env(self) -> str:
        return json.dumps({"fd": self.sock.fileno(), "pid": self.launcher_pid, "inbox": str(self.inbox),
                           "bundle": self.bundle, "python": self.python})

    @classmethod
    def from_env(cls) -> "Mother | None":
        raw = os.environ.get(cls.ENV)
        if not raw:
            return None
        try:
            data = json.loads(raw)
            sock = socket.socket(fileno=os.dup(int(data["fd"])))
            return cls(sock, int(data["pid"]), Path(data["inbox"]), str(data["bundle"]), str(data["python"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None


_zygotes: dict[tuple[str, ...], Zygote] = {}
_failed: dict[tuple[str, ...], str] = {}


def why_not(settings: Any, launcher: str, uid: int | None) -> str:
    """Why a sandbox with these settings does not come from a zygote ("" when it does)."""
    from grader.sandbox.bundle import SANDBOX_VENV, python_mounts, venv_inside
    from grader.sandbox.config import BUBBLEWRAP, SANDBOX_FOLDER, SANDBOX_OTHER_FS, SANDBOX_TMP
    from grader.sandbox.uids import is_root

    if not settings.zygote:
        return "turned off"
    if launcher != BUBBLEWRAP:
        return f"the {launcher} launcher"
    if not is_root() or uid is None:
        return "no uid of its own (not root)"
    if settings.gpu:
        return "a GPU sandbox"
    venv = venv_inside()
    for path in python_mounts():
        inside = SANDBOX_VENV if venv and path == venv else path
        for hidden in (SANDBOX_TMP, "/dev/shm", SANDBOX_OTHER_FS, SANDBOX_FOLDER, INBOX):
            if inside == hidden or inside.startswith(hidden + "/"):
                return f"Python is installed under {hidden}"
    return ""


def shared(settings: Any) -> Zygote:
    """This process's zygote for sandboxes like `settings` (started on first use, restarted if it
    died); raises ZygoteError when it cannot start (remembered: later sandboxes do not retry).
    Forked by the batch's mother zygote where `grader grade` started one (``KIT_ZYGOTE_MOTHER``),
    else started here."""
    import atexit
    import shutil

    from grader.sandbox.bundle import kit_bundle, sandbox_python
    from grader.sandbox.config import BUBBLEWRAP

    bundle = kit_bundle()
    python = sandbox_python(BUBBLEWRAP)
    key = (str(bundle), python)
    current = _zygotes.get(key)
    if current is not None:
        if current.alive():
            return current
        _discard(key)
    if key in _failed:
        raise ZygoteError(_failed[key])
    if not _zygotes and not _failed:
        atexit.register(close_all)
    mother = _mother()
    if mother is not None and mother.python == python:
        try:
            zygote = Zygote([], python, {}, [], mother.inbox, settings.startup_timeout, mother=mother)
        except ZygoteError as exc:  # the batch's zygote cannot serve: this worker starts its own from now on
            _failed[_MOTHER] = str(exc)
        else:
            zygote.owns_inbox = False  # the mother's, shared by the batch
            _zygotes[key] = zygote
            return zygote
    inbox = owned_tempdir("kit-inbox-")
    os.chmod(inbox, 0o711)
    args_r, prefix, env = _launch(settings, inbox, bundle)
    try:
        zygote = Zygote(prefix, python, env, [args_r], inbox, settings.startup_timeout)
    except ZygoteError as exc:
        _failed[key] = str(exc)
        shutil.rmtree(inbox, ignore_errors=True)
        raise
    finally:
        os.close(args_r)
    _zygotes[key] = zygote
    return zygote


def _launch(settings: Any, inbox: Path, bundle: Path) -> tuple[int, list[str], dict[str, str]]:
    """The bubblewrap command line of a zygote with `inbox` (its options on a pipe: the read end,
    for the caller to close once started), and its environment."""
    import shutil

    from grader.sandbox import launchers
    from grader.sandbox.bundle import sandbox_site
    from grader.sandbox.config import BUBBLEWRAP, SANDBOX_KIT, SANDBOX_OTHER_FS, SANDBOX_TMP

    env = launchers.sandbox_env(SANDBOX_TMP, SANDBOX_KIT, SANDBOX_OTHER_FS, site=sandbox_site(BUBBLEWRAP))
    options = launchers.bwrap_options(inbox, bundle, settings.limits, env, zygote=True)
    args_r, args_w = os.pipe()
    os.write(args_w, b"\0".join(o.encode() for o in options) + b"\0")
    os.close(args_w)
    return args_r, [shutil.which("bwrap") or "bwrap", "--args", str(args_r), "--"], env


_MOTHER = ("mother",)
_mother_link: list[Mother | None] = []


def _mother() -> Mother | None:
    """The batch's mother zygote handed to this process, if any and not failed."""
    if _MOTHER in _failed:
        return None
    if not _mother_link:
        _mother_link.append(Mother.from_env())
    return _mother_link[0]


class MotherProcess:
    """`grader grade`'s handle on the batch's mother zygote: started before the grading workers
    (its imports run while theirs do), inherited by them, stopped when the batch ends."""

    def __init__(self, settings: Any):
        import tempfile

        from grader.sandbox.bundle import kit_bundle, sandbox_python
        from grader.sandbox.config import BUBBLEWRAP

        self.inbox = owned_tempdir("kit-inbox-")
        os.chmod(self.inbox, 0o711)
        bundle = kit_bundle()
        python = sandbox_python(BUBBLEWRAP)
        self.workers_end, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()
        args_r, prefix, env = _launch(settings, self.inbox, bundle)
        argv = [*prefix, python, "-S", "-P", "-m", "grader.sandbox.zygote_process", "--fd", str(theirs.fileno()),
                "--mother"]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env,
                                         pass_fds=(theirs.fileno(), args_r), start_new_session=True, close_fds=True)
        except OSError as exc:
            self.close()
            raise ZygoteError(f"cannot start the batch's zygote: {exc}") from None
        finally:
            theirs.close()
            os.close(args_r)
        self.link = Mother(self.workers_end, self.proc.pid, self.inbox, str(bundle), python)

    def env(self) -> dict[str, str]:
        """What a grading worker needs (it must also inherit `workers_end`)."""
        return {Mother.ENV: self.link.to_env()}

    def close(self) -> None:
        import shutil

        proc = getattr(self, "proc", None)
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            self.workers_end.close()
        except OSError:
            pass
        self.log.close()
        shutil.rmtree(self.inbox, ignore_errors=True)


def _discard(key: tuple[str, ...]) -> None:
    import shutil

    zygote = _zygotes.pop(key, None)
    if zygote is not None:
        zygote.close()
        if zygote.owns_inbox:
            shutil.rmtree(zygote.inbox, ignore_errors=True)


def give_up(zygote: Zygote, why: str) -> None:
    """A sandbox could not start from `zygote`: stop it, and start later sandboxes the ordinary way."""
    for key, value in list(_zygotes.items()):
        if value is zygote:
            _discard(key)
            _failed[key] = why


def close_all() -> None:
    """Stop every zygote of this process (their children die with them) and remove the inboxes."""
    for key in list(_zygotes):
        _discard(key)
