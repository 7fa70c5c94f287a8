"""`grader validate`: test the tests.

1. every graded test passes on `solutions/` (GPU tests may be pending without CUDA);
2. every graded test fails on the stubs, reported "not attempted";
3. every mutant in `tests/mutants/` is caught by at least one graded test of its module;
4. every correct variant in `tests/variants/` passes every graded test of its module, and of every
   module that uses it (`dependents`: a correct variant of one module must not cost points in
   another, e.g. AdamW's decay after the update in training);
5. every whole-copy mutant was written against the reference as it is (`grader.authoring.mutants.stale`),
   and every module has graded tests and at least `grader.testing.totals.min_mutants` mutants.

It reads a snapshot of the kit taken when it starts (`grader.authoring.snapshot`): edits made to the tree
during a run (which can take most of an hour) do not mix into it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from grader import KIT_ROOT, MODULES
from grader.console import output_console
from grader.authoring.mutants import Mutant, build_target, load_mutants, load_variants, stale
from grader.testing.suite_process import run_suite, test_files
from grader.authoring.snapshot import snapshot_kit
from grader.course.stubs import write_assignment
from grader.testing.totals import min_mutants  # validate's rule, kept with the counts it checks


@dataclass
class Validation:
    solution_failures: list[str] = field(default_factory=list)
    stub_failures: list[str] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)
    rejected_variants: list[str] = field(default_factory=list)
    stale_mutants: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # a module without graded tests or enough mutants
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.solution_failures or self.stub_failures or self.survivors or self.rejected_variants
                    or self.stale_mutants or self.unfinished)


def dependents(module: str, modules: tuple[str, ...] = MODULES, root: Path | None = None) -> tuple[str, ...]:
    """The other modules whose graded tests can reach `module`'s code: their reference solution
    imports it (``from .checkpointing import ...``), or their probes call it (``impl.optimizers``)."""
    import re

    root = root or KIT_ROOT
    found = []
    for other in modules:
        if other == module:
            continue
        solution = root / "solutions" / f"{other}.py"
        probes = root / "tests" / "probes" / f"{other}.py"
        text = "".join(p.read_text() for p in (solution, probes) if p.exists())
        if re.search(rf"^\s*from \.{module} import|^\s*from \. import .*\b{module}\b|\bimpl\.{module}\b", text,
                     re.MULTILINE):
            found.append(other)
    return tuple(found)


#: Seconds without a finished run after which the runs are given up (a hung run; a busy machine
#: only makes each run slower: a mutant run takes 5 to 30 s on the 2-core machine of `tests/kit/`).
STALL_LIMIT = 1800.0


def grade_targets(targets: list[tuple[Path, str | tuple[str, ...]]], jobs: int, *, maxfail: bool = False,
                  report_dir: Path | None = None,
                  done: Callable[[int, list[dict]], None] | None = None,
                  root: Path | None = None, warm: bool = False) -> list[list[dict]]:
    """Grade each implementation folder with its module's graded tests (or the tests of several
    modules: a tuple); the records of each run.  `done(i, records)` is called as each run ends.

    The runs go through `grader.authoring.forkrun`: one process imports torch and the tests once and
    forks a fresh child per run (isolated, and several times faster than a new interpreter).
    `root`: the copy of the kit whose tests (and grader) run (`grader.authoring.snapshot`; default: this one).
    `warm`: that process first runs the tests of every module the runs use on the reference
    solutions, so each run starts with the expected values and examples a grading worker has
    after its first submission (`grader.authoring.forkrun`: worth it for many runs, mutants and variants).
    """
    import json
    import os
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="kit-runs-") as tmp:
        folder = Path(report_dir or tmp)
        runs, reports = [], []
        for i, (target, modules) in enumerate(targets):
            report = folder / f"run{i}.json"
            reports.append(report)
            runs.append({"args": [*test_files((modules,) if isinstance(modules, str) else modules, root=root or KIT_ROOT),
                                  f"--target={target}", f"--kit-report={report}", "-q",
                                  "-p", "no:cacheprovider", *(["--maxfail=1"] if maxfail else []),
                                  "--continue-on-collection-errors",
                                  # pass-or-fail needs no assertion rewriting (the parent's import is reused)
                                  "--assert=plain"]})

        def records(i: int) -> list[dict]:
            return json.loads(reports[i].read_text())["tests"] if reports[i].exists() else []

        sessions = []
        if warm and targets:
            used = sorted({m for _, mods in targets for m in ((mods,) if isinstance(mods, str) else mods)})
            sessions.append([*test_files(tuple(used), root=root or KIT_ROOT), f"--target={(root or KIT_ROOT) / 'solutions'}",
                             "-q", "-p", "no:cacheprovider", "--assert=plain"])
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        with subprocess.Popen([sys.executable, "-m", "grader.authoring.forkrun", str(max(1, jobs))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root or KIT_ROOT, env=env) as proc:
            proc.stdin.write(json.dumps({"runs": runs, "warm": sessions}).encode())
            proc.stdin.close()
            for index in _finished(proc):  # forkrun prints {"index", "code"} as each run ends
                if done is not None and 0 <= index < len(reports):
                    done(index, records(index))
        return [records(i) for i in range(len(reports))]


def _finished(proc) -> Iterator[int]:
    """The index of each run as `grader.authoring.forkrun` reports it; the server is killed when no run has
    ended for `STALL_LIMIT` seconds (its remaining runs then report nothing)."""
    import json
    import os
    import select

    fd, buffer = proc.stdout.fileno(), b""
    while True:
        ready, _, _ = select.select([fd], [], [], STALL_LIMIT)
        if not ready:
            proc.kill()
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            try:
                yield int(json.loads(line)["index"])
            except (ValueError, KeyError, TypeError):
                continue


def _fork_runs(items: list[Mutant], tmp: Path, jobs: int, prefix: str, maxfail: bool, users: bool = False,
               done: Callable[[list[dict] | str], None] | None = None,
               root: Path | None = None) -> list[list[dict] | str]:
    """Each mutant or variant applied to a copy of the solutions (of `root`, the kit's snapshot),
    graded by its module's tests (`users`: and by the tests of the modules that use it); for one
    that cannot be applied (an edit whose old text the reference no longer holds), why, instead of
    its records.  `done` is called with each one's outcome as it is known."""
    root = root or KIT_ROOT
    targets, out, where = [], [], []
    for i, m in enumerate(items):
        try:
            target = build_target(m, tmp / f"{prefix}{i}", root / "solutions")
        except (LookupError, SyntaxError) as exc:
            out.append(str(exc))
            if done is not None:
                done(str(exc))
            continue
        where.append(len(out))
        out.append([])
        targets.append((target, (m.module, *dependents(m.module, root=root)) if users else m.module))
    for index, records in zip(where, grade_targets(targets, jobs, maxfail=maxfail, root=root, warm=True,
                                                   done=(lambda _i, records: done(records)) if done else None)):
        out[index] = records
    return out


def _accepted(records: list[dict] | str) -> bool:
    return not isinstance(records, str) and bool(records) and all(r["status"] in ("passed", "pending")
                                                                  for r in records)


def _caught(records: list[dict] | str) -> bool:
    return not isinstance(records, str) and any(r["status"] in ("failed", "error") for r in records)


def run_variants(variants: list[Mutant], tmp: Path, jobs: int, result: "Validation",
                 console: Console | None = None, root: Path | None = None) -> int:
    """Every correct variant must pass every graded test of its module and of the modules that use
    it (`dependents`); the number that do.  With a console: progress as they are graded."""
    from grader.authoring.progress import PhaseProgress

    accepted = 0
    with PhaseProgress(console or Console(quiet=True), "correct variants", len(variants), "accepted") as progress:
        runs = _fork_runs(variants, tmp, jobs, "variant", maxfail=False, users=True, root=root,
                          done=lambda records: progress.advance(_accepted(records)))
    for v, records in zip(variants, runs):
        if isinstance(records, str):
            result.rejected_variants.append(f"{v.id}: {records}")
            continue
        bad = [r for r in records if r["status"] not in ("passed", "pending")]
        if records and not bad:
            accepted += 1
        else:
            first = f"{bad[0]['id']}: {bad[0]['message']}" if bad else "its test run did not report"
            result.rejected_variants.append(f"{v.id} ({v.replaces}: {v.why}): {first}")
    return accepted


def run_mutants(mutants: list[Mutant], tmp: Path, jobs: int, result: "Validation",
                console: Console | None = None, root: Path | None = None) -> int:
    """Grade each mutant with its module's tests (stop at the first failure); count the caught ones.
    With a console: progress as they are graded."""
    from grader.authoring.progress import PhaseProgress

    caught = 0
    with PhaseProgress(console or Console(quiet=True), "mutants", len(mutants), "caught") as progress:
        runs = _fork_runs(mutants, tmp, jobs, "mutant", maxfail=True, root=root,
                          done=lambda records: progress.advance(_caught(records)))
    for m, records in zip(mutants, runs):
        if isinstance(records, str):
            result.survivors.append(f"{m.id}: {records}")
            continue
        if _caught(records):
            caught += 1
        else:
            why = "" if records else " (its test run did not report)"
            result.survivors.append(f"{m.id} ({m.replaces}: {m.why}){why}")
    return caught


def _status(console: Console, what: str):
    """A spinner saying `what` runs, on a terminal (the runs on solutions and stubs take a minute or two)."""
    import contextlib

    return console.status(what) if console.is_terminal else contextlib.nullcontext()


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def make_stubs(dest: Path, console: Console, root: Path | None = None) -> None:
    """The stubs, generated from solutions/ (of `root`, the kit's snapshot) with nbgrader; where
    nbgrader (a dev dependency) is not installed, e.g. on a CUDA runner, the committed assignment/
    (which `grader release --check` keeps in sync with solutions/), said on the console."""
    root = root or KIT_ROOT
    try:
        write_assignment(dest, root / "solutions")
    except ModuleNotFoundError as exc:
        committed = root / "assignment"
        if not committed.is_dir():
            raise SystemExit(f"validate makes the stubs with nbgrader ({exc}): pip install nbgrader") from None
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(committed, dest)
        console.print(f"[yellow]{exc.name} is not installed: the stubs are assignment/ as committed "
                      "(`grader release --check` keeps it in sync with solutions/)[/yellow]")


def _unfinished(modules: tuple[str, ...], mutants: list[Mutant], root: Path) -> list[str]:
    """A module is not done while it has no graded test, fewer mutants than `min_mutants` asks, or a
    placeholder of `grader new-module` left (a fresh scaffold has all three): what is missing, and
    what to do."""
    from grader.authoring.scaffold import TODO, unfinished

    out = []
    for mod in modules:
        left = unfinished(mod, root)
        if left:
            out.append(f"{mod}: the scaffold's {TODO} is still in {', '.join(left)}: write what it asks for")
        if not test_files((mod,), root=root):
            out.append(f"{mod}: no graded tests: write tests/public/test_{mod}.py (and tests/hidden/) "
                       "(docs/CONTRIBUTING.md, Adding a module)")
        n, floor = sum(1 for m in mutants if m.module == mod), min_mutants(mod, root)
        if n < floor:
            out.append(f"{mod}: {n} mutant{'s' if n != 1 else ''}, at least {floor} needed: write them in "
                       f"tests/mutants/{mod}.py as edits of the reference (docs/CONTRIBUTING.md, Mutants), then "
                       f"`grader validate --mutant {mod}:NAME` says which tests catch each")
    return out


def _failure(r: dict) -> str:
    line = f"{r['id']}: {r['status']}: {r['message']}"
    if r["status"] == "not_attempted":
        module = Path(r["id"].split("::", 1)[0]).stem.removeprefix("test_")
        line += f" (solutions/{module}.py still raises NotImplementedError: write the reference solution there)"
    return line


def validate(modules: tuple[str, ...] = MODULES, jobs: int = 2, console: Console | None = None) -> Validation:
    console = console or output_console()
    result = Validation()
    if not (KIT_ROOT / "solutions").is_dir():
        raise SystemExit("validate needs the instructor repo (solutions/ is missing)")

    with tempfile.TemporaryDirectory(prefix="kit-validate-") as tmp:
        root = snapshot_kit(Path(tmp) / "kit")  # everything below reads this copy, never the working tree
        console.print("validate: reading a snapshot of the kit taken now (edits from here on are not part of this run)",
                      highlight=False)
        mutants, variants = load_mutants(modules, root), load_variants(modules, root)
        result.stale_mutants = stale(mutants, root / "solutions")
        result.unfinished = _unfinished(modules, mutants, root)
        files = test_files(modules, root=root)
        with _status(console, "running the graded tests on solutions/"):
            sol = run_suite(root / "solutions", files, cwd=root)
        if files and not sol.records:
            raise SystemExit(f"the graded suites did not run on solutions:\n{sol.log}")
        graded = len(sol.records)
        passed = [r for r in sol.records if r["status"] == "passed"]
        pending = [r for r in sol.records if r["status"] == "pending"]
        result.solution_failures = [_failure(r) for r in sol.records if r["status"] not in ("passed", "pending")]
        console.print(f"solutions: {len(passed)}/{graded} graded tests pass"
                      + (f", {len(pending)} pending (GPU, no CUDA here)" if pending else ""))

        stubs = Path(tmp) / "stubs"
        make_stubs(stubs, console, root)
        with _status(console, "running the graded tests on the stubs"):
            stub_run = run_suite(stubs, files, cwd=root)
        not_attempted = [r for r in stub_run.records if r["status"] == "not_attempted"]
        result.stub_failures = [f"{r['id']}: {r['status']}: {r['message']}" for r in stub_run.records
                                if r["status"] not in ("not_attempted", "pending")]
        if len(stub_run.records) != graded:
            result.stub_failures.append(f"{len(stub_run.records)} tests ran on the stubs, {graded} on solutions")
        stub_pending = sum(1 for r in stub_run.records if r["status"] == "pending")
        otherwise = len(stub_run.records) - len(not_attempted) - stub_pending
        console.print(f"stubs: {len(not_attempted)}/{graded - stub_pending} graded tests fail as not attempted"
                      + (f", {stub_pending} pending (GPU)" if stub_pending else "")
                      + (f", [red]{otherwise} otherwise[/red]" if otherwise else ""))

        cuda = _cuda_available()
        gpu_only = [m for m in mutants if m.gpu and not cuda]
        checked = [m for m in mutants if m not in gpu_only]
        console.print(f"mutants: grading {len(checked)}, {jobs} at a time (docs/COMMANDS.md, grader validate: how long it takes)",
                      highlight=False)
        caught = run_mutants(checked, Path(tmp), jobs, result, console, root=root)
        console.print(f"mutants: {caught}/{len(checked)} caught"
                      + (f", {len(gpu_only)} GPU-only not checked here (no CUDA)" if gpu_only else ""))
        accepted = run_variants(variants, Path(tmp), jobs, result, console, root=root) if variants else 0
        console.print(f"correct variants: {accepted}/{len(variants)} pass every graded test")
    result.counts = {"graded": graded, "passed": len(passed), "pending": len(pending),
                     "not_attempted": len(not_attempted), "mutants": len(checked), "caught": caught,
                     "gpu_mutants_not_checked": len(gpu_only),
                     "variants": len(variants), "variants_passed": accepted}
    for title, items in (("fail on solutions", result.solution_failures),
                         ("not reported as not attempted on stubs", result.stub_failures),
                         ("mutants not caught", result.survivors),
                         ("correct variants that lose points", result.rejected_variants),
                         ("whole-copy mutants written against another reference", result.stale_mutants),
                         ("modules not finished", result.unfinished)):
        if items:
            console.print(f"[red]{title}:[/red]")
            for line in items:
                console.print(f"  {line}", markup=False)
    return result


def explain(ids: list[str], jobs: int = 2, console: Console | None = None) -> bool:
    """`grader validate --mutant ID`: grade these mutants and correct variants (``module:name``) with
    the tests of their module (and, for a variant, of the modules that use it), every test run to the
    end, and say which tests caught each mutant, or rejected each variant, with the first line of
    their message.  True when every mutant is caught and every variant accepted.  Reads a snapshot
    of the kit, as `validate` does."""
    console = console or output_console()
    modules = tuple(sorted({i.split(":", 1)[0] for i in ids if i.split(":", 1)[0] in MODULES}))
    ok = True
    with tempfile.TemporaryDirectory(prefix="kit-explain-") as tmp:
        root = snapshot_kit(Path(tmp) / "kit")
        known = {m.id: (m, "mutant") for m in load_mutants(modules, root)}
        known.update({v.id: (v, "variant") for v in load_variants(modules, root)})
        missing = [i for i in ids if i not in known]
        if missing:
            hint = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "")
            raise SystemExit(f"validate --mutant: no mutant or variant {', '.join(missing)} (ids are module:name; "
                             f"e.g. {hint or 'none in these modules'})")
        chosen = [known[i] for i in ids]
        runs = _fork_runs([m for m, _ in chosen], Path(tmp), jobs, "explain", maxfail=False, users=True, root=root)
        for (m, kind), records in zip(chosen, runs):
            how = "an edit" if m.edits else "a whole copy"
            console.print(f"[bold]{m.id}[/bold] ({kind} of {m.replaces}, {how}): {m.why}", highlight=False)
            for line in stale([m], root / "solutions") if kind == "mutant" else []:
                console.print(f"  [red]stale: {line}[/red]", highlight=False)
                ok = False
            if isinstance(records, str):
                console.print(f"  [red]cannot be applied: {records}[/red]", highlight=False)
                ok = False
                continue
            failing = [r for r in records if r["status"] in ("failed", "error", "not_attempted")]
            if not records:
                console.print("  [red]its test run did not report[/red]")
                ok = False
            elif kind == "mutant" and m.gpu and not any(r["status"] != "pending" for r in records if r.get("gpu")):
                console.print("  GPU-only: its GPU tests are pending here (no CUDA)")
            elif not failing:
                console.print("  [green]every test passes[/green]" if kind == "variant"
                              else "  [red]NOT CAUGHT: every test passes[/red]")
                ok = ok and kind == "variant"
            else:
                ok = ok and kind == "mutant"
                label = "caught by" if kind == "mutant" else "[red]REJECTED by[/red]"
                console.print(f"  {label} {len(failing)} of {len(records)} tests:")
                for r in failing:
                    first = (r.get("message") or "").strip().splitlines()[:1]
                    console.print(f"    {r['id']}: {first[0][:200] if first else r['status']}", markup=False)
    return ok
