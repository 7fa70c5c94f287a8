"""The serving side of the probe boundary: run one named probe, return a reply of data.

This is the only code that touches the implementation under test.  It runs in the test
process for the in-process backend and inside the sandbox for the sandboxed backend; either
way its reply is a plain dict `{"ok": value}` or `{"error": ErrorData-as-dict}`.
"""

from __future__ import annotations

import importlib
from typing import Any

from grader import MODULES
from grader.protocol import ErrorData, check_data
from grader.target import Implementation

PROBE_PACKAGE = "tests.probes"


def find_probe(name: str):
    """`"memory.storage_bytes_cases"` -> the function `storage_bytes_cases` in tests/probes/memory.py."""
    module, _, func = name.partition(".")
    if module not in MODULES or not func or func.startswith("_"):
        raise LookupError(f"no probe named {name!r}")
    probes = importlib.import_module(f"{PROBE_PACKAGE}.{module}")
    probe = getattr(probes, func, None)
    if not callable(probe):
        raise LookupError(f"no probe named {name!r}")
    return probe


def serve(impl: Implementation, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run probe `name` against `impl`; exceptions from the code under test come back as data."""
    probe = find_probe(name)
    try:
        value = probe(impl, **kwargs)
        check_data(value)
    except BaseException as exc:  # noqa: BLE001 - everything the student raises is data
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"error": missing_file(ErrorData.from_exception(exc, str(impl.folder) + "/").as_dict(), impl)}
    return {"ok": value}


def missing_file(err: dict[str, Any], impl: Implementation) -> dict[str, Any]:
    """A file of the submission that is not there (a module, or a helper one imports) is named,
    and counts as not attempted: the same words whichever backend runs the probe (the sandbox's
    worker says exactly this for an import that fails the same way)."""
    import os

    if err.get("type") != "ModuleNotFoundError":
        return err
    prefix = f"No module named '{impl.package}."
    message = str(err.get("message", ""))
    if message.startswith(prefix):
        module = message[len(prefix):].rstrip("'").split(".")[0]
        if not os.path.exists(os.path.join(str(impl.folder), f"{module}.py")):
            return dict(err, not_implemented=True, message=f"{module}.py is missing from the submission")
    return err


def serve_fresh(folder: str, name: str, kwargs: dict[str, Any], timeout: float = 120.0) -> Any:
    """Run a probe in a *fresh* Python process (for "resume in a new process" checks).

    Called from inside a probe; the child imports the same implementation folder and returns
    the probe's data through a file.  The child's exceptions re-raise here as RuntimeError
    with the student's message, so they travel back as data like any other.
    """
    import os
    import tempfile

    from grader import fresh
    from grader.protocol import decode

    with tempfile.TemporaryDirectory() as tmp:
        request, reply = os.path.join(tmp, "request.pt"), os.path.join(tmp, "reply.pt")
        template = fresh.current()
        if template is not None:  # forked from a process that imported torch but no submission
            if template.run(folder, name, kwargs, reply, timeout) is None:
                raise TimeoutError(f"the fresh process running {name} timed out after {timeout:g} s")
        else:
            _run_interpreter(folder, name, kwargs, request, reply, timeout)
        if not os.path.exists(reply):
            raise RuntimeError(f"the fresh process running {name} died without replying")
        with open(reply, "rb") as f:
            result = decode(f.read())
    if "error" in result:
        err = result["error"]
        exc = NotImplementedError if err["not_implemented"] else RuntimeError
        raise exc(f"in a fresh process: {err['type']}: {err['message']}")
    return result["ok"]


def _run_interpreter(folder: str, name: str, kwargs: dict[str, Any], request: str, reply: str,
                     timeout: float, module: str = "grader.serve") -> None:
    """The same fresh run in a new interpreter (`python -m grader.serve`): where no template runs
    (`module`: another entry point reading the same request, e.g. `grader.peak`)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from grader.protocol import encode

    with open(request, "wb") as f:
        f.write(encode({"folder": folder, "name": name, "kwargs": kwargs}))
    # the child must find `grader` and `tests.probes` exactly where this process found them
    roots = {str(Path(importlib.import_module(m).__file__).resolve().parents[depth])
             for m, depth in (("grader", 1), (PROBE_PACKAGE, 2))}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*roots, os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-m", module, request, reply], timeout=timeout, check=False,
                   stdin=subprocess.DEVNULL, env=env)


def _main(argv: list[str]) -> int:
    from pathlib import Path

    from grader.protocol import decode, encode

    from grader import tripwire

    tripwire.install()  # before the implementation is imported, as in the sandbox worker
    request_path, reply_path = argv
    with open(request_path, "rb") as f:
        request = decode(f.read())
    reply = serve(Implementation(Path(request["folder"])), request["name"], request["kwargs"])
    with open(reply_path, "wb") as f:
        f.write(encode(reply))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(_main(sys.argv[1:]))
