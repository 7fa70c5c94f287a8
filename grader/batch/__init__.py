"""The batch: many submissions graded in parallel, one sandbox each (`grader grade`).

A submission goes through five stages; docs/ARCHITECTURE.md follows one through them:

    discover  ──►  stage  ──►  testrun  ──►  results  ──►  reports
    (parent)       (worker)    (worker)      (worker)      (parent, after every worker)

Discovery and staging are `grader.intake`; the results folder and the batch's grades are
`grader.results`; the feedback pages `grader.reports`.  This package runs them, top down:
`grade` (the command, in the parent: discovery, then the pool, then the reports) -> `pool`
(N trusted workers and the batch's mother zygote) -> `forkserver` (forks each worker from one
warmed-up process) -> `trusted` (a worker process: jobs in, outcomes out) -> `submission` (one
submission: stage, testrun, results) -> `testrun` (the public then the hidden tests, ``pytest.main``
in the trusted worker, the student code in a sandbox per submission: `grader.sandbox`).  Under
them: `suite` (what grades a submission, as one digest), `warm` (the expected values the next
batch's fork-server computes before it forks) and `options` (the options, an `Outcome` per
submission, the errors).

May import: `grader.reports` and below (`grader.LAYERS`); inside, each module imports only modules
after it in `LAYERS` (tests/kit/test_imports.py): the orchestration calls the stages, a stage never
calls back up.  Sharded and cluster runs (`grader.cluster`) build on this package.
"""

#: The modules of this package, top down: each imports only modules after it.
LAYERS = ("grade", "pool", "forkserver", "trusted", "submission", "testrun", "suite", "warm", "options")
