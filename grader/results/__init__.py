"""Results: the results folder a batch writes, and what is computed from it.

* `layout`       -- where each file goes (students/<id>/results.json, instructor/, logs/) and
  JSON written within a budget;
* `results_json` -- one student's results.json (Gradescope's format) from their test records;
* `grades`       -- grades.csv and the summary table of a batch;
* `late_batch`   -- the late policy applied to a batch (a time for each submission; the rules:
  `grader.course.late`);
* `merge`        -- `grader merge`: a CPU and a CUDA run of the same submissions as one;
* `recorded`     -- which assignment a results folder was graded for, and the check the results
  commands make on it.

May import: `grader.intake` and below (`grader.LAYERS`); inside, each module imports only
modules after it in `LAYERS`.
"""

#: The modules of this package, top down: each imports only modules after it.
LAYERS = ("merge", "late_batch", "grades", "recorded", "results_json", "layout")
