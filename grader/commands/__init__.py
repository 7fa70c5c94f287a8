"""The `grader` command's subcommands, one module per family (`grader.cli` builds the parser and dispatches).

* `common`       -- what every family needs: paths resolved against the caller's directory, the
                    instructor-repository check;
* `student`      -- `grader check`, the one command a student runs (also `--sandbox`, `--html`);
* `instructor`   -- preparing and grading an assignment: `stubs`, `release`, `validate`, `grade`
                    (with its late policy options), `doctor`;
* `authoring`    -- changing the assignment: `new-module` (`grader.scaffold`);
* `integrations` -- after grading: `merge`, `gradescope`, `classroom-payload`, `report`,
                    `similarity`, `export`, and the nbgrader gradebook.

The cluster commands (`grade --shard`, `combine`, `slurm`, `actions`) live in
`grader.cluster.commands`.  Each family's `add_parsers` registers its subcommands; the work
itself lives in the modules the commands import (`grader.batch`, `grader.reports`...).
"""
