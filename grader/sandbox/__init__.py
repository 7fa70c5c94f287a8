"""The sandboxed probe backend: one locked-down subprocess per submission.

`SandboxBackend(folder)` has the `grader.boundary.backends.Backend` interface (`call`, `call_measured`,
`source`, `close`).  Behind it, a `Sandbox` runs `grader.sandbox.worker` in a child process that
imports only the submission's staged module files and serves probe calls.  The layers, one
module each:

* `config`    -- launcher names, `Limits`, `SandboxSettings`, per-process configuration;
* `launchers` -- bubblewrap, landlock and rlimits, which one this machine can use (`auto`
  picks in that order), the bwrap options and the Landlock rules;
* `bundle`    -- what a sandbox may read: the kit bundle, the Python installation;
* `scratch`   -- the scratch folders of a landlock or rlimits sandbox on the host;
* `seccomp`   -- the system-call filter every launcher installs (libseccomp via pyseccomp);
* `landlock`  -- file access limited to a few trees without namespaces (ctypes system calls);
* `lockdown`  -- the worker locking itself down: rlimits, uid, no_new_privs, Landlock, seccomp;
* `limits`    -- rlimits, a memory cgroup per sandbox (memory peaks);
* `watch`     -- the watch from outside: processes, memory held, files kept, a call's peak;
* `uids`      -- a uid per submission (root), killing its processes, clearing its kernel state;
* `channel`   -- the length-prefixed messages, the capped capture of the output;
* `process`   -- one running sandbox (start, request, kill); `start_config`: what its worker is
  started with; `crash`: plain words for its end;
* `zygote`, `zygotes`, `zygote_process` -- sandboxes forked from a pre-imported zygote: one zygote,
  which zygote a sandbox uses (and the batch's mother zygote), the zygote's own process;
* `backend`   -- `SandboxBackend`: restarts, budgets, measured calls, host paths scrubbed;
* `worker`, `supervisor` -- the process inside the sandbox (imports the submission, serves probe
  calls) and, for the landlock and rlimits launchers, the supervisor that ends all of it;
* `doctor`    -- `grader doctor`: which layers this machine has, which launcher `auto` picks.

Every results.json says which launcher ran and which layers were active
(``extra_data.sandbox``); `grader doctor` says which layers this machine has.

May import: `grader.boundary` and below (`grader.LAYERS`).

Names are re-exported lazily (the worker imports `grader.sandbox.landlock` and
`grader.sandbox.seccomp` without pulling in torch or the backend).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "config": ("BUBBLEWRAP", "LANDLOCK", "RLIMITS", "LEVELS", "SANDBOX_FOLDER", "SANDBOX_KIT", "SANDBOX_TMP",
                 "SANDBOX_OTHER_FS", "Limits", "SandboxSettings", "configure", "settings", "pop_finished",
                 "settings_dict"),
    "launchers": ("FALLBACK_WARNING", "LANDLOCK_NOTE", "bwrap_available", "landlock_available", "resolve_launcher",
                  "bwrap_options", "landlock_rules", "sandbox_env", "level"),
    "bundle": ("kit_bundle", "python_mounts"),
    "uids": ("UID_BASE", "UID_COUNT", "acquire_uid", "lease_uid", "release_uid", "processes_of_uid", "kill_uid",
             "descendants", "clear_uid_state", "uid_state"),
    "channel": ("CappedBuffer", "Channel"),
    "process": ("Sandbox", "SandboxStartError"),
    "backend": ("SandboxBackend",),
    "limits": ("Cgroup", "cgroups_available"),
}
_ALIASES = {"_others_can_read": ("uids", "others_can_read"), "_count_own_processes": ("uids", "count_own_processes")}
_WHERE = {name: (mod, name) for mod, names in _EXPORTS.items() for name in names} | _ALIASES

__all__ = sorted(n for names in _EXPORTS.values() for n in names)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        mod, attr = _WHERE[name]
        return getattr(importlib.import_module(f"grader.sandbox.{mod}"), attr)
    raise AttributeError(f"module 'grader.sandbox' has no attribute {name!r}")
