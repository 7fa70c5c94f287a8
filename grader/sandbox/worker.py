"""The process inside the sandbox: imports one submission's module files and serves probe calls.

Started by `grader.sandbox` as ``python -P -m grader.sandbox.worker --fd-in N --fd-out N --fd-fault N
--fd-config N`` inside bubblewrap, or as a plain subprocess by the landlock and rlimits
launchers.  Its configuration (rlimits, uid, seccomp program, Landlock rules, the submission
folder) arrives as JSON on the config fd, never on the command line.  It sees a read-only copy
of the `grader` package and `tests/probes/` (the "kit bundle"), the submission's staged module
files (read-only) and its scratch folders; never the repository, the solutions, the hidden
tests or the results folder.

Start-up, all trusted code, single-threaded, before any student code runs (steps 1-3:
`grader.sandbox.lockdown`):

1. set the rlimits (data segment, address space, CPU time, processes, file size, open files,
   no core);
2. drop to the sandbox uid when started as root (a uid per submission, so RLIMIT_NPROC binds,
   the grader can kill every process the submission left behind and nothing keyed by uid
   outlives it), join a fresh session keyring, set no_new_privs and a parent-death signal;
3. restrict itself with Landlock (landlock launcher) and install the seccomp filter (landlock
   and rlimits launchers; bubblewrap installed it already); then, landlock and rlimits launchers
   (no pid namespace), fork: the parent stays the sandbox's supervisor, which ends every process
   of the sandbox with it (`grader.sandbox.supervisor`), the child goes on as the worker, in a
   Landlock domain nested in the supervisor's; the worker is a child subreaper (a process the
   student's code double-forks away stays its child, and the grader restarts the sandbox after
   that call);
4. import torch (one thread), `grader.rules.tripwire.install()` and the probe modules, fork the
   fresh-process template (`grader.boundary.fresh`: the "resume in a new process" checks fork it instead
   of starting an interpreter), then send ``{"ready": ..., "layers": ...}``.

Protocol (`grader.sandbox.channel`): requests ``{"op": "import", "module": m, "seq": n}``,
``{"op": "call", "name": probe, "kwargs": {...}, "seq": n}``, ``{"op": "bye"}``.  Replies:
``{"seq": n, "reply": {"ok": value} | {"error": ErrorData-dict} | {"boundary": text}}``.

Nothing this process says is a verdict: the trusted side decodes every reply with
`grader.boundary.wire`'s data-only decoder under a size cap, type-checks it, and the tests assert.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from grader.sandbox.lockdown import lock_down, restrict

def _missing_module_file(reply: dict[str, Any], impl: Any) -> dict[str, Any]:
    """A submission module that does not exist counts as not attempted (not as a crash): the words
    of `grader.boundary.serving.missing_file`, which a call's own import error already goes through."""
    from grader.boundary.serving import missing_file

    err = reply.get("error")
    return dict(reply, error=missing_file(err, impl)) if err else reply


def _memory_message(reply: dict[str, Any], limits: dict[str, int]) -> dict[str, Any]:
    """Say "exceeded the memory limit" in plain words when the address-space cap was hit."""
    err = reply.get("error")
    if not err:
        return reply
    text = str(err.get("message", ""))
    if err.get("type") == "MemoryError" or "can't allocate memory" in text or "std::bad_alloc" in text:
        cap = limits.get("data_bytes") or limits.get("as_bytes")
        limit = f" of {cap / 2**30:g} GiB" if cap else ""
        detail = f" ({text[:300]})" if text.strip() else ""
        err = dict(err, message=f"exceeded the sandbox memory limit{limit}{detail}")
        return {"error": err}
    return reply


def _size_of(value: Any, limit: int) -> int:
    """About the bytes `value` takes in the wire format (`grader.boundary.wire`: each storage once, strings
    as UTF-8, a few bytes per value); stops counting past `limit`.  `serve` has already bounded
    the values and tensors (`grader.boundary.messages.check_data`), so this walk is short."""
    import torch

    total, todo, storages = 0, [value], set()
    while todo and total <= limit:
        v = todo.pop()
        total += 9
        if type(v) is torch.Tensor:
            total += 16 * v.dim() + 32
            if v.device.type != "meta":
                storage = v.untyped_storage()
                key = (str(v.device), storage.data_ptr(), storage.nbytes())
                if key not in storages:
                    storages.add(key)
                    total += storage.nbytes()
        elif type(v) in (list, tuple):
            todo.extend(v)
        elif type(v) is dict:
            todo.extend(v)
            todo.extend(v.values())
        elif type(v) is str:
            total += len(v.encode("utf-8", "surrogatepass"))
    return total


def _cap_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A result too large to send back fails its call with a plain message (never sent: the
    trusted side would refuse it by its length, `grader.boundary.messages.MAX_REPLY_BYTES`, as garbage)."""
    from grader.boundary.messages import MAX_REPLY_BYTES

    if "ok" in reply:
        size = _size_of(reply["ok"], MAX_REPLY_BYTES)
        if size > MAX_REPLY_BYTES:
            return {"boundary": f"the result is too large to send back (over {MAX_REPLY_BYTES // 2**20} MiB)"}
    return reply


def _has_children(template: int | None = None) -> bool:
    """Did the student's code leave a process behind?  (The fresh-process template, a trusted
    child started before any student code, does not count; but it ending does: it ends when a
    fresh run left processes it could not end, and they are now ours.)  The worker is a child
    subreaper: a process the student's code double-forked away is still one of its children."""
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    if pid != 0:
        return True  # one that just ended (reaped now), or the template
    if template is None:
        return True  # a live child
    try:  # the live children, by /proc/self/task/*/children
        live: set[int] = set()
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                live.update(int(c) for c in f.read().split())
    except (OSError, ValueError):
        return True  # cannot tell: restart the sandbox to be safe
    return bool(live - {template})


def serve_forever(channel: Any, folder: str, limits: dict[str, int], layers: dict[str, Any],
                  confine: Any = None) -> int:
    from pathlib import Path

    from grader.boundary.messages import ErrorData
    from grader.boundary.serving import serve
    from grader.boundary.target import Implementation

    impl = Implementation(Path(folder))
    me = os.getpid()
    from grader.boundary import fresh

    # fresh-process checks fork this template (grader/boundary/fresh.py): it exists before any student code;
    # `confine`: a Landlock domain of its own, so that it can end whatever a fresh run leaves
    started = fresh.start(confine=confine)
    template = started.pid if started is not None else None
    layers["fresh_template"] = template is not None
    channel.send({"ready": True, "pid": me, "uid": os.getuid(), "layers": layers})
    while True:
        try:
            request = channel.recv()
        except EOFError:
            return 0
        op = request.get("op")
        seq = request.get("seq", -1)
        if op == "bye":
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)  # no interpreter teardown (torch's takes a while); nothing to clean up
        if op == "import":
            try:
                getattr(impl, str(request["module"]))
                reply: dict[str, Any] = {"ok": None}
            except BaseException as exc:  # noqa: BLE001 - the student's exception is data
                reply = {"error": ErrorData.from_exception(exc, str(impl.folder) + "/").as_dict()}
        elif op == "call":
            try:
                reply = serve(impl, str(request["name"]), dict(request["kwargs"]))
            except LookupError as exc:
                reply = {"boundary": f"grader error: {exc}"}
        else:
            reply = {"boundary": f"grader error: unknown op {op!r}"}
        if os.getpid() != me:  # a process the student forked came back here: it must not answer
            os._exit(0)
        reply = _cap_reply(_memory_message(_missing_module_file(reply, impl), limits))
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the student may have closed or replaced it
                pass
        # processes the student's code left running: the grader restarts the sandbox after this call
        # (a fresh run it asked the template for itself, still running, included: `fresh.settle`)
        children = not fresh.settle() or _has_children(template)
        try:
            channel.send({"seq": seq, "reply": reply, "children": children})
        except Exception as exc:  # noqa: BLE001 - e.g. a reply over the size cap
            reply = {"boundary": f"the reply could not be encoded: {type(exc).__name__}: {exc}"[:500]}
            channel.send({"seq": seq, "reply": reply, "children": children})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grader.sandbox.worker")
    parser.add_argument("--fd-in", type=int, required=True)
    parser.add_argument("--fd-out", type=int, required=True)
    parser.add_argument("--fd-fault", type=int, default=None)
    parser.add_argument("--fd-config", type=int, required=True)
    args = parser.parse_args(argv)

    with os.fdopen(args.fd_config, "rb") as f:
        config = json.loads(f.read())
    return run(config, args.fd_in, args.fd_out, args.fd_fault)


def run(config: dict[str, Any], fd_in: int, fd_out: int, fd_fault: int | None) -> int:
    """Steps 1-4 of the start-up, then serve (also the entry of a child of the sandbox zygote,
    `grader.sandbox.zygote`, whose imports of step 4 are already done)."""
    layers = lock_down(config)
    scoped = layers["landlock"] >= 6  # Landlock keeps signals within the domain (ABI 6)
    uid_dropped = config.get("uid") is not None and layers["uid"] == config["uid"]
    confine = None
    if config.get("landlock") and scoped:
        def confine() -> None:  # a nested domain: a Landlock-scoped process below can signal only inside it
            restrict(config["landlock"])
    if config.get("supervisor"):  # landlock and rlimits: every process of the sandbox ends with it
        from grader.sandbox.supervisor import supervise

        def nest() -> None:
            if config.get("landlock"):
                layers["landlock"] = restrict(config["landlock"])

        supervise(signal_all=scoped or uid_dropped, close_fds=[fd for fd in (fd_in, fd_out, fd_fault) if fd is not None],
                  nest=nest)
        layers["supervisor"] = True
    from grader.boundary.process_tree import become_subreaper

    become_subreaper()  # the student's orphans stay its children: `_has_children` sees them
    limits = config.get("limits") or {}
    if fd_fault is not None:
        import faulthandler

        fault = os.fdopen(fd_fault, "w", buffering=1)
        faulthandler.enable(file=fault, all_threads=False)
        sys.modules[__name__].__dict__["_FAULT_FILE"] = fault  # keep it open

    import torch

    torch.set_num_threads(1)
    try:  # the runtime tripwire (grader/rules/tripwire.py): forbidden callables wrapped before any student code
        from grader.rules import tripwire
    except ImportError:
        tripwire = None
    if tripwire is not None:
        tripwire.install()
        layers["tripwire"] = True
    import grader.boundary.serving  # noqa: F401  (trusted imports, before any student code)
    from grader import MODULES

    for module in MODULES:  # preload the probes (trusted) so a call times only the student's code
        try:
            __import__(f"tests.probes.{module}")
        except Exception:  # noqa: BLE001 - a missing/broken probe module fails its own calls
            pass
    from grader.sandbox.channel import Channel

    import gc

    gc.freeze()  # the trusted imports are never garbage: collections walk only what the calls make
    channel = Channel(fd_in, fd_out)
    try:
        return serve_forever(channel, config["folder"], limits, layers, confine)
    except (BrokenPipeError, EOFError):
        return 0


if __name__ == "__main__":
    sys.exit(main())
