"""The serving side of the probe boundary: run one named probe, return a reply of data.

This is the only code that touches the implementation under test.  It runs in the test
process for the in-process backend and inside the sandbox for the sandboxed backend; either
way its reply is a plain dict `{"ok": value}` or `{"error": ErrorData-as-dict}`.
"""

from __future__ import annotations

import importlib
from typing import Any

from grader import MODULES
from grader.boundary.messages import ErrorData, check_data
from grader.boundary.target import Implementation

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


def _main(argv: list[str]) -> int:
    from pathlib import Path

    from grader.boundary.messages import decode, encode

    from grader.rules import tripwire

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
