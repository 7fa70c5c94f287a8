"""What a sandbox's worker is started with: its configuration, bwrap's command line or the host's
scratch folders and supervisor, and the isolation layers it ends up in (`grader.sandbox.process`
starts it with these)."""

from __future__ import annotations

import os
import shutil
from typing import Any

from grader.sandbox import launchers, limits as limits_mod, seccomp, uids
from grader.sandbox.bundle import kit_bundle, python_mounts, sandbox_site
from grader.sandbox.config import BUBBLEWRAP, LANDLOCK, SANDBOX_KIT, SANDBOX_OTHER_FS, SANDBOX_TMP
from grader.sandbox.scratch import make_scratch

#: (each function takes the `grader.sandbox.process.Sandbox` being started: not imported, which imports this module)
Sandbox = Any


def base_config(sb: Sandbox) -> tuple[dict[str, Any], int]:
    """The worker's configuration every launcher shares (rlimits, uid), and the memory cap (a
    cgroup made for it where this machine has one)."""
    s = sb.settings
    lim = s.limits
    extra = 0
    if sb.uid is None and not uids.is_root() and sb.launcher != BUBBLEWRAP:
        extra = uids.count_own_processes()  # without a uid of our own RLIMIT_NPROC counts all of ours
    config: dict[str, Any] = {"limits": limits_mod.rlimits(lim, extra), "uid": sb.uid, "gid": sb.uid,
                              "keep_read_cap": False, "seccomp": None, "landlock": None,
                              "keyctl": uids.keyctl_nr()}
    cap = lim.memory_cap()
    if s.cgroup and uids.is_root() and limits_mod.cgroups_available()[0]:
        # named at random: the sandbox can read its own cgroup's path (/proc/sb/cgroup)
        sb.cgroup = limits_mod.Cgroup.create(limits_mod.new_cgroup_name(), cap)
    return config, cap

def bubblewrap_prefix(sb: Sandbox, sec_ok: bool, extra_fds: list[int]) -> tuple[list[str], dict[str, str], None]:
    """bwrap's command line (its options passed through a pipe, the seccomp program as a
    descriptor), the worker's environment, and its working directory (bwrap's own)."""
    s = sb.settings
    env = launchers.sandbox_env(SANDBOX_TMP, SANDBOX_KIT, SANDBOX_OTHER_FS, gpu=s.gpu, site=sandbox_site(BUBBLEWRAP))
    options = launchers.bwrap_options(sb.folder, kit_bundle(), s.limits, env, gpu=s.gpu)
    args_r, args_w = os.pipe()
    os.write(args_w, b"\0".join(o.encode() for o in options) + b"\0")
    os.close(args_w)
    prefix = [shutil.which("bwrap") or "bwrap", "--args", str(args_r)]
    extra_fds.append(args_r)
    if sec_ok:
        sec_fd = seccomp.program_fd()
        prefix += ["--seccomp", str(sec_fd)]
        extra_fds.append(sec_fd)
    prefix.append("--")
    return prefix, env, None

def host_scratch(sb: Sandbox, config: dict[str, Any], sec_ok: bool) -> tuple[dict[str, str], str]:
    """A landlock or rlimits sandbox on the host: its scratch folders, the supervisor that ends it,
    its Landlock rules; returns the worker's environment and working directory."""
    s = sb.settings
    bundle = kit_bundle()
    made = make_scratch(sb.uid, s.limits.tmpfs_bytes)
    sb.cleanup += made.parents
    scratch, other = made.tmp, made.other
    sb.scratch += [scratch, other]
    env = launchers.sandbox_env(scratch, str(bundle), other, gpu=s.gpu, site=sandbox_site(sb.launcher))
    config["folder"] = str(sb.folder)
    if sec_ok:  # (under the grader's own uid: chmod and chown of its files do nothing)
        config["seccomp"] = seccomp.program(shared_uid=sb.uid is None).hex()
    # ends every process of the sandbox with it, also when this process dies (`parent`: see lockdown)
    config["supervisor"] = {"landlock": None, "parent": os.getpid()}
    if sb.launcher == LANDLOCK:
        config["landlock"] = launchers.landlock_rules(sb.folder, bundle, [scratch, other], gpu=s.gpu)
        config["supervisor"]["landlock"] = launchers.supervisor_rules(config["landlock"])
    if sb.uid is not None and not all(uids.others_can_read(p) for p in python_mounts()):
        config["keep_read_cap"] = True
    sb.supervised = True
    return env, scratch

def layers(sb: Sandbox, inside: dict[str, Any], cap: int) -> dict[str, Any]:
    """The isolation layers in force (results.json's ``extra_data.sandbox.layers``): those the
    launcher gives, and those the worker reports it took (`inside`)."""
    return {
        "namespaces": sb.launcher == BUBBLEWRAP,
        "user_namespace": sb.launcher == BUBBLEWRAP and not uids.is_root(),
        "landlock": int(inside.get("landlock", 0) or 0),
        "seccomp": bool(inside.get("seccomp")),
        "no_new_privs": bool(inside.get("no_new_privs")),
        "uid_drop": sb.uid is not None and inside.get("uid") == sb.uid,
        "rlimits": True,
        "memory": (f"cgroup v{sb.cgroup.version} limit" if sb.cgroup else "watched from outside (RSS and files)")
                  + f" {cap / 2**30:g} GiB",
        "tmpfs_caps": sb.launcher == BUBBLEWRAP,
        "scratch_caps": sb.supervised,  # watched from outside, the same sizes
        "supervisor": bool(inside.get("supervisor")),
        "zygote": sb.zygote is not None,
    }
