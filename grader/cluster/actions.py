"""`grader actions`: an instructor-side GitHub Actions workflow that grades a class in N matrix jobs.

The workflow lives in the instructor's (private) kit repository, next to the hidden tests, and
is started by hand (``workflow_dispatch``).  It needs a secret ``CLASS_TOKEN``: a token that can
read the organisation's student repositories.

* ``roster``: lists the organisation's repositories whose name starts with the prefix
  (``gh repo list``) into ``roster.txt``: the whole class, the identity every shard records;
* ``grade`` (matrix ``shard: 1..N``): clones only the repositories of its shard
  (``python -m grader.cluster.shard K/N --roster roster.txt``), runs
  ``grader grade submissions --shard K/N --roster roster.txt --out shard`` and uploads
  ``shard/`` as the artifact ``shard-K`` (instructor-only: it holds hidden tests' tracebacks);
* ``combine``: downloads every ``shard-*`` artifact and runs ``grader combine`` (which refuses a
  missing shard, mixed kit versions or a repository graded twice with different files), writes
  the nbgrader gradebook and uploads ``results``.

A repository that is in the roster but could not be cloned is listed in grades.csv as not
graded.  The workflow is validated like the student workflow (`grader.integrations.github`):
against GitHub's workflow schema in the kit's tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader import MODULES
from grader.integrations.github import with_setup

WORKFLOW_PATH = ".github/workflows/grade-class.yml"
MAX_SHARDS = 256  # GitHub's limit on the jobs of one matrix

TEMPLATE = """\
# Grade the class: every repository of the organisation __ORG__ whose name starts with
# "__PREFIX__", in __N__ parallel shards, then one combined results folder (written by `grader actions`).
# Needs the secret CLASS_TOKEN (read access to the students' repositories).
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
      - name: List the class's repositories
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

  grade:
    needs: roster
    runs-on: ubuntu-latest
    timeout-minutes: 120
    strategy:
      fail-fast: false
      matrix:
        shard: [__SHARDS__]
    steps:
__SETUP_WITH_SANDBOX__
      - uses: actions/download-artifact@v4
        with:
          name: roster
      - name: Clone this shard's repositories
        env:
          GH_TOKEN: ${{ secrets.CLASS_TOKEN }}
        run: |
          mkdir -p submissions
          python -m grader.cluster.shard "${{ matrix.shard }}/$SHARDS" --roster roster.txt > mine.txt
          while read -r name; do
            gh repo clone "$ORG/$name" "submissions/$name" -- --filter=blob:none --quiet \\
              || echo "::warning::could not clone $ORG/$name (listed as not graded)"
          done < mine.txt
      - name: Grade shard ${{ matrix.shard }}
        run: |
          rc=0
          grader grade submissions --shard "${{ matrix.shard }}/$SHARDS" --roster roster.txt --out shard \\
            --no-progress__GRADE_ARGS__ || rc=$?
          [ "$rc" -le 1 ]
      - uses: actions/upload-artifact@v4
        with:
          name: shard-${{ matrix.shard }}
          path: shard
          retention-days: 7

  combine:
    # also when a shard failed: `grader combine` then names the missing shard and its students
    needs: grade
    if: ${{ !cancelled() }}
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
__SETUP__
      - uses: actions/download-artifact@v4
        with:
          pattern: shard-*
          path: shards
      - name: Combine the shards
        run: |
          rc=0
          grader combine results shards/shard-* --gradebook sqlite:///results/gradebook.db || rc=$?
          if [ "$rc" -le 1 ]; then grader report results --out results/report.html; fi
          exit "$rc"
      - uses: actions/upload-artifact@v4
        if: ${{ always() }}
        with:
          name: results
          path: results
"""

_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_PREFIX = re.compile(r"[A-Za-z0-9._-]{0,100}")


class ActionsError(ValueError):
    """Arguments the workflow cannot be written with."""


def workflow(org: str, prefix: str, shards: int, modules: tuple[str, ...] = ()) -> str:
    """The workflow's text for organisation `org`, repositories starting with `prefix`, N shards."""
    if not _ORG.fullmatch(org):
        raise ActionsError(f"--org {org!r}: not a GitHub organisation name")
    if not _PREFIX.fullmatch(prefix):
        raise ActionsError(f"--prefix {prefix!r}: letters, digits, '.', '_' and '-' only")
    if not 1 <= shards <= MAX_SHARDS:
        raise ActionsError(f"--shards {shards}: between 1 and {MAX_SHARDS} (GitHub's matrix limit)")
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        raise ActionsError(f"--module: unknown {', '.join(unknown)}")
    grade_args = "".join(f" --module {m}" for m in modules)
    regex_prefix = re.escape(prefix).replace("\\-", "-")
    return (with_setup(TEMPLATE).replace("__ORG__", org).replace("__PREFIX__", prefix).replace("__REGEX__", regex_prefix)
            .replace("__N__", str(shards))
            .replace("__SHARDS__", ", ".join(str(k) for k in range(1, shards + 1)))
            .replace("__GRADE_ARGS__", grade_args))


def write_workflow(path: Path, text: str) -> Path:
    if path.exists() and not path.is_file():
        raise ActionsError(f"--out {path}: exists and is not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
