"""Intake: a submission from the outside world, found and read within budgets, staged for grading.

Everything here reads bytes a student controls, without running them:

* `discover` -- the submissions the command line names (folders, .zip, .tar.gz, folders of them,
  notebooks, nbgrader's submitted/ layout), student ids, colliding ids refused, a content
  fingerprint (was it graded before?);
* `stage`    -- the files taken from a submission, written into a fresh folder (the same function
  `grader check` uses);
* `take`     -- which files are taken and why others are not; `unpack` -- reading a folder or an
  archive safely, without extracting (the caps); `archive_headers` -- an archive's directory
  and headers bounded before a library reads them; `notebook` -- handed-in .ipynb staged as
  module files (`grader.notebooks.convert`);
* `gittime`  -- when a git clone was last committed to (for the late policy).

May import: `grader.notebooks` and below (`grader.LAYERS`); inside, each module imports only
modules after it in `LAYERS`.
"""

#: The modules of this package, top down: each imports only modules after it.
LAYERS = ("stage", "discover", "notebook", "unpack", "gittime", "take", "archive_headers")
