"""`grader grade`: batch grading of submissions, each in its own sandbox.

    grader grade SUBMISSION... --out DIR [-j N] [--force] [--module M]...

The parent process resolves every path against the caller's working directory (before any
process changes directory), finds the submissions (directories, ``.zip``, ``.tar.gz``, or
folders of them; the student id is the name, see `grader.batch.discover.student_id`), refuses the
batch when a path does not exist (exit status 2, nothing written), refuses both submissions of
a colliding id, skips those already graded (a valid results.json for the same submission
content and kit version; ``--force`` regrades), and hands the rest to N long-lived *trusted*
worker processes (`grader.batch.trusted`, forked from one warmed-up fork-server,
`grader.batch.forkserver`).  Each trusted worker grades submission after submission by running
the public and hidden tests in-process (`pytest.main`, test modules and memoised expected values
reused) with ``--backend sandbox``; its sandboxes are forks of a pre-imported zygote where the
machine allows (`grader.sandbox.zygote`; each worker's zygote a fork of the batch's mother
zygote), so no submission pays for a torch import, and the batch pays its start-up once.

Per submission, written atomically (results.json last, so its presence means "done"), under
the layout of `grader.batch.layout.Layout`: ``DIR/students/<id>/results.json`` (Gradescope format,
what the student sees), ``DIR/instructor/students/<id>/instructor.json`` (full messages of
every test, hidden ones included; sandbox statistics; timings) and
``DIR/instructor/students/<id>/sandbox.log`` (the submission's captured output, capped, control
characters escaped).  For the batch: ``DIR/grades.csv``, a summary table, and the trusted
workers' logs ``DIR/instructor/logs/worker-<n>.log`` (pytest's output: full tracebacks of
every failed test, hidden ones included; instructor-only).  An interrupted batch (even
``kill -9``) is resumed by running the same command again: only what is missing is graded.

A submission from which nothing could be taken is reported as *empty* (no test is run; every
test not attempted); an archive that cannot be read safely is *rejected* (nothing is run); one
that exhausts the trusted side's budgets (`grader.batch.budget`: the worker's CPU time per
submission, its memory; or whose worker died twice) is *partial*: the tests that ended score,
every other one is not graded, and the batch goes on with a fresh worker.

Determinism: tests run in a fixed order, every test starts from RNG seeds derived from its
node id, hypothesis is derandomised (no example database, no deadline) and the sandbox runs
torch single-threaded; scores never depend on timing except through the (generous) per-call
timeouts and the trusted side's budget (CPU seconds, which a busy machine does not inflate, far
above what an honest submission needs).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader import KIT_ROOT, MODULES, kit_version
from grader.batch import budget
from grader.batch.discover import SUBMISSIONS_LAYOUT, Discovery, Source, discover, fingerprint
from grader.batch.grades import batch_rows, grades_csv, render_summary
from grader.batch.layout import Layout, write_atomic
from grader.batch.results import load_results
from grader.batch.suite import suite_digest
from grader.untrusted import shown, shown_markup


@dataclass
class GradeOptions:
    out: Path
    jobs: int = 2
    force: bool = False
    modules: tuple[str, ...] = MODULES
    hidden: bool = True
    launcher: str = "auto"  # auto | bubblewrap | rlimits
    call_timeout: float = 30.0
    import_timeout: float = 30.0
    memory_mb: int | None = None  # memory limit (RLIMIT_DATA) per sandbox (None: the sandbox default, 4 GiB)
    progress: bool = True
    device: str = "cpu"  # cpu: GPU tests pending; cuda: only the GPU tests, with the GPU visible in the sandbox
    # the trusted side's budgets (grader.batch.budget): CPU seconds of a trusted worker per submission (0: none),
    # and the memory limit of each trusted worker in MiB (None: the default; 0: none)
    submission_budget: float = budget.DEFAULT_BUDGET
    worker_memory_mb: int | None = None
    # what grades (grader.batch.suite): set by `grade` before anything is graded, written into each
    # instructor.json; a result is kept only when it was graded by the same suite and settings
    suite: str = ""
    # the course.toml assignment graded ("": none, the whole kit), recorded in results.json (grader.course);
    # gpu_tests False: its GPU tests are left out (not run, not pending, in no maximum)
    assignment: str = ""
    gpu_tests: bool = True


@dataclass
class Outcome:
    student: str
    status: str  # graded | partial (stopped by the trusted side's budgets) | empty | rejected | kept | refused | error
    score: float = 0.0
    max_score: float = 0.0
    message: str = ""
    seconds: float = 0.0


@dataclass
class BatchResult:
    outcomes: list[Outcome] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    launcher: str = ""
    warning: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(o.status in ("error", "refused") for o in self.outcomes)


#: A trusted worker is replaced by a fresh process after grading this many submissions.
RECYCLE_AFTER = 100


class GradeError(Exception):
    """Grading could not complete for a reason that is not the submission's fault."""


class UsageError(GradeError):
    """The command line names something that is not there: nothing was written."""


def test_files(modules: tuple[str, ...], hidden: bool) -> list[str]:
    """Every public test file, then every hidden one.

    Public before hidden, across modules: a submission's code sees the hidden tests' inputs only
    after every public test (whose failure messages students read) has run, so it cannot smuggle
    them out through a public test's message.
    """
    from grader.runner import test_files as files

    public = files(modules, hidden=False)
    return public + [f for f in files(modules, hidden=hidden) if f not in public]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temp() -> None:
    """Remove work folders left by grader processes that were killed (their pid is gone)."""
    tmp = Path(tempfile.gettempdir())
    for prefix in ("kit-grade-", "kit-bundle-", "kit-sandbox-tmp-", "kit-inbox-"):
        for d in tmp.glob(prefix + "*"):
            parts = d.name[len(prefix):].split("-")
            if parts and parts[0].isdigit() and not _pid_alive(int(parts[0])):
                shutil.rmtree(d, ignore_errors=True)


# -- the parent ----------------------------------------------------------------------------

def already_graded(source: Source, out: Path, options: GradeOptions) -> dict[str, Any] | None:
    """The existing results.json when it is complete and for this very submission, graded by this very
    suite with these settings (`grader.batch.suite`: the tests', probes' and grader's bytes, the
    settings that change a verdict), else None."""
    layout = Layout(out)
    doc = load_results(layout.results(source.student))
    if doc is None:
        return None
    try:
        instructor = json.loads(layout.instructor(source.student).read_text())
    except (OSError, ValueError):
        return None
    if not options.suite or not isinstance(instructor, dict) or instructor.get("suite") != options.suite:
        return None  # another suite, other settings (--device, --module, a new test...): grade again
    if doc["extra_data"].get("submission", {}).get("sha256") != fingerprint(source):
        return None
    return doc


class _Pool:
    """N trusted workers, each forked by the trusted fork-server (`grader.batch.forkserver`; else a
    `python -m grader.batch.trusted --worker` process) and holding a socket to this one; and the
    batch's mother zygote, which forks each worker's zygote."""

    def __init__(self, n: int, options: GradeOptions):
        from grader.sandbox import SandboxSettings

        self.options = options
        self.logs = Layout(options.out).logs
        self.logs.mkdir(parents=True, exist_ok=True)
        # the trusted side's budgets (grader.batch.budget); each job's progress streams to a folder of its own here
        budget.sweep_stale()
        self.memory = budget.WorkerMemory.choose(options.worker_memory_mb, options.device)
        self.budget = float(options.submission_budget or 0)
        self.wall = budget.wall_limit(self.budget, SandboxSettings().submission_budget, options.call_timeout,
                                      options.import_timeout)
        self.limits = {"submission_budget_cpu_s": self.budget or None,
                       "killed_past_cpu_s": self.budget + budget.hard_margin(self.budget) if self.budget else None,
                       "wall_limit_s": self.wall}
        self.progress = Path(tempfile.mkdtemp(prefix=f"kit-grade-{os.getpid()}-progress-"))
        self.jobs = self.spawned = 0
        self.mother = self._start_mother()
        self.server = self._start_server()
        self.workers: list[dict[str, Any]] = [self._spawn(slot) for slot in range(n)]

    def _start_mother(self) -> Any:
        """The batch's mother zygote (`grader.sandbox.zygote.MotherProcess`) where sandboxes come from
        zygotes: its imports (torch, the probes) are then paid once per batch, not once per worker,
        and run while the workers import theirs.  None where zygotes are not used, or it cannot start
        (each worker then starts its own zygote, as with one job)."""
        try:
            from grader.batch.trusted import sandbox_settings
            from grader.sandbox import zygote
            from grader.sandbox.uids import is_root

            settings, launcher, _ = sandbox_settings(self.options)
            if zygote.why_not(settings, launcher, 0 if is_root() else None):
                return None
            return zygote.MotherProcess(settings)
        except Exception as exc:  # noqa: BLE001 - grading goes on without it
            with open(self.logs / "worker-0.log", "a") as log:
                log.write(f"the batch's zygote could not start ({type(exc).__name__}: {exc}): "
                          "each worker starts its own\n")
            return None

    def _worker_env(self) -> tuple[dict[str, str], list[int]]:
        """The trusted workers' environment, and the descriptors they inherit (the batch's zygote)."""
        # one trusted process per job slot, each next to its sandbox: torch's thread pool would only
        # spin against the sandbox for the same cores (measured: 30% slower at -j 2 on 2 cores)
        threads = str(max(1, (os.cpu_count() or 1) // self.options.jobs - 1))
        env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OMP_WAIT_POLICY": "PASSIVE",
               # the sandbox hides GPUs (CUDA_VISIBLE_DEVICES=""): GPU tests stay pending in this CPU run even on
               # a machine with CUDA (the plugin's --device default reads KIT_DEVICE)
               "KIT_DEVICE": os.environ.get("KIT_GRADE_DEVICE", self.options.device)}
        inherit = []
        if self.mother is not None:
            env.update(self.mother.env())
            inherit.append(self.mother.workers_end.fileno())
        return env, inherit

    def _start_server(self) -> Any:
        """The trusted fork-server (`grader.batch.forkserver`): workers forked from one warmed-up
        process; `KIT_TRUSTED_FORKSERVER=0` turns it off (workers then start as processes of their own)."""
        if os.environ.get("KIT_TRUSTED_FORKSERVER", "1") == "0" or self.options.device == "cuda":
            return None  # (CUDA: a process that initialised the driver must not fork the workers that use it)
        from grader.batch.forkserver import ForkServer

        env, inherit = self._worker_env()
        env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # torch.cuda.is_available() at collection: no driver init
        try:
            return ForkServer(self._options_json(), env, self.logs / "forkserver.log", inherit)
        except OSError:
            return None

    def _options_json(self) -> str:
        return json.dumps({**asdict(self.options), "out": str(self.options.out)})

    def _spawn(self, slot: int) -> dict[str, Any]:
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        proc: Any = None
        with open(self.logs / f"worker-{slot}.log", "ab") as log:
            if self.server is not None:
                proc = self.server.spawn(theirs.fileno(), log.fileno())
                if proc is None:
                    log.write(f"(started as a process of its own: {self.server.broken})\n".encode())
            if proc is None:
                env, inherit = self._worker_env()
                proc = subprocess.Popen([sys.executable, "-m", "grader.batch.trusted", "--worker", str(theirs.fileno()),
                                         self._options_json()], pass_fds=[theirs.fileno(), *inherit],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=KIT_ROOT, env=env)
        theirs.close()
        conn = Connection(ours.detach())
        self.spawned += 1
        memory = self.memory.confine(proc.pid, f"{slot}-{self.spawned}")
        return {"slot": slot, "proc": proc, "conn": conn, "job": None, "ready": False, "done": 0, "memory": memory}

    def send(self, w: dict[str, Any], item: dict[str, Any]) -> None:
        """Hand a queue item to the idle worker `w`: a submission to grade, or (``finish``: why) the
        results to write of a run of it that was stopped (`grader.batch.trusted.TrustedGrader.finish`)."""
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

    def close(self) -> None:
        for w in self.workers:
            try:
                w["conn"].send(None)
            except (OSError, BrokenPipeError):
                pass
        deadline = time.monotonic() + 30
        for w in self.workers:
            try:
                w["proc"].wait(timeout=max(0.1, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - killed below
                pass
            self.kill(w)
        if self.server is not None:
            self.server.close()
        if self.mother is not None:
            self.mother.close()
        shutil.rmtree(self.progress, ignore_errors=True)


def grade(paths: list[Path], options: GradeOptions, console: Any = None,
          select: Callable[[Discovery], Discovery] | None = None, late: Any = None) -> BatchResult:
    """Grade a batch; returns what happened to each submission (results are on disk).

    Raises UsageError, before writing anything, when a path does not exist or is not a
    submission.  Paths are resolved against this process's working directory here, before any
    worker (whose working directory is the kit root) sees them.
    """
    from dataclasses import replace

    from grader.commands.common import output_console

    console = console or output_console(stderr=True)
    t0 = time.monotonic()
    result = BatchResult()
    paths = [Path(os.path.abspath(Path(p).expanduser())) for p in paths]
    options = replace(options, out=Path(os.path.abspath(Path(options.out).expanduser())))
    options = replace(options, suite=suite_digest(options))
    out = options.out
    layout = Layout(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if layout.is_old_layout():
        raise UsageError(f"--out {out}: holds results of an older kit (DIR/<student>/results.json); "
                         "use a new folder")
    found = discover(paths, exclude=[out])
    if found.errors:
        raise UsageError("nothing graded, nothing written:\n  " + "\n  ".join(shown(e) for e in found.errors)
                         + "\n" + SUBMISSIONS_LAYOUT)
    if not found.sources and not found.refused:
        raise UsageError("no submissions found in " + ", ".join(shown(p) for p in paths) + "\n" + SUBMISSIONS_LAYOUT)
    if select is not None:  # `--shard K/N` (grader.cluster.shard): this machine's share of the class
        found = select(found)
    out.mkdir(parents=True, exist_ok=True)
    clean_stale_temp()
    result.problems = found.warnings + [f"{src.path}: {why}" for src, why in found.refused]
    for tmp in out.glob("**/.*.tmp"):  # half-written files of a grader that was killed
        pid = tmp.name.rsplit(".", 2)[-2]
        if not pid.isdigit() or not _pid_alive(int(pid)):
            tmp.unlink(missing_ok=True)
    for w in found.warnings:
        console.print(f"[yellow]{shown_markup(w)}[/yellow]", highlight=False, soft_wrap=True)
    for src, why in found.refused:
        console.print(f"[bold red]REFUSED {shown_markup(src.path)}: {shown_markup(why)}[/bold red]",
                      highlight=False, soft_wrap=True)
        result.outcomes.append(Outcome(src.student, "refused", message=why))
    sources = found.sources
    todo: list[Source] = []
    for src in sources:
        if not options.force and already_graded(src, out, options) is not None:
            result.outcomes.append(Outcome(src.student, "kept"))
        else:
            todo.append(src)
    kept = len(sources) - len(todo)
    console.print(f"{len(sources)} submission(s): {len(todo)} to grade"
                  + (f", {kept} already graded (--force regrades)" if kept else "")
                  + (f", {len(found.refused)} refused (colliding student ids)" if found.refused else "")
                  + f"; kit {kit_version()}, {options.jobs} job(s)", highlight=False, soft_wrap=True)
    if options.hidden and not any((KIT_ROOT / "tests" / "hidden").glob("test_*.py")):
        console.print("public tests only: the hidden tests are not in this copy of the kit", highlight=False)
    if todo:
        _run_pool(todo, options, console, result)
    from grader.batch.late_batch import apply_policy  # `late` (a grader.batch.late.LatePolicy, or None) sets the final scores

    apply_policy(late, sources, layout, console)
    # grades.csv and the summary cover every submission of this batch, refused ones included
    errors = {o.student: o.message for o in result.outcomes if o.status == "error"}
    result.rows = batch_rows(layout, [src.student for src in sources], errors,
                             [(src.student, why) for src, why in found.refused])
    write_atomic(layout.grades, grades_csv(result.rows, options.modules if options.assignment else None))
    render_summary(result.rows, console)
    from grader.reports.feedback import write_and_report  # the final results.json, new or changed ones

    result.problems += write_and_report(out, [src.student for src in sources], console, only_stale=True,
                                        jobs=options.jobs)
    result.seconds = time.monotonic() - t0
    errors = [o for o in result.outcomes if o.status == "error"]
    console.print(f"wrote {layout.grades} ({len(result.rows)} rows) and {layout.students_dir}/<student>/results.json "
                  f"in {result.seconds:.1f} s"
                  + (f"; [red]{len(errors)} not graded[/red] (rerun to retry)" if errors else "")
                  + (f"; [red]{len(found.refused)} refused[/red] (colliding ids)" if found.refused else ""),
                  highlight=False, soft_wrap=True)
    if result.warning:
        console.print(f"[bold red]{result.warning}[/bold red]", highlight=False)
    if late is not None:  # last and loud: each submission whose time is unknown, for the instructor to decide
        from grader.batch.late_batch import list_unknown_times

        list_unknown_times(layout, [src.student for src in sources], console)
    return result


def _run_pool(todo: list[Source], options: GradeOptions, console: Any, result: BatchResult) -> None:
    from multiprocessing.connection import wait

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    pool = _Pool(max(1, min(options.jobs, len(todo))), options)
    # what to hand out: {"src": submission}, or a run of it that was stopped, to finish ("finish": why)
    queue: list[dict[str, Any]] = [{"src": s} for s in todo]
    retries: dict[str, int] = {}
    remaining = len(todo)
    progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, disable=not options.progress, transient=False)
    try:
        with progress:
            task = progress.add_task("grading", total=len(todo))
            while remaining:
                for w in list(pool.workers):
                    if w["ready"] and w["job"] is None and queue and w["done"] >= RECYCLE_AFTER:
                        pool.retire(w)  # a fresh trusted process now and then: bounded memory over a long batch
                for w in list(pool.workers):  # a trusted worker past its hard limits: kill it; what it earned counts
                    what, why = pool.overrun(w)
                    if what:
                        item = w["item"]
                        pool.respawn(w)
                        if item.get("finish"):  # (writing a stopped run's results cannot take this long)
                            result.outcomes.append(Outcome(item["src"].student, "error", message=why))
                            remaining -= 1
                            progress.update(task, advance=1)
                        else:
                            queue.insert(0, {**item, "finish": why, "stopped_by": what})
                for w in pool.workers:
                    if w["ready"] and w["job"] is None and queue:
                        pool.send(w, queue.pop(0))
                conns = {w["conn"]: w for w in pool.workers}
                ready = wait(list(conns), timeout=5)
                for obj in ready:
                    w = conns[obj]
                    if w not in pool.workers:
                        continue
                    try:
                        kind, payload = obj.recv()
                    except (EOFError, OSError):
                        kind, payload = "died", None
                    if kind == "ready":
                        w["ready"] = True
                        result.launcher = payload["launcher"]
                        if payload["warning"] and not result.warning:
                            result.warning = payload["warning"]
                            console.print(f"[bold red]{payload['warning']}[/bold red]", highlight=False)
                    elif kind == "fatal":
                        raise GradeError(f"a grading worker could not start: {payload}")
                    elif kind in ("done", "last"):  # last: the worker ran out of memory and ends now
                        outcome = Outcome(**payload)
                        w["job"] = None
                        w["done"] += 1
                        result.outcomes.append(outcome)
                        remaining -= 1
                        who = shown_markup(outcome.student)  # the description is rich markup
                        desc = {"graded": f"{who}: {outcome.score:g}/{outcome.max_score:g}", "empty": f"{who}: empty",
                                "rejected": f"{who}: rejected", "error": f"{who}: ERROR",
                                "partial": f"{who}: {outcome.score:g}/{outcome.max_score:g} (partial)"}
                        progress.update(task, advance=1, description=desc.get(outcome.status, who))
                        if outcome.status == "error":
                            progress.console.print(f"[red]{who}: not graded: {shown_markup(outcome.message)}[/red]",
                                                   highlight=False)
                        elif outcome.status == "partial":
                            progress.console.print(f"[yellow]{who}: graded in part: {shown_markup(outcome.message)}"
                                                   "[/yellow]", highlight=False)
                        if kind == "last":
                            pool.retire(w)
                            break  # the worker list changed
                    elif kind == "died":
                        src, item = w["job"], w.get("item") or {}
                        if src is None and not w["ready"]:
                            raise GradeError(f"a grading worker died while starting (see {pool.logs})")
                        oom = budget.oom_killed(w["memory"])  # (read before respawn removes its cgroup)
                        pool.respawn(w)
                        if src is not None:
                            retries[src.student] = retries.get(src.student, 0) + 1
                            if item.get("finish"):  # finishing a stopped run killed its worker too
                                result.outcomes.append(Outcome(src.student, "error",
                                                               message="the grading worker died twice on it"))
                                remaining -= 1
                                progress.update(task, advance=1)
                            elif oom:  # killed by its memory cgroup: what it earned counts
                                queue.insert(0, {**item, "finish": budget.MEMORY_MESSAGE, "stopped_by": "memory"})
                            elif retries[src.student] <= 1:  # (a cause outside the submission, maybe): once more
                                queue.insert(0, {"src": src})
                            else:
                                queue.insert(0, {**item, "finish": budget.DIED_MESSAGE, "stopped_by": "died"})
                        break  # the worker list changed
    except BaseException:  # Ctrl-C or a fatal error: stop now; finished results are already on disk
        for w in pool.workers:
            pool.kill(w)
        raise
    finally:
        pool.close()
