"""The batch pipeline: from a folder of submissions to a results folder (`grader grade`, `grader merge`).

One module per stage (docs/ARCHITECTURE.md follows a submission through them):

* `archives` -- discovery (folders, .zip, .tar.gz, folders of them), the safe unpacking and the
  staging of a submission's module files (the same function `grader check` uses);
* `grade`    -- the parent's pool of trusted workers, each running the graded tests with
  `pytest.main` against a sandboxed backend, per submission;
* `results`  -- the results folder's layout, results.json (Gradescope's format), grades.csv;
* `late`     -- the late policy (deadline, grace, penalty, cap, extensions) applied afterwards;
* `gittime`  -- a git submission's last commit time, read without running any of its config;
* `merge`    -- a CPU run and a CUDA run of the same submissions combined into one score.

Sharded and cluster runs (`grader/cluster/`) and the instructor reports (`grader/reports/`)
build on these.
"""
