"""Where students work and where grades go: Gradescope, GitHub Actions and Classroom, Canvas,
the nbgrader gradebook, PrairieLearn.

* `gradescope` -- the autograder bundle and its results; `github` -- the per-push workflow a
  release ships; `classroom` -- GitHub Classroom's payload; `canvas` -- a gradebook CSV column;
  `gradebook` -- nbgrader's gradebook; `prairielearn`, `prairielearn_grade` -- the questions and
  the image's grading entry point.

May import: `grader.batch` and below (`grader.LAYERS`).
"""
