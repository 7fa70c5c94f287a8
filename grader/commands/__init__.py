"""The `grader` command's subcommands, one module per family (`grader.cli` builds the parser and dispatches).

* `common`       -- what every family needs: paths resolved against the caller's directory, the
                    instructor-repository check;
* `student`      -- `grader check`, the one command a student runs (also `--sandbox`, `--html`);
* `instructor`   -- preparing and grading an assignment: `stubs`, `release`, `validate`, `grade`
                    (with its late policy options), `doctor`;
* `authoring`    -- changing the assignment: `new-module` (`grader.authoring.scaffold`);
* `integrations` -- after grading: `merge`, `gradescope`, `prairielearn`, `classroom-payload`,
                    `export`, and the nbgrader gradebook; `class_reports` -- `report`, `similarity`;
* `cluster`      -- grading on several machines: `grade --shard`, `combine`, `slurm`, `actions`;
* `notebook_check` -- not a subcommand: what runs in a student's Jupyter kernel, the notebook's
                    setup and check cells (`grader.notebooks` builds them into each notebook).

Each family's `add_parsers` registers its subcommands; the work itself lives in the packages the
commands import (`grader.batch`, `grader.reports`...).

May import: every package (only `grader.cli` is above it: `grader.LAYERS`).
"""
