"""`grader doctor`: which isolation layers work on this machine, which launcher `auto` picks (or
why it refuses to grade: no launcher gives the guarantees, e.g. Landlock below ABI 6 without
root), and the one-line fix for each missing layer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXES = {
    "bwrap_missing": "apt-get install -y bubblewrap",
    "userns": "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04); "
              "sysctl -w kernel.unprivileged_userns_clone=1 (older Debian); or run the grader as root; "
              "in Docker: --security-opt seccomp=unconfined or an image profile that allows unshare",
    "root_bwrap": "run the grader as root, or make user namespaces available (see the line above)",
    "landlock": "a kernel >= 6.12 with Landlock enabled (lsm=landlock,... on the kernel command line): ABI 6 "
                "keeps a sandbox's signals and abstract sockets to itself; below that, run the grader as root "
                "(a uid per submission)",
    "seccomp": "apt-get install -y libseccomp2 && pip install pyseccomp",
    "uid": "run the grader as root (sudo): every submission then runs under a uid of its own",
    "zygote": "sandboxes start the ordinary way (about 1.5 s each, plus 1.2 s for torch._dynamo on the first "
              "dispatch-mode probe); the zygote needs bubblewrap as root",
    "cgroup": "run as root where the cgroup v1 memory controller is mounted, or delegate a cgroup2 subtree "
              "with +memory (systemd-run --scope -p Delegate=yes ...); without it memory is watched from outside",
    "cuda": "install the NVIDIA driver and a CUDA build of torch (only the --device cuda run needs it)",
}


def _seccomp_check() -> tuple[bool, str]:
    from grader.sandbox import seccomp

    ok, why = seccomp.available()
    if not ok:
        return False, why
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            seccomp.load_program(seccomp.program())
            import resource
            import socket

            try:
                socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            except OSError:
                try:
                    resource.prlimit(os.getppid(), resource.RLIMIT_CORE)
                except PermissionError:
                    code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return False, ("the filter could not be installed (or did not refuse an AF_INET socket, or the resource "
                       "limits of another process)")
    return True, ""


def _cuda_inside(launcher: str) -> tuple[bool | None, str]:
    try:
        import torch

        if not torch.cuda.is_available():
            return None, "no CUDA on this machine (torch.cuda.is_available() is False)"
    except Exception as exc:  # noqa: BLE001
        return None, f"torch: {exc}"
    if launcher != "bubblewrap":
        return _cuda_inside_locked_down(launcher)
    from grader.sandbox import launchers
    from grader.sandbox.bundle import kit_bundle
    from grader.sandbox.config import Limits

    env = launchers.sandbox_env("/tmp", "/kit", "/scratch", gpu=True)
    opts = launchers.bwrap_options(kit_bundle(), kit_bundle(), Limits(), env, gpu=True)
    from grader.sandbox import seccomp

    fd = seccomp.program_fd()  # with the same system-call filter as a graded sandbox
    cmd = ["bwrap", *opts, "--seccomp", str(fd), "--", sys.executable, "-c",
           "import torch; print(torch.cuda.is_available() and torch.ones(2, device='cuda').sum().item() == 2)"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                              pass_fds=(fd,))
    finally:
        os.close(fd)
    ok = proc.stdout.strip().endswith("True")
    return ok, "" if ok else (proc.stderr.strip().splitlines() or ["CUDA not visible inside bubblewrap"])[-1][:200]


def _cuda_inside_locked_down(launcher: str) -> tuple[bool, str]:
    """The landlock and rlimits launchers: a process locked down as a `--device cuda` sandbox is
    (`grader.sandbox.lockdown.lock_down`: rlimits, the Landlock rules with the GPU's devices, the seccomp
    filter) runs a CUDA operation."""
    import json
    import tempfile

    from grader import KIT_ROOT
    from grader.sandbox import launchers, seccomp
    from grader.sandbox.bundle import kit_bundle
    from grader.sandbox.config import Limits
    from grader.sandbox.limits import rlimits

    limits = Limits()
    limits.data_bytes = limits.as_bytes = None  # as for `grader grade --device cuda`
    with tempfile.TemporaryDirectory() as scratch:
        bundle = kit_bundle()
        config = {"limits": rlimits(limits), "uid": None, "gid": None, "keep_read_cap": False,
                  "seccomp": seccomp.program().hex() if seccomp.available()[0] else None,
                  "landlock": launchers.landlock_rules(Path(scratch), bundle, [scratch], gpu=True)
                  if launcher == "landlock" else None}
        script = ("import json, sys; from grader.sandbox.lockdown import lock_down; lock_down(json.loads(sys.argv[1])); "
                  "import torch; print(torch.ones(2, device='cuda').sum().item() == 2)")
        proc = subprocess.run([sys.executable, "-c", script, json.dumps(config)], capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL, cwd=scratch,
                              env={**os.environ, "PYTHONPATH": str(KIT_ROOT)})
    ok = proc.stdout.strip().endswith("True")
    return ok, "" if ok else (proc.stderr.strip().splitlines() or [f"CUDA not usable under the {launcher} launcher"])[-1][:200]


def _zygote_check(launcher: str) -> tuple[bool | None, str]:
    """Can sandboxes be forked from a pre-imported zygote here (grader.sandbox.zygote)?  Starts one."""
    from grader.sandbox import SandboxSettings, uids, zygote, zygotes

    why = zygotes.why_not(SandboxSettings(), launcher, 0 if uids.is_root() else None)
    if why:
        return None, f"not used: {why}"
    try:
        zygotes.shared(SandboxSettings())
    except zygote.ZygoteError as exc:
        return False, str(exc)[:300]
    finally:
        zygotes.close_all()
    return True, "every sandbox is forked from a pre-imported process"


def diagnose(cuda: bool = True) -> dict[str, Any]:
    """Every layer: {"name": {"ok": bool | None, "detail": str, "fix": str}}, and what auto picks."""
    import io
    from contextlib import redirect_stderr

    from grader.sandbox import launchers, limits, uids

    root = uids.is_root()
    layers: dict[str, dict[str, Any]] = {}

    def add(name: str, ok: bool | None, detail: str, fix: str = "") -> None:
        detail = detail.strip()
        if detail.startswith("(") and detail.endswith(")"):
            detail = detail[1:-1]
        layers[name] = {"ok": ok, "detail": detail, "fix": "" if ok else fix}

    installed = bool(launchers.shutil.which("bwrap"))
    if not installed:
        add("bubblewrap (no user namespace)", False, "bwrap is not installed", FIXES["bwrap_missing"])
        add("bubblewrap (user namespace)", False, "bwrap is not installed", FIXES["bwrap_missing"])
    else:
        ok, why = launchers.bwrap_available(user_namespace=False)
        add("bubblewrap (no user namespace)", ok, why or ("as root" if root else "works without one"),
            FIXES["root_bwrap"])
        ok, why = launchers.bwrap_available(user_namespace=True)
        add("bubblewrap (user namespace)", ok, why or "unprivileged namespaces work", FIXES["userns"])
    abi, why = launchers.landlock_available()
    usable, why_not = launchers.landlock_acceptable()
    if not abi:  # bubblewrap workers also narrow their /proc with it (`launchers.sandbox_rules`)
        add("landlock", False, why + "; without it a bubblewrap sandbox can read its mount table "
            "(/proc/self/mountinfo), which names the host folders bound into it (the kit's, for a venv inside it)",
            FIXES["landlock"])
    elif usable:
        scoped = abi >= launchers.LANDLOCK_SCOPED_ABI
        add("landlock", True, f"ABI {abi}: " + ("signals and abstract sockets scoped to the sandbox" if scoped else
                                                  "no scopes, accepted as root (a uid per submission)")
            + ("" if root else "; " + launchers.SHARED_UID))
    else:
        add("landlock", False, f"ABI {abi}, refused: {why_not}", FIXES["landlock"])
    ok, why = _seccomp_check()
    add("seccomp", ok, why or "libseccomp filter installed, refusing AF_INET and calls on other processes",
        FIXES["seccomp"])
    add("between sandboxes", ok,
        ("file locks, leases, cache advice and page-residency probes refused (the seccomp filter); " if ok else
         "without the seccomp filter, sandboxes can signal each other through file locks and the page cache; ")
        + "left open on every launcher: the page cache's timing (a page of a shared file that one sandbox reads is "
        "faster for the next to read): docs/ARCHITECTURE.md, 'Between sandboxes', has its measured bandwidth; "
        "measure it here with python bench/page_cache_channel.py", FIXES["seccomp"])
    add("uid drop", root, "root: a uid per submission" if root else "not root: the sandbox runs as this user",
        FIXES["uid"])
    ok, how = limits.cgroups_available()
    add("cgroup memory limit", ok, how, FIXES["cgroup"])
    try:
        with redirect_stderr(io.StringIO()):
            picked, warning = launchers.resolve_launcher("auto")
    except RuntimeError as exc:  # no launcher gives the guarantees: auto refuses to grade
        picked, warning = "", str(exc)
    add("zygote (fast sandbox start)", *(_zygote_check(picked) if picked else (None, "not used: no launcher")),
        FIXES["zygote"])
    if cuda and picked:
        ok, why = _cuda_inside(picked)
        add("cuda inside the sandbox", ok, why or "torch.cuda.is_available() inside the sandbox", FIXES["cuda"])
    return {"auto": picked, "warning": warning, "root": root, "layers": layers}


def render(report: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    table = Table(title="Sandbox layers on this machine")
    for col in ("layer", "works", "detail", "fix"):
        table.add_column(col, overflow="fold")
    for name, info in report["layers"].items():
        mark = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "n/a"}[info["ok"]]
        table.add_row(name, mark, info["detail"], info["fix"])
    console.print(table)
    if report["auto"]:
        console.print(f"--sandbox auto picks: [bold]{report['auto']}[/bold]")
    else:
        console.print("--sandbox auto [bold red]refuses to grade here[/bold red]:")
    if report["warning"]:
        console.print(report["warning"], highlight=False)


def require(level_name: str, launcher: str = "auto") -> str:
    """The launcher that would run; raises RuntimeError when it is below `level_name`."""
    import io
    from contextlib import redirect_stderr

    from grader.sandbox import launchers

    with redirect_stderr(io.StringIO()):
        picked, _ = launchers.resolve_launcher(launcher)  # (raises where nothing gives the guarantees)
    if launchers.level(picked) < launchers.level(level_name):
        raise RuntimeError(f"--require {level_name}: this machine would grade with {picked}; "
                           "run `grader doctor` for the missing layers and their fixes")
    return picked
