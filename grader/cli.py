"""The `grader` command: the parser and the dispatch (the commands live in `grader.commands`).

One module per command family: `grader.commands.student` (check), `grader.commands.instructor`
(stubs, release, validate, grade, doctor), `grader.commands.authoring` (new-module),
`grader.commands.integrations` (merge, gradescope, prairielearn,
classroom-payload, report, similarity, export) and `grader.commands.cluster` (grade --shard,
combine, slurm, actions).  Each registers its subcommands on the parser built here, in the
order `grader --help` lists them.  docs/COMMANDS.md is written from this parser
(`grader.commands.reference`, by `grader stubs`), which every command finds as ``args.grader_parser``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader import kit_version
from grader.commands import authoring, instructor, integrations, student
from grader.commands.common import CommandParser, abspath
from grader.console import output_console

DESCRIPTION = """The assignment kit's command line.  Students check their work (`grader check`); TAs
change the assignment and prove its tests (`grader stubs`, `validate`, `new-module`, `release`);
instructors grade a class in a sandbox and hand the grades on (`grader grade`, `merge`, `report`,
`export` and the integrations).

`grader COMMAND --help` says what one command does; docs/COMMANDS.md holds them all."""


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="grader", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {kit_version()}",
                        help="print the kit's version and exit")
    parser.set_defaults(grader_parser=parser)  # (`grader stubs` and `release --check`: docs/COMMANDS.md)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    student.add_parsers(sub)  # check
    instructor.add_parsers(sub)  # stubs, release, validate, grade
    authoring.add_parsers(sub)  # new-module
    integrations.add_parsers(sub)  # merge, gradescope, prairielearn, classroom-payload, report, similarity, export
    from grader.commands.cluster import add_parsers as _add_cluster_parsers  # grade --shard, combine, slurm, actions

    _add_cluster_parsers(sub)
    instructor.add_doctor_parser(sub)
    return parser


def _tolerant_output() -> None:
    """Where stdout or stderr cannot encode what the kit prints (Windows, output piped or in Git
    Bash: cp1252 has no "✗"), a character it cannot encode is printed as "?" instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "✗━".encode(stream.encoding or "ascii")
        except (UnicodeEncodeError, LookupError):
            try:
                stream.reconfigure(errors="replace")
            except (AttributeError, ValueError):
                pass


def main(argv: list[str] | None = None) -> int:
    _tolerant_output()
    args = build_parser().parse_args(argv)
    if args.command == "check" and args.path is None:
        args.path = "assignment" if not (Path.cwd() / "assignment").is_dir() else str(Path.cwd() / "assignment")
    elif args.command == "check" and str(args.path) not in ("solutions", "assignment"):
        args.path = str(abspath(args.path))
    return args.func(args, output_console())


if __name__ == "__main__":
    sys.exit(main())
