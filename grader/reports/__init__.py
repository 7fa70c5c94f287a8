"""Instructor reports built from a results folder (`grader grade --out DIR`).

* `classreport`: `grader report DIR --out report.html [--compare OLD]`: one self-contained HTML
  page (inline SVG charts, no network) with the class's score distribution, per-test pass rates
  (hardest first), the most common failure messages per test (numbers masked), not-attempted
  and pending rates, the submissions that timed out, crashed or were rejected, and who changed
  score after a regrade.

* `feedback`: the student's page, `DIR/students/<id>/feedback.html` (`grader grade`, `grader
  merge`, `grader check --html`): what passed and failed per module, with the pictures the
  trusted tests attached (`grader.figures`), drawn from one results.json (student-visible data only).
* `page`: what the pages share (jinja2 environment, autoescaped; matplotlib as inline SVG; atomic write).

Reports read what the batch wrote (`grader.batch.results.Layout`): grades.csv, each student's
results.json and the instructor-only instructor.json (full messages, hidden tests included).
They never run or import student code.
"""
