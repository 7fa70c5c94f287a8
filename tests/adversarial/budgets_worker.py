"""Adversarial submissions aimed at the trusted worker itself: its time and its memory.

Root cause (issue 23, 1): the trusted worker processes what a submission sends with no budget of
its own, so one submission could stall a batch (minutes of trusted CPU) or take the machine's
memory.  Each place a submission's bytes reach has its own cap (the decoder's per-reply caps and
per-submission `grader.boundary.messages.DecodeBudget`, the static analysis', the checkpoint loads'); behind
them, every trusted worker has a time budget per submission and a memory limit
(`grader.testing.budget`).  These cases send the costliest replies the protocol allows, at every
chance they get, and must score zero (their code is the stubs), be graded in full (the caps keep
the trusted side's work far inside both budgets: reaching a budget would mean a cap gave way), and
leave the batch going.  The budgets' own behaviour when they are reached (the submission scores
what it earned so far, flagged ``partial``; the batch goes on with a fresh worker) is tested
deterministically in `tests/kit/test_budgets.py`.

Graded in the batch of `tests/kit/test_grade.py` (``test_adversarial_suite``).
"""

from __future__ import annotations

import json
from pathlib import Path

from grader.results.layout import Layout
from tests.adversarial.batch import BatchCase
from tests.adversarial.cases import _WIRE_WRITER, ZERO, Ctx, folder, stub_text, with_code

#: Every function of the memory module, each made to send the frame again when it is called.
_AGAIN = """
    import sys as _sys
    def _again(*_args, **_kwargs):
        _everywhere(_frame)
        raise NotImplementedError
    for _name in ("get_memory_usage", "storage_bytes", "float_format", "rounds_to_zero", "bytes_per_parameter",
                  "max_trainable_parameters"):
        setattr(_sys.modules[__name__], _name, _again)
    """


def stalls_trusted_worker(ctx: Ctx) -> Path:
    """At import and at every call, a well-framed reply as large as the cap allows, of short strings
    that look like host paths (so scrubbing them would cost too), to every descriptor: as much
    decoding as one reply may cost, as often as the sandbox is restarted."""
    from grader.boundary.messages import MAX_REPLY_BYTES

    count = (MAX_REPLY_BYTES - 4096) // 19  # (each string: 5 bytes of tag and length, 14 of text)
    code = _WIRE_WRITER + f"""
    _frame = _message(b"l" + _struct.pack("<I", {count}) + _s("/kit/grader/x/") * {count})
    _everywhere(_frame)
    """ + _AGAIN
    return folder(ctx, "stalls_trusted_worker", with_code(stub_text(), code))


def exhausts_trusted_memory(ctx: Ctx) -> Path:
    """At import and at every call, a reply as large as the cap allows: one storage filling it and
    5,000 tensors each viewing all of it, to every descriptor: as much memory as a decoded reply may
    take, and views whose copies would take gigabytes each."""
    from grader.boundary.messages import MAX_REPLY_BYTES

    elements = (MAX_REPLY_BYTES - 2**20) // 4
    code = _WIRE_WRITER + f"""
    _view = (b"X" + bytes((0, 0, 1)) + _struct.pack("<q", {elements}) + _struct.pack("<q", 1)
             + _struct.pack("<q", 0) + _struct.pack("<I", 0))  # float32, 1-d, the whole storage 0
    _frame = _message(b"l" + _struct.pack("<I", 5000) + _view * 5000, [bytes({elements * 4})])
    _everywhere(_frame)
    """ + _AGAIN
    return folder(ctx, "exhausts_trusted_memory", with_code(stub_text(), code))


def within_budgets(ctx: Ctx, doc: dict) -> list[str]:
    """The trusted worker's CPU time and memory on this submission stayed inside their budgets
    (instructor.json: what it measured, and the batch's limits)."""
    student = doc["extra_data"]["student"]
    instructor = json.loads(Layout(ctx.out).instructor(student).read_text())
    trusted, limits = instructor.get("trusted", {}), instructor.get("settings", {}).get("trusted", {})
    problems = []
    budget = limits.get("submission_budget_cpu_s")
    if budget and not trusted.get("cpu_seconds", float("inf")) <= budget:
        problems.append(f"the trusted worker spent {trusted.get('cpu_seconds')} s of CPU (budget {budget} s)")
    limit = limits.get("worker_memory", {}).get("limit_bytes")
    peak = trusted.get("cgroup_peak_bytes", trusted.get("rss_peak_bytes"))
    if limit and not (peak is not None and 0 < peak < limit):
        problems.append(f"the trusted worker's memory peaked at {peak} bytes (limit {limit})")
    return problems


WORKER_CASES: list[BatchCase] = [
    BatchCase("stalls_trusted_worker", stalls_trusted_worker, ZERO,
              "the costliest replies to decode, at every chance: the trusted worker's time", check=within_budgets),
    BatchCase("exhausts_trusted_memory", exhausts_trusted_memory, ZERO,
              "the largest replies to hold, at every chance: the trusted worker's memory", check=within_budgets),
]
