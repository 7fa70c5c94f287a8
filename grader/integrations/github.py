"""The GitHub Actions workflow that ships in the student release.

On every push it grades the student's own `assignment/` with the public tests: a CPU job
(GPU tests pending), a job on a self-hosted runner labelled `gpu` that runs only the GPU
tests, and a merge job that combines both and writes the score to the job summary.  The
workflow is validated in the kit's tests against the GitHub workflow JSON schema.
"""

from __future__ import annotations

from pathlib import Path

WORKFLOW_PATH = ".github/workflows/autograde.yml"

WORKFLOW = """\
# Autograde every push with the public tests.  The CPU job grades everything it can and
# records the GPU tests as pending; the `gpu` job (a self-hosted runner with CUDA) grades
# only those; `merge` combines the two and writes the score to the job summary.
name: autograde

on:
  push:
  workflow_dispatch:

permissions:
  contents: read

concurrency:
  group: autograde-${{ github.ref }}
  cancel-in-progress: true

jobs:
  cpu:
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install bubblewrap (the sandbox)
        run: sudo apt-get update && sudo apt-get install -y bubblewrap libseccomp2
      - name: Install the kit
        run: |
          python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
          python -m pip install -e .
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
    # Runs even when the GPU runner is down: its tests then stay pending (not scored).
    needs: [cpu, gpu]
    if: ${{ always() && needs.cpu.result == 'success' }}
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install the kit
        run: |
          python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
          python -m pip install -e .
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
"""


def write_workflow(release: Path) -> Path:
    path = release / WORKFLOW_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WORKFLOW)
    return path
