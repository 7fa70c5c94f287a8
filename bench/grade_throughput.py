"""Batch-grading throughput: `grader grade` against the naive way, side by side in one run.

    python bench/grade_throughput.py [-n 20] [-j 2] [--module M ...]

Builds `n` full-credit submissions (copies of solutions/, each file with a comment line of its
own, so that no cache keyed by a file's bytes serves two submissions), then measures, one after another on
this machine:

1. ``grader grade SUBS --out DIR -j J``: J trusted workers forked from one fork-server that imported
   torch and the tests once, each submission graded in its own sandbox (forked from a zygote, itself
   forked from the batch's mother zygote, where the machine allows: root and bubblewrap);
2. the naive way: a fresh ``python -m pytest tests/public tests/hidden --target SUB`` per
   submission, J at a time, no sandbox (a torch import, plugin load and test collection each);
3. a bare ``python -c "import torch"`` (the floor of any per-submission process), one
   in-process run of the same tests on the solutions (a fresh process's whole cost), and the
   suite's own work on a later submission in a warm process without a sandbox (expected values
   and hypothesis examples cached, as in a grading worker): divided by J, the floor of any grader
   that runs these tests on every submission.

It prints the amortized wall time per submission of 1 and 2, their ratio, and both against the
torch import and the in-process suite.  Nothing here is asserted: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import MODULES  # noqa: E402
from grader.runner import test_files  # noqa: E402


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20, help="submissions in the batch")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--module", action="append", choices=MODULES, help="only these modules' tests")
    args = parser.parse_args()
    modules = tuple(args.module) if args.module else MODULES
    files = test_files(modules)
    work = Path(tempfile.mkdtemp(prefix="kit-bench-"))
    try:
        half = [build(range(args.n // 2), work / "a"), build(range(args.n // 2, args.n), work / "b")]
        subs = half[0] + half[1]
        print(f"{args.n} full-credit submissions, -j {args.jobs}, {len(files)} test files "
              f"({', '.join(m for m in modules if any(f'test_{m}.py' in f for f in files))}); {os.cpu_count()} CPUs")

        # the floor: a bare torch import, and the tests' own work in-process
        imports = [run([sys.executable, "-c", "import torch"])[0] for _ in range(3)]
        torch_import = statistics.median(imports)
        t_inproc, proc = run([sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider",
                              f"--target={subs[0]}"])
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

        def graded(part: list[Path], tag: str) -> float:
            out = work / f"out-{tag}"
            elapsed, proc = run([sys.executable, "-m", "grader.cli", "grade", str(part[0].parent), "--out",
                                 str(out), "-j", str(args.jobs), "--no-progress", *mod_args])
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
                return run([sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider",
                            f"--target={sub}"])[0]

            t0 = time.perf_counter()
            with ThreadPoolExecutor(args.jobs) as pool:
                list(pool.map(one, part))
            return time.perf_counter() - t0

        zygote = [0, 0, 0]  # submissions whose sandbox was forked from a zygote, submissions, from the batch's

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
                rows.append((start, calls, max(0.0, float(data.get("seconds", 0.0)) - start - calls)))
            return rows

        t_grade = graded(half[0], "a")
        t_naive = naive(half[0]) + naive(half[1])
        t_grade += graded(half[1], "b")
        print(f"grader grade -j {args.jobs}: {t_grade:.1f} s for {args.n} = {t_grade / args.n:.2f} s per submission "
              "(all full credit)")
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
        print()
        print(f"{'':42s}{'s/submission':>14s}{'vs naive':>10s}{'vs torch import':>17s}")
        for name, value in (("grader grade (sandboxed)", per_grade), ("naive pytest per submission", per_naive),
                            ("bare python -c 'import torch'", torch_import)):
            print(f"{name:42s}{value:14.2f}{value / per_naive:10.2f}{value / torch_import:17.2f}")
        if steady is not None:
            floor = steady / args.jobs
            print(f"{'suite own work, warm, no sandbox / jobs':42s}{floor:14.2f}{floor / per_naive:10.2f}"
                  f"{floor / torch_import:17.2f}")
            print(f"\nthe last row: the tests' own work on a later submission in one warm process ({steady:.2f} s: "
                  f"expected values and hypothesis examples cached, student code in-process), / {args.jobs} jobs. "
                  "No grader that runs these tests on every submission goes below it; grader grade's overhead "
                  f"beyond it (sandbox, start-up, first submissions, reports): {per_grade - floor:.2f} s per submission")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
