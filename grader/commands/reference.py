"""docs/COMMANDS.md, the command reference, written from the parser `grader.cli` builds.

The page holds every subcommand in the order `grader --help` lists them: its one-line help, its
usage, its description, every argument and option with its help, choices and default, grouped as
`grader COMMAND --help` groups them, and its epilog.  It is generated, never edited: `grader stubs`
writes it, and `grader release --check` and `tests/kit/test_docs.py` fail while it differs from
the parser, naming the command that rewrites it.  So what a command does is said once, in its
parser (the command families `grader.cli` builds it from), and the page cannot drift from it.

The parser is handed in (`grader.cli` sets it as ``args.grader_parser``): this module never
imports `grader.cli`, which imports the command families that import this module.

The page depends on nothing but the parser: no terminal width, no version, and an option whose
choices are the kit's modules reads ``MODULE`` (adding a module leaves it as it is).
"""

from __future__ import annotations

import argparse
import re
import textwrap
from pathlib import Path

from grader import KIT_ROOT, MODULES
from grader.commands.common import paragraphs

#: Where the page lives, relative to the kit's root.
REL = "docs/COMMANDS.md"
#: What `grader release --check` says when the page is stale.
STALE = f"{REL} differs from the command line's parser (`grader.cli`): run `grader stubs`"
WIDTH = 100

HEADER = """\
# Command reference: `grader`

<!-- Generated from the command line's parser by `grader stubs` (`grader.commands.reference`): do
not edit.  Change a command's help where its parser is built (`grader.cli` names each command
family's module), then run `grader stubs`; `grader release --check` and tests/kit/test_docs.py fail
while this page differs. -->

Every command of the kit's command line, as `grader COMMAND --help` says it.  Where to start:
[README.md](../README.md) (the three paths: student, instructor, TA); grading a class, the course
file, the late policy and the integrations: [INSTRUCTORS.md](INSTRUCTORS.md); how grading works
and what the sandbox guarantees: [ARCHITECTURE.md](ARCHITECTURE.md); environment variables:
[ENVIRONMENT.md](ENVIRONMENT.md).
"""


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in `grader --help`'s order."""
    sub = _subparsers(parser)
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    return [(name, helps.get(name, ""), p) for name, p in sub.choices.items()]


def _md(text: str) -> str:
    """Text for markdown: outside code spans, "<" is escaped (a path such as students/<id> is not a tag)."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "\\<") for p in parts)


def _wrap(text: str, first: str = "", rest: str = "") -> str:
    return textwrap.fill(_md(text), WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False)


def _block(text: str) -> str:
    """A description or an epilog: its paragraphs, bullets kept."""
    out = []
    for para in paragraphs(text):
        out.append("\n".join(_wrap(item[2:], "* ", "  ") if item.startswith("* ") else _wrap(item)
                             for item in para.split("\n")))
    return "\n\n".join(out)


def _modules_choice(action: argparse.Action) -> bool:
    return action.choices is not None and tuple(action.choices) == tuple(MODULES)


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    if _modules_choice(action):
        return "MODULE"
    if action.choices is not None:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper()


def _args(action: argparse.Action) -> str:
    """What follows the option (or is the positional argument): METAVAR, [METAVAR], METAVAR..."""
    if action.nargs == 0:
        return ""
    m = _metavar(action)
    return {None: m, "?": f"[{m}]", "+": f"{m}...", "*": f"[{m}...]"}.get(action.nargs, m)  # type: ignore[arg-type]


def _shown(action: argparse.Action) -> bool:
    return action.help is not argparse.SUPPRESS and not isinstance(action, (argparse._HelpAction,
                                                                            argparse._SubParsersAction))


def usage(prog: str, parser: argparse.ArgumentParser) -> str:
    """`prog POSITIONAL... --required X [--option Y] ...`, wrapped at `WIDTH` (positionals first, as the docs write them)."""
    tokens = [_args(a) for a in parser._actions if not a.option_strings and _shown(a)]
    for a in parser._actions:
        if a.option_strings and _shown(a):
            word = " ".join(filter(None, (a.option_strings[0], _args(a))))
            tokens.append(word if a.required else f"[{word}]")
    lines, line = [], prog
    for token in tokens:
        if len(line) + 1 + len(token) > WIDTH and line.strip():
            lines.append(line)
            line = " " * 4 + token
        else:
            line += " " + token
    return "\n".join(lines + [line])


def _default(action: argparse.Action) -> str | None:
    if action.default in (None, False, [], "", argparse.SUPPRESS) or action.nargs == 0:
        return None
    if isinstance(action, argparse._VersionAction):
        return None
    return f"{action.default:g}" if isinstance(action.default, float) else str(action.default)


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:  # argparse's own expansion: %(default)s, %(choices)s, %%
        params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = text % dict(params, prog=prog)
    text = " ".join(text.split())
    extra = []
    if isinstance(action, (argparse._AppendAction, argparse._AppendConstAction)) and "repeatable" not in text:
        extra.append("Repeatable.")
    if _modules_choice(action):
        extra.append("MODULE: a module's name, as its handout section and `solutions/` name it.")
    default = _default(action)
    if default is not None and "default" not in text.lower():
        extra.append(f"Default: `{default}`.")
    if action.required and action.option_strings:
        extra.append("Required.")
    if text and not text.endswith("."):
        text += "."
    return " ".join(filter(None, [text, *extra]))


def _actions(prog: str, parser: argparse.ArgumentParser) -> list[str]:
    out = []
    for group in parser._action_groups:
        shown = [a for a in group._group_actions if _shown(a)]
        if not shown:
            continue
        title = {"positional arguments": "Arguments", "options": "Options",
                 "optional arguments": "Options"}.get(group.title or "", group.title or "")
        out.append(f"{_md(title[:1].upper() + title[1:])}:\n")
        for a in shown:
            names = ", ".join(a.option_strings)
            head = " ".join(filter(None, (names, _args(a)))) if a.option_strings else _metavar(a)
            if not a.option_strings and a.nargs in ("+", "*"):
                head += "..."
            out.append(_wrap(_help(a, prog), f"* `{head}`: ", "  "))
        out.append("")
    return out


def render(parser: argparse.ArgumentParser) -> str:
    """docs/COMMANDS.md for `parser` (the one `grader.cli.build_parser` returns)."""
    cmds = commands(parser)
    lines = [HEADER]
    if parser.description:
        lines += [_block(parser.description), ""]
    top = [a for a in parser._actions if a.option_strings and _shown(a)]
    if top:
        lines += ["Options of `grader` itself: " + "; ".join(f"`grader {' '.join(a.option_strings)}`: {a.help}"
                                                           for a in top) + ".", ""]
    lines += ["| command | what it does |", "| --- | --- |"]
    lines += [f"| [`grader {name}`](#grader-{name}) | {_md(' '.join(help.split()))} |" for name, help, _ in cmds]
    lines.append("")
    for name, help, p in cmds:
        prog = f"grader {name}"
        lines += [f"## `{prog}`", "", _wrap(help[:1].upper() + help[1:] + ("" if help.endswith(".") else ".")), "",
                  "```text", usage(prog, p), "```", ""]
        if p.description:
            lines += [_block(p.description), ""]
        lines += _actions(prog, p)
        if p.epilog:
            lines += [_block(p.epilog), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def path(root: Path | None = None) -> Path:
    return (root or KIT_ROOT) / REL


def stale(parser: argparse.ArgumentParser, root: Path | None = None) -> list[str]:
    """[`STALE`] when docs/COMMANDS.md is missing or differs from the page `parser` gives; else []."""
    page = path(root)
    current = page.read_text(encoding="utf-8") if page.is_file() else None
    return [] if current == render(parser) else [STALE]


def write(parser: argparse.ArgumentParser, root: Path | None = None) -> bool:
    """Write docs/COMMANDS.md from `parser`; True when it changed."""
    page, text = path(root), render(parser)
    if page.is_file() and page.read_text(encoding="utf-8") == text:
        return False
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return True
