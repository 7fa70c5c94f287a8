"""Kit self-tests: the whole `grader validate` and the launcher matrix start in the background at
collection when the run selects `test_validate_all_modules` / `test_launcher_matrix`
(tests/kit/background_validate.py and background_matrix.py say why)."""

from __future__ import annotations

import pytest

from tests.kit import background_matrix, background_validate

VALIDATE_ALL = "tests/kit/test_validate.py::test_validate_all_modules"
MATRIX = "tests/kit/test_sandbox.py::test_launcher_matrix"


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    if any(item.nodeid == VALIDATE_ALL for item in session.items):
        background_validate.start()
    if any(item.nodeid == MATRIX for item in session.items):
        background_matrix.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    background_validate.stop()
    background_matrix.stop()


# The kit's tests run from a venv inside the repository: the landlock launcher would refuse there (a
# sandbox without a mount namespace sees the paths Python loads from, the kit's among them).  They test
# its other guarantees; the launcher matrix (test_sandbox.py) tests it from a venv outside the kit, without this.
import os as _os  # noqa: E402

_os.environ.setdefault("KIT_LANDLOCK_SHOWS_KIT_ROOT", "1")
