"""The graded tests' side: the API tests are written with, the pytest plugin, and scores from records.

* `student`   -- the `student` fixture's object: `student.probe(...)` (data back through
  `grader.boundary`), `student.function(...)` (source text for the static rules);
* `expect`    -- assertions with one-line messages a student can act on;
* `reference` -- expected values computed once per trusted worker; `replay` -- hypothesis
  examples drawn once, replayed for every submission; `contained` -- trusted code on a
  submission's bytes in a throwaway child; `figures` -- small pictures a test attaches;
* `pytest_plugin` -- target selection, points, the JSON report (loaded by pyproject's
  ``-p grader.testing.pytest_plugin``); `run_stop` and `budget` -- a graded run that stops when
  its time or memory budget is spent;
* `suite_process` -- the graded suites run in a child pytest process, its report read back;
* `scoring`, `totals` -- scores from test records; points and counts from the tests themselves;
  `check_table` -- the per-module table and feedback lines `grader check` prints.

May import: `grader.sandbox` and below (`grader.LAYERS`).
"""
