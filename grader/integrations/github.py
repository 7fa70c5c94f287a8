"""The GitHub Actions workflow that ships in the student release: a preview, not the grade.

On every push it grades the student's own work with the public tests -- the module files in
`assignment/` and the notebooks in `notebooks/`, as one submission (a notebook counts where its
module file is still the stub: `grader.intake.notebook`) -- on GitHub's own runners (``ubuntu-latest``), CPU only: the GPU tests stay pending; and it runs `grader check`
on macOS and Windows (``macos-latest``, ``windows-latest``: most students' machines), which
report no score and show that the public tests run there.  It writes the score to
the job summary and reports it to GitHub Classroom's grade column with Classroom's own
reporter action (`classroom-resources/autograding-grading-reporter@v1`, fed by `grader
classroom-payload`; the payload's format: `grader.integrations.classroom`).

The student controls that repository, this workflow included, so the score it reports is a
preview for the student, never the grade of record: a one-line edit of the workflow reports
full marks for a stub.  The grade of record is the course staff's run on the students'
repositories, pulled as data (`grader actions`, `grader slurm`, or `grader grade` + `grader
merge` by hand; docs/INSTRUCTORS.md: "GPU tests").  For the same reason nothing here runs on a course
machine: no self-hosted runner, no job waiting for one (the student's code, build backend
included, runs only on the GitHub-hosted VM of the student's own job).

The workflow and its job carry the names Classroom's generated workflow uses ("Autograding
Tests", `run-autograding-tests`); the reporter needs no token (it writes annotations only),
hence only `actions: read` beside `contents: read`, as its README shows.  The workflow is
validated in the kit's tests against the GitHub workflow JSON schema (and actionlint where it
is installed).
"""

from __future__ import annotations

from pathlib import Path

WORKFLOW_PATH = ".github/workflows/autograde.yml"

#: How each job of the kit's workflows on GitHub's runners starts (this one and `grader actions`'): the
#: repository (its token not left in .git/config, where graded code could read it), Python, the kit with
#: torch's CPU build; the grading jobs also install the sandbox.
_CHECKOUT = """\
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
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
# Autograde every push with the public tests, on GitHub's own runners (CPU only: the GPU tests
# stay pending; the course staff grade them on a GPU machine).  This score is a PREVIEW for you:
# you control this repository and this workflow, so the course's grade of record comes from the
# staff's own run on your repository, never from this one.
# The job writes the score to the job summary and reports it to GitHub Classroom (its reporter
# action reads the payload `grader classroom-payload` writes).  Classroom looks for the names
# its own generated workflow uses: keep "Autograding Tests" and the job name run-autograding-tests.
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
  grade:
    name: run-autograding-tests
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
__SETUP_WITH_SANDBOX__
      - name: Your work as one submission (assignment/*.py and the notebooks in notebooks/)
        # a notebook is graded where its module file is still the stub; an edited module file wins
        run: |
          mkdir -p submission
          cp -r assignment submission/
          if [ -d notebooks ]; then cp -r notebooks submission/; fi
      - name: Grade (CPU; the GPU tests stay pending)
        run: grader grade submission --out results-cpu --device cpu --no-progress
      - name: Score summary and feedback page
        # no GPU run in this workflow (none named): merge only writes the summary table and the feedback page
        run: |
          grader merge results-cpu --out results --markdown "$GITHUB_STEP_SUMMARY"
          {
            echo ""
            echo "This score is a preview: the GPU tests are graded by the course staff, and the grade of"
            echo "record is the staff's own run on your repository."
          } >> "$GITHUB_STEP_SUMMARY"
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

  # Most students work on macOS or Windows: `grader check` (the public tests, in-process, as on a
  # laptop) runs there too.  These two jobs report no score; a test one of these machines cannot
  # check is listed as "checked only when graded".  (On a private repository GitHub counts a macOS
  # minute as 10 and a Windows minute as 2: delete them if the organisation's minutes run short.)
  check-macos:
    name: grader check (macOS)
    runs-on: macos-latest
    timeout-minutes: 30
    steps:
__SETUP__
      - name: grader check (the public tests)
        run: grader check

  check-windows:
    name: grader check (Windows)
    runs-on: windows-latest
    timeout-minutes: 30
    defaults:
      run:
        shell: bash
    steps:
__SETUP__
      - name: grader check (the public tests)
        run: grader check
"""
WORKFLOW = with_setup(WORKFLOW)


def write_workflow(release: Path) -> Path:
    path = release / WORKFLOW_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WORKFLOW)
    return path
