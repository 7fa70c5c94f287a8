"""`grader slurm SUBMISSIONS --out DIR --tasks N`: grade a class as a Slurm array job.

Writes, under ``DIR/slurm/``:

* ``grade.sbatch``: an array job ``--array=0-(N-1)``; task i runs
  ``grader grade SUBMISSIONS --shard $((SLURM_ARRAY_TASK_ID+1))/N --out DIR/shards/K``;
* ``combine.sbatch``: ``grader combine DIR/combined DIR/shards/1 ... DIR/shards/N``, submitted with
  ``--dependency=afterok:<array job>`` (and ``--kill-on-invalid-dep=yes``, so a failed shard does
  not leave it pending forever);
* ``submit.sh``: the two ``sbatch --parsable`` commands; ``--submit`` runs exactly those.

A task's ``grader grade`` exits 1 when some submission could not be graded or was refused: its
results are still written, so the task counts that as success and the combine job lists those
students (exit 1); exit 2 (nothing graded) fails the task and with it the combine job.
``--device cuda`` asks each task for a GPU (``--gres=gpu:1``) and grades only the GPU tests;
its ``DIR/combined`` is then ready for ``grader merge CPU_DIR/combined DIR/combined``.

Every path is absolute and quoted with `shlex.quote`; Slurm's own file-name patterns (``%``)
cannot be quoted, so a DIR holding ``%`` or a newline is refused.  Slurm must see DIR, the
submissions and this Python on every node (a shared file system).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


class SlurmError(Exception):
    """The job cannot be written or submitted; the message says why."""


@dataclass
class SlurmJob:
    submissions: list[Path]
    out: Path
    tasks: int
    device: str = "cpu"
    partition: str | None = None
    time: str | None = None
    cpus: int = 2  # per task; also `grader grade -j`
    mem: str | None = None  # per task, e.g. 8G
    gres: str | None = None  # default for --device cuda: gpu:1
    grade_args: list[str] = field(default_factory=list)  # passed on to `grader grade` (--module, --sandbox...)
    sbatch_args: list[str] = field(default_factory=list)  # passed on to both sbatch commands (--account=...)
    gradebook: str | None = None
    python: str = sys.executable

    @property
    def folder(self) -> Path:
        return self.out / "slurm"

    def shard_dir(self, k: int | str) -> Path:
        return self.out / "shards" / str(k)

    @property
    def combined(self) -> Path:
        return self.out / "combined"


def _grader(job: SlurmJob) -> str:
    return f"{shlex.quote(job.python)} -m grader.cli"


def grade_script(job: SlurmJob) -> str:
    q = shlex.quote
    subs = " ".join(q(str(p)) for p in job.submissions)
    extra = " ".join(q(a) for a in job.grade_args)
    shards = q(str(job.out / "shards"))
    return f"""#!/bin/bash
# grader slurm: task i of this array grades shard i+1 of {job.tasks} (see grader/cluster/slurm.py)
set -euo pipefail
K=$((SLURM_ARRAY_TASK_ID + 1))
rc=0
{_grader(job)} grade {subs} --shard "$K/{job.tasks}" --out {shards}/"$K" -j {job.cpus} --device {q(job.device)} \\
    --no-progress {extra} || rc=$?
# 1: results written, some submissions not graded or refused (the combine job lists them); 2: nothing graded
if [ "$rc" -gt 1 ]; then exit "$rc"; fi
"""


def combine_script(job: SlurmJob) -> str:
    q = shlex.quote
    shards = " ".join(q(str(job.shard_dir(k))) for k in range(1, job.tasks + 1))
    gradebook = f" --gradebook {q(job.gradebook)}" if job.gradebook else ""
    return f"""#!/bin/bash
# grader slurm: combine the {job.tasks} shards into one results folder (runs after the array job succeeded)
set -euo pipefail
exec {_grader(job)} combine {q(str(job.combined))} {shards}{gradebook}
"""


def _common(job: SlurmJob, name: str) -> list[str]:
    args = [f"--job-name=kit-{name}", "--parsable"]
    if job.partition:
        args.append(f"--partition={job.partition}")
    return args + list(job.sbatch_args)


def sbatch_grade(job: SlurmJob) -> list[str]:
    args = ["sbatch", *_common(job, "grade"), f"--array=0-{job.tasks - 1}", "--ntasks=1",
            f"--cpus-per-task={job.cpus}", f"--output={job.folder / 'grade-%A_%a.out'}"]
    if job.time:
        args.append(f"--time={job.time}")
    if job.mem:
        args.append(f"--mem={job.mem}")
    gres = job.gres or ("gpu:1" if job.device == "cuda" else None)
    if gres:
        args.append(f"--gres={gres}")
    return args + [str(job.folder / "grade.sbatch")]


def sbatch_combine(job: SlurmJob, after: str) -> list[str]:
    return ["sbatch", *_common(job, "combine"), f"--dependency=afterok:{after}", "--kill-on-invalid-dep=yes",
            "--ntasks=1", "--cpus-per-task=1", f"--output={job.folder / 'combine-%j.out'}",
            str(job.folder / "combine.sbatch")]


def check(job: SlurmJob) -> None:
    if job.tasks < 1:
        raise SlurmError("--tasks must be at least 1")
    if job.cpus < 1:
        raise SlurmError("--cpus-per-task must be at least 1")
    if any(c in str(job.out) for c in "%\n\r"):
        raise SlurmError(f"--out {job.out}: Slurm reads % in file names as a pattern: choose a folder without % "
                         "or line breaks")
    for p in job.submissions:
        if not p.exists():
            raise SlurmError(f"{p}: no such file or directory (nothing written)")
    if job.out.exists() and not job.out.is_dir():
        raise SlurmError(f"--out {job.out}: exists and is not a folder")


def write(job: SlurmJob) -> dict[str, Path]:
    """Write the two job scripts and submit.sh; returns their paths."""
    check(job)
    job.folder.mkdir(parents=True, exist_ok=True)
    paths = {"grade": job.folder / "grade.sbatch", "combine": job.folder / "combine.sbatch",
             "submit": job.folder / "submit.sh"}
    paths["grade"].write_text(grade_script(job))
    paths["combine"].write_text(combine_script(job))
    grade_cmd = shlex.join(sbatch_grade(job))
    combine_cmd = shlex.join(sbatch_combine(job, "__JOB__")).replace("afterok:__JOB__", 'afterok:"${jid%%;*}"')
    paths["submit"].write_text(f"""#!/bin/bash
# Submit the grading array and the combine job that waits for it (what `grader slurm --submit` runs).
set -euo pipefail
jid=$({grade_cmd})
cid=$({combine_cmd})
echo "array job ${{jid%%;*}}, combine job ${{cid%%;*}}: results in {shlex.quote(str(job.combined))}"
""")
    for p in paths.values():
        p.chmod(0o755)
    return paths


def submit(job: SlurmJob) -> tuple[str, str]:
    """Submit the array and the dependent combine job; returns their job ids."""
    def run(args: list[str]) -> str:
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise SlurmError("sbatch not found: is this a Slurm login node? (the scripts are written; "
                             f"submit them later with {job.folder / 'submit.sh'})") from None
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{args[0]} did not answer within 120 s") from None
        if proc.returncode != 0:
            raise SlurmError(f"{shlex.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-1000:]}")
        return proc.stdout.strip().split(";")[0]

    array = run(sbatch_grade(job))
    combine = run(sbatch_combine(job, array))
    return array, combine

