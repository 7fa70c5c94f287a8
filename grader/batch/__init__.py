"""The batch pipeline: from a folder of submissions to a results folder (`grader grade`, `grader merge`).

One module per stage (docs/ARCHITECTURE.md follows a submission through them):

* `discover` -- discovery (folders, .zip, .tar.gz, folders of them), student ids, fingerprints;
* `take`     -- which files are taken from a submission (layouts, helpers, UTF-8) and why not;
* `unpack`   -- reading a folder or an archive safely, without extracting (the caps);
* `stage`    -- a submission's files written into the staging folder (the same function
  `grader check` uses);
* `grade`    -- the command: the parent's pool of trusted workers and the batch's own files;
* `trusted`  -- a trusted worker: per submission, staging, the graded tests with `pytest.main`
  against a sandboxed backend, and that student's results;
* `results`  -- the results folder's layout, results.json (Gradescope's format), grades.csv;
* `late`     -- the late policy's rules (deadline, grace, penalty, cap, extensions), its inputs,
  and its decision in results.json;
* `late_batch` -- the policy applied to a batch afterwards: a time for each submission, and
  every unknown one listed for the instructor;
* `gittime`  -- a git submission's last commit time, read without running any of its config,
  when the graded bytes are what its last commit holds;
* `merge`    -- a CPU run and a CUDA run of the same submissions combined into one score.

Sharded and cluster runs (`grader/cluster/`) and the instructor reports (`grader/reports/`)
build on these.
"""
