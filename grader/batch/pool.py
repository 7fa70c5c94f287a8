"""The grading pool of `grader grade`: N trusted workers, and the batch's mother zygote.

`run_pool` hands the submissions to grade to N long-lived trusted workers (`grader.batch.trusted`),
each forked by the trusted fork-server (`grader.batch.forkserver`; else started as a process of
its own), over a socket each: a job in, an `Outcome` out.  It replaces a worker that died (its
submission graded once more), one past its hard limits (`grader.testing.budget`: what it finished
counts, the rest not graded) and, every `RECYCLE_AFTER` submissions, a healthy one.  Where
sandboxes come from zygotes it also starts the batch's mother zygote (`grader.sandbox.zygotes`),
which forks each worker's zygote; and it builds the kit bundle every sandbox of the batch reads,
once (``KIT_BUNDLE``).  With one submission there is no fork-server (the worker starts as a process of its own).  When
nothing is left to hand out, idle workers end while the others finish, and the caller writes the
batch's reports before it waits for them (`run_pool` returns what waits).  It writes nothing of a
submission's: the workers do.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from grader import KIT_ROOT
from grader.batch import warm
from grader.testing import budget
from grader.intake.discover import Source
from grader.results.layout import Layout
from grader.batch.options import BatchResult, GradeError, GradeOptions, Outcome, options_json, sandbox_settings
from grader.sandbox.scratch import owned_tempdir
from grader.untrusted import shown_markup

#: A trusted worker is replaced by a fresh process after grading this many submissions.
RECYCLE_AFTER = 100


class Pool:
    """N trusted workers, each forked by the trusted fork-server (`grader.batch.forkserver`; else a
    `python -m grader.batch.trusted --worker` process) and holding a socket to this one; and the
    batch's mother zygote, which forks each worker's zygote."""

    def __init__(self, n: int, options: GradeOptions, forkserver: bool = True):
        from grader.sandbox import SandboxSettings

        self.options = options
        self.logs = Layout(options.out).logs
        self.logs.mkdir(parents=True, exist_ok=True)
        # the trusted side's budgets (grader.testing.budget); each job's progress streams to a folder of its own here
        budget.sweep_stale()
        from grader.sandbox.supervisor import OrphanSweep

        self.orphans = OrphanSweep()  # what a killed sandbox supervisor left is re-parented here, and ends with the batch
        self.orphans.start()
        self.memory = budget.WorkerMemory.choose(options.worker_memory_mb, options.device)
        self.budget = float(options.submission_budget or 0)
        self.wall = budget.wall_limit(self.budget, SandboxSettings().submission_budget, options.call_timeout,
                                      options.import_timeout)
        self.limits = {"submission_budget_cpu_s": self.budget or None,
                       "killed_past_cpu_s": self.budget + budget.hard_margin(self.budget) if self.budget else None,
                       "wall_limit_s": self.wall}
        self.progress = owned_tempdir("kit-progress-")
        self.jobs = self.spawned = 0
        # the fork-server first: its warm-up (torch, pytest, the tests) is the longest start-up of
        # the batch; the kit bundle and the mother zygote (its imports) are made while it runs, and
        # each worker gets both when it is forked (`_handed`).  Without one (`forkserver` False: one
        # submission, whose worker would only repeat the server's collection) the worker starts as a
        # process of its own, its imports running while the mother zygote's do
        self.mother: Any = None
        self.bundle = ""
        self.server = self._start_server() if forkserver else None
        self.bundle = self._build_bundle()
        self.mother = self._start_mother()
        self.workers: list[dict[str, Any]] = [self._spawn(slot) for slot in range(n)]
        self.leaving: list[dict[str, Any]] = []  # told to end (`release`, `close`), not yet waited for

    def _start_mother(self) -> Any:
        """The batch's mother zygote (`grader.sandbox.zygotes.MotherProcess`) where sandboxes come from
        zygotes: its imports (torch, the probes) are then paid once per batch, not once per worker,
        and run while the workers import theirs.  None where zygotes are not used, or it cannot start
        (each worker then starts its own zygote, as with one job)."""
        try:
            from grader.sandbox import zygotes
            from grader.sandbox.uids import is_root

            settings, launcher, _ = sandbox_settings(self.options)
            if zygotes.why_not(settings, launcher, 0 if is_root() else None):
                return None
            return zygotes.MotherProcess(settings)
        except Exception as exc:  # noqa: BLE001 - grading goes on without it
            with open(self.logs / "worker-0.log", "a") as log:
                log.write(f"the batch's zygote could not start ({type(exc).__name__}: {exc}): "
                          "each worker starts its own\n")
            return None

    def _build_bundle(self) -> str:
        """The kit bundle (`grader.sandbox.bundle`) every sandbox of the batch reads, built once here
        and handed to every worker (``KIT_BUNDLE``), not copied and compiled again by each; "" where
        it cannot be built (each worker then builds its own)."""
        try:
            from grader.sandbox.bundle import kit_bundle

            return str(kit_bundle())
        except OSError:
            return ""

    def _handed(self) -> tuple[dict[str, str], list[int]]:
        """What a worker gets besides the fork-server's environment: the batch's bundle, the mother
        zygote's link, and the descriptor that link names (the mother's shared socket)."""
        env: dict[str, str] = {"KIT_BUNDLE": self.bundle} if self.bundle else {}
        fds: list[int] = []
        if self.mother is not None:
            env.update(self.mother.env())
            fds.append(self.mother.workers_end.fileno())
        return env, fds

    def _worker_env(self) -> tuple[dict[str, str], list[int]]:
        """The trusted workers' environment, and the descriptors they inherit (the batch's zygote)."""
        # one trusted process per job slot, each next to its sandbox: torch's thread pool would only
        # spin against the sandbox for the same cores (measured: 30% slower at -j 2 on 2 cores)
        threads = str(max(1, (os.cpu_count() or 1) // self.options.jobs - 1))
        env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OMP_WAIT_POLICY": "PASSIVE",
               # the sandbox hides GPUs (CUDA_VISIBLE_DEVICES=""): GPU tests stay pending in this CPU run even on
               # a machine with CUDA (the plugin's --device default reads KIT_DEVICE)
               "KIT_DEVICE": os.environ.get("KIT_GRADE_DEVICE", self.options.device)}
        handed, inherit = self._handed()
        return {**env, **handed}, inherit

    def _start_server(self) -> Any:
        """The trusted fork-server (`grader.batch.forkserver`): workers forked from one warmed-up
        process; `KIT_TRUSTED_FORKSERVER=0` turns it off (workers then start as processes of their own)."""
        if os.environ.get("KIT_TRUSTED_FORKSERVER", "1") == "0" or self.options.device == "cuda":
            return None  # (CUDA: a process that initialised the driver must not fork the workers that use it)
        from grader.batch.forkserver import ForkServer

        env, inherit = self._worker_env()
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # torch.cuda.is_available() at collection: no driver init
        try:
            return ForkServer(options_json(self.options), env, self.logs / "forkserver.log", inherit)
        except OSError:
            return None

    def _spawn(self, slot: int) -> dict[str, Any]:
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        proc: Any = None
        with open(self.logs / f"worker-{slot}.log", "ab") as log:
            if self.server is not None:
                handed, fds = self._handed()
                proc = self.server.spawn(theirs.fileno(), log.fileno(), handed, fds)
                if proc is None:
                    log.write(f"(started as a process of its own: {self.server.broken})\n".encode())
            if proc is None:
                env, inherit = self._worker_env()
                proc = subprocess.Popen([sys.executable, "-m", "grader.batch.trusted", "--worker", str(theirs.fileno()),
                                         options_json(self.options)], pass_fds=[theirs.fileno(), *inherit],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=KIT_ROOT, env=env)
        theirs.close()
        conn = Connection(ours.detach())
        self.spawned += 1
        memory = self.memory.confine(proc.pid, f"{slot}-{self.spawned}")
        return {"slot": slot, "proc": proc, "conn": conn, "job": None, "ready": False, "done": 0, "memory": memory}

    def send(self, w: dict[str, Any], item: dict[str, Any]) -> None:
        """Hand a queue item to the idle worker `w`: a submission to grade, or (``finish``: why) the
        results to write of a run of it that was stopped (`grader.batch.submission.TrustedGrader.finish`)."""
        src = item["src"]
        if not item.get("finish"):
            self.jobs += 1
            item = {**item, "progress": self.progress / str(self.jobs)}
            item["progress"].mkdir()
        w.update(job=src, item=item, started=time.monotonic(), cpu0=budget.cpu_seconds(w["proc"].pid) or 0.0)
        w["conn"].send({"student": src.student, "path": str(src.path), "budget": self.budget or None,
                        "progress": str(item["progress"]), "memory": w["memory"], "limits": self.limits,
                        **({"finish": item["finish"], "stopped_by": item["stopped_by"]} if item.get("finish") else {})})

    def overrun(self, w: dict[str, Any]) -> tuple[str, str]:
        """(what, why) when `w`'s job has gone past its hard limits (CPU budget and margin, or wall
        clock), else ("", "")."""
        if w["job"] is None:
            return "", ""
        if time.monotonic() - w["started"] > self.wall:
            return "wall", budget.wall_message(self.wall)
        cpu = budget.cpu_seconds(w["proc"].pid)
        if self.budget and cpu is not None and cpu - w["cpu0"] > self.budget + budget.hard_margin(self.budget):
            return "time", budget.time_message(self.budget)
        return "", ""

    def respawn(self, w: dict[str, Any]) -> dict[str, Any]:
        self.kill(w)
        fresh = self._spawn(w["slot"])
        self.workers[self.workers.index(w)] = fresh
        return fresh

    def retire(self, w: dict[str, Any]) -> None:
        """Stop an idle worker politely and start a fresh one in its slot."""
        try:
            w["conn"].send(None)
            w["proc"].wait(timeout=30)
        except Exception:  # noqa: BLE001 - killed by respawn below
            pass
        self.respawn(w)

    def kill(self, w: dict[str, Any]) -> None:
        proc = w["proc"]
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass
        try:
            w["conn"].close()
        except OSError:
            pass
        budget.release(w["memory"])

    def release(self, w: dict[str, Any]) -> None:
        """Tell the idle worker `w` to end, with no replacement (nothing is left to hand out): it exits
        while the others finish their last submissions; `join` waits for it."""
        try:
            w["conn"].send(None)
        except (OSError, BrokenPipeError):
            pass
        self.workers.remove(w)
        self.leaving.append(w)

    def close(self, wait: bool = True) -> None:
        """End the batch's processes: every worker told to end, the mother zygote stopped (no sandbox
        is needed any more); with `wait`, `join` now, else the caller joins when its own work is done
        (the reports are written while the workers exit)."""
        for w in list(self.workers):
            self.release(w)
        if self.mother is not None:
            self.mother.close()
            self.mother = None
        if wait:
            self.join()

    def join(self) -> None:
        """Wait for the workers told to end (killed past 30 s), then stop the fork-server (its forks
        die with it: it goes last)."""
        deadline = time.monotonic() + 30
        for w in self.leaving:
            try:
                w["proc"].wait(timeout=max(0.1, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - killed below
                pass
            self.kill(w)
        self.leaving = []
        if self.server is not None:
            self.server.close()
            self.server = None
        self.swept = self.orphans.sweep()  # every process of the batch that is still alive, re-parented here
        warm.merge(self.progress, self.options.suite)  # the expected values the next batch's fork-server computes
        shutil.rmtree(self.progress, ignore_errors=True)


def run_pool(todo: list[Source], options: GradeOptions, console: Any, result: BatchResult) -> Callable[[], None]:
    """Grade `todo` (the outcomes go into `result`); returns what waits for the pool's processes to
    end, for the caller to call once it has written the batch's reports."""
    from multiprocessing.connection import wait

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    pool = Pool(max(1, min(options.jobs, len(todo))), options, forkserver=len(todo) > 1)
    progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, disable=not options.progress, transient=False)
    try:
        with progress:
            run = _Schedule(pool, todo, result, console, progress)
            while run.remaining:
                run.hand_out()
                conns = {w["conn"]: w for w in pool.workers}
                for obj in wait(list(conns), timeout=5):
                    w = conns[obj]
                    if w not in pool.workers:
                        continue
                    try:
                        kind, payload = obj.recv()
                    except (EOFError, OSError):
                        kind, payload = "died", None
                    if run.receive(w, kind, payload):
                        break  # the worker list changed
    except BaseException:  # Ctrl-C or a fatal error: stop now; finished results are already on disk
        for w in pool.workers + pool.leaving:
            pool.kill(w)
        pool.close()
        raise
    pool.close(wait=False)
    return pool.join


class _Schedule:
    """What `run_pool` hands out and what came back: the queue ({"src": submission}, or a stopped
    run of it to finish: "finish" says why), retries per student, submissions not yet decided."""

    def __init__(self, pool: Pool, todo: list[Source], result: BatchResult, console: Any, progress: Any) -> None:
        self.pool, self.result, self.console, self.progress = pool, result, console, progress
        self.queue: list[dict[str, Any]] = [{"src": s} for s in todo]
        self.retries: dict[str, int] = {}
        self.remaining = len(todo)
        self.task = progress.add_task("grading", total=len(todo))

    def decided(self, outcome: Outcome, description: str | None = None) -> None:
        self.result.outcomes.append(outcome)
        self.remaining -= 1
        self.progress.update(self.task, advance=1, **({"description": description} if description else {}))

    def hand_out(self) -> None:
        """Recycle, kill what overran, hand the queue to idle workers, release the idle ones once it is empty."""
        pool, queue = self.pool, self.queue
        for w in list(pool.workers):
            if w["ready"] and w["job"] is None and queue and w["done"] >= RECYCLE_AFTER:
                pool.retire(w)  # a fresh trusted process now and then: bounded memory over a long batch
        for w in list(pool.workers):  # a trusted worker past its hard limits: kill it; what it earned counts
            what, why = pool.overrun(w)
            if what:
                item = w["item"]
                pool.respawn(w)
                if item.get("finish"):  # (writing a stopped run's results cannot take this long)
                    self.decided(Outcome(item["src"].student, "error", message=why))
                else:
                    queue.insert(0, {**item, "finish": why, "stopped_by": what})
        for w in pool.workers:
            if w["ready"] and w["job"] is None and queue:
                pool.send(w, queue.pop(0))
        if not queue:  # nothing left to hand out: an idle worker ends now, while the others finish
            for w in [w for w in pool.workers if w["ready"] and w["job"] is None]:
                pool.release(w)

    def receive(self, w: dict[str, Any], kind: str, payload: Any) -> bool:
        """Act on one message of worker `w`; True when the worker list changed."""
        if kind == "ready":
            w["ready"] = True
            self.result.launcher = payload["launcher"]
            if payload["warning"] and not self.result.warning:
                self.result.warning = payload["warning"]
                self.console.print(f"[bold red]{payload['warning']}[/bold red]", highlight=False)
        elif kind == "fatal":
            raise GradeError(f"a grading worker could not start: {payload}")
        elif kind in ("done", "last"):  # last: the worker ran out of memory and ends now
            w["job"] = None
            w["done"] += 1
            self.graded(Outcome(**payload))
            if kind == "last":
                self.pool.retire(w)
                return True
        elif kind == "died":
            self.died(w)
            return True
        return False

    def graded(self, outcome: Outcome) -> None:
        who = shown_markup(outcome.student)  # the description is rich markup
        desc = {"graded": f"{who}: {outcome.score:g}/{outcome.max_score:g}", "empty": f"{who}: empty",
                "rejected": f"{who}: rejected", "error": f"{who}: ERROR",
                "partial": f"{who}: {outcome.score:g}/{outcome.max_score:g} (partial)"}
        self.decided(outcome, desc.get(outcome.status, who))
        if outcome.status == "error":
            self.progress.console.print(f"[red]{who}: not graded: {shown_markup(outcome.message)}[/red]",
                                        highlight=False)
        elif outcome.status == "partial":
            self.progress.console.print(f"[yellow]{who}: graded in part: {shown_markup(outcome.message)}"
                                        "[/yellow]", highlight=False)

    def died(self, w: dict[str, Any]) -> None:
        """A worker died: once more for a cause outside the submission, what it earned counts after an
        out-of-memory kill, an error when finishing a stopped run killed it too."""
        src, item = w["job"], w.get("item") or {}
        if src is None and not w["ready"]:
            raise GradeError(f"a grading worker died while starting (see {self.pool.logs})")
        oom = budget.oom_killed(w["memory"])  # (read before respawn removes its cgroup)
        self.pool.respawn(w)
        if src is None:
            return
        self.retries[src.student] = self.retries.get(src.student, 0) + 1
        if item.get("finish"):  # finishing a stopped run killed its worker too
            self.decided(Outcome(src.student, "error", message="the grading worker died twice on it"))
        elif oom:  # killed by its memory cgroup: what it earned counts
            self.queue.insert(0, {**item, "finish": budget.MEMORY_MESSAGE, "stopped_by": "memory"})
        elif self.retries[src.student] <= 1:  # (a cause outside the submission, maybe): once more
            self.queue.insert(0, {"src": src})
        else:
            self.queue.insert(0, {**item, "finish": budget.DIED_MESSAGE, "stopped_by": "died"})
