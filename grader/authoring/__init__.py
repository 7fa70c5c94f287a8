"""Authoring: what a TA runs to change the assignment and prove the tests still hold.

* `release`, `course_release` -- the student release (`grader release OUT [--assignment NAME]`):
  the stubs, the public tests and probes, the handout, the notebooks, the per-push workflow;
  `release --check` compares a fresh one with what is committed;
* `validate` -- `grader validate`: every graded test passes on the solutions, fails on the stubs,
  catches every mutant and accepts every correct variant (`mutants`: how a mutant is written;
  `forkrun`: many pytest sessions forked from one warmed-up process; `snapshot`: the tree copied
  once so edits during a long run do not change it; `progress`: its progress line);
* `scaffold` -- `grader new-module NAME`: the files of a new module that cannot pass as done;
* `totals_docs` -- the totals the docs state, written from the tests (`grader.testing.totals`).

May import: `grader.integrations` (the workflow a release ships), `grader.batch` and everything
below it (`grader.LAYERS`).
"""
