"""`grader actions`: an instructor-side GitHub Actions workflow that grades a class in N matrix jobs.

This is a grade of record (the student workflow, `grader.integrations.github`, is only the
student's preview).  The workflow lives in the instructor's (private) kit repository, next to the
hidden tests, and is started by hand (``workflow_dispatch``).  It needs a secret ``CLASS_TOKEN``:
a token that can read the organisation's student repositories.

* ``roster``: lists the organisation's repositories whose name starts with the prefix
  (``gh repo list``) into ``roster.txt``: the whole class, the identity every shard records;
  with ``--device cuda`` it first checks that a self-hosted runner labelled ``gpu`` is online
  (else the GPU jobs would sit in GitHub's queue for a day and everything after them with it);
* ``grade`` (matrix ``shard: 1..N``, GitHub's runners): clones only the repositories of its shard
  (``python -m grader.cluster.shard K/N --roster roster.txt``), runs ``grader grade submissions
  --shard K/N --roster roster.txt --out shard`` and uploads ``shard/`` as the artifact ``shard-K``
  (instructor-only: it holds hidden tests' tracebacks);
* ``grade-gpu`` (``--device cuda`` only; matrix ``shard: 1..N`` on ``[self-hosted, gpu]``): the
  same with ``--device cuda`` (the GPU tests only), artifact ``gpu-shard-K``; the students'
  files are removed from the course's machine when the job ends;
* ``combine``: downloads the shards and runs ``grader combine`` (which refuses a missing shard,
  mixed kit versions or a repository graded twice with different files); with ``--device cuda``
  it combines each pass and runs ``grader merge CPU GPU``; writes the nbgrader gradebook and the
  class report and uploads ``results``.

Student repositories are data, never code that runs outside the sandbox: each is cloned with
plain git (hooks off, no submodules, Git LFS not fetched, the token only in the clone step's
environment, never in a command line or a saved config); nothing from them is installed, no
action of theirs is used, and only `grader grade` (which runs their modules in its sandbox,
``--require landlock``: never the unisolated fallback) touches them.  The kit is this
repository's, installed from its own checkout (whose token is not kept in ``.git/config``).  On
GitHub's runners `grader grade` runs as root (``sudo``), where the sandbox is bubblewrap with a
uid per submission, the configuration the kit's tests run.

A repository that is in the roster but could not be cloned is listed in grades.csv as not
graded.  The workflow is validated like the student workflow: against GitHub's workflow schema
(and actionlint where it is installed) in the kit's tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader import MODULES
from grader.integrations.github import with_setup

WORKFLOW_PATH = ".github/workflows/grade-class.yml"
MAX_SHARDS = 256  # GitHub's limit on the jobs of one matrix
GPU_LABELS = ("self-hosted", "gpu")

HEADER = """\
# Grade the class: every repository of the organisation __ORG__ whose name starts with
# "__PREFIX__", in __N__ parallel shards, then one combined results folder (written by `grader actions`).
# Needs the secret CLASS_TOKEN (read access to the students' repositories).__GPU_NOTE__
# The students' repositories are data: cloned, never installed or run outside the grader's sandbox.
name: grade-class

on:
  workflow_dispatch:

permissions:
  contents: read

concurrency:
  group: grade-class
  cancel-in-progress: false

env:
  ORG: '__ORG__'
  PREFIX: '__REGEX__'
  SHARDS: "__N__"

jobs:
  roster:
    runs-on: ubuntu-latest
    timeout-minutes: 10
    steps:
__GPU_CHECK__      - name: List the class's repositories
        env:
          GH_TOKEN: ${{ secrets.CLASS_TOKEN }}
        run: |
          gh repo list "$ORG" --limit 10000 --json name --jq '.[].name' \\
            | { grep -E "^${PREFIX}" || true; } | sort > roster.txt
          echo "$(wc -l < roster.txt) repositories" >> "$GITHUB_STEP_SUMMARY"
      - uses: actions/upload-artifact@v4
        with:
          name: roster
          path: roster.txt
"""

GPU_NOTE = """
# --device cuda: the GPU tests run on the course's self-hosted runner labelled "gpu" (Linux, CUDA
# torch 2.11+ in its python3, bubblewrap and libseccomp2 installed: `grader doctor` there says which
# sandbox layers work); the combine job merges them into the CPU grades."""

#: A runner that is not registered or offline would leave the GPU jobs queued for a day: fail fast.
#: Listing runners needs a token with administration read access (repository and organisation);
#: where one of the lists cannot be read and the other shows no such runner, a warning only.
GPU_CHECK = """\
      - name: Is a self-hosted runner labelled gpu online?
        env:
          GH_TOKEN: ${{ secrets.CLASS_TOKEN }}
        run: |
          query='[.runners[] | select(.status == "online" and any(.labels[]; .name == "gpu"))] | length'
          online=0 unanswered=""
          for api in "repos/$GITHUB_REPOSITORY/actions/runners" "orgs/$ORG/actions/runners"; do
            if counts="$(gh api --paginate "$api" --jq "$query" 2>/dev/null)"; then
              for n in $counts; do online=$((online + n)); done
            else
              unanswered="$unanswered $api"
            fi
          done
          if [ "$online" = 0 ] && [ -n "$unanswered" ]; then
            echo "::warning::CLASS_TOKEN cannot list the runners of$unanswered: not checked that a runner labelled gpu is online"
          elif [ "$online" = 0 ]; then
            echo "::error::no self-hosted runner labelled gpu is online: the GPU jobs would wait in the queue" \\
              "(register one, or write the workflow without --device cuda)"
            exit 1
          fi
"""

#: Clone one shard's repositories as data.  The token reaches git through the environment
#: (GIT_CONFIG_*), not a command line other users' processes could read, nor a config left behind.
CLONE = """\
      - uses: actions/download-artifact@v4
        with:
          name: roster
      - name: Clone this shard's repositories (as data)
        env:
          CLASS_TOKEN: ${{ secrets.CLASS_TOKEN }}
          GIT_LFS_SKIP_SMUDGE: "1"
          GIT_TERMINAL_PROMPT: "0"
        run: |
          auth="$(printf 'x-access-token:%s' "$CLASS_TOKEN" | base64 -w0)"
          export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0="http.$GITHUB_SERVER_URL/.extraheader" \\
            GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $auth" GIT_CONFIG_KEY_1=core.hooksPath GIT_CONFIG_VALUE_1=/dev/null
          mkdir -p submissions
          __PY__ -m grader.cluster.shard "${{ matrix.shard }}/$SHARDS" --roster roster.txt > mine.txt
          while read -r name; do
            git clone --quiet --filter=blob:none --no-recurse-submodules "$GITHUB_SERVER_URL/$ORG/$name.git" \\
              "submissions/$name" || echo "::warning::could not clone $ORG/$name (listed as not graded)"
          done < mine.txt
"""

#: The head of each grading job: one per shard, after the roster.
MATRIX = """\
    needs: roster
    timeout-minutes: 120
    strategy:
      fail-fast: false
      matrix:
        shard: [__SHARDS__]
    steps:
"""

GRADE = """
  grade:
    runs-on: ubuntu-latest
__MATRIX____SETUP_WITH_SANDBOX__
__CLONE_CPU__      - name: Grade shard ${{ matrix.shard }}
        # as root: bubblewrap with a uid per submission (the runner's own user would get a weaker sandbox)
        run: |
          rc=0
          sudo "$(command -v grader)" grade submissions --shard "${{ matrix.shard }}/$SHARDS" --roster roster.txt \\
            --out shard --require landlock --no-progress__GRADE_ARGS__ || rc=$?
          sudo chown -R "$(id -u):$(id -g)" shard || true
          [ "$rc" -le 1 ]
      - uses: actions/upload-artifact@v4
        with:
          name: shard-${{ matrix.shard }}
          path: shard
          retention-days: 7
"""

GRADE_GPU = """
  grade-gpu:
    runs-on: [__GPU_LABELS__]
__MATRIX__      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - name: Install the kit (this repository; the runner's CUDA torch 2.11+ is kept)
        run: |
          python3 -m venv --system-site-packages .venv
          .venv/bin/python -m pip install -e .
__CLONE_GPU__      - name: Grade shard ${{ matrix.shard }} (GPU tests only)
        run: |
          rc=0
          .venv/bin/grader grade submissions --device cuda --shard "${{ matrix.shard }}/$SHARDS" --roster roster.txt \\
            --out gpu-shard --require landlock --no-progress__GRADE_ARGS__ || rc=$?
          [ "$rc" -le 1 ]
      - uses: actions/upload-artifact@v4
        with:
          name: gpu-shard-${{ matrix.shard }}
          path: gpu-shard
          retention-days: 7
      - name: Remove the students' files from the course's machine
        if: ${{ always() }}
        run: rm -rf submissions gpu-shard mine.txt roster.txt
"""

COMBINE = """
  combine:
    # also when a shard failed: `grader combine` then names the missing shard and its students
    needs: __NEEDS__
    if: ${{ !cancelled() }}
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
__SETUP__
      - name: Install nbgrader (the gradebook) with the kit's dev extra
        run: python -m pip install -e '.[dev]'
      - uses: actions/download-artifact@v4
        with:
          pattern: shard-*
          path: shards
__COMBINE__      - uses: actions/upload-artifact@v4
        if: ${{ always() }}
        with:
          name: results
          path: results
"""

COMBINE_CPU = """\
      - name: Combine the shards
        run: |
          rc=0
          grader combine results shards/shard-* --gradebook sqlite:///results/gradebook.db || rc=$?
          if [ "$rc" -le 1 ]; then grader report results --out results/report.html; fi
          exit "$rc"
"""

# `$(( $? > rc ? $? : rc ))`: the worse of the two exit statuses (1: some not graded or pending; 2: refused)
COMBINE_CUDA = """\
      - uses: actions/download-artifact@v4
        with:
          pattern: gpu-shard-*
          path: gpu-shards
      - name: Combine each pass, then merge the GPU tests into the CPU grades
        run: |
          rc=0
          grader combine results-cpu shards/shard-* || rc=$?
          [ "$rc" -le 1 ] || exit "$rc"
          grader combine results-gpu gpu-shards/gpu-shard-* || rc=$(( $? > rc ? $? : rc ))
          [ "$rc" -le 1 ] || exit "$rc"
          grader merge results-cpu results-gpu --out results --fail-on-pending \\
            --gradebook sqlite:///results/gradebook.db || rc=$(( $? > rc ? $? : rc ))
          [ "$rc" -le 1 ] || exit "$rc"
          grader report results --out results/report.html
          exit "$rc"
      - uses: actions/upload-artifact@v4
        if: ${{ always() }}
        with:
          name: passes
          path: |
            results-cpu
            results-gpu
          if-no-files-found: ignore
"""

_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_PREFIX = re.compile(r"[A-Za-z0-9._-]{0,100}")


class ActionsError(ValueError):
    """Arguments the workflow cannot be written with."""


def workflow(org: str, prefix: str, shards: int, modules: tuple[str, ...] = (), *, device: str = "cpu",
             assignment: str = "") -> str:
    """The workflow's text for organisation `org`, repositories starting with `prefix`, N shards;
    `device` "cuda" adds the GPU pass on the self-hosted runner and the merge; `assignment`: every
    `grader grade` grades that course.toml assignment (`grader.course.config`)."""
    if not _ORG.fullmatch(org):
        raise ActionsError(f"--org {org!r}: not a GitHub organisation name")
    if not _PREFIX.fullmatch(prefix):
        raise ActionsError(f"--prefix {prefix!r}: letters, digits, '.', '_' and '-' only")
    if not 1 <= shards <= MAX_SHARDS:
        raise ActionsError(f"--shards {shards}: between 1 and {MAX_SHARDS} (GitHub's matrix limit)")
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        raise ActionsError(f"--module: unknown {', '.join(unknown)}")
    if assignment and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", assignment):
        raise ActionsError(f"--assignment {assignment!r}: not an assignment name")
    if device not in ("cpu", "cuda"):
        raise ActionsError(f"--device {device!r}: cpu or cuda")
    cuda = device == "cuda"
    text = HEADER + GRADE + (GRADE_GPU if cuda else "") + COMBINE
    fill = {
        "__MATRIX__": MATRIX,
        "__GPU_NOTE__": GPU_NOTE if cuda else "",
        "__GPU_CHECK__": GPU_CHECK if cuda else "",
        "__GPU_LABELS__": ", ".join(GPU_LABELS),
        "__CLONE_CPU__": CLONE.replace("__PY__", "python"),
        "__CLONE_GPU__": CLONE.replace("__PY__", ".venv/bin/python"),
        "__NEEDS__": "[grade, grade-gpu]" if cuda else "grade",
        "__COMBINE__": COMBINE_CUDA if cuda else COMBINE_CPU,
        "__ORG__": org,
        "__PREFIX__": prefix,
        "__REGEX__": re.escape(prefix).replace("\\-", "-"),
        "__N__": str(shards),
        "__SHARDS__": ", ".join(str(k) for k in range(1, shards + 1)),
        "__GRADE_ARGS__": "".join(f" --module {m}" for m in modules) + (f" --assignment {assignment}" if assignment
                                                                          else ""),
    }
    text = with_setup(text)
    for key, value in fill.items():  # in this order: the pieces hold placeholders filled after them
        text = text.replace(key, value)
    return text


def write_workflow(path: Path, text: str) -> Path:
    if path.exists() and not path.is_file():
        raise ActionsError(f"--out {path}: exists and is not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
