"""The batch pipeline: from a folder of submissions to a results folder (`grader grade`, `grader merge`).

A submission goes through five stages; docs/ARCHITECTURE.md follows one through them:

    discover  ──►  stage  ──►  testrun  ──►  results  ──►  reports
    (parent)       (worker)    (worker)      (worker)      (parent, after every worker)

* `discover` -- the submissions the command line names (folders, .zip, .tar.gz, folders of them),
  student ids, colliding ids refused, a content fingerprint (was it graded before?);
* `stage`    -- the files taken from a submission, written into a fresh folder (the same function
  `grader check` uses): which files and why others are not (`take`), reading a folder or an
  archive safely, without extracting (`unpack`: the caps; `archive_headers`: an archive's
  directory and headers bounded before a library reads them);
* `testrun`  -- the public then the hidden tests, ``pytest.main`` in the trusted worker, the
  student code in a sandbox per submission (`grader.sandbox`);
* `results`  -- that student's results.json (Gradescope's format), written with the
  instructor-only files where `layout` says;
* reports    -- the late policy applied to the batch (`late_batch`: a time for each submission,
  `gittime` for a git clone; `late`: the rules), grades.csv and the summary table (`grades`),
  the feedback pages (`grader.reports.feedback`).

Who runs the stages, top down: `grade` (the command, in the parent: discovery, then the pool,
then the reports) -> `pool` (N trusted workers and the batch's mother zygote) -> `forkserver`
(forks each worker from one warmed-up process) -> `trusted` (a worker process: jobs in,
outcomes out) -> `grading` (one submission: stage, testrun, results).  Under everything:
`options` (the options, an `Outcome` per submission, the errors), `budget` (the trusted side's
budgets), `suite` (what grades a submission, as one digest), `warm` (the expected values the
next batch's fork-server computes before it forks) and `layout` (the results folder).
`merge` (`grader merge`) combines a CPU and a CUDA run of the same submissions.

Every module imports only modules after it in `LAYERS` (tests/kit/test_imports.py): the
orchestration calls the stages, a stage never calls back up.  Sharded and cluster runs
(`grader/cluster/`) and the instructor reports (`grader/reports/`) build on these.
"""

#: The modules of this package, top down: each imports only modules after it.
LAYERS = ("grade", "pool", "forkserver", "trusted", "grading", "testrun", "merge", "late_batch", "grades",
          "late", "gittime", "results", "stage", "discover", "notebook", "unpack", "archive_headers", "take", "suite", "warm",
          "options", "budget", "layout")
