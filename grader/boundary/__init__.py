"""The probe boundary: how a trusted test reaches the code under test, and what comes back.

A graded test never touches student objects: it asks for a *probe* by name (`tests/probes/`),
and a backend runs it next to the implementation and brings back data only.

* `backends` -- the backends' one interface (`call`, `call_measured`, `source`, `close`) and the
  in-process backend (`grader check`, a student's own pytest); the sandboxed one is
  `grader.sandbox.SandboxBackend`;
* `serving`  -- the serving side: runs one named probe on the implementation, replies with data;
* `target`   -- which implementation a run targets (solutions/, assignment/, a submission) and how
  the serving side imports it under a private name;
* `messages` -- what may cross (requests, replies, errors) and its checks; `wire` reads and
  `wire_write` writes the data-only byte format they travel in (no pickle);
* `fresh`    -- fresh processes without a fresh interpreter (a template forked before student code
  runs); `process_tree` -- a subreaper and ending everything below it;
* `peak`     -- a call's peak memory where /proc cannot say (macOS).

May import: `grader.rules` (the tripwires the serving side installs) and below (`grader.LAYERS`).
"""
