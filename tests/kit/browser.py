"""Open a page of the kit in Debian's headless Chromium, as the report tests do.

`open_page(page, tmp)` loads the file with the network sources off, takes a screenshot and dumps
the DOM; it fails the test when Chromium is missing, no screenshot came out, or the console
logged an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class Rendered:
    screenshot: Path
    dom: str
    console_errors: list[str]


def open_page(page: Path, tmp: Path, *, height: int = 2400) -> Rendered:
    exe = chromium()
    if exe is None:
        pytest.fail("headless Chromium is needed for this test: apt-get install -y chromium")
    shot = tmp / f"{page.stem}.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
             f"--window-size=1200,{height}"]
    env = {**os.environ, "HOME": str(tmp)}
    proc = subprocess.run([exe, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                          timeout=120, env=env)
    console_errors = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert shot.exists() and shot.stat().st_size > 10_000, f"no screenshot: {proc.stderr[-2000:]}"
    dom = subprocess.run([exe, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         env=env).stdout
    if os.environ.get("KIT_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["KIT_KEEP_SCREENSHOT"])
    return Rendered(shot, dom, console_errors)
