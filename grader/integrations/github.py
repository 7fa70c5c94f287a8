"""The GitHub Actions workflow that ships in the student release.

On every push it grades the student's own `assignment/` with the public tests: a CPU job
(GPU tests pending), a job on a self-hosted runner labelled `gpu` that runs only the GPU
tests, and a merge job that combines both, writes the score to the job summary and reports it
to GitHub Classroom's grade column with Classroom's own reporter action
(`classroom-resources/autograding-grading-reporter@v1`, fed by `grader classroom-payload`; the
payload's format: `grader.integrations.classroom`).  The workflow and the merge job carry the
names Classroom's generated workflow uses ("Autograding Tests", `run-autograding-tests`); the
reporter needs no token (it writes annotations only), hence only `actions: read` beside
`contents: read`, as its README shows.  The workflow is validated in the kit's tests against the
GitHub workflow JSON schema.
"""

from __future__ import annotations

from pathlib import Path

WORKFLOW_PATH = ".github/workflows/autograde.yml"

#: How each CPU job of the kit's workflows starts (this one and `grader actions`'): the repository,
#: Python, the kit with torch's CPU build; the grading jobs also install the sandbox.
_CHECKOUT = """\
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
"""
_SANDBOX = """\
      - name: Install bubblewrap (the sandbox)
        run: sudo apt-get update && sudo apt-get install -y bubblewrap libseccomp2
"""
_KIT = """\
      - name: Install the kit
        run: |
          python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
          python -m pip install -e .
"""
SETUP_STEPS = _CHECKOUT + _KIT
SETUP_STEPS_WITH_SANDBOX = _CHECKOUT + _SANDBOX + _KIT


def with_setup(workflow: str) -> str:
    """`__SETUP__` / `__SETUP_WITH_SANDBOX__` lines of a workflow template replaced by those steps."""
    return workflow.replace("__SETUP_WITH_SANDBOX__\n", SETUP_STEPS_WITH_SANDBOX).replace("__SETUP__\n", SETUP_STEPS)


WORKFLOW = """\
# Autograde every push with the public tests.  The CPU job grades everything it can and
# records the GPU tests as pending; the `gpu` job (a self-hosted runner with CUDA) grades
# only those; `merge` combines the two, writes the score to the job summary and reports it to
# GitHub Classroom (its reporter action reads the payload `grader classroom-payload` writes).
# Classroom looks for the names its own generated workflow uses: keep "Autograding Tests" and
# the job name run-autograding-tests.
name: Autograding Tests

on:
  push:
  workflow_dispatch:

permissions:
  contents: read
  actions: read

concurrency:
  group: autograde-${{ github.ref }}
  cancel-in-progress: true

jobs:
  cpu:
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
__SETUP_WITH_SANDBOX__
      - name: Grade (CPU)
        run: grader grade assignment --out results-cpu --device cpu --no-progress
      - uses: actions/upload-artifact@v4
        with:
          name: results-cpu
          path: results-cpu

  gpu:
    runs-on: [self-hosted, gpu]
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - name: Install the kit (the runner's CUDA torch 2.11+ is kept)
        run: |
          python3 -m venv --system-site-packages .venv
          .venv/bin/python -m pip install -e .
      - name: Grade (GPU tests only)
        run: .venv/bin/grader grade assignment --out results-gpu --device cuda --no-progress
      - uses: actions/upload-artifact@v4
        with:
          name: results-gpu
          path: results-gpu

  merge:
    # Runs even when the GPU runner is down: its tests then stay pending (not scored; in
    # Classroom they count as 0 of their points and the job fails until the GPU run reports).
    name: run-autograding-tests
    needs: [cpu, gpu]
    if: ${{ always() && needs.cpu.result == 'success' }}
    runs-on: ubuntu-latest
    steps:
__SETUP__
      - uses: actions/download-artifact@v4
        with:
          name: results-cpu
          path: results-cpu
      - uses: actions/download-artifact@v4
        continue-on-error: true
        with:
          name: results-gpu
          path: results-gpu
      - name: Merge and report
        run: grader merge results-cpu results-gpu --out results --markdown "$GITHUB_STEP_SUMMARY"
      - uses: actions/upload-artifact@v4
        with:
          name: results
          path: results
      - name: Upload the feedback page (what passed and failed, with pictures; written by grader merge)
        uses: actions/upload-artifact@v4
        with:
          name: feedback
          path: results/students/*/feedback.html
          if-no-files-found: warn
      - name: Classroom payload
        id: autograde
        run: grader classroom-payload results --github-output "$GITHUB_OUTPUT"
      - name: Report to GitHub Classroom
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
          AUTOGRADE_RESULTS: ${{ steps.autograde.outputs.result }}
        with:
          runners: autograde
"""
WORKFLOW = with_setup(WORKFLOW)


def write_workflow(release: Path) -> Path:
    path = release / WORKFLOW_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WORKFLOW)
    return path
