"""The kit's tests: graded suites (public/, hidden/), probes, mutants, kit self-tests (kit/)."""
