"""`grader combine OUT SHARD_DIR...`: the shards of `grader grade --shard K/N` as one results folder.

Before anything is written, the shards must belong together (else `CombineError`, exit status 2,
nothing written): every folder holds a finished shard's manifest (`grader.cluster.shard`), all
of one kit version, one N and the same test selection and device; every shard 1..N is there
(a missing one is named with the students it owns); every submission any shard saw is owned
by the shard its id hashes to (else the shards saw different classes: the students are named);
a submission graded by two folders (the same shard run twice) has the same content hash in both
(else it was graded twice with different files: refused); and every graded submission's
results.json is there, of that kit version, for that content.

OUT then receives, exactly as one `grader grade` would have written it (`grader.results.layout.Layout`):
``students/<id>/`` and ``instructor/students/<id>/`` copied from the owning shard, grades.csv
rebuilt by `grader.results.grades.batch_rows` (the function `grader grade` uses), the shards' worker
logs under ``instructor/logs/shard-K/``, and ``instructor/combine.json`` (which shards, the
class's identity).  OUT is built next to itself and renamed into place; an OUT that exists must
be empty or an earlier combine's output (which is replaced).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.cluster.shard import ShardError, load_manifest, set_digest, shard_of
from grader.results.grades import batch_rows, grades_csv
from grader.files import write_atomic
from grader.results.layout import Layout, write_json
from grader.results.results_json import load_results

COMBINE_JSON = "combine.json"


class CombineError(Exception):
    """Shards that must not be combined (or an OUT that must not be written); the message says why."""


@dataclass
class Combined:
    rows: list[dict[str, Any]] = field(default_factory=list)
    owner: dict[str, Path] = field(default_factory=dict)  # student -> the shard folder its results come from
    errors: dict[str, str] = field(default_factory=dict)  # student -> why it has no result
    refused: list[tuple[str, str]] = field(default_factory=list)
    count: int = 0
    seen: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.refused


def _short(ids: list[str], limit: int = 30) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _refuse_if(problems: list[str]) -> None:
    if problems:
        raise CombineError("refusing to combine:\n  " + "\n  ".join(problems))


def plan(shard_dirs: list[Path]) -> tuple[Combined, dict[Path, dict[str, Any]]]:
    """Check that the shards cover one class; returns what to write.  Raises CombineError."""
    manifests = _manifests(shard_dirs)
    n = next(iter(manifests.values()))["shard"][1]
    result = Combined(count=n)
    problems: list[str] = []
    seen = sorted({s for m in manifests.values() for s in m["seen"]})
    result.seen = seen
    present = {m["shard"][0] for m in manifests.values()}
    for k in range(1, n + 1):
        if k not in present:
            theirs = [s for s in seen if shard_of(s, n) == k]
            problems.append(f"shard {k} of {n} is missing ({len(theirs)} submission(s): {_short(theirs) or 'none'})")
    if len({set_digest(m["seen"]) for m in manifests.values()}) > 1:
        result.notes.append("the shards saw different sets of submissions (checked below: each is graded once)")
    owned, accounted, refused = _owners(manifests, n, result, problems)
    stray = [s for s in seen if s not in accounted and shard_of(s, n) in present]
    if stray:
        problems.append(f"{len(stray)} submission(s) seen by a shard but graded by none (the shards saw different "
                        f"submissions; regrade their shards): " + _short(
                            [f"{s} (shard {shard_of(s, n)})" for s in stray]))
    _check_results(owned, manifests, result, problems)
    _refuse_if(problems)
    result.refused = sorted(refused)
    return result, manifests


def _manifests(shard_dirs: list[Path]) -> dict[Path, dict[str, Any]]:
    """Each shard folder's manifest, all of one kit version, settings and shard count (else CombineError)."""
    if not shard_dirs:
        raise CombineError("no shard folders given")
    manifests: dict[Path, dict[str, Any]] = {}
    problems = []
    for d in shard_dirs:
        if not d.is_dir():
            problems.append(f"{d}: no such folder")
            continue
        try:
            manifests[d] = load_manifest(d)
        except ShardError as exc:
            problems.append(str(exc))
    _refuse_if(problems)
    for key, what in (("kit_version", "kit versions"), ("graded_with", "settings (modules, hidden tests, device)")):
        values = {json.dumps(m.get(key), sort_keys=True) for m in manifests.values()}
        if len(values) > 1:
            problems.append(f"mixed {what}: " + "; ".join(f"{d}: {json.dumps(m.get(key))}"
                                                          for d, m in manifests.items()))
    if len({m["shard"][1] for m in manifests.values()}) > 1:
        problems.append("mixed shard counts: " + "; ".join(f"{d}: shard {m['shard'][0]}/{m['shard'][1]}"
                                                            for d, m in manifests.items()))
    _refuse_if(problems)
    return manifests


def _owners(manifests: dict[Path, dict[str, Any]], n: int, result: Combined, problems: list[str]
            ) -> tuple[dict[str, tuple[Path, dict[str, Any]]], set[str], dict[tuple[str, str], Path]]:
    """Which shard folder graded each student (one, or two with the same files), the students some
    shard accounted for (graded, refused, absent from the roster), and the refused ones."""
    owned: dict[str, tuple[Path, dict[str, Any]]] = {}
    accounted: set[str] = set()
    refused: dict[tuple[str, str], Path] = {}
    for d, m in manifests.items():
        k = m["shard"][0]
        for student, entry in sorted(m["owned"].items()):
            if shard_of(student, n) != k:
                problems.append(f"{d}: {student} does not belong to shard {k}/{n} (a manifest from another kit?)")
            elif student in owned and owned[student][1].get("sha256") != entry.get("sha256"):
                problems.append(f"{student}: graded twice with different files ({owned[student][0]}: sha256 "
                                f"{str(owned[student][1].get('sha256'))[:12]}, {d}: {str(entry.get('sha256'))[:12]})")
            elif student in owned:
                if owned[student][1].get("status") == "error" and entry.get("status") != "error":
                    owned[student] = (d, entry)  # a rerun of the shard graded what the first run could not
                result.notes.append(f"{student}: graded by two folders of shard {k} (same files): "
                                    f"took {owned[student][0]}")
            else:
                owned[student] = (d, entry)
        for student, why in m["refused"]:
            refused.setdefault((student, why), d)
            accounted.add(student)
        for student in m.get("absent", []):
            accounted.add(student)
            result.errors.setdefault(student, "no submission found (it is in the roster)")
    accounted |= set(owned)
    return owned, accounted, refused


def _check_results(owned: dict[str, tuple[Path, dict[str, Any]]], manifests: dict[Path, dict[str, Any]],
                   result: Combined, problems: list[str]) -> None:
    """Each owned student's results are complete, of the shard's kit and of the manifest's files."""
    for student, (d, entry) in sorted(owned.items()):
        if entry.get("status") == "error":
            result.errors[student] = entry.get("message") or "not graded"
            continue
        doc = load_results(Layout(d).results(student))
        extra = (doc or {}).get("extra_data", {})
        if doc is None or not Layout(d).instructor(student).is_file():
            problems.append(f"{d}: {student} has no complete results (students/{student}/results.json and "
                            f"instructor/students/{student}/instructor.json)")
        elif extra.get("kit_version") != manifests[d]["kit_version"]:
            problems.append(f"{d}: {student} was graded by kit {extra.get('kit_version')}, the shard by "
                            f"{manifests[d]['kit_version']}")
        elif extra.get("submission", {}).get("sha256") != entry.get("sha256"):
            problems.append(f"{d}: {student}'s results.json is for other files than the manifest says")
        else:
            result.owner[student] = d
            result.errors.pop(student, None)


def _check_out(out: Path, shard_dirs: list[Path]) -> None:
    for d in shard_dirs:
        if out == d or d in out.parents or out in d.parents:
            raise CombineError(f"OUT {out} overlaps the shard folder {d}: choose another folder")
    if out.exists() and not out.is_dir():
        raise CombineError(f"OUT {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "instructor" / COMBINE_JSON).is_file():
        raise CombineError(f"OUT {out} exists and holds other files (not an earlier `grader combine`): "
                           "choose a new folder")


def combine(out: Path, shard_dirs: list[Path]) -> Combined:
    """Check, then write OUT (see the module docstring).  Raises CombineError, writing nothing."""
    shard_dirs = [Path(os.path.abspath(d)) for d in shard_dirs]
    out = Path(os.path.abspath(out))
    _check_out(out, shard_dirs)
    result, manifests = plan(shard_dirs)
    tmp = out.parent / f".{out.name}.combine-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        layout = Layout(tmp)
        for student, d in sorted(result.owner.items()):
            src = Layout(d)
            shutil.copytree(src.students_dir / student, layout.students_dir / student)
            shutil.copytree(src.instructor_dir / student, layout.instructor_dir / student)
        for d, m in manifests.items():
            logs = Layout(d).logs
            if logs.is_dir():
                dest = layout.logs / f"shard-{m['shard'][0]}"
                while dest.exists():
                    dest = dest.with_name(dest.name + "+")
                shutil.copytree(logs, dest)
        students = sorted(set(result.owner) | set(result.errors))
        result.rows = batch_rows(layout, students, result.errors, result.refused)
        m0 = next(iter(manifests.values()))
        graded = m0.get("graded_with") or {}  # an assignment's own module columns (grader.course.config)
        write_atomic(layout.grades, grades_csv(result.rows, graded["modules"] if graded.get("assignment") else None))
        write_json(tmp / "instructor" / COMBINE_JSON, {
            "kit_version": m0["kit_version"], "graded_with": m0["graded_with"], "shards": result.count,
            "from": {str(d): m["shard"][0] for d, m in manifests.items()}, "seen": result.seen,
            "seen_sha256": set_digest(result.seen), "notes": result.notes})
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
