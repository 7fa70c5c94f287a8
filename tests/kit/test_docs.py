"""The docs say what the kit is and does (issue 25): module counts and names, the README's commands.

* every doc (README, handout, docs/*.md; CHANGELOG is history and may name old counts) that says
  "N modules" (digits or words) says `len(grader.MODULES)`, and every list of the modules (the
  handout's numbered sections, a table with a row per module, an inline list) names exactly
  `grader.MODULES`; a path to a module's file in the docs exists;
* the README's two commands take torch from PyTorch's CPU wheel index, and `.ci/run` runs the
  README's test command but for that index (CI reaches only a mirror that holds the CPU build);
* the README shows what a submissions folder looks like, and `grader grade` on a folder that does
  not exist prints that example (exit 2, nothing written); the student README shows
  `grader check --module`;
* the README is a guide, not a manual (issue 33): about 200 lines, none over 500 characters, and
  every page under docs/ it leads to exists;
* docs/COMMANDS.md is what `grader.commands.reference` writes from the command line's parser (a
  stale page fails, naming `grader stubs`), and every subcommand and every option is on it;
* docs/ENVIRONMENT.md names every KIT_* environment variable that grader/, tests/, bench/ and .ci/
  read or set, and nothing else.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import KIT_ROOT, MODULES
from grader.intake.discover import SUBMISSIONS_LAYOUT

pytestmark = pytest.mark.kit

DOCS = [KIT_ROOT / "README.md", KIT_ROOT / "handout.md", *sorted((KIT_ROOT / "docs").glob("*.md"))]
WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen twenty").split()
TORCH_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def _number(word: str) -> int:
    return int(word) if word.isdigit() else WORDS.index(word.lower())


def _text(path: Path) -> str:
    """A doc as its reader sees it: the generated numbers' markers gone (`grader.authoring.totals_docs`)."""
    from grader.authoring.totals_docs import plain

    return plain(path.read_text(encoding="utf-8"))


def test_the_docs_checked_are_there() -> None:
    names = {p.name for p in DOCS}
    assert {"README.md", "handout.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "STUDENT_README.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_count_is_the_number_of_modules(doc: Path) -> None:
    """"N modules" counts the assignment's modules; "three modules' worth" (a possessive) is not a count,
    and a line marked ``<!--measured-->`` states a measurement of its day (never rewritten)."""
    from grader.authoring.totals_docs import MEASURED, plain

    pattern = re.compile(rf"\b({'|'.join(WORDS)}|\d+)[ -](?:graded |assignment )?modules\b(?!')", re.IGNORECASE)
    raw = doc.read_text(encoding="utf-8").splitlines()
    wrong = [f"{doc.name}:{number}: {m.group(0)!r}" for number, line in enumerate(raw, start=1) if MEASURED not in line
             for m in pattern.finditer(plain(line)) if _number(m.group(1)) != len(MODULES)]
    assert not wrong, f"the assignment has {len(MODULES)} modules: " + "; ".join(wrong)


def test_a_wrong_count_would_be_found(tmp_path: Path) -> None:
    """(The check above can fail: a doc saying "ten modules" or "10 modules" is caught.)"""
    for text in ("all ten modules are graded", "the 10 modules", "Ten graded modules"):
        (tmp_path / "x.md").write_text(text)
        with pytest.raises(AssertionError, match="the assignment has"):
            test_every_module_count_is_the_number_of_modules(tmp_path / "x.md")


def test_the_handout_has_a_numbered_section_per_module_in_order() -> None:
    sections = re.findall(r"^## (\d+)\. `([a-z_0-9]+)`", _text(KIT_ROOT / "handout.md"), re.MULTILINE)
    assert [int(n) for n, _ in sections] == list(range(1, len(MODULES) + 1))
    assert tuple(name for _, name in sections) == MODULES


def _module_like(name: str) -> bool:
    return bool(re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+|[a-z]+[0-9]*", name))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_list_of_modules_names_exactly_the_modules(doc: Path) -> None:
    """A table whose first column holds three or more module names, or a comma-separated list of
    three or more backticked module names, lists every module and nothing else."""
    text, problems = _text(doc), []
    for table in re.findall(r"(?:^\|.*\|[ \t]*\n)+", text, re.MULTILINE):
        first = [row.split("|")[1].strip().strip("`*") for row in table.splitlines()]
        named = [c for c in first if c in MODULES]
        if len(named) >= 3:
            extra = [c for c in first[2:] if c not in MODULES and _module_like(c) and c not in ("total", "all")]
            if sorted(named) != sorted(MODULES) or extra:
                problems.append(f"table with {named + extra}")
    for run in re.findall(r"`[a-z_0-9]+`(?:,\s*(?:and\s+)?`[a-z_0-9]+`){2,}", text):
        names = re.findall(r"`([a-z_0-9]+)`", run)
        if sum(n in MODULES for n in names) >= 3 and set(names) <= set(MODULES) and set(names) != set(MODULES):
            problems.append(f"list {names}")
    assert not problems, f"{doc.name}: a list of modules that is not {MODULES}: {problems}"


def test_a_wrong_list_would_be_found(tmp_path: Path) -> None:
    """(The check above can fail: a module left out of a table or a list, or one that is not there.)"""
    rows = "| module | points |\n| --- | --- |\n"
    for text in (rows + "".join(f"| `{m}` | 1 |\n" for m in MODULES[:-1]) + "| total | 5 |\n",
                 rows + "".join(f"| {m} | 1 |\n" for m in MODULES) + "| attention | 1 |\n",
                 "the modules `memory`, `views`, `flops` and the rest"):
        (tmp_path / "x.md").write_text(text)
        with pytest.raises(AssertionError, match="a list of modules that is not"):
            test_every_list_of_modules_names_exactly_the_modules(tmp_path / "x.md")
    (tmp_path / "x.md").write_text(rows + "".join(f"| {m} | 1 |\n" for m in MODULES) + "| total | 1 |\n")
    test_every_list_of_modules_names_exactly_the_modules(tmp_path / "x.md")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_paths_to_module_files_exist(doc: Path) -> None:
    paths = re.findall(r"(?<![\w/])((?:assignment|solutions|tests/(?:public|hidden|probes|mutants|variants))/[a-z_0-9]+\.py)",
                       _text(doc))
    missing = [p for p in paths if not (KIT_ROOT / p).is_file()]
    assert not missing, f"{doc.name} names files that do not exist: {missing}"


def _commands(readme: str) -> list[str]:
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", readme, re.DOTALL)
            for line in block.splitlines() if line.startswith("python3 -m venv")]


def test_the_readme_takes_torch_from_the_cpu_index_and_ci_runs_its_test_command() -> None:
    readme = _text(KIT_ROOT / "README.md")
    grade, test = _commands(readme)
    assert grade.endswith("grader grade submissions/ --out results/ -j 2") and test.endswith("&& pytest")
    for command in (grade, test):
        assert f"pip install torch==2.13.0 {TORCH_INDEX} && pip install -e '.[dev]'" in command
    ci = next(line for line in _text(KIT_ROOT / ".ci" / "run").splitlines() if line.startswith("python3 -m venv"))
    assert ci.replace(" -q", "") == test.replace(f" {TORCH_INDEX}", ""), (ci, test)


@pytest.mark.parametrize("doc", ["README.md", "docs/STUDENT_README.md"])
def test_both_readmes_say_what_to_do_when_the_cpu_index_cannot_be_reached(doc: str) -> None:
    """Issue 33: where download.pytorch.org is unreachable, pip retries for minutes with no hint."""
    text = " ".join(_text(KIT_ROOT / doc).split())
    assert TORCH_INDEX in text and "Could not find a version that satisfies the requirement torch==2.13.0" in text
    assert "`pip install torch==2.13.0" in text and "several GB" in text  # the plain line, and its cost


def test_adding_a_module_says_how_a_whole_copy_mutant_gets_its_fingerprint() -> None:
    """Issue 33: the *Adding a module* steps never said `--refresh-fingerprints`, which a
    whole-definition mutant needs before `grader validate --module` passes."""
    steps = _text(KIT_ROOT / "docs" / "CONTRIBUTING.md").split("## Adding a module", 1)[1].split("\n## ", 1)[0]
    assert "`grader validate --refresh-fingerprints --module softclip`" in " ".join(steps.split())
    assert "thirteen" not in steps  # whatever number of modules the kit has


def test_the_readme_shows_the_submissions_folder_that_grade_asks_for(tmp_path: Path) -> None:
    readme = _text(KIT_ROOT / "README.md")
    section = readme.split("## What a submissions folder looks like", 1)[1].split("\n## ", 1)[0]
    example = [line.split()[0] for line in SUBMISSIONS_LAYOUT.splitlines() if line.startswith("  submissions/")]
    assert example == re.findall(r"^(submissions/\S+)", section, re.MULTILINE) and len(example) == 3
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "grade", "submissions/", "--out", "results/", "-j", "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "submissions: no such file or directory" in said, said
    assert all(path in said for path in example) and "one folder or archive per student" in said, said
    assert not (tmp_path / "results").exists()


def test_the_student_readme_shows_check_for_one_module() -> None:
    text = _text(KIT_ROOT / "docs" / "STUDENT_README.md")
    assert re.search(r"`grader check --module \w+`", text)
    assert f"({WORDS[len(MODULES)]} modules)" in text


def test_the_readme_is_a_guide_of_about_200_lines_that_leads_to_the_docs() -> None:
    """Issue 33: the README was a ~400-line reference manual with table rows of 2,700 characters."""
    lines = _text(KIT_ROOT / "README.md").splitlines()
    assert len(lines) <= 230, f"README.md has {len(lines)} lines: move the details to a page under docs/"
    long = [(n, len(line)) for n, line in enumerate(lines, start=1) if len(line) > 500]
    assert not long, f"README.md lines over 500 characters (line, length): {long}"
    linked = set(re.findall(r"\]\((docs/[A-Z_]+\.md)(?:#[\w-]+)?\)", _text(KIT_ROOT / "README.md")))
    pages = {f"docs/{p.name}" for p in (KIT_ROOT / "docs").glob("*.md")}
    assert pages - {"docs/STUDENT_README.md"} <= linked, f"pages under docs/ the README does not link: {pages - linked}"
    assert linked <= pages, f"the README links pages that do not exist: {linked - pages}"


def _parser():
    from grader.cli import build_parser

    return build_parser()


def test_the_commands_page_is_what_the_parser_gives() -> None:
    """docs/COMMANDS.md is generated (`grader stubs`); a hand edit or a changed help string makes it stale."""
    from grader.commands import reference

    assert reference.stale(_parser()) == [], reference.STALE


def test_a_stale_commands_page_would_be_found(tmp_path: Path) -> None:
    """(The check above can fail, and says which command rewrites the page.)"""
    from grader.commands import reference

    parser = _parser()
    assert reference.stale(parser, tmp_path) == [reference.STALE]  # no page at all
    assert reference.write(parser, tmp_path) and reference.stale(parser, tmp_path) == []
    assert not reference.write(parser, tmp_path)  # up to date: nothing rewritten
    page = reference.path(tmp_path)
    page.write_text(page.read_text().replace("Resumable", "Resumeable"))
    assert reference.stale(parser, tmp_path) == [reference.STALE] and "run `grader stubs`" in reference.STALE
    grade = next(p for name, _, p in reference.commands(parser) if name == "grade")
    grade.add_argument("--new-option", help="an option nobody documented")
    reference.write(_parser(), tmp_path)
    assert reference.stale(parser, tmp_path) == [reference.STALE]


def test_every_subcommand_and_option_is_on_the_commands_page() -> None:
    from grader.commands import reference

    parser = _parser()
    page = reference.path().read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## `grader ([\w-]+)`\n(.*?)(?=^## |\Z)", page, re.MULTILINE | re.DOTALL))
    commands = reference.commands(parser)
    assert [name for name, _, _ in commands] == list(sections), "every subcommand, in `grader --help`'s order"
    assert len(commands) >= 17
    for name, help, sub in commands:
        assert help and " ".join(help.split())[1:] in " ".join(sections[name].split()), name
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or not action.option_strings or action.option_strings == ["-h", "--help"]:
                continue
            for option in action.option_strings:
                assert re.search(rf"^\* `[^`]*{re.escape(option)}\b", sections[name], re.MULTILINE), (name, option)
    described = {name for name, _, sub in commands if sub.description}
    for name in ("check", "stubs", "release", "validate", "grade", "merge", "export", "doctor"):  # met first
        assert name in described, f"grader {name} has no description"


ENVIRONMENT = KIT_ROOT / "docs" / "ENVIRONMENT.md"
_ENV_NAME = re.compile(r"KIT_[A-Z0-9_]+")


def environment_variables() -> dict[str, set[str]]:
    """Every KIT_* environment variable the kit reads or sets -> the files that name it: string
    constants in the Python of grader/, tests/ and bench/ that are such a name (``os.environ.get(
    "KIT_X")``, ``ENV = "KIT_X"``, ``env={"KIT_X": ...}``) or hold a shell reference to one (``$KIT_X``,
    ``${KIT_X:-...}`` in a script the kit writes), and every KIT_* name in .ci/.  A name the `grader`
    package defines as a Python constant (KIT_ROOT) is not an environment variable; this file's
    examples are not read."""
    import grader

    found: dict[str, set[str]] = {}
    for top in ("grader", "tests", "bench"):
        for path in sorted((KIT_ROOT / top).rglob("*.py")):
            rel = str(path.relative_to(KIT_ROOT))
            if rel == "tests/kit/test_docs.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    names = re.findall(r"\$\{?(KIT_[A-Z0-9_]+)", node.value)
                    if _ENV_NAME.fullmatch(node.value):
                        names.append(node.value)
                    for name in names:
                        found.setdefault(name, set()).add(rel)
    for path in sorted((KIT_ROOT / ".ci").glob("*")):
        if path.is_file():
            for name in _ENV_NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
                found.setdefault(name, set()).add(str(path.relative_to(KIT_ROOT)))
    return {name: files for name, files in found.items() if not hasattr(grader, name)}


def test_every_environment_variable_is_on_the_environment_page_and_only_those() -> None:
    found = environment_variables()
    assert {"KIT_COURSE", "KIT_BUNDLE", "KIT_REQUIRE_SLURM", "KIT_GRADE_ARGS"} <= set(found)  # the scan works
    page = _text(ENVIRONMENT)
    listed = set(re.findall(r"^\| `(KIT_[A-Z0-9_]+)` \|", page, re.MULTILINE))
    missing = {name: sorted(files) for name, files in found.items() if name not in listed}
    assert not missing, f"KIT_* variables the code reads that docs/ENVIRONMENT.md does not list: {missing}"
    assert not listed - set(found), f"docs/ENVIRONMENT.md lists variables no code reads: {sorted(listed - set(found))}"
    named = set(_ENV_NAME.findall(page)) - {"KIT_ROOT"}
    assert named <= set(found), f"docs/ENVIRONMENT.md names variables no code reads: {sorted(named - set(found))}"


def test_a_variable_missing_from_the_environment_page_would_be_found(tmp_path: Path, monkeypatch) -> None:
    """(The check above can fail: a new os.environ.get("KIT_...") in grader/ is caught.)"""
    import tests.kit.test_docs as me

    real = environment_variables()
    monkeypatch.setattr(me, "environment_variables", lambda: {**real, "KIT_SOMETHING_NEW": {"grader/x.py"}})
    with pytest.raises(AssertionError, match="KIT_SOMETHING_NEW"):
        me.test_every_environment_variable_is_on_the_environment_page_and_only_those()
