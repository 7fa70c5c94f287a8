"""Text a submission controls, shown to people: the one capping and escaping function.

Student ids, folder and archive names, exception messages, git's words, notes, the
submission's own output: anything a submission can steer is *untrusted text*.  Wherever a
person reads it (the instructor's terminal, a log they `cat`, a spreadsheet, a CI log), it goes
through `shown` (or `shown_markup` inside rich markup, `spreadsheet_cell` in a CSV):

* control and bidirectional-formatting characters are escaped (``\\x1b``, ``\\u202e``), so an
  escape sequence cannot repaint the screen, set the window title or hide text, and a
  right-to-left override cannot make ``exe.txt`` read ``txt.exe``;
* the result is capped (`LIMIT` characters by default), with ``…`` where it was cut, so a
  10,000-character name or message cannot flood a terminal or push the real lines away.

HTML pages escape with jinja2's autoescape instead (the same strings, made safe for HTML);
`shown` is for plain text.  The cap counts characters of the escaped text: what comes out is
never longer than `limit`.
"""

from __future__ import annotations

import unicodedata

#: Characters of untrusted text shown on one terminal line (a name, a message, git's words).
LIMIT = 300
#: A multi-line message built from already capped parts (a list of problems).
MESSAGE_LIMIT = 4000
#: One write to an instructor-only log (the trusted workers' pytest output), one console dump.
LOG_LIMIT = 64 * 1024
#: A spreadsheet cell (Excel refuses cells longer than 32,767 characters).
CELL_LIMIT = 32_000
#: Unicode categories escaped: controls, formats (bidi overrides, zero-width joiners...),
#: surrogates, line and paragraph separators.
_ESCAPED = ("Cc", "Cf", "Cs", "Zl", "Zp")


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _pieces(text: str, newlines: bool):
    for ch in text:
        yield ch if (newlines and ch in "\n\t") or unicodedata.category(ch) not in _ESCAPED else _escaped(ch)


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with control and bidirectional-formatting characters escaped (``\\x1b``, ``\\u202e``),
    not capped: for text already bounded by its writer (a capped log).  Newlines (and tabs) are
    kept with `newlines`.  Anything else: `shown`."""
    return "".join(_pieces(text, newlines))


def shown(value: object, limit: int = LIMIT, *, newlines: bool = False) -> str:
    """`value` (a str, or anything `str()` accepts) as it may be shown to a person: control and
    bidi characters escaped (`printable`; newlines and tabs kept with `newlines`), at most
    `limit` characters, ending in ``…`` when cut (never inside an escape).  Only the first
    `limit` characters of the input are looked at, so a huge value costs no more than a short one."""
    text = value if isinstance(value, str) else str(value)
    pieces = list(_pieces(text[: limit + 1], newlines))
    if len(text) <= limit and sum(map(len, pieces)) <= limit:
        return "".join(pieces)
    out, size = [], 0
    for piece in pieces:  # whole pieces only, and room for the ellipsis
        if size + len(piece) > limit - 1:
            break
        out.append(piece)
        size += len(piece)
    return "".join(out) + "…" if limit > 0 else ""


def shown_markup(value: object, limit: int = LIMIT, *, newlines: bool = False) -> str:
    """`shown`, then escaped for rich markup (``[red]`` in a name prints as text): for the
    pieces of a ``console.print("[yellow]...[/yellow]")`` line."""
    from rich.markup import escape

    return escape(shown(value, limit, newlines=newlines))


def spreadsheet_cell(value: object) -> str:
    """A CSV cell that no spreadsheet evaluates: `shown` (control characters escaped, at most
    `CELL_LIMIT` characters), and a leading ``= + - @`` (or tab/CR) prefixed with ``'`` (OWASP's
    CSV-injection advice)."""
    text = shown(value, CELL_LIMIT)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + text
    return text
