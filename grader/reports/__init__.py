"""Instructor reports built from a results folder (`grader grade --out DIR`).

* `classreport`: `grader report DIR --out report.html [--compare OLD]`: one self-contained HTML
  page (inline SVG charts, no network) opening on the summary tables (the class's score
  distribution, the submissions that timed out, crashed or were rejected, who changed score after
  a regrade, late submissions, the students), then the per-module chart (% of each module's
  maximum), then per-test pass rates (hardest first: the 20 hardest in view, the rest collapsed,
  a filter box) with the most common failure messages per test (numbers masked), not-attempted
  and pending rates.

* `feedback`: the student's page, `DIR/students/<id>/feedback.html` (`grader grade`, `grader
  merge`, `grader check --html`): the score line (raw, late penalty and final together) and what
  failed (links to the entries) first, then what passed and failed per module, with the pictures
  the trusted tests attached (`grader.testing.figures`), drawn from one results.json (student-visible data only).
* `page`: what the pages share (jinja2 environment, autoescaped; matplotlib as inline SVG; atomic write).

Reports read what the batch wrote (`grader.results.layout.Layout`): grades.csv, each student's
results.json and the instructor-only instructor.json (full messages, hidden tests included).
They never run or import student code.

May import: `grader.results` and below (`grader.LAYERS`).
"""
