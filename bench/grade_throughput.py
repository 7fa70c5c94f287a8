"""Batch-grading throughput and memory: `grader grade` against the naive way and the floor, in one run.

    python bench/grade_throughput.py [-n 12] [-j 2] [--cold 3] [--module M ...]

Builds `n` full-credit submissions (copies of solutions/, each file with a comment line of its
own, so that no cache keyed by a file's bytes serves two submissions), then measures, one after another on
this machine (say which, and how busy: the load average is printed before and after):

1. ``grader grade SUBS --out DIR -j J``, on each half of the batch (n/2 submissions per run): J
   trusted workers forked from one fork-server that imported torch and the tests once, each
   submission graded in its own sandbox (forked from a zygote, itself forked from the batch's
   mother zygote, where the machine allows: root and bubblewrap), every isolation layer on;
2. the naive way: a fresh ``python -m pytest tests/public tests/hidden --target SUB`` per
   submission, J at a time, no sandbox (a torch import, plugin load and test collection each);
3. the floor: the suite's own work on a later submission in one warm process without a sandbox
   (expected values and hypothesis examples cached, as in a grading worker), divided by J: no
   grader that runs these tests on every submission goes below it;
4. one submission, cold, as Gradescope runs it: ``grader grade SUB --out DIR -j 1`` in a fresh
   process against one in-process ``pytest --target SUB`` of the same suites, `--cold` pairs
   alternated (their median ratio is the row's).

1 and 2 run in ABBA order (grade, naive, naive, grade on halves of the batch) so that a change of
load on a shared machine weighs on both alike.  While 1 runs, every process of the batch is
sampled from /proc every half second (resident and proportional set sizes, the latter counting a
page shared by several processes once in all): the peak of a trusted worker, of a sandbox (all its
processes: its init, the worker, the fresh-process template), of the fork-server, of the zygotes,
and of the whole batch; with each worker's own peak from instructor.json (its RSS high-water mark,
and its memory cgroup's peak where it has one).  From these it estimates a class of 1,000
submissions at -j J: the time (the batch's start-up and end, plus 1,000 / J later submissions) and
the memory (the batch's measured total, and per job slot).  Nothing here is asserted: it is a
benchmark, not a test.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import MODULES  # noqa: E402
from grader.testing.suite_process import test_files  # noqa: E402

MIB = 2**20


def build(names: range, folder: Path) -> list[Path]:
    subs = []
    for i in names:
        dest = folder / f"student{i:02d}" / "assignment"
        dest.mkdir(parents=True)
        for m in MODULES:
            src = ROOT / "solutions" / f"{m}.py"
            if src.exists():  # a line of its own per submission: no cache keyed by a file's bytes is shared
                (dest / src.name).write_text(src.read_text() + f"\n# submission {i}\n")
        subs.append(dest.parent)
    os.chmod(folder, 0o755)
    return subs


def run(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0, proc


# -- memory, sampled from outside ------------------------------------------------------------------

def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _kib(text: str, field: str) -> int:
    for line in text.splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0


class Sampler(threading.Thread):
    """The processes under `root` (a `grader grade`), every `every` seconds: each one's RSS and PSS,
    grouped by role; keeps the peak of each role's largest member and of the batch's sum."""

    def __init__(self, root: int, every: float = 0.5):
        super().__init__(daemon=True)
        self.root, self.every = root, every
        self.stop = threading.Event()
        self.peak: dict[str, tuple[int, int, int]] = {}  # role -> max (RSS, PSS, private) of one member
        self.total = (0, 0)  # max of the sums (RSS, PSS) over every process of the batch

    def run(self) -> None:
        while not self.stop.wait(self.every):
            self.sample()

    def tree(self) -> dict[int, list[int]]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                stat = _read(f"/proc/{entry}/stat")
                if stat:
                    children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        return children

    def sample(self) -> None:
        children = self.tree()
        groups: dict[str, list[list[int]]] = {}

        def walk(pid: int, role: str, zygotes: int) -> None:
            """`role` is the nearest classified ancestor's; `zygotes`, how many zygote processes are
            above (or are) this one: the batch's mother, then a worker's zygote, then a sandbox."""
            argv = _read(f"/proc/{pid}/cmdline").split("\0")
            cmd = " ".join(argv)
            if os.path.basename(argv[0]) == "bwrap":
                pass  # a launcher: its arguments name what it starts (counted as its caller's)
            elif "zygote_process" in cmd:
                zygotes += 1
                first_sandbox = 3 if "--mother" in cmd else 2  # (a worker's own zygote has no mother above it)
                if zygotes < first_sandbox:
                    role = "mother zygote" if zygotes == 1 and first_sandbox == 3 else "zygote"
                elif zygotes == first_sandbox:
                    role = "new sandbox"
            elif "grader.sandbox.worker" in cmd and role != "sandbox":
                role = "new sandbox"  # started by a launcher, not forked from a zygote
            elif "grader.batch.forkserver" in cmd:
                role = "trusted worker" if role in ("fork-server", "trusted worker") else "fork-server"
            elif "grader.batch.trusted" in cmd:
                role = "trusted worker"
            elif "grader.cli" in cmd:
                role = "grader grade (parent)"
            elif not role:
                role = "process"
            if role == "new sandbox":
                role = "sandbox"
                groups.setdefault("sandbox", []).append([pid])  # every process below it is this sandbox's
            elif role == "sandbox":
                groups["sandbox"][-1].append(pid)
            else:
                groups.setdefault(role, []).append([pid])
            for child in children.get(pid, []):
                walk(child, role, zygotes)

        walk(self.root, "", 0)
        total_rss = total_pss = 0
        for role, members in groups.items():
            for pids in members:
                rss = pss = private = 0
                for pid in pids:
                    rollup = _read(f"/proc/{pid}/smaps_rollup")
                    rss += _kib(rollup, "Rss:") or _kib(_read(f"/proc/{pid}/status"), "VmRSS:")
                    pss += _kib(rollup, "Pss:")
                    private += _kib(rollup, "Private_Clean:") + _kib(rollup, "Private_Dirty:")
                total_rss, total_pss = total_rss + rss, total_pss + pss
                old = self.peak.get(role, (0, 0, 0))
                self.peak[role] = (max(old[0], rss), max(old[1], pss), max(old[2], private))
        self.total = (max(self.total[0], total_rss), max(self.total[1], total_pss))


def graded_with_sampler(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess, Sampler]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    out, err = proc.communicate()
    elapsed = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    return elapsed, subprocess.CompletedProcess(cmd, proc.returncode, out, err), sampler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=12, help="submissions in the batch (graded in two runs of n/2)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--cold", type=int, default=3, help="pairs of cold single-submission runs (0: none)")
    parser.add_argument("--module", action="append", choices=MODULES, help="only these modules' tests")
    args = parser.parse_args()
    modules = tuple(args.module) if args.module else MODULES
    files = test_files(modules)
    work = Path(tempfile.mkdtemp(prefix="kit-bench-"))
    load0 = os.getloadavg()
    try:
        half = [build(range(args.n // 2), work / "a"), build(range(args.n // 2, args.n), work / "b")]
        subs = half[0] + half[1]
        print(f"{args.n} full-credit submissions, -j {args.jobs}, {len(files)} test files "
              f"({', '.join(m for m in modules if any(f'test_{m}.py' in f for f in files))}); "
              f"{os.cpu_count()} CPUs, load average {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f} at the start")

        # the floor: a bare torch import, and the tests' own work in-process
        imports = [run([sys.executable, "-c", "import torch"])[0] for _ in range(3)]
        torch_import = statistics.median(imports)
        pytest_cmd = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider"]
        t_inproc, proc = run([*pytest_cmd, f"--target={subs[0]}"])
        # the suite's own work on a later submission: what a grading worker pays per submission
        # with no sandbox at all (torch imported, tests collected, expected values cached)
        steady_script = (
            "import sys, time, pytest\n"
            f"files = {files!r}\n"
            "def run(sub):\n"
            "    t = time.perf_counter()\n"
            "    code = pytest.main([*files, '-q', '-p', 'no:cacheprovider', f'--target={sub}'])\n"
            "    return time.perf_counter() - t, int(code)\n"
            f"run({str(subs[0])!r})\n"
            f"print('STEADY', *min(run({str(subs[1])!r}), run({str(subs[2 % len(subs)])!r})))\n")
        _, proc_steady = run([sys.executable, "-c", steady_script])
        steady_line = [ln for ln in proc_steady.stdout.splitlines() if ln.startswith("STEADY ")]
        steady = float(steady_line[-1].split()[1]) if steady_line and steady_line[-1].split()[2] == "0" else None
        print(f"bare `python -c 'import torch'`: {torch_import:.2f} s (median of 3)")
        proc_suite_line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else str(proc.returncode)
        print(f"one in-process pytest run of the suite (torch import + collection + tests): {t_inproc:.2f} s "
              f"({proc_suite_line})")

        # 1 and 2, in ABBA order (grade, naive, naive, grade on halves of the batch) so that a change
        # of load on a shared machine during the run weighs on both alike
        mod_args = [a for m in (args.module or []) for a in ("--module", m)]
        samplers: list[Sampler] = []

        def graded(part: list[Path], tag: str) -> float:
            out = work / f"out-{tag}"
            elapsed, proc, sampler = graded_with_sampler(
                [sys.executable, "-m", "grader.cli", "grade", str(part[0].parent), "--out", str(out), "-j",
                 str(args.jobs), "--no-progress", *mod_args])
            samplers.append(sampler)
            if proc.returncode != 0:
                raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
            with open(out / "grades.csv") as f:
                rows = list(csv.DictReader(f))
            if len(rows) != len(part) or any(float(r["score"]) != float(r["max_score"]) - float(r["pending"])
                                             for r in rows):
                raise SystemExit(f"not every submission got full credit:\n{(out / 'grades.csv').read_text()}")
            return elapsed

        def naive(part: list[Path]) -> float:
            def one(sub: Path) -> float:
                return run([*pytest_cmd, f"--target={sub}"])[0]

            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.jobs) as pool:
                list(pool.map(one, part))
            return time.perf_counter() - t0

        zygote = [0, 0, 0]  # submissions whose sandbox was forked from a zygote, submissions, from the batch's
        seconds: list[float] = []  # a trusted worker's wall time per submission (instructor.json)
        trusted_peaks: list[tuple[int, int]] = []  # (RSS high-water mark, cgroup peak) of the worker, per submission

        def shares(tag: str) -> list[tuple[float, float, float]]:
            """(sandbox start-up, probe calls, the rest: the trusted tests' own work) per submission,
            from each submission's instructor.json (seconds measured by the grading worker)."""
            rows = []
            for info in sorted((work / f"out-{tag}" / "instructor" / "students").glob("*/instructor.json")):
                data = json.loads(info.read_text())
                box = data.get("sandbox") or {}
                zygote[0] += bool((box.get("layers") or {}).get("zygote"))
                zygote[1] += 1
                zygote[2] += box.get("zygote_origin") == "batch"
                start, calls = sum(box.get("startup_seconds", [])), float(box.get("call_seconds", 0.0))
                seconds.append(float(data.get("seconds", 0.0)))
                trusted = data.get("trusted") or {}
                trusted_peaks.append((int(trusted.get("rss_peak_bytes") or 0), int(trusted.get("cgroup_peak_bytes") or 0)))
                rows.append((start, calls, max(0.0, float(data.get("seconds", 0.0)) - start - calls)))
            return rows

        t_grade_a = graded(half[0], "a")
        t_naive = naive(half[0]) + naive(half[1])
        t_grade_b = graded(half[1], "b")
        t_grade = t_grade_a + t_grade_b
        print(f"grader grade -j {args.jobs}: {t_grade_a:.1f} s + {t_grade_b:.1f} s for {len(half[0])} + {len(half[1])} "
              f"= {t_grade / args.n:.2f} s per submission (all full credit)")
        print(f"naive (fresh pytest per submission, {args.jobs} at a time, no sandbox): {t_naive:.1f} s = "
              f"{t_naive / args.n:.2f} s per submission")

        per_grade, per_naive = t_grade / args.n, t_naive / args.n
        parts = shares("a") + shares("b")
        if parts:
            total = sum(sum(p) for p in parts) or 1.0
            start, calls, trusted = (sum(p[i] for p in parts) for i in range(3))
            print(f"where a worker's time goes (summed over submissions): sandbox start-up {start / total:.0%}, "
                  f"probe calls (student code and probes) {calls / total:.0%}, trusted tests and the rest "
                  f"{trusted / total:.0%}; {total / len(parts):.2f} s of worker time per submission; "
                  f"sandboxes forked from a zygote (grader.sandbox.zygote) for {zygote[0]} of {zygote[1]} submissions, "
                  f"{zygote[2]} of them from the batch's mother zygote")

        # 4: one submission, cold, as Gradescope runs it (a fresh process, -j 1), against one in-process pytest
        cold: list[tuple[float, float]] = []
        cold_memory = [0, 0]  # the peak of each one's whole process tree (proportional set sizes)
        for i in range(args.cold):
            sub = subs[i % len(subs)]
            t_cold, proc, sampler = graded_with_sampler([sys.executable, "-m", "grader.cli", "grade", str(sub), "--out",
                                                         str(work / f"cold-{i}"), "-j", "1", "--no-progress", *mod_args])
            if proc.returncode != 0:
                raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
            t_pytest, _, pytest_sampler = graded_with_sampler([*pytest_cmd, f"--target={sub}"])
            cold_memory = [max(cold_memory[0], sampler.total[1]), max(cold_memory[1], pytest_sampler.total[1])]
            cold.append((t_cold, t_pytest))

        print()
        print(f"{'':44s}{'s/submission':>14s}{'vs naive':>10s}{'vs floor':>10s}")
        floor = steady / args.jobs if steady is not None else None
        table = [("grader grade (sandboxed)", per_grade), ("naive pytest per submission", per_naive),
                 ("bare python -c 'import torch'", torch_import)]
        if floor is not None:
            table.append(("floor: suite's own work, warm, no sandbox / jobs", floor))
        for name, value in table:
            print(f"{name:44s}{value:14.2f}{value / per_naive:10.2f}"
                  + (f"{value / floor:10.2f}" if floor else f"{'':>10s}"))
        if floor is not None:
            n_run, per_run = len(half[0]), math.ceil(len(half[0]) / args.jobs)
            print(f"\ngrader / floor: {per_grade / floor:.2f} (the floor: the tests' own work on a later submission in "
                  f"one warm process, {steady:.2f} s, / {args.jobs} jobs); grader grade's overhead beyond it (sandbox, "
                  f"start-up, first submissions, reports): {per_grade - floor:.2f} s per submission.  A run of "
                  f"{n_run} on {args.jobs} workers takes {per_run} rounds where the floor counts {n_run / args.jobs:g}: "
                  f"even with no overhead at all grader / floor would be {per_run / (n_run / args.jobs):.2f}")
        if cold:
            ratios = [g / p for g, p in cold]
            print("\none submission, cold (Gradescope: a fresh `grader grade SUB -j 1`): "
                  + ", ".join(f"{g:.1f} s vs {p:.1f} s" for g, p in cold)
                  + f" for one in-process pytest run; grade / pytest median {statistics.median(ratios):.2f} "
                  f"(each: {', '.join(f'{r:.2f}' for r in ratios)}); memory at the peak: grade {cold_memory[0] / MIB:.0f} "
                  f"MiB, pytest {cold_memory[1] / MIB:.0f} MiB (proportional, every process of each)")

        # memory, and a class of 1,000
        print()
        peak: dict[str, tuple[int, int, int]] = {}
        for s in samplers:
            for role, values in s.peak.items():
                peak[role] = tuple(max(a, b) for a, b in zip(peak.get(role, (0, 0, 0)), values))  # type: ignore[assignment]
        total_pss = max((s.total[1] for s in samplers), default=0)
        total_rss = max((s.total[0] for s in samplers), default=0)
        for role in ("grader grade (parent)", "fork-server", "trusted worker", "mother zygote", "zygote", "sandbox"):
            if role in peak:
                rss, pss, private = peak[role]
                print(f"peak memory of one {role:22s} {rss / MIB:6.0f} MiB resident, {pss / MIB:6.0f} MiB proportional, "
                      f"{private / MIB:6.0f} MiB its own")
        if trusted_peaks:
            print(f"a trusted worker's own high-water mark (instructor.json): {max(p[0] for p in trusted_peaks) / MIB:.0f} "
                  f"MiB resident" + (f", its memory cgroup's peak {max(p[1] for p in trusted_peaks) / MIB:.0f} MiB"
                                     if any(p[1] for p in trusted_peaks) else ""))
        print(f"the whole batch at -j {args.jobs}: at most {total_pss / MIB:.0f} MiB proportional "
              f"({total_rss / MIB:.0f} MiB resident, shared pages counted in every process); sampled every 0.5 s")
        if seconds and floor is not None:
            later = statistics.median(seconds)
            n_run = len(half[0])
            fixed = max(0.0, (t_grade / 2) - n_run * statistics.mean(seconds) / args.jobs)
            slot = sum(peak.get(r, (0, 0, 0))[2] for r in ("trusted worker", "zygote", "sandbox"))
            print(f"a class of 1,000 at -j {args.jobs} on this machine: about {fixed + 1000 * later / args.jobs:.0f} s "
                  f"({(fixed + 1000 * later / args.jobs) / 60:.0f} min: the batch's start-up and end, {fixed:.0f} s, plus "
                  f"1,000 x {later:.2f} s, a worker's median time per submission, / {args.jobs}); memory: the batch's "
                  f"peak above, {total_pss / MIB:.0f} MiB, whatever the class size (a worker is replaced every 100 "
                  f"submissions), and about {slot / MIB:.0f} MiB more per job slot added (a worker's, a zygote's and "
                  f"a sandbox's own memory at their peaks)")
        load1 = os.getloadavg()
        print(f"\nload average {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f} at the end")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
