"""A submission's source files as the trusted process reads them: on demand, within a budget.

The static rules (`grader.rules.static`) and `grader similarity` read student bytes with `ast`, never
run them; but a syntax tree costs far more than its source, and the parser can be driven into
deep recursion.  Measured (CPython 3.11, `tracemalloc`): 1 MiB of ``a,a,a,...`` or ``a[:],...``
parses in 4-8 s, holds ~230 bytes of tree per byte of source and peaks near 700 bytes per byte
while parsing; 300,000 ``+`` terms raise RecursionError, 200,000 unary minuses MemoryError.  So:

* **Caps on bytes** (`MAX_FILE_BYTES`, `MAX_TOTAL_BYTES`).  One file may have 256 KiB (12 times
  the largest reference module, optimizers.py at 21 KB) and a submission's files together 1 MiB
  (9 times the twelve reference modules, 116 KB): one parse then peaks under ~180 MiB and one
  submission's trees stay under ~230 MiB, even for the worst source.  Staging takes no more
  (`grader.intake.unpack` and `grader.intake.take` apply these very numbers), and a `SourceSet`
  refuses to parse past them (a folder that was not staged, e.g. a local ``pytest --target``).
* **Any failure of the parse is "does not parse"** (`Unparsable`, a SyntaxError naming the
  file): a syntax error, a NUL byte, RecursionError or MemoryError on deep or huge expressions.
  The tests turn it into a plain failure of the tests that read that file.
* **Parsed only when asked, kept for one run.**  A `SourceSet` lists the files, reads a file the
  first time a question needs it and parses it once.  There is one per `Student` (one per
  submission's run), so nothing outlives the run: no process-wide cache of trees.  A rule helper
  that wants a memo over a run's trees uses `run_cache`, which the next `SourceSet` empties.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

MAX_FILE_BYTES = 256 * 2**10  # one source file (module or helper)
MAX_TOTAL_BYTES = 2**20  # all the source files of one submission together

F = TypeVar("F", bound=Callable[..., Any])


class Unparsable(SyntaxError):
    """A source file the trusted process will not hold a tree of: it does not parse, or it is over
    the budget.  The message names the file and says why, in plain words.  `invalid` is True when
    the file is not Python at all (a syntax error: the import would refuse it too, so it never runs),
    False when it is beyond what the checks read (too large, too deep for the parser)."""

    def __init__(self, message: str, invalid: bool = False):
        super().__init__(message)
        self.invalid = invalid


def size_words(n: int) -> str:
    """`n` bytes in words: "256 KiB", "1 MiB" for the caps, "262,201 bytes" otherwise (never rounded
    onto a cap it is over)."""
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} bytes"


def parse_bounded(name: str, data: bytes | str) -> ast.Module:
    """`name`.py's tree, or Unparsable (never any other exception): a syntax error, a NUL byte, an
    expression too deep or too large for the parser (RecursionError, MemoryError)."""
    size = _size(data)
    if size > MAX_FILE_BYTES:
        raise Unparsable(f"{name}.py is {size_words(size)}: over the {size_words(MAX_FILE_BYTES)} a source file "
                         "may have (not read)")
    try:
        return ast.parse(data, filename=f"{name}.py")
    except SyntaxError as exc:  # the import's compiler (the same parser) refuses it too; a NUL byte as well
        raise Unparsable(f"{name}.py does not parse: {exc}", invalid=True) from None
    except (RecursionError, MemoryError):
        raise Unparsable(f"{name}.py does not parse: an expression nests too deeply or is too large "
                         "for the parser") from None
    except (ValueError, OverflowError) as exc:  # NUL bytes (older Pythons), absurd literals
        raise Unparsable(f"{name}.py does not parse: {exc}") from None


_RUN_CACHES: list[dict] = []


def run_cache(fn: F) -> F:
    """A memo for a pure function of one run's trees (nodes or scopes as arguments, compared by
    identity): emptied whenever a new `SourceSet` is made, so it never holds a previous
    submission's trees (a process-wide `lru_cache` of them could hold gigabytes)."""
    memo: dict = {}
    _RUN_CACHES.append(memo)

    @functools.wraps(fn)
    def cached(*args: Any) -> Any:
        try:
            return memo[args]
        except KeyError:
            memo[args] = value = fn(*args)
            return value

    cached.memo = memo  # type: ignore[attr-defined]
    cached.cache_clear = memo.clear  # type: ignore[attr-defined]
    return cached  # type: ignore[return-value]


def _module_names(folder: Path) -> list[str]:
    """The module files of a folder (what `import` could load from it): regular ``<identifier>.py``
    files, symlinks skipped."""
    names = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        stem = entry.name[:-3]
        if entry.name.endswith(".py") and stem.isidentifier() and entry.is_file(follow_symlinks=False):
            names.append(stem)
    return names


class SourceSet:
    """The source files of one submission (a folder, or `{"views": b"...", ...}`), read and parsed
    on demand within the budget, each at most once.

    `names` is known without reading anything (the file listing); `data(name)` reads one file (at
    most `MAX_FILE_BYTES`); `tree(name)` parses it (Unparsable past the budget or when it does not
    parse, LookupError when there is no such file).  `parsed` lists the files parsed, in order;
    `memo` keeps what callers derive from the trees (scopes), for this run only."""

    def __init__(self, files: Mapping[str, bytes | str] | Path | str):
        for memo in _RUN_CACHES:
            memo.clear()
        if isinstance(files, (str, Path)):
            self.folder: Path | None = Path(files)
            self._data: dict[str, bytes | str] = {}
            self.names = frozenset(_module_names(self.folder))
        else:
            self.folder = None
            self._data = dict(files)
            self.names = frozenset(self._data)
        self._trees: dict[str, ast.Module | Unparsable] = {}
        self.parsed: list[str] = []
        self.spent = 0  # bytes parsed so far
        self.memo: dict[Any, Any] = {}

    def freeze(self) -> "SourceSet":
        """Read every file now (their bytes together up to the budget and one file more), and never
        the folder again: the trusted checks read what was staged before any of the submission's
        code ran, whatever that code may write into its folder later (a launcher without a
        read-only mount, run without root, cannot stop it).  Returns self."""
        if self.folder is not None:
            read = 0
            for name in sorted(self.names):
                if read > MAX_TOTAL_BYTES:
                    break
                try:
                    read += len(self.data(name))
                except Unparsable:
                    pass
            self.folder = None
        return self

    def data(self, name: str) -> bytes | str:
        if name not in self.names:
            raise LookupError(f"{name}.py is missing")
        if name not in self._data:
            if self.folder is None:  # frozen before this file was read: past the budget
                raise Unparsable(f"{name}.py is not read: the files before it pass the "
                                 f"{size_words(MAX_TOTAL_BYTES)} a submission's sources may have in all")
            try:  # never follow a symlink swapped in since the listing
                fd = os.open(self.folder / f"{name}.py", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                with os.fdopen(fd, "rb") as f:
                    self._data[name] = f.read(MAX_FILE_BYTES + 1)
            except OSError as exc:
                raise Unparsable(f"{name}.py cannot be read ({exc.strerror})") from None
        return self._data[name]

    def tree(self, name: str) -> ast.Module:
        """`name`.py's tree (shared by every caller of this run: read it, never change it)."""
        if name not in self._trees:
            self._trees[name] = self._parse(name)
        found = self._trees[name]
        if isinstance(found, Unparsable):
            raise Unparsable(str(found), found.invalid)
        return found

    def _parse(self, name: str) -> ast.Module | Unparsable:
        data = self.data(name)
        size = _size(data)
        if size <= MAX_FILE_BYTES:
            if self.spent + size > MAX_TOTAL_BYTES:
                return Unparsable(f"{name}.py is not read: with it, the files the checks read would pass the "
                                  f"{size_words(MAX_TOTAL_BYTES)} a submission's sources may have in all")
            self.spent += size
            self.parsed.append(name)
        try:
            return parse_bounded(name, data)
        except Unparsable as exc:
            return exc


def _size(data: bytes | str) -> int:
    return len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
