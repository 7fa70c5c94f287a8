"""Open a page of the kit in Debian's headless Chromium, as the report tests do.

`open_page(page, tmp)` loads the file with the network sources off, takes a screenshot and dumps
the DOM; it fails the test when Chromium is missing, no screenshot came out, or the console
logged an error.  `tops(page, tmp, selectors)` says where elements land on the rendered page
(what is on its first screen).  ``KIT_KEEP_SCREENSHOT=FILE`` keeps a copy of the screenshot
(a folder: one file per page, named after it), to look at.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The window the pages are drawn in: a laptop's browser window.
WIDTH = 1200
#: The first screen: what is in view before any scrolling.
FIRST_SCREEN = 900


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class Rendered:
    screenshot: Path
    dom: str
    console_errors: list[str]


def _flags(tmp: Path, height: int) -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
            f"--window-size={WIDTH},{height}"]


def _exe() -> str:
    exe = chromium()
    if exe is None:
        pytest.fail("headless Chromium is needed for this test: apt-get install -y chromium")
    return exe


def open_page(page: Path, tmp: Path, *, height: int = 2400) -> Rendered:
    exe = _exe()
    shot = tmp / f"{page.stem}.png"
    flags = _flags(tmp, height)
    env = {**os.environ, "HOME": str(tmp)}
    proc = subprocess.run([exe, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                          timeout=120, env=env)
    console_errors = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert shot.exists() and shot.stat().st_size > 10_000, f"no screenshot: {proc.stderr[-2000:]}"
    dom = subprocess.run([exe, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         env=env).stdout
    keep = os.environ.get("KIT_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, Path(keep) / f"{page.stem}-{height}.png" if Path(keep).is_dir() else keep)
    return Rendered(shot, dom, console_errors)


_PROBE = """<script>
document.body.setAttribute("data-kit-tops", JSON.stringify(%s.map(function (s) {
  var e = document.querySelector(s); return e ? e.getBoundingClientRect().top + window.scrollY : null; })));
</script>"""


def tops(page: Path, tmp: Path, selectors: list[str], *, height: int = FIRST_SCREEN) -> dict[str, float | None]:
    """selector -> the top of the first element it matches, in pixels from the top of the page drawn
    in a `WIDTH` x `height` window (None: nothing matches).  Measured on a copy of the page with one
    script appended at the end of its body (after every element measured, so nothing moves)."""
    probe = tmp / f"{page.stem}.tops.html"
    text = page.read_text(encoding="utf-8")
    at = text.rindex("</body>")
    probe.write_text(text[:at] + _PROBE % json.dumps(selectors) + text[at:], encoding="utf-8")
    dom = subprocess.run([_exe(), *_flags(tmp, height), "--dump-dom", probe.as_uri()], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "HOME": str(tmp)}).stdout
    found = re.search(r'data-kit-tops="([^"]*)"', dom)
    assert found, f"the page's layout could not be measured: {dom[-2000:]}"
    return dict(zip(selectors, json.loads(html.unescape(found.group(1)))))
