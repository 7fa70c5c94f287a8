"""`SandboxBackend`: the `grader.boundary.backends.Backend` interface over one sandbox per submission.

Every reply crosses `grader.boundary.messages.decode` (size cap, `grader.boundary.wire`'s data-only decoder,
structural type check) in `grader.sandbox.channel` before a test sees it.  On a timeout, a
crash or a garbage reply the whole sandbox is killed, that call fails with a plain message
(``{"boundary": ...}``) and the next call starts a fresh sandbox; a module that hangs or kills
the sandbox while being imported is remembered, so its remaining calls fail at once.  Exit
codes and output of the sandbox are never a verdict: only the trusted tests' assertions are.

Text that crosses back from the submission (exception messages, strings in replies) is
scrubbed of the grader's host paths (the kit, the staged submission, the bundle, the scratch
folders, the results folder), a second line behind keeping them out of the sandbox's view.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from grader import KIT_ROOT, MODULES
from grader.boundary.backends import read_module_source
from grader.boundary.messages import BudgetSpent, DecodeBudget
from grader.sandbox import uids
from grader.sandbox.channel import CappedBuffer, ChannelTimeout, Garbage
from grader.sandbox.bundle import kit_bundle
from grader.sandbox.launchers import resolve_launcher
from grader.sandbox.process import Sandbox, SandboxStartError
from grader.sandbox.config import (SANDBOX_FOLDER, SANDBOX_KIT, SANDBOX_OTHER_FS, SANDBOX_TMP, SandboxSettings,
                                     record_finished, settings)

_TEMP_NAMES = re.compile(r"/[\w./-]*?/kit-(?:grade|bundle|scratch|test-sandbox|inbox|progress)-[\w.-]+")
#: Names the sandbox's host side chose (a cgroup, a probe cgroup): never in a message, with or without a path
_CHOSEN_NAMES = re.compile(r"[\w./-]*kit-(?:sandbox|probe|trusted)-[0-9a-f][\w.-]*")


class SandboxBackend:
    """Probe calls run in a locked-down subprocess; one per submission, restarted after a crash."""

    def __init__(self, folder: Path, settings_: SandboxSettings | None = None):
        self.folder = Path(folder).resolve()
        self.settings = settings_ or settings()
        self.launcher, self.warning = resolve_launcher(self.settings.launcher)
        if self.settings.uid_per_submission or self.settings.uid is None:
            self.uid = uids.lease_uid(avoid=self.settings.uid)
            self._leased = True
        else:
            self.uid, self._leased = self.settings.uid, False
        self.output = CappedBuffer(self.settings.output_cap)
        self.fault = CappedBuffer(16 * 1024)
        self.sandbox: Sandbox | None = None
        self.imported: set[str] = set()
        self.broken: dict[str, str] = {}  # module -> why its import never completes
        self.started_at = time.monotonic()
        self.call_seconds = 0.0
        self.stats: dict[str, Any] = {"launcher": self.launcher, "warning": self.warning, "uid": self.uid,
                                      "layers": {}, "starts": 0, "calls": 0, "startup_seconds": [],
                                      "timeouts": 0, "crashes": 0, "garbage": 0, "infra_error": "", "events": []}
        self.closed = False
        self._scrub = self._scrub_table()
        self.decode_budget = DecodeBudget()  # trusted work its replies may cost (grader.boundary.messages)

    # Backend interface ------------------------------------------------------------------------
    def source(self, module: str) -> str | None:
        return read_module_source(self.folder, module)

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        return self._call(name, kwargs, None)

    def call_measured(self, name: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The call, and the peak memory growth of the sandbox during it, measured from outside:
        the cgroup's peak where the sandbox has a memory cgroup, else VmRSS of its processes
        sampled every 2 ms ({"peak_growth_bytes": -1, ...} when nothing could be measured).  The
        call runs in a fresh sandbox and the growth counts from before the submission's import, so
        memory held at import (or by an earlier call) and freed during the call offsets nothing."""
        measured: dict[str, Any] = {"peak_growth_bytes": -1, "method": "not measured (the call did not run)"}
        reply = self._call(name, kwargs, measured)
        self.stats["measure_method"] = measured["method"]
        return reply, measured

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.sandbox is not None:
            self.sandbox.stop()
            self.sandbox = None
        if self._leased:
            uids.release_uid(self.uid)
        text = self.output.text()
        self.stats["output_bytes"] = self.output.total
        self.stats["output"] = text
        self.stats["seconds"] = round(time.monotonic() - self.started_at, 3)
        self.stats["call_seconds"] = round(self.call_seconds, 3)  # imports and probe calls, start-ups excluded
        if self.settings.log_path:
            _write_log(Path(self.settings.log_path), self)
        record_finished(dict(self.stats))

    # internals --------------------------------------------------------------------------------
    def _call(self, name: str, kwargs: dict[str, Any], measured: dict[str, Any] | None) -> dict[str, Any]:
        from grader.boundary.messages import ErrorData

        self.stats["calls"] += 1
        module = name.partition(".")[0]
        if module in MODULES and not (self.folder / f"{module}.py").is_file():
            return {"error": ErrorData("ModuleNotFoundError", ("ModuleNotFoundError", "ImportError", "Exception"),
                                       f"{module}.py is missing from the submission", True, "").as_dict()}
        if module in self.broken:
            return {"boundary": self.broken[module]}
        if self.stats["infra_error"]:
            return {"boundary": f"the grader could not run your code: {self.stats['infra_error']}"}
        if self.call_seconds > self.settings.submission_budget:
            return {"boundary": f"the submission used up its total time budget ({self.settings.submission_budget:g} s)"}
        spent = self.decode_budget.refusal(module)
        if spent:
            return {"boundary": spent}
        if self.stats["timeouts"] + self.stats["crashes"] + self.stats["garbage"] >= self.settings.max_restarts:
            return {"boundary": "the sandbox crashed or timed out too many times; later calls are not run"}
        if measured is not None and self.sandbox is not None:
            # measured in a fresh sandbox from before the submission's import: memory held since the import
            # or an earlier call and freed during this one cannot hide what this call needs (a fork of the
            # zygote: about 0.1 s)
            self.sandbox.stop()
            self.sandbox = None
        try:
            sandbox = self._ensure_started()
        except SandboxStartError as exc:
            self.stats["infra_error"] = self.scrub(str(exc))
            return {"boundary": f"the grader could not run your code: {self.stats['infra_error']}"}
        t0 = time.monotonic()
        try:
            finish = self._begin_measure(sandbox) if measured is not None else None
            if module in MODULES and module not in self.imported:
                reply = self._request(sandbox, {"op": "import", "module": module}, self.settings.import_timeout,
                                      f"importing {module}.py", module)
                if "ok" not in reply:
                    return reply
                self.imported.add(module)
            reply = self._request(sandbox, {"op": "call", "name": name, "kwargs": kwargs},
                                  self.settings.call_timeout, name, None)
            if finish is not None and measured is not None:
                finish(measured)
            return reply
        finally:
            self.call_seconds += time.monotonic() - t0

    @staticmethod
    def _begin_measure(sandbox: Sandbox) -> Any:
        """Start measuring the sandbox's memory; returns `finish(measured)`, which records the peak
        growth since now (the cgroup's peak, else VmRSS of its processes sampled from outside)."""
        cg, monitor = sandbox.cgroup, sandbox.monitor
        use_cgroup = cg is not None and cg.reset_peak()
        before = cg.usage() if use_cgroup and cg is not None else 0
        if not use_cgroup and monitor is not None:
            monitor.measure()

        def finish(measured: dict[str, Any]) -> None:
            if use_cgroup and cg is not None:
                try:
                    measured.update(peak_growth_bytes=max(0, cg.peak() - before), method=f"cgroup v{cg.version} peak")
                except OSError:
                    measured.update(method="not measured (the sandbox ended during the call)")
            elif monitor is not None:
                measured.update(peak_growth_bytes=monitor.stop_measure(),
                                method="VmRSS of the sandbox's processes sampled every 2 ms")

        return finish

    def _ensure_started(self) -> Sandbox:
        if self.sandbox is not None and self.sandbox.alive():
            return self.sandbox
        if self.sandbox is not None:
            self.sandbox.kill()
        self.imported.clear()
        sandbox = Sandbox(self.folder, self.settings, self.launcher, self.uid, self.output, self.fault)
        self.stats["starts"] += 1
        sandbox.start()
        self.stats["layers"] = sandbox.layers
        if sandbox.zygote_note:  # instructor.json only: the zygote failed and the sandbox started the ordinary way
            self.stats["zygote_note"] = self.scrub(sandbox.zygote_note)[:1000]
        if sandbox.zygote is not None:  # instructor.json only: "batch" (forked by the batch's mother zygote) or "worker"
            self.stats["zygote_origin"] = "worker" if sandbox.zygote.owns_inbox else "batch"
        self.stats["startup_seconds"].append(round(sandbox.startup_seconds, 3))
        self.sandbox = sandbox
        return sandbox

    def _fail(self, kind: str, what: str, message: str, module: str | None) -> dict[str, Any]:
        self.stats[kind] += 1
        self.stats["events"].append({"call": what, "kind": kind, "message": message})
        if module is not None:
            self.broken[module] = f"{message} (while importing {module}.py)"
            return {"boundary": self.broken[module]}
        return {"boundary": message}

    def _request(self, sandbox: Sandbox, message: dict[str, Any], timeout: float, what: str,
                 module: str | None) -> dict[str, Any]:
        try:
            charged = str(message.get("module") or message.get("name", "")).partition(".")[0]
            reply = self.scrub_reply(sandbox.request(message, timeout, self.decode_budget, charged))
            over = sandbox.monitor.check_now() if sandbox.monitor is not None else ""
            if over:  # files held past a limit when the call ended (landlock, rlimits): as if killed during it
                sandbox.kill()
                self.sandbox = None
                return self._fail("crashes", what, over, module)
            if sandbox.dirty and message["op"] == "call":  # processes left behind: not into the next call
                self.stats["leftovers"] = self.stats.get("leftovers", 0) + 1
                sandbox.kill()
                self.sandbox = None
            return reply
        except ChannelTimeout:
            sandbox.kill()
            self.sandbox = None
            return self._fail("timeouts", what, f"timed out after {timeout:g} s", module)
        except EOFError:
            rc = sandbox.wait_exit(2.0)  # its own exit status first (the words say why), then kill the rest
            sandbox.kill()
            self.sandbox = None
            return self._fail("crashes", what, sandbox.death_words(rc), module)
        except BudgetSpent as exc:  # not the sandbox's fault: not counted as garbage (its leftovers unknown: restart)
            sandbox.kill()
            self.sandbox = None
            self.stats["events"].append({"call": what, "kind": "budget", "message": str(exc)})
            return {"boundary": str(exc)}
        except Garbage as exc:
            sandbox.kill()
            self.sandbox = None
            first = (self.scrub(str(exc)).strip().splitlines() or [""])[0][:300]
            return self._fail("garbage", what, f"the sandbox sent back something that is not data: {first}", None)

    # host paths out of messages --------------------------------------------------------------------
    def _scrub_table(self) -> list[tuple[str, str]]:
        pairs = [(str(self.folder), SANDBOX_FOLDER), (str(kit_bundle()), SANDBOX_KIT), (str(KIT_ROOT), "<kit>")]
        if self.settings.log_path:  # DIR/instructor/students/<id>/sandbox.log (or DIR/<id>/sandbox.log)
            for up in Path(self.settings.log_path).resolve().parents[1:4]:
                if len(up.parts) > 2:
                    pairs.append((str(up), "<results>"))
        return sorted({(a, b) for a, b in pairs if len(a) > 1}, key=lambda p: -len(p[0]))

    def scrub(self, text: str) -> str:
        if "/" not in text:
            return text
        for host, neutral in self._scrub:
            text = text.replace(host, neutral)
        if self.sandbox is not None:
            for d, neutral in zip(self.sandbox.scratch, (SANDBOX_TMP, SANDBOX_OTHER_FS)):
                text = text.replace(d, neutral)
            if self.sandbox.cgroup is not None:  # (its path as /proc/self/cgroup shows it ends with the name)
                text = text.replace(str(self.sandbox.cgroup.path), "<cgroup>")
        return _CHOSEN_NAMES.sub("<cgroup>", _TEMP_NAMES.sub("<tmp>", text))

    def scrub_reply(self, reply: dict[str, Any]) -> dict[str, Any]:
        if "boundary" in reply:
            return {"boundary": self.scrub(reply["boundary"])}
        if "error" in reply:
            err = dict(reply["error"])
            for key in ("message", "where"):
                if isinstance(err.get(key), str):
                    err[key] = self.scrub(err[key])
            return {"error": err}
        return {"ok": self._scrub_value(reply["ok"], 0)}

    def _scrub_value(self, value: Any, depth: int) -> Any:
        if type(value) is str:
            return self.scrub(value)
        if depth > 20:
            return value
        if type(value) is list:
            return [self._scrub_value(v, depth + 1) for v in value]
        if type(value) is tuple:
            return tuple(self._scrub_value(v, depth + 1) for v in value)
        if type(value) is dict:
            return {k: self._scrub_value(v, depth + 1) for k, v in value.items()}
        return value


def _write_log(path: Path, backend: SandboxBackend) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    s = backend.stats
    layers = ", ".join(f"{k}={v}" for k, v in s.get("layers", {}).items())
    lines = [f"sandbox: {backend.launcher}", *([backend.warning] if backend.warning else []),
             f"layers: {layers}",
             f"starts: {s['starts']}  calls: {s['calls']}  timeouts: {s['timeouts']}  crashes: {s['crashes']}  "
             f"garbage replies: {s['garbage']}",
             *(f"event: {e['kind']} in {e['call']}: {e['message']}" for e in s["events"]),
             *([f"infrastructure error: {s['infra_error']}"] if s["infra_error"] else []),
             f"--- output of the submission ({backend.output.total} bytes; at most {backend.settings.output_cap} kept; "
             "written by student code, not by the grader) ---", backend.output.text()]
    from grader.files import write_atomic

    write_atomic(path, "\n".join(lines))
