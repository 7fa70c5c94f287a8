"""Kit self-tests of grading beyond one machine (grader/cluster/): shards, combine, Slurm, Actions.

The Slurm test runs a real one-node cluster (Debian's slurm-wlm and munge: slurmctld and slurmd
on localhost, started here and torn down after); it is skipped only when those binaries are
missing and KIT_REQUIRE_SLURM is not set (.ci/run sets it, so CI always runs it).
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from grader import KIT_ROOT
from grader.intake.discover import Discovery, Source, discover
from grader.cli import main as grader_main
from grader.cluster.actions import workflow
from grader.cluster.shard import Shard, parse_shard, select, set_digest, shard_of
from grader.results.layout import Layout, write_json
from grader.results.results_json import build_results

pytestmark = pytest.mark.kit


# -- shard assignment --------------------------------------------------------------------------

def _ids(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(['s', 'Stud', 'x_y', 'a.b'])}{rng.randrange(10**6)}" for _ in range(n)]


def test_shards_are_deterministic_disjoint_covering_and_ignore_order():
    ids = sorted(set(_ids(500)))
    for n in (1, 2, 3, 7, 16):
        shards = [Shard(k, n) for k in range(1, n + 1)]
        owners = {s: [sh.index for sh in shards if sh.owns(s)] for s in ids}
        assert all(len(v) == 1 for v in owners.values())  # disjoint and covering
        sizes = [sum(1 for v in owners.values() if v == [k]) for k in range(1, n + 1)]
        assert min(sizes) > 0.5 * len(ids) / n  # a hash, not a lottery: shards are roughly even
        found = Discovery(sources=[Source(s, Path("/x") / s) for s in ids])
        shuffled = Discovery(sources=random.Random(n).sample(found.sources, len(ids)))
        for sh in shards:
            assert sorted(x.student for x in select(found, sh).sources) == \
                sorted(x.student for x in select(shuffled, sh).sources)
    # pinned: a shard's members never depend on the process, the platform or the other students
    assert [shard_of(s, 4) for s in ("alice", "bob", "carol", "dave", "erin", "frank")] == \
        [shard_of(s, 4) for s in ("alice", "bob", "carol", "dave", "erin", "frank")]
    assert shard_of("Bob", 5) == shard_of("bob", 5)  # colliding ids are refused together, by one shard
    code = subprocess.run([sys.executable, "-c", "from grader.cluster.shard import shard_of; "
                           "print([shard_of(s, 4) for s in ('alice', 'bob', 'carol')])"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert code.stdout.strip() == str([shard_of(s, 4) for s in ("alice", "bob", "carol")])


def test_shard_selection_of_a_real_folder_is_stable_when_students_are_added(tmp_path):
    subs = tmp_path / "subs"
    for s in ("alice", "bob", "carol", "dave", "erin"):
        (subs / s / "assignment").mkdir(parents=True)
        (subs / s / "assignment" / "memory.py").write_text("x = 1\n")
    before = {k: [s.student for s in select(discover([subs]), Shard(k, 3)).sources] for k in (1, 2, 3)}
    (subs / "zed" / "assignment").mkdir(parents=True)
    (subs / "zed" / "assignment" / "memory.py").write_text("x = 1\n")
    after = {k: [s.student for s in select(discover([subs]), Shard(k, 3)).sources] for k in (1, 2, 3)}
    assert all(set(before[k]) <= set(after[k]) for k in (1, 2, 3))
    assert sum(map(len, after.values())) == 6


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2"])
def test_bad_shard_argument_is_refused(bad, tmp_path):
    with pytest.raises(ValueError):
        parse_shard(bad)
    (tmp_path / "s" / "alice").mkdir(parents=True)
    assert grader_main(["grade", str(tmp_path / "s"), "--out", str(tmp_path / "out"), f"--shard={bad}"]) == 2
    assert not (tmp_path / "out").exists()


# -- combine: fake shards written with the kit's own writers -------------------------------------

RECORDS = [{"id": "tests/public/test_memory.py::test_a", "module": "memory", "name": "test_a", "points": 2,
            "hidden": False, "gpu": False, "checked": "a", "status": "passed", "message": ""},
           {"id": "tests/hidden/test_memory.py::test_b", "module": "memory", "name": "test_b", "points": 3,
            "hidden": True, "gpu": False, "checked": "b", "status": "failed", "message": "wrong"}]
CLASS = ["alice", "bob", "carol", "dave", "erin", "frank", "gina"]


GPU = {"id": "tests/public/test_memory.py::test_cuda", "module": "memory", "name": "test_cuda", "points": 4,
       "hidden": False, "gpu": True, "checked": "cuda", "status": "pending", "message": ""}


def _fake_shard(folder: Path, k: int, n: int, *, version: str = "0.2.0", sha: dict | None = None,
                seen: list[str] = CLASS, device: str = "cpu", gpu_tests: bool = False) -> None:
    owned = {}
    for s in seen:
        if shard_of(s, n) != k:
            continue
        digest = (sha or {}).get(s, s[0] * 64)
        submission = {"sha256": digest, "files": {"memory": "0" * 64}}
        records = [dict(r, status="passed") for r in RECORDS] if s == "alice" else RECORDS
        records = [*records, GPU] if gpu_tests else records  # a CPU run: the GPU test is pending
        if device == "cuda":
            records = [dict(GPU, status="passed" if s in ("alice", "bob") else "failed")]
        write_json(Layout(folder).results(s), build_results(records, student=s, kit_version=version,
                                                            sandbox={"launcher": "bubblewrap"}, submission=submission))
        write_json(Layout(folder).instructor(s), {"student": s, "kit_version": version, "status": "graded",
                                                  "records": records, "submission": submission})
        owned[s] = {"sha256": digest, "status": "graded", "message": ""}
    write_json(folder / "instructor" / "shard.json", {
        "format": 1, "kit_version": version, "shard": [k, n],
        "graded_with": {"modules": ["memory"], "hidden": True, "device": device, "late": None}, "seen": sorted(seen),
        "seen_sha256": set_digest(seen), "owned": owned, "refused": [], "absent": []})


def _combine(out: Path, *dirs: Path, capsys=None) -> tuple[int, str]:
    code = grader_main(["combine", str(out), *map(str, dirs)])
    return code, capsys.readouterr().out if capsys else ""


def test_combine_joins_shards_like_one_run(tmp_path, capsys):
    dirs = [tmp_path / f"s{k}" for k in (1, 2, 3)]
    for k, d in enumerate(dirs, 1):
        _fake_shard(d, k, 3)
    code, out = _combine(tmp_path / "all", *reversed(dirs), capsys=capsys)
    assert code == 0, out
    rows = list(csv.DictReader((tmp_path / "all" / "grades.csv").open()))
    assert [r["student"] for r in rows] == CLASS
    assert {r["student"]: r["score"] for r in rows} == {s: "5" if s == "alice" else "2" for s in CLASS}
    assert Layout(tmp_path / "all").students() == CLASS
    assert all(Layout(tmp_path / "all").instructor(s).is_file() for s in CLASS)
    assert json.loads((tmp_path / "all" / "instructor" / "combine.json").read_text())["shards"] == 3
    # an earlier combine's output is replaced; the same shard graded twice with the same files is fine
    shutil.copytree(dirs[0], tmp_path / "s1-again")
    assert _combine(tmp_path / "all", *dirs, tmp_path / "s1-again", capsys=capsys)[0] == 0
    assert grader_main(["report", str(tmp_path / "all"), "--out", str(tmp_path / "r.html")]) == 0


def test_combined_cpu_and_cuda_passes_merge(tmp_path, capsys):
    """`grader slurm --device cuda` then `grader merge CPU/combined GPU/combined`: the GPU points arrive."""
    for k in (1, 2):
        _fake_shard(tmp_path / "cpu" / str(k), k, 2, gpu_tests=True)
        _fake_shard(tmp_path / "gpu" / str(k), k, 2, device="cuda")
    code, text = _combine(tmp_path / "mixed", tmp_path / "cpu" / "1", tmp_path / "gpu" / "2", capsys=capsys)
    assert code == 2 and "mixed settings" in text and not (tmp_path / "mixed").exists()
    for device in ("cpu", "gpu"):
        assert _combine(tmp_path / device / "combined", tmp_path / device / "1", tmp_path / device / "2")[0] == 0
    assert grader_main(["merge", str(tmp_path / "cpu" / "combined"), str(tmp_path / "gpu" / "combined"),
                        "--out", str(tmp_path / "final"), "--fail-on-pending"]) == 0
    final = csv.DictReader((tmp_path / "final" / "grades.csv").open())
    rows = {r["student"]: (r["score"], r["pending"]) for r in final}
    assert rows == {s: ({"alice": "9", "bob": "6"}.get(s, "2"), "0") for s in CLASS}


def test_combine_refuses_mixed_versions_double_grading_and_missing_shards(tmp_path, capsys):
    dirs = [tmp_path / f"s{k}" for k in (1, 2, 3)]
    for k, d in enumerate(dirs, 1):
        _fake_shard(d, k, 3)
    out = tmp_path / "out"
    # a missing shard: named, with the students it owns
    code, text = _combine(out, dirs[0], dirs[2], capsys=capsys)
    owned_by_2 = [s for s in CLASS if shard_of(s, 3) == 2]
    assert code == 2 and "shard 2 of 3 is missing" in text and all(s in text for s in owned_by_2), text
    assert not out.exists()
    # mixed kit versions
    _fake_shard(tmp_path / "old2", 2, 3, version="0.1.0")
    code, text = _combine(out, dirs[0], tmp_path / "old2", dirs[2], capsys=capsys)
    assert code == 2 and "mixed kit versions" in text and "0.1.0" in text and not out.exists()
    # one submission graded twice with different files
    victim = owned_by_2[0]
    _fake_shard(tmp_path / "again2", 2, 3, sha={victim: "f" * 64})
    code, text = _combine(out, *dirs, tmp_path / "again2", capsys=capsys)
    assert code == 2 and f"{victim}: graded twice with different files" in text and not out.exists()
    # shards of different N, and a shard that saw a student its owner never graded
    _fake_shard(tmp_path / "n4", 2, 4)
    code, text = _combine(out, dirs[0], tmp_path / "n4", capsys=capsys)
    assert code == 2 and "mixed shard counts" in text
    late = next(s for s in ("hank", "ivy", "jon", "kim", "lee") if shard_of(s, 3) == 1)
    _fake_shard(tmp_path / "more3", 3, 3, seen=CLASS + [late])
    code, text = _combine(out, dirs[0], dirs[1], tmp_path / "more3", capsys=capsys)
    assert code == 2 and f"{late} (shard 1)" in text and not out.exists()
    # not a shard at all; an OUT holding something else
    (tmp_path / "plain").mkdir()
    code, text = _combine(out, dirs[0], dirs[1], tmp_path / "plain", capsys=capsys)
    assert code == 2 and "not a finished shard" in text
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    code, text = _combine(tmp_path / "busy", *dirs, capsys=capsys)
    assert code == 2 and (tmp_path / "busy" / "notes.txt").read_text() == "mine"


# -- GitHub Actions: the instructor's matrix workflow -------------------------------------------

def test_actions_matrix_workflow_is_valid_and_shards_the_roster(tmp_path):
    from tests.kit.test_integrations import _check_workflow

    text = workflow("cs101-fall", "hw1-", 4, ("memory",))
    path = tmp_path / "grade-class.yml"
    assert grader_main(["actions", "--org", "cs101-fall", "--prefix", "hw1-", "--shards", "4", "--module", "memory",
                        "--out", str(path)]) == 0
    assert path.read_text() == text
    proc = _check_workflow(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = yaml.safe_load(text)
    jobs = doc["jobs"]
    assert set(jobs) == {"roster", "grade", "combine"}
    assert jobs["grade"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and jobs["grade"]["needs"] == "roster"
    assert jobs["combine"]["needs"] == "grade" and doc["env"] == {"ORG": "cs101-fall", "PREFIX": "hw1-", "SHARDS": "4"}
    runs = {name: "\n".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    import re

    grade_cmd = 'grade submissions --shard "${{ matrix.shard }}/$SHARDS" --roster roster.txt --out shard'
    assert grade_cmd in re.sub(r"\\\n\s*", "", runs["grade"])  # continued lines joined
    assert "--module memory" in runs["grade"] and "grader combine results shards/shard-*" in runs["combine"]
    for name, script in runs.items():  # every step's shell parses (GitHub's expressions stood in for)
        parsed = subprocess.run(["bash", "-n"], input=re.sub(r"\$\{\{[^}]*\}\}", "X", script), text=True,
                                capture_output=True)
        assert parsed.returncode == 0, f"{name}: {parsed.stderr}"
    for bad in (["--org", "a b"], ["--org", "x", "--prefix", "$(id)"], ["--org", "x", "--shards", "0"]):
        assert grader_main(["actions", *bad, *(["--shards", "2"] if "--shards" not in bad else []),
                            "--out", str(tmp_path / "bad.yml")]) == 2
    assert not (tmp_path / "bad.yml").exists()
    # each matrix job clones the names of its shard: disjoint, covering
    roster = tmp_path / "roster.txt"
    roster.write_text("\n".join(f"hw1-{s}" for s in CLASS) + "\n# a comment\n\n")
    picked = []
    for k in range(1, 5):
        proc = subprocess.run([sys.executable, "-m", "grader.cluster.shard", f"{k}/4", "--roster", str(roster)],
                              capture_output=True, text=True, cwd=KIT_ROOT, check=True)
        picked += proc.stdout.split()
    assert sorted(picked) == sorted(f"hw1-{s}" for s in CLASS)


# -- Slurm ----------------------------------------------------------------------------------------

def test_slurm_scripts_are_written_and_quoted(tmp_path):
    subs = tmp_path / "my subs"
    subs.mkdir()
    out = tmp_path / "out dir"
    assert grader_main(["slurm", str(subs), "--out", str(out), "--tasks", "3", "--device", "cuda",
                        "--partition", "gpu", "--time", "1:00:00", "--module", "memory"]) == 0
    grade = (out / "slurm" / "grade.sbatch").read_text()
    submit = (out / "slurm" / "submit.sh").read_text()
    assert f"'{subs}'" in grade and '--shard "$K/3"' in grade and "--device cuda" in grade
    assert "--array=0-2" in submit and "--gres=gpu:1" in submit and "--partition=gpu" in submit
    assert 'afterok:"${jid%%;*}"' in submit and "--kill-on-invalid-dep=yes" in submit
    for script in ("grade.sbatch", "combine.sbatch", "submit.sh"):
        assert subprocess.run(["bash", "-n", str(out / "slurm" / script)]).returncode == 0
    assert grader_main(["slurm", str(tmp_path / "nope"), "--out", str(tmp_path / "o2"), "--tasks", "2"]) == 2
    assert not (tmp_path / "o2").exists()


SLURM_BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OneNodeSlurm:
    """slurmctld + slurmd on localhost with their own munged, all in `root` (needs root)."""

    def __init__(self, root: Path):
        self.root = root
        self.procs: list[subprocess.Popen] = []
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.root / f"{name}.stdout", "wb")
        self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=self.env, start_new_session=True))
        log.close()

    def start(self) -> None:
        r = self.root
        for d in ("munge", "state", "spool"):
            (r / d).mkdir(mode=0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        sock = r / "munge" / "munge.socket"
        self._spawn("munged", ["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                               f"--log-file={r / 'munge' / 'munged.log'}", f"--pid-file={r / 'munge' / 'munged.pid'}",
                               f"--seed-file={r / 'munge' / 'munged.seed'}"])
        node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
        node = " ".join(f for f in node.split() if not f.startswith(("NodeName=", "UpTime=")))
        self.conf.write_text(f"""\
ClusterName=kittest
SlurmctldHost=localhost
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'slurmctld.log'}
SlurmdLogFile={r / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 {node} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
        time.sleep(0.5)
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", str(self.conf)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = self.run("sinfo", "-h", "-N", "-o", "%T").stdout.strip()
            if state in ("idle", "mixed", "allocated"):
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        raise RuntimeError(f"the Slurm node did not come up (sinfo: {state!r}):\n{self.logs()}")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), capture_output=True, text=True, env=self.env, timeout=60)

    def logs(self) -> str:
        out = []
        files = [*sorted(self.root.glob("*.log")), *sorted(self.root.glob("*.stdout")),
                 self.root / "munge" / "munged.log"]
        for f in files:
            if f.is_file():
                out.append(f"--- {f.name}\n" + f.read_text(errors="replace")[-3000:])
        return "\n".join(out)

    def stop(self) -> None:
        try:
            jobs = self.run("squeue", "-h", "-o", "%i").stdout.split()
            if jobs:
                self.run("scancel", *{j.split("_")[0] for j in jobs})
                time.sleep(2)
        except Exception:  # noqa: BLE001 - the daemons are stopped below regardless
            pass
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)


def _slurm_or_skip() -> None:
    missing = [b for b in SLURM_BINARIES if shutil.which(b) is None]
    if missing and not os.environ.get("KIT_REQUIRE_SLURM"):
        pytest.skip(f"no Slurm here ({', '.join(missing)} missing; `apt-get install -y slurm-wlm munge`)")
    assert not missing, f"KIT_REQUIRE_SLURM is set but {', '.join(missing)} are missing"
    if os.geteuid() != 0 and not os.environ.get("KIT_REQUIRE_SLURM"):
        pytest.skip("the one-node Slurm cluster of this test needs root")
    assert os.geteuid() == 0, "KIT_REQUIRE_SLURM is set but this test needs root to start slurmd"


def _class(root: Path) -> Path:
    """Six small submissions of the memory module: right, stub, half right, broken, empty, archive."""
    solution = (KIT_ROOT / "solutions" / "memory.py").read_text()
    stub = (KIT_ROOT / "assignment" / "memory.py").read_text()
    subs = root / "subs"
    files = {"ana": solution, "ben": stub, "cho": solution.replace("return", "return 0 +", 1),
             "dia": solution + "\ndef broken(:\n", "eli": None}
    for student, text in files.items():
        (subs / student / "assignment").mkdir(parents=True)
        if text is not None:
            (subs / student / "assignment" / "memory.py").write_text(text)
    import zipfile

    with zipfile.ZipFile(subs / "fay.zip", "w") as zf:
        zf.writestr("assignment/memory.py", solution)
    return subs


def _totals(folder: Path) -> dict[str, tuple[str, str, str]]:
    return {r["student"]: (r["score"], r["max_score"], r["status"]) for r in
            csv.DictReader((folder / "grades.csv").open(encoding="utf-8"))}


def test_slurm_array_job_grades_like_one_run(tmp_path):
    """A real one-node Slurm: `grader slurm --tasks 4 --submit`, then the combined grades equal one run's."""
    _slurm_or_skip()
    subs = _class(tmp_path)
    single = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(subs), "--out", str(tmp_path / "one"),
                             "--module", "memory", "-j", "2", "--no-progress"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=600)
    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-3000:]
    cluster = OneNodeSlurm(tmp_path / "slurm")
    (tmp_path / "slurm").mkdir()
    try:
        cluster.start()
        out = tmp_path / "batch"
        proc = subprocess.run([sys.executable, "-m", "grader.cli", "slurm", str(subs), "--out", str(out),
                               "--tasks", "4", "--module", "memory", "--cpus-per-task", "1", "--submit"],
                              capture_output=True, text=True, env=cluster.env, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr + cluster.logs()
        array, combine = proc.stdout.split()[-2:]
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            queued = cluster.run("squeue", "-h", "-j", f"{array},{combine}", "-o", "%i %T").stdout.strip()
            if not queued:
                break
            time.sleep(2)
        logs = "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-2000:]}"
                         for f in sorted((out / "slurm").glob("*.out")))
        assert not queued, f"jobs still queued after 240 s: {queued}\n{logs}\n{cluster.logs()}"
        assert (out / "combined" / "grades.csv").is_file(), logs + cluster.logs()
    finally:
        cluster.stop()
    combined = out / "combined"
    assert _totals(combined) == _totals(tmp_path / "one")
    assert sorted(_totals(combined)) == ["ana", "ben", "cho", "dia", "eli", "fay"]
    assert {json.loads((out / "shards" / str(k) / "instructor" / "shard.json").read_text())["shard"][0]
            for k in range(1, 5)} == {1, 2, 3, 4}
    one, many = Layout(tmp_path / "one"), Layout(combined)
    for s in ("ana", "cho"):  # the same sandbox ran, test by test the same outcomes
        a, b = (json.loads(lay.results(s).read_text()) for lay in (one, many))
        assert a["extra_data"]["sandbox"] == b["extra_data"]["sandbox"]
        assert [(t["name"], t["score"]) for t in a["tests"]] == [(t["name"], t["score"]) for t in b["tests"]]
    assert grader_main(["report", str(combined), "--out", str(tmp_path / "report.html")]) == 0


def test_roster_shard_with_nothing_here_lists_absent_students(tmp_path, capsys):
    """A GitHub Actions shard whose clones failed: its roster students are listed as not graded."""
    roster = tmp_path / "roster.txt"
    roster.write_text("\n".join(CLASS) + "\n")
    (tmp_path / "submissions").mkdir()
    code = grader_main(["grade", str(tmp_path / "submissions"), "--shard", "2/3", "--roster", str(roster),
                        "--out", str(tmp_path / "s2"), "--module", "memory"])
    assert code == 0
    manifest = json.loads((tmp_path / "s2" / "instructor" / "shard.json").read_text())
    absent = [s for s in CLASS if shard_of(s, 3) == 2]
    assert manifest["seen"] == CLASS and manifest["absent"] == absent and manifest["owned"] == {}
    for k in (1, 3):
        _fake_shard(tmp_path / f"s{k}", k, 3, version=manifest["kit_version"])  # as the real shard's kit
        (tmp_path / f"s{k}" / "instructor" / "shard.json").write_text(json.dumps({
            **json.loads((tmp_path / f"s{k}" / "instructor" / "shard.json").read_text()),
            "kit_version": manifest["kit_version"], "graded_with": manifest["graded_with"]}))
    capsys.readouterr()
    code, text = _combine(tmp_path / "all", tmp_path / "s1", tmp_path / "s2", tmp_path / "s3", capsys=capsys)
    assert code == 1, text
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "all" / "grades.csv").open())}
    assert sorted(rows) == CLASS
    assert all(rows[s]["status"].startswith("error: no submission found") for s in absent)
    assert grader_main(["grade", str(tmp_path / "submissions"), "--roster", str(roster), "--out",
                        str(tmp_path / "x")]) == 2
