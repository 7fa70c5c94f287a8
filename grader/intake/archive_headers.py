"""A submission archive's own headers, bounded before a library builds objects from them.

`grader.intake.unpack` reads zips with zipfile and .tar.gz files with tarfile, and both libraries
build objects from what the archive's headers say before any cap of the grader's could apply:
zipfile reads the whole central directory and builds an object per entry (200,000 empty entries:
about 100 MB), and tarfile reads each extended header (pax, GNU long name) whole and builds a dict
entry per pax record, about 24 bytes held per byte (150 MiB of empty pax keywords held 4 GB for
47 s).  So the raw headers are checked first, in the libraries' own order:

* a zip's end record (found by zipfile's own ``_EndRecData``) says how large its central
  directory is: at most `MAX_ZIP_DIRECTORY`; the directory is then walked raw, entry by entry as
  ``ZipFile._RealGetContents`` walks it, and holds at most the caller's number of entries;
* each tar header is seen by `BoundedTarInfo._proc_member`, the hook tarfile offers subclasses,
  on the raw 512-byte header before the data it announces is read: an extended header has at most
  `MAX_EXTENDED_HEADER` bytes, all of them together `MAX_EXTENDED_TOTAL`, the global ones
  (copied into every later member) `MAX_GLOBAL_HEADERS`, at most `MAX_EXTENDED_CHAIN` in a row
  (tarfile follows each with a recursive call); GNU sparse files are refused (their maps are read
  block by block, as long as the map says).  An honest header holds a long path, a git commit id or
  macOS's extended attributes: a few hundred bytes.

What they refuse raises `ArchiveRefused` with a plain reason (the caller makes it a rejection).
"""

from __future__ import annotations

import struct
import tarfile
import zipfile
from pathlib import Path

from grader.rules.sources import size_words


class ArchiveRefused(Exception):
    """The archive's headers are over a bound (or malformed where the bound is checked): why."""


#: Bytes of a zip's central directory (the names, extra fields and comments of every entry): 20,000
#: entries with 150-character paths and the extra fields Info-ZIP and macOS write hold about 4 MiB.
MAX_ZIP_DIRECTORY = 8 * 2**20
#: Bytes of one extended tar header (pax ``x``/``g``, Solaris ``X``, GNU long name ``L``/``K``).
#: An honest one holds a long path, a git commit id or macOS's extended attributes: a few hundred bytes.
MAX_EXTENDED_HEADER = 64 * 2**10
#: Bytes of every extended header of an archive together, and of the global ones together (tarfile
#: copies what they say into every later member).
MAX_EXTENDED_TOTAL, MAX_GLOBAL_HEADERS = 32 * 2**20, 16 * 2**10
#: Extended headers in a row before one member (tarfile follows each with a recursive call).
MAX_EXTENDED_CHAIN = 8
_SPARSE = ("holds a sparse file (GNU tar's sparse format, which the grader does not read): "
           "create the archive without --sparse")


def zip_directory_bounded(src: Path, max_entries: int) -> None:
    """Refuse a zip whose central directory holds more than `MAX_ZIP_DIRECTORY` bytes or more than
    `max_entries` entries, from its raw bytes, before zipfile reads it.  The end record is found by
    zipfile's own function (``_EndRecData``, unchanged since Python 2), and the directory is located
    and walked entry by entry as ``ZipFile._RealGetContents`` does, so both see the same entries."""
    with open(src, "rb") as f:
        try:
            end = zipfile._EndRecData(f)  # type: ignore[attr-defined]
        except OSError:
            end = None
        if not end:
            raise ArchiveRefused("corrupt archive: not a readable zip file (no end of central directory)")
        size = end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]
        if size > MAX_ZIP_DIRECTORY:
            raise ArchiveRefused(f"the archive's central directory is {size / 2**20:.1f} MiB (the cap is "
                                 f"{MAX_ZIP_DIRECTORY // 2**20} MiB)")
        if end[zipfile._ECD_ENTRIES_TOTAL] > max_entries:  # type: ignore[attr-defined]
            raise ArchiveRefused(f"the archive has {end[zipfile._ECD_ENTRIES_TOTAL]} entries "  # type: ignore[attr-defined]
                                 f"(the cap is {max_entries})")
        start = end[zipfile._ECD_LOCATION] - size  # type: ignore[attr-defined]
        if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:  # type: ignore[attr-defined]
            start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator  # type: ignore[attr-defined]
        if start < 0:
            raise ArchiveRefused("corrupt archive: bad offset for the central directory")
        f.seek(start)
        data = f.read(size)
    pos, count = 0, 0
    while pos < size:
        fixed = data[pos:pos + 46]
        if len(fixed) != 46 or fixed[:4] != zipfile.stringCentralDir:  # type: ignore[attr-defined]
            raise ArchiveRefused("corrupt archive: a bad central directory entry")
        count += 1
        if count > max_entries:
            raise ArchiveRefused(f"the archive has more than {max_entries} entries")
        names, extra, comment = struct.unpack_from("<3H", fixed, 28)
        pos += 46 + names + extra + comment


_EXTENDED = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME,
             tarfile.GNUTYPE_LONGLINK)


class BoundedTarInfo(tarfile.TarInfo):
    """A tar member's header, whose extended headers are bounded before tarfile reads them (see the
    module docstring).  ``_proc_member`` is where tarfile's source says a subclass may step in ("can
    be overridden in a subclass"); its size field is the raw header's, read before the data it
    announces.  Pass it to ``tarfile.open(..., tarinfo=BoundedTarInfo)``."""

    def _proc_member(self, tf: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise ArchiveRefused(f"the archive {_SPARSE}")
        if self.type not in _EXTENDED:
            return super()._proc_member(tf)  # type: ignore[misc]
        seen = vars(tf).setdefault("_kit_headers", {"total": 0, "global": 0, "chain": 0})
        if not 0 <= self.size <= MAX_EXTENDED_HEADER:
            raise ArchiveRefused(f"the archive has an extended header (pax or GNU long name) of {self.size:,} "
                                 f"bytes (the cap is {MAX_EXTENDED_HEADER // 1024} KiB)")
        seen["total"] += self.size
        seen["global"] += self.size if self.type == tarfile.XGLTYPE else 0
        seen["chain"] += 1
        try:
            if seen["total"] > MAX_EXTENDED_TOTAL or seen["global"] > MAX_GLOBAL_HEADERS:
                raise ArchiveRefused(
                    f"the archive's extended headers (pax or GNU long names) hold more than "
                    f"{size_words(MAX_GLOBAL_HEADERS if seen['global'] > MAX_GLOBAL_HEADERS else MAX_EXTENDED_TOTAL)}"
                    + (" of global headers" if seen["global"] > MAX_GLOBAL_HEADERS else "") + " (the cap)")
            if seen["chain"] > MAX_EXTENDED_CHAIN:
                raise ArchiveRefused(f"the archive has more than {MAX_EXTENDED_CHAIN} extended headers in a row")
            return super()._proc_member(tf)  # type: ignore[misc]
        finally:
            seen["chain"] -= 1

    def _proc_gnusparse_10(self, next: tarfile.TarInfo, pax_headers: dict, tf: tarfile.TarFile) -> None:
        raise ArchiveRefused(f"the archive {_SPARSE}")
