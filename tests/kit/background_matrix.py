"""The launcher matrix of `test_launcher_matrix` (tests/kit/test_sandbox.py), started in the background
as soon as a pytest run knows it will run that test (`tests/kit/conftest.py`), and waited for by the test.

Why: the matrix grades its reduced adversarial set under five launchers (about a fifth of the
whole suite's time), and the rest of the kit's tests leave a core idle much of the time; started
at collection, its entries fill that core.  The same machinery as the background validate
(`tests.kit.background_validate`: detached, its result in a file, killed when pytest ends without
waiting); nothing is skipped or weakened: the test asserts on exactly what `run_matrix` returns,
and runs it itself where the background run was not started.

    python -m tests.kit.background_matrix --detach OUT.json LOG   (what the conftest starts)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.kit import background_validate

MODULE = "tests.kit.background_matrix"
_started: dict[str, Any] = {}


def start() -> None:
    background_validate.start(MODULE, _started)


def result(timeout: float = 3 * 3600) -> dict[str, Any] | None:
    found = background_validate.result(timeout, _started)
    if found is not None and "problems" not in found:  # it ended without a result: say so as a problem
        return {"problems": [found.get("text", "the background matrix ended without a result")], "reports": [],
                "skip": ""}
    return found


def stop() -> None:
    background_validate.stop(_started)


def main(argv: list[str]) -> int:
    from tests.kit.test_sandbox import run_matrix

    Path(argv[0]).write_text(json.dumps(run_matrix()))
    return 0


if __name__ == "__main__":
    sys.exit(background_validate.detach(*sys.argv[2:4], module=MODULE) if sys.argv[1:2] == ["--detach"]
             else main(sys.argv[1:]))
