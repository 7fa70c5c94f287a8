"""The course: its modules, how course.toml splits them into assignments, the late policy's rules, the stubs.

* `modules` -- which modules exist (discovered from solutions/ and tests/probes/), in which
  order, and what each uses; imports no other grader module (`grader.MODULES` comes from it);
* `config`  -- course.toml: its assignments, validated (`load_course`, `resolve`, `CourseError`),
  and the marker a release carries;
* `late`    -- the late policy's rules: deadlines, penalties, caps, grace, extensions;
* `stubs`   -- the student stubs made from solutions/ (nbgrader's ClearSolutions), what a release
  ships, and the audit of what must never ship.

May import: the top-level modules below it (`grader.LAYERS`).
"""
