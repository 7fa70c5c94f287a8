"""Probes: small functions that run next to the code under test and return data only.

A probe `tests/probes/<module>.py::<name>` is called as `student.probe("<module>.<name>", **kwargs)`.
It receives `impl` (the implementation under test: `impl.memory`, `impl.views`, ...) and plain
data arguments; it builds inputs, calls the student's code and returns tensors, numbers,
strings, bools, or lists/tuples/dicts of those.  It never asserts: all judging happens in the
test process.  Probes ship with the student release and may run inside the sandbox, so they
must not read solutions or expected values.
"""
