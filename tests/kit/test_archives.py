"""Finding submissions and taking only the expected files out of them, safely (grader.batch: discover, take,
unpack, stage)."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from grader import MODULES
from grader.intake import archive_headers
from grader.intake import take
from grader.intake import unpack
from grader.intake.discover import Source, classify, discover, fingerprint, student_id
from grader.intake.stage import Staged, stage
from grader.intake.take import source_bytes
from grader.intake.unpack import RejectedSubmission


def _zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _targz(path: Path, members: dict[str, str | bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            raw = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    return path


def _stage(tmp_path: Path, path: Path) -> Staged:
    return stage(Source(student_id(path), path), tmp_path / "staged")


def test_layouts_in_order_of_preference(tmp_path: Path) -> None:
    # assignment/ wins over top-level files, and files are never mixed from two roots
    z = _zip(tmp_path / "a.zip", {"assignment/memory.py": "A = 1\n", "views.py": "B = 2\n", "memory.py": "C = 3\n"})
    staged = _stage(tmp_path, z)
    assert set(staged.files) == {"memory"}
    assert (staged.folder / "memory.py").read_text() == "A = 1\n"
    assert staged.layout == "assignment"
    assert sorted(os.listdir(staged.folder)) == ["memory.py"]


@pytest.mark.parametrize("name", ["alice/assignment/memory.py", "assignment/memory.py", "memory.py", "alice/memory.py"])
def test_each_layout_is_found(tmp_path: Path, name: str) -> None:
    staged = _stage(tmp_path, _zip(tmp_path / "s.zip", {name: "X = 1\n", "alice/README.md": "hi"}))
    assert staged.files.keys() == {"memory"}
    assert staged.missing == [m for m in MODULES if m != "memory"]


def test_too_deep_or_unknown_files_are_not_taken(tmp_path: Path) -> None:
    z = _zip(tmp_path / "s.zip", {"a/b/c/d/assignment/memory.py": "X\n", "assignment/conftest.py": "X\n",
                                  "assignment/sitecustomize.py": "X\n", "assignment/helpers.py": "X\n",
                                  "__MACOSX/assignment/memory.py": "X\n"})
    staged = _stage(tmp_path, z)
    assert staged.files == {} and staged.helpers == {} and staged.empty  # helpers alone choose no root
    assert os.listdir(staged.folder) == []


@pytest.mark.parametrize("kind", ["folder", "zip", "tar.gz"])
def test_module_files_nested_a_few_folders_down_are_found(tmp_path: Path, kind: str) -> None:
    """A student who zips the folder they worked in (issue 33: ``Downloads/hw1/assignment/*.py``
    scored 0 as "empty"): found up to `take.MAX_NEST` folders down, the shallowest root first;
    deeper, the empty submission says where module files were looked for."""
    members = {"Downloads/hw1/assignment/memory.py": "A = 1\n", "Downloads/hw1/assignment/utils.py": "U = 1\n",
               "Downloads/old/copy/of/hw1/views.py": "B = 2\n"}  # 5 folders down: not looked at
    if kind == "folder":
        path = tmp_path / "José Núñez (2)"
        for name, text in members.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text)
        assert [s.student for s in discover([tmp_path]).sources] == ["Jos_N_ez_2_~b20e8fde4e"]
    else:
        path = (_zip if kind == "zip" else _targz)(tmp_path / f"s.{kind}", members)
    staged = _stage(tmp_path, path)
    assert (staged.files.keys(), staged.helpers.keys()) == ({"memory"}, {"utils"})
    assert staged.layout == "Downloads/hw1/assignment"
    assert (staged.folder / "memory.py").read_text() == "A = 1\n"
    deep = _stage(tmp_path / "deep", _zip(tmp_path / "deep.zip", {"a/b/c/d/e/memory.py": "X\n"}))
    assert deep.empty
    from grader.results.results_json import build_results
    doc = build_results([], student="x", kit_version="0", sandbox={}, submission={"seen": ["a/"]}, status="empty")
    assert f"looked for <module>.py (e.g. memory.py) at the top, in assignment/, and in folders up to {take.MAX_NEST} " \
           "deep" in doc["output"]


def test_the_deeper_search_has_a_budget_of_its_own_and_rejects_nothing(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `unpack.MAX_DIR_DEPTH` (3), entries are looked at only where nothing was found nearer the
    top, and a deep folder of many files ends that search instead of rejecting the submission."""
    monkeypatch.setattr(unpack, "MAX_MEMBERS", 50)
    sub = tmp_path / "carol"
    (sub / "Downloads" / "hw1" / "assignment").mkdir(parents=True)
    (sub / "Downloads" / "hw1" / "assignment" / "memory.py").write_text("X = 1\n")
    (sub / "Downloads" / "a" / "b" / "images").mkdir(parents=True)
    for i in range(80):  # more entries than the cap, four folders down: never a reason to reject
        (sub / "Downloads" / "a" / "b" / "images" / f"{i}.png").write_text("x")
    assert set(_stage(tmp_path, sub).files) == {"memory"}
    (sub / "memory.py").write_text("Y = 2\n")  # found near the top: the deep folders are not walked
    staged = stage(Source("carol", sub), tmp_path / "staged2")
    assert (staged.folder / "memory.py").read_text() == "Y = 2\n"


def test_helpers_next_to_the_module_files_are_taken_reserved_names_are_not(tmp_path: Path) -> None:
    sub = tmp_path / "bob"
    (sub / "assignment").mkdir(parents=True)
    (sub / "tests").mkdir()
    for name in ("memory.py", "views.py", "conftest.py", "extra.py", "__init__.py", "my-notes.py",
                 "sitecustomize.py", "evil.pth"):
        (sub / "assignment" / name).write_text(f"# {name}\n")
    (sub / "conftest.py").write_text("raise SystemExit\n")
    (sub / "pytest.ini").write_text("[pytest]\n")
    (sub / "tests" / "conftest.py").write_text("raise SystemExit\n")
    staged = _stage(tmp_path, sub)
    assert sorted(os.listdir(staged.folder)) == ["extra.py", "memory.py", "views.py"]
    assert set(staged.helpers) == {"extra"} and set(staged.files) == {"memory", "views"}
    assert set(staged.not_taken) == {"assignment/conftest.py", "assignment/my-notes.py", "assignment/sitecustomize.py"}
    assert "reserved" in staged.not_taken["assignment/conftest.py"]
    assert oct(os.stat(staged.folder / "memory.py").st_mode & 0o777) == "0o644"


def test_helper_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(take, "MAX_HELPERS", 3)
    members = {"assignment/memory.py": "X = 1\n", **{f"assignment/h{i}.py": "Y = 1\n" for i in range(5)}}
    staged = _stage(tmp_path, _zip(tmp_path / "s.zip", members))
    assert len(staged.helpers) == 3 and sum("more than 3 helper" in w for w in staged.not_taken.values()) == 2


@pytest.mark.parametrize("data, taken, words", [
    (b"# -*- coding: latin-1 -*-\nX = '\xe9'\n", False, "latin-1"),
    (b"#!/usr/bin/env python\n# vim: set fileencoding=utf-16 :\nX = 1\n", False, "utf-16"),
    (b"# coding: rot13\nK = 1\n", False, "rot13"),
    (b"# coding=made-up\nX = 1\n", False, "made-up"),
    (b"X = '\xff'\n", False, "not valid UTF-8"),
    (b"# -*- coding: utf-8 -*-\nX = '\xc3\xa9'\n", True, ""),
    (b"# coding: UTF8\nX = 1\n", True, ""),
    (b"\xef\xbb\xbfX = 1\n", True, ""),
])
def test_source_encoding_is_utf8_only(tmp_path: Path, data: bytes, taken: bool, words: str) -> None:
    import ast

    staged = _stage(tmp_path, _zip(tmp_path / "s.zip", {"assignment/memory.py": data, "assignment/views.py": "V = 1\n"}))
    assert ("memory" in staged.files) is taken
    assert "views" in staged.files  # the other files are still taken
    if taken:  # what the import runs is what ast.parse (the static checks) reads
        staged_bytes = (staged.folder / "memory.py").read_bytes()
        assert staged_bytes == data.removeprefix(b"\xef\xbb\xbf")
        ast.parse(staged_bytes.decode("utf-8"))
    else:
        assert words in staged.not_taken["assignment/memory.py"], staged.not_taken
        assert not (staged.folder / "memory.py").exists()
    assert (source_bytes(data)[0] is not None) is taken


def test_dotdot_and_absolute_members_are_ignored_and_never_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    z = _zip(tmp_path / "s.zip", {"assignment/memory.py": "OK = 1\n", "../outside/evil.py": "X",
                                  "../../memory.py": "EVIL = 1\n", str(outside / "abs.py"): "X",
                                  "assignment/../../views.py": "EVIL = 1\n"})
    staged = _stage(tmp_path, z)
    assert staged.files.keys() == {"memory"}
    assert (staged.folder / "memory.py").read_text() == "OK = 1\n"
    assert os.listdir(outside) == []
    assert [n for n in staged.notes if "unsafe path" in n] == ["ignored 4 archive entries with an unsafe path "
                                                               "(absolute, or climbing out with ..)"]
    t = _targz(tmp_path / "t.tar.gz", {"assignment/memory.py": "OK = 2\n", "../outside/evil.py": "X",
                                       "/etc/memory.py": "X"})
    staged = stage(Source("t", t), tmp_path / "staged2")
    assert (staged.folder / "memory.py").read_text() == "OK = 2\n"
    assert os.listdir(outside) == []


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("SECRET = 1\n")
    # a directory submission: a symlinked assignment/ and a symlinked module file
    d = tmp_path / "d"
    d.mkdir()
    (d / "assignment").symlink_to(tmp_path)
    (d / "memory.py").symlink_to(secret)
    os.link(secret, d / "views.py")  # a hard link to a file elsewhere on this machine
    staged = stage(Source("d", d), tmp_path / "s1")
    assert staged.files == {}
    assert "hard link" in staged.not_taken["views.py"] and "symlink" in staged.not_taken["memory.py"]
    assert not staged.empty  # refused files are named in the results, not reported as an empty submission
    (d / "views.py").unlink()
    (d / "memory.py").unlink()
    staged = stage(Source("d", d), tmp_path / "s1b")
    assert staged.not_taken == {"assignment/": "a symlink to a folder (never followed; only regular files are taken)"}
    # tar: symlink and hardlink members
    t = tmp_path / "t.tar.gz"
    with tarfile.open(t, "w:gz") as tf:
        for name, kind in (("assignment/memory.py", tarfile.SYMTYPE), ("assignment/views.py", tarfile.LNKTYPE)):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = str(secret)
            tf.addfile(info)
    staged = stage(Source("t", t), tmp_path / "s2")
    assert staged.files == {}
    assert "symlink" in staged.not_taken["assignment/memory.py"] and "hardlink" in staged.not_taken["assignment/views.py"]
    # zip: a member whose mode says symlink
    z = tmp_path / "z.zip"
    with zipfile.ZipFile(z, "w") as zf:
        info = zipfile.ZipInfo("assignment/memory.py")
        info.create_system = 3
        info.external_attr = 0o120777 << 16
        zf.writestr(info, str(secret))
    staged = stage(Source("z", z), tmp_path / "s3")
    assert staged.files == {}


def test_zip_bomb_rejected_on_declared_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack, "MAX_UNPACKED_BYTES", 4 * 2**20)
    z = _zip(tmp_path / "bomb.zip", {"assignment/memory.py": "X = 1\n", "zeros.bin": b"\0" * (5 * 2**20)})
    assert z.stat().st_size < 100_000
    with pytest.raises(RejectedSubmission, match="zip bomb"):
        _stage(tmp_path, z)
    assert not (tmp_path / "staged").exists()


def test_gzip_bomb_rejected_while_streaming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack, "MAX_UNPACKED_BYTES", 2 * 2**20)
    t = _targz(tmp_path / "bomb.tar.gz", {"zeros.bin": b"\0" * (3 * 2**20), "assignment/memory.py": "X = 1\n"})
    with pytest.raises(RejectedSubmission, match="zip bomb"):
        _stage(tmp_path, t)


def test_caps_on_members_module_size_and_archive_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack, "MAX_MEMBERS", 10)
    with pytest.raises(RejectedSubmission, match="entries"):
        _stage(tmp_path, _zip(tmp_path / "many.zip", {f"f{i}.txt": "x" for i in range(11)}))
    monkeypatch.setattr(unpack, "MAX_MODULE_BYTES", 1000)
    with pytest.raises(RejectedSubmission, match="larger than"):
        stage(Source("big", _zip(tmp_path / "big.zip", {"assignment/memory.py": "#" * 1001})), tmp_path / "s2")
    with pytest.raises(RejectedSubmission, match="larger than"):
        stage(Source("bigt", _targz(tmp_path / "big.tar.gz", {"memory.py": "#" * 1001})), tmp_path / "s3")
    monkeypatch.setattr(unpack, "MAX_ARCHIVE_BYTES", 100)
    with pytest.raises(RejectedSubmission, match="the cap"):
        stage(Source("huge", _zip(tmp_path / "huge.zip", {"memory.py": os.urandom(500)})), tmp_path / "s4")


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04garbage" * 50, b"\x1f\x8b\x08\x00garbage" * 50])
def test_corrupt_archives_are_rejected_plainly(tmp_path: Path, content: bytes) -> None:
    for name in ("c.zip", "c.tar.gz"):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(RejectedSubmission, match="corrupt"):
            stage(Source("c", path), tmp_path / f"s-{name}")


def test_discovery_student_ids_and_classification(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    _zip(subs / "alice.zip", {"assignment/memory.py": "X\n"})
    _targz(subs / "bob.tar.gz", {"memory.py": "X\n"})
    (subs / "carol" / "assignment").mkdir(parents=True)
    (subs / "carol" / "assignment" / "memory.py").write_text("X\n")
    (subs / "dave").mkdir()  # an empty submission is still a submission (reported as empty when graded)
    (subs / "notes.txt").write_text("not a submission")
    (subs / ".hidden").mkdir()
    assert classify(subs) == "folder"
    assert classify(subs / "carol") == "submission"
    found = discover([subs])
    assert [s.student for s in found.sources] == ["alice", "bob", "carol", "dave"]
    assert not found.errors and not found.refused
    assert len(found.warnings) == 2 and ".hidden: a hidden entry" in found.warnings[0]  # named, never silently lost
    assert "notes.txt" in found.warnings[1]
    # a folder of sub-folders that hold module files is a folder of submissions (one each)
    (tmp_path / "eve" / "release" / "assignment").mkdir(parents=True)
    (tmp_path / "eve" / "release" / "assignment" / "memory.py").write_text("X\n")
    assert classify(tmp_path / "eve") == "folder"
    # ...but module files one level down next to other files make it one submission
    (tmp_path / "frank" / "work").mkdir(parents=True)
    (tmp_path / "frank" / "work" / "memory.py").write_text("X\n")
    (tmp_path / "frank" / "work" / "sub").mkdir()
    assert classify(tmp_path / "frank" / "work") == "submission"
    # a command-line path that does not exist is an error, not an empty batch
    found = discover([subs, tmp_path / "missing.zip", tmp_path / "missing"])
    assert len(found.errors) == 2 and all("no such file" in e for e in found.errors)


def test_colliding_ids_are_refused_both_listed(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    (subs / "carol" / "assignment").mkdir(parents=True)
    (subs / "carol" / "assignment" / "memory.py").write_text("X\n")
    _zip(tmp_path / "carol.zip", {"memory.py": "X\n"})
    _zip(subs / "Dave.zip", {"memory.py": "X\n"})
    _zip(subs / "dave.zip", {"memory.py": "X\n"})
    _zip(subs / "erin.zip", {"memory.py": "X\n"})
    found = discover([subs, tmp_path / "carol.zip"])
    assert [s.student for s in found.sources] == ["erin"]
    refused = sorted((src.student, str(src.path)) for src, _ in found.refused)
    assert refused == sorted([("carol", str(subs / "carol")), ("carol", str(tmp_path / "carol.zip")),
                              ("Dave", str(subs / "Dave.zip")), ("dave", str(subs / "dave.zip"))])
    assert all("neither is graded" in why for _, why in found.refused)


def test_student_ids_are_injective_and_safe() -> None:
    names = ["alice", "_alice", "alice_", "al ice", "al_ice", "al\nice", "grades.csv", "=HYPERLINK(1)", "+1", "-x",
             "@x", "..", ".alice", "we ird/../name (1).tar.gz", "é", "e", "a" * 150, "a" * 151]
    ids = [student_id(Path(n)) for n in names]
    assert len(set(ids)) == len(ids), ids
    assert student_id(Path("alice.zip")) == student_id(Path("alice.tar.gz")) == "alice"
    assert student_id(Path("grades.csv")) == "grades.csv"  # safe: results live under students/, see grader.results.results_json
    for i in ids:
        assert i[0].isalnum() and "/" not in i and "\n" not in i and len(i) <= 100, i
    assert student_id(Path("_alice")).startswith("alice~")


def test_a_huge_folder_is_discovered_then_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack, "MAX_MEMBERS", 50)
    subs = tmp_path / "subs"
    (subs / "alice" / "assignment").mkdir(parents=True)
    (subs / "alice" / "assignment" / "memory.py").write_text("X\n")
    (subs / "bob").mkdir()
    for i in range(80):
        (subs / "bob" / f"f{i}.txt").write_text("x")
    found = discover([subs])
    sources = found.sources
    assert [s.student for s in sources] == ["alice", "bob"] and not found.errors and not found.refused
    assert fingerprint(sources[1]) == fingerprint(sources[1])
    with pytest.raises(RejectedSubmission, match="more than 50 entries"):
        stage(sources[1], tmp_path / "staged")


def test_fingerprint_is_stable_and_content_based(tmp_path: Path) -> None:
    sub = tmp_path / "s"
    (sub / "assignment").mkdir(parents=True)
    (sub / "assignment" / "memory.py").write_text("X = 1\n")
    first = fingerprint(Source("s", sub))
    (sub / "unrelated.txt").write_text("changes nothing graded")
    assert fingerprint(Source("s", sub)) == first
    (sub / "assignment" / "memory.py").write_text("X = 2\n")
    assert fingerprint(Source("s", sub)) != first


def test_fingerprint_covers_helpers(tmp_path: Path) -> None:
    sub = tmp_path / "s"
    (sub / "assignment").mkdir(parents=True)
    (sub / "assignment" / "memory.py").write_text("from . import utils\n")
    (sub / "assignment" / "utils.py").write_text("X = 1\n")
    first = fingerprint(Source("s", sub))
    (sub / "assignment" / "utils.py").write_text("X = 2\n")
    assert fingerprint(Source("s", sub)) != first  # a changed helper is graded again on resume


# -- what staging says about a submission is capped where it is made; names have a length ----------

def test_names_and_lists_staging_records_are_capped(tmp_path: Path) -> None:
    """20,000 files not taken with 5,000-character names made a 202 MB results.json: each list holds at
    most MAX_LISTED entries then one line saying how many more, each name is cut, a module file's
    refusal is still named past the cap (it says why a module scores nothing)."""
    members = {"assignment/memory.py": "X = 1\n", "assignment/views.py": b"V = '\xff'\n"}
    members.update({f"assignment/-h{i:05d}_{'x' * 400}.py": "Y = 1\n" for i in range(3000)})
    staged = _stage(tmp_path, _zip(tmp_path / "s.zip", members))
    assert staged.files.keys() == {"memory"}
    assert len(staged.not_taken) == take.MAX_LISTED + 2  # the first 20, views.py, and the count of the rest
    assert "not valid UTF-8" in staged.not_taken["assignment/views.py"]
    assert staged.not_taken["… and 2,980 more"] == "files not taken, not listed here"
    assert all(len(k) <= take.NAME_LIMIT and len(v) <= take.REASON_LIMIT for k, v in staged.not_taken.items())
    record = take.Record()
    for i in range(50):
        record.note(f"note {i} " + "\x1b[31m" * 200)
    assert len(record.notes) == take.MAX_LISTED + 1 and record.notes[-1] == "and 30 more notes (not listed)"
    assert all(len(n) <= take.REASON_LIMIT and "\x1b" not in n for n in record.notes)


def test_long_helper_names_are_refused_with_a_reason(tmp_path: Path) -> None:
    """A helper's name becomes a module and file name: a 10,000-character one made staging fail with
    'File name too long' on every rerun.  At most MAX_HELPER_NAME characters are taken; longer ones,
    and paths past MAX_PATH_CHARS, are refused with the reason, and the rest is staged."""
    ok, long, huge = "h" * take.MAX_HELPER_NAME, "h" * (take.MAX_HELPER_NAME + 1), "h" * 10_000
    for path in (_zip(tmp_path / "s.zip", {"assignment/memory.py": "X = 1\n", f"assignment/{ok}.py": "A = 1\n",
                                           f"assignment/{long}.py": "B = 1\n", f"assignment/{huge}.py": "C = 1\n"}),
                 _targz(tmp_path / "s.tar.gz", {"assignment/memory.py": "X = 1\n", f"assignment/{ok}.py": "A = 1\n",
                                                f"assignment/{long}.py": "B = 1\n", f"assignment/{huge}.py": "C = 1\n"})):
        staged = stage(Source("s", path), tmp_path / path.name.replace(".", "_"))
        assert staged.files.keys() == {"memory"} and staged.helpers.keys() == {ok}
        assert sorted(os.listdir(staged.folder)) == sorted(["memory.py", f"{ok}.py"])
        assert len(staged.not_taken) == 2, staged.not_taken
        assert any(f"at most {take.MAX_HELPER_NAME} characters" in v for v in staged.not_taken.values())
        assert any(f"at most {take.MAX_PATH_CHARS} are read" in v for v in staged.not_taken.values())


# -- the archives' own headers are bounded before a library builds objects from them ---------------

def _pax_records(size: int) -> bytes:
    """pax records of distinct empty keywords, `size` bytes of them (tarfile makes a dict entry of each)."""
    out, total, i = [], 0, 0
    while total < size:
        body = b" %x=\n" % i
        n = len(body) + len(str(len(body) + 2))
        record = str(n).encode() + body
        out.append(record)
        total += len(record)
        i += 1
    return b"".join(out)


def _tar_blocks(name: str, data: bytes, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, len(data)
    return info.tobuf(format=tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)


def _raw_targz(path: Path, *blocks: bytes) -> Path:
    import gzip

    with gzip.open(path, "wb") as gz:
        gz.write(b"".join(blocks) + _tar_blocks("memory.py", b"X = 1\n") + b"\0" * 1024)
    return path


def _stage_within(path: Path, dest: Path, memory: int) -> str:
    """Stage `path` in a child with `memory` bytes more address space: "taken", or why not."""
    from grader.testing.contained import contained

    def run() -> str:
        try:
            return "taken: " + ",".join(sorted(stage(Source("s", path), dest).files))
        except RejectedSubmission as exc:
            return f"rejected: {exc}"

    got = contained(run, memory=memory, seconds=60)
    return got.value if got.error is None else f"child: {got.error}"


def test_pax_and_gnu_long_name_headers_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tarfile reads an extended header whole and builds a dict entry per pax record, about 24 bytes
    held per byte (150 MiB of empty keywords held 4 GB): each is bounded from its raw header first."""
    big = _raw_targz(tmp_path / "big.tar.gz", _tar_blocks("././@PaxHeader", _pax_records(8 * 2**20), tarfile.XHDTYPE))
    got = _stage_within(big, tmp_path / "s1", 64 * 2**20)  # (it held about 200 MB)
    assert got.startswith("rejected: the archive has an extended header (pax or GNU long name) of"), got
    long_name = b"a" * (archive_headers.MAX_EXTENDED_HEADER + 1)
    gnu = _raw_targz(tmp_path / "gnu.tar.gz", _tar_blocks("././@LongLink", long_name, tarfile.GNUTYPE_LONGNAME))
    with pytest.raises(RejectedSubmission, match="extended header"):
        _stage(tmp_path, gnu)
    glob = _raw_targz(tmp_path / "g.tar.gz", *[_tar_blocks("././@PaxHeader", _pax_records(6000), tarfile.XGLTYPE)
                                               for _ in range(3)])  # (copied into every later member)
    with pytest.raises(RejectedSubmission, match="of global headers"):
        stage(Source("g", glob), tmp_path / "s3")
    chain = _raw_targz(tmp_path / "c.tar.gz", *[_tar_blocks("././@PaxHeader", b"", tarfile.XHDTYPE)] * 9)
    with pytest.raises(RejectedSubmission, match="in a row"):
        stage(Source("c", chain), tmp_path / "s4")
    sparse = tmp_path / "sparse.tar.gz"
    _raw_targz(sparse, _tar_blocks("assignment/big.bin", b"", tarfile.GNUTYPE_SPARSE))
    with pytest.raises(RejectedSubmission, match="sparse"):
        stage(Source("sp", sparse), tmp_path / "s5")
    monkeypatch.setattr(archive_headers, "MAX_EXTENDED_TOTAL", 64 * 2**10)
    many = _raw_targz(tmp_path / "m.tar.gz", *[_tar_blocks("././@PaxHeader", _pax_records(8000), tarfile.XHDTYPE)
                                               + _tar_blocks(f"f{i}.txt", b"x") for i in range(10)])
    with pytest.raises(RejectedSubmission, match="hold more than 64 KiB"):
        stage(Source("m", many), tmp_path / "s6")


def _raw_zip(path: Path, count: int, declared: int | None = None) -> Path:
    """A zip of `count` empty stored entries, written raw (zipfile takes seconds for 100,000); the end
    record declares `declared` entries (default: `count`, as far as 16 bits hold it)."""
    import struct

    local, central = bytearray(), bytearray()
    for i in range(count):
        name = b"f%d" % i
        offset = len(local)
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0,
                               offset) + name
    n = min(count if declared is None else declared, 0xFFFF)
    path.write_bytes(bytes(local) + bytes(central)
                     + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(central), len(local), 0))
    return path


def test_zip_central_directory_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """zipfile reads the whole central directory and builds an object per entry before any cap on
    entries applies (200,000 empty entries: about 100 MB): its size and entries are checked raw first."""
    many = _raw_zip(tmp_path / "many.zip", 200_000)
    got = _stage_within(many, tmp_path / "s1", 64 * 2**20)
    assert got.startswith("rejected: the archive's central directory is"), got
    monkeypatch.setattr(unpack, "MAX_MEMBERS", 100)
    with pytest.raises(RejectedSubmission, match="more than 100 entries"):  # the end record says 1: walked
        stage(Source("lie", _raw_zip(tmp_path / "lie.zip", 150, declared=1)), tmp_path / "s2")
    monkeypatch.setattr(archive_headers, "MAX_ZIP_DIRECTORY", 64 * 2**10)
    fat = tmp_path / "fat.zip"  # extra fields and comments count too
    with zipfile.ZipFile(fat, "w") as zf:
        for i in range(3):
            info = zipfile.ZipInfo(f"f{i}.txt")
            info.extra = b"\xfe\xca" + (30_000).to_bytes(2, "little") + b"x" * 30_000
            info.comment = b"c" * 5_000
            zf.writestr(info, "x")
        zf.writestr("memory.py", "X = 1\n")
    with pytest.raises(RejectedSubmission, match="central directory"):
        stage(Source("fat", fat), tmp_path / "s3")


def test_honest_archives_are_taken(tmp_path: Path) -> None:
    """What students make: GNU `tar czf` (a long name in a GNU long-name header), `git archive` (a pax
    global header with the commit), bsdtar/macOS tar with extended attributes (a pax header per file),
    macOS's Archive Utility zip (extra fields, __MACOSX), each with a long helper name and deep paths."""
    import shutil
    import subprocess

    src = tmp_path / "src"
    helper = "a_helper_with_a_rather_long_name_for_a_module_of_sixty_four_ch"
    (src / "assignment").mkdir(parents=True)
    (src / "assignment" / "memory.py").write_text("from . import " + helper + "\n")
    (src / "assignment" / f"{helper}.py").write_text("X = 1\n")
    deep = src / ("d" * 120) / ("e" * 120) / ("f" * 120)
    deep.mkdir(parents=True)
    (deep / "notes.txt").write_text("x\n")
    want = ({"memory"}, {helper})
    made = {}
    made["tar.tar.gz"] = ["tar", "czf", str(tmp_path / "tar.tar.gz"), "-C", str(src), "."]
    made["git.tar.gz"] = ["git", "-C", str(src), "archive", "--format=tar.gz", "-o", str(tmp_path / "git.tar.gz"), "HEAD"]
    subprocess.run(["git", "-C", str(src), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(src), "add", "."], check=True)
    subprocess.run(["git", "-C", str(src), "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qm", "x"], check=True)
    if shutil.which("bsdtar"):
        try:
            os.setxattr(src / "assignment" / "memory.py", "user.com.apple.quarantine", b"0081;65f1;Safari;" + b"q" * 200)
        except OSError:
            pass
        made["bsd.tar.gz"] = ["bsdtar", "--xattrs", "--format", "pax", "-czf", str(tmp_path / "bsd.tar.gz"), "-C",
                              str(src), "assignment", "d" * 120]
    for name, command in made.items():
        subprocess.run(command, check=True, capture_output=True)
    # macOS's tar as Python writes it (where no bsdtar is installed): a pax header per file with its attributes
    with tarfile.open(tmp_path / "mac.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for path in sorted(src.rglob("*")):
            if ".git" in path.parts or not path.is_file():
                continue
            info = tf.gettarinfo(path, str(path.relative_to(src)))
            info.pax_headers = {"LIBARCHIVE.xattr.com.apple.quarantine": "MDA4MTs2NWYxO1NhZmFyaTs=" * 8,
                                "SCHILY.xattr.com.apple.provenance": "\x01\x02\x00" * 4, "LIBARCHIVE.creationtime": "1700000000"}
            with open(path, "rb") as f:
                tf.addfile(info, f)
    with zipfile.ZipFile(tmp_path / "mac.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(src.rglob("*")):
            if ".git" in path.parts or not path.is_file():
                continue
            rel = str(path.relative_to(src))
            info = zipfile.ZipInfo(rel)
            info.extra = b"UT\x09\x00\x03" + b"\0" * 8 + b"ux\x0b\x00\x01\x04" + b"\xf5\x01\0\0\x04\x14\0\0\0"
            zf.writestr(info, path.read_bytes())
            zf.writestr(f"__MACOSX/{os.path.dirname(rel)}/._{path.name}", b"\0\x05\x16\x07" + b"\0" * 200)
    for archive in [*made, "mac.tar.gz", "mac.zip"]:
        staged = stage(Source("s", tmp_path / archive), tmp_path / f"staged-{archive}")
        assert (set(staged.files), set(staged.helpers)) == want, (archive, staged)
        assert not staged.notes and not staged.not_taken, (archive, staged.notes, staged.not_taken)
