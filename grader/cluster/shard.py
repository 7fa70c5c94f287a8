"""`grader grade ... --shard K/N`: one machine's deterministic share of a class, and its manifest.

A submission belongs to shard ``shard_of(student_id, N)``: a hash of its (case-folded) student
id, never its position, so the assignment does not depend on the order of the command line, on
the file system's listing order, or on which other submissions exist.  Two submissions refused
for colliding ids (ids equal up to case) land in the same shard, which refuses both, exactly as
one ``grader grade`` would.

Each shard discovers the *whole* class (every shard sees the same folder, or is given the same
``--roster``), grades its share with the unchanged `grader.batch.grade.grade`, and then writes
``DIR/instructor/shard.json`` (instructor-only; its presence means the shard finished):

    {"format": 1, "kit_version": ..., "shard": [K, N],
     "graded_with": {"modules": [...], "hidden": true, "device": "cpu"},
     "seen": [every student id of the class], "seen_sha256": hash of that sorted list,
     "owned": {id: {"sha256": content hash, "status": graded|empty|rejected|kept|error, "message": ...}},
     "refused": [[id, why], ...], "absent": [roster ids of this shard with no submission]}

`grader.cluster.combine` reads these manifests to prove that the shards cover the class.
Run as ``python -m grader.cluster.shard K/N NAME...`` (or ``--roster FILE``) it prints the names
that belong to shard K (a GitHub Actions job clones only those repositories).
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader import kit_version
from grader.intake.discover import Discovery, fingerprint, student_id
from grader.results.layout import Layout, write_json
from grader.results.results_json import load_results

MANIFEST_FORMAT = 1


class ShardError(ValueError):
    """A --shard or --roster argument that cannot be used."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, student: str) -> bool:
        return shard_of(student, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """``"K/N"`` with 1 <= K <= N."""
    try:
        k, n = (int(x) for x in text.strip().split("/"))
    except ValueError:
        raise ShardError(f"--shard {text!r}: expected K/N, e.g. 2/8") from None
    if not 1 <= k <= n:
        raise ShardError(f"--shard {text!r}: K must be between 1 and N")
    return Shard(k, n)


def shard_of(student: str, count: int) -> int:
    """The shard (1..count) of a student id: a hash of the id, case-folded so that ids which
    collide (and are refused together) stay together."""
    digest = hashlib.sha256(b"kit-shard\0" + student.casefold().encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def read_roster(path: Path) -> list[str]:
    """Student ids from a roster: one submission name per line (a repository, folder or archive
    name; blank lines and ``#`` comments ignored), each made an id as `grader grade` would."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ShardError(f"--roster {path}: {exc}") from None
    return sorted({student_id(Path(s.strip())) for s in lines if s.strip() and not s.lstrip().startswith("#")})


def seen_ids(found: Discovery, roster: list[str] = ()) -> list[str]:
    return sorted({s.student for s in found.sources} | {s.student for s, _ in found.refused} | set(roster))


def set_digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8", "surrogateescape")).hexdigest()


def select(found: Discovery, shard: Shard) -> Discovery:
    """The part of a discovery that belongs to `shard` (warnings and errors kept as they are)."""
    return replace(found, sources=[s for s in found.sources if shard.owns(s.student)],
                   refused=[(s, why) for s, why in found.refused if shard.owns(s.student)])


def manifest_path(out: Path) -> Path:
    return Layout(out).out / "instructor" / "shard.json"


def grade_shard(paths: list[Path], options: Any, shard: Shard, console: Any, roster: list[str] = (),
                late: Any = None) -> Any:
    """`grader.batch.grade.grade` on this shard's share of `paths` (`late`: its grader.course.late.LatePolicy), then the
    manifest."""
    from grader.batch.grade import grade

    everything: dict[str, Discovery] = {}

    def pick(found: Discovery) -> Discovery:
        everything["found"] = found
        manifest_path(options.out).unlink(missing_ok=True)  # a stale manifest must not vouch for this run
        mine = select(found, shard)
        console.print(f"shard {shard}: {len(mine.sources) + len(mine.refused)} of "
                      f"{len(found.sources) + len(found.refused)} submission(s)", highlight=False)
        return mine

    if roster:  # an empty folder is "no submissions here" (a shard whose repositories are all elsewhere)
        paths = [p for p in paths if not (p.is_dir() and not p.is_symlink() and not any(p.iterdir()))]
    if paths:
        result = grade(paths, options, console, select=pick, late=late)
        found = everything["found"]
    else:
        from grader.batch.options import BatchResult
        from grader.results.grades import grades_csv
        from grader.files import write_atomic

        result, found = BatchResult(), Discovery()
        write_atomic(Layout(options.out).grades, grades_csv([]))
        console.print(f"shard {shard}: no submissions here (the roster's {len(roster)} are elsewhere)",
                      highlight=False)
    mine = select(found, shard)
    outcome = {o.student: o for o in result.outcomes if o.status != "refused"}
    layout = Layout(options.out)
    owned: dict[str, dict[str, str]] = {}
    for src in mine.sources:
        o = outcome.get(src.student)
        status = o.status if o else "error"
        doc = load_results(layout.results(src.student)) if status != "error" else None  # (an old one may be there)
        sha = (doc or {}).get("extra_data", {}).get("submission", {}).get("sha256") or fingerprint(src)
        owned[src.student] = {"sha256": sha, "status": status, "message": o.message if o and status == "error" else ""}
    seen = seen_ids(found, roster)
    on_disk = {s.student for s in found.sources} | {s.student for s, _ in found.refused}
    write_json(manifest_path(options.out), {
        "format": MANIFEST_FORMAT, "kit_version": kit_version(), "shard": [shard.index, shard.count],
        "graded_with": graded_with(options, late), "seen": seen, "seen_sha256": set_digest(seen),
        "owned": owned, "refused": [[s.student, why] for s, why in mine.refused],
        "absent": [s for s in roster if shard.owns(s) and s not in on_disk],
    })
    return result


def graded_with(options: Any, late: Any = None) -> dict[str, Any]:
    """What every shard of one class must share: the tests, the device and the late policy."""
    return {"modules": list(options.modules), "hidden": bool(options.hidden), "device": options.device,
            "late": late.describe() if late is not None else None,
            **({"assignment": options.assignment, "gpu_tests": options.gpu_tests} if options.assignment else {})}


def load_manifest(folder: Path) -> dict[str, Any]:
    """A shard folder's manifest; ShardError when it is missing or malformed."""
    path = manifest_path(folder)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardError(f"{folder}: no {path.relative_to(folder)}: not a finished shard of "
                         "`grader grade --shard K/N` (still running, failed, or not a shard)") from None
    except (OSError, ValueError) as exc:
        raise ShardError(f"{path}: unreadable manifest ({exc})") from None
    ok = (isinstance(doc, dict) and doc.get("format") == MANIFEST_FORMAT and isinstance(doc.get("shard"), list)
          and len(doc["shard"]) == 2 and all(type(x) is int for x in doc["shard"])
          and 1 <= doc["shard"][0] <= doc["shard"][1] and isinstance(doc.get("owned"), dict)
          and isinstance(doc.get("seen"), list) and isinstance(doc.get("refused"), list))
    if not ok:
        raise ShardError(f"{path}: not a shard manifest this kit can read")
    return doc


def main(argv: list[str]) -> int:
    """``python -m grader.cluster.shard K/N (NAME... | --roster FILE)``: the names in shard K."""
    if len(argv) < 2:
        print("usage: python -m grader.cluster.shard K/N (NAME... | --roster FILE)", file=sys.stderr)
        return 2
    try:
        shard = parse_shard(argv[0])
        if argv[1] == "--roster" and len(argv) == 3:
            path = Path(argv[2])
            names = [s.strip() for s in path.read_text(encoding="utf-8").splitlines()
                     if s.strip() and not s.lstrip().startswith("#")]
        else:
            names = argv[1:]
    except (ShardError, OSError, UnicodeDecodeError) as exc:
        print(exc, file=sys.stderr)
        return 2
    for name in names:
        if shard.owns(student_id(Path(name))):
            print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
