"""Grading a class on more than one machine: shards, their combination, Slurm and GitHub Actions.

* `shard`: ``grader grade ... --shard K/N`` grades the submissions whose student id hashes to
  shard K of N (stable under reordering and under adding other students' submissions) and
  writes a manifest next to the results (`DIR/instructor/shard.json`);
* `combine`: ``grader combine OUT SHARD_DIR...`` checks that the shards belong together (one kit
  version, one N, the same settings, every shard present, no submission graded twice with
  different files) and writes one results folder, exactly as one ``grader grade`` would;
* `slurm`: ``grader slurm`` writes (and submits) an array job of N shards plus a dependent
  combine job;
* `actions`: ``grader actions`` writes an instructor-side GitHub Actions workflow that grades an
  organisation's repositories in N matrix jobs and combines them.

The command-line glue is `grader.commands.cluster`.

May import: `grader.authoring` and below (`grader.LAYERS`).
"""
