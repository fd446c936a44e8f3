#!/usr/bin/env python3
"""Render an HTML report in headless Chromium and write a PNG: look at the page as a reader would.

    python scripts/screenshot_report.py report.html -o report.png [--width 1280 --height 4000]

Runs Chromium with networking features off and a throw-away profile, so the
screenshot also shows whether the page stands on its own (a page that needed
the network would render with holes). Needs ``chromium`` (Debian:
``apt-get install chromium``) or ``--browser PATH``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_browser(explicit: str | None) -> str:
    """The browser to run: ``explicit``, else the first Chromium-like program on PATH."""
    if explicit:
        return explicit
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    sys.exit("screenshot_report: no chromium found on PATH; install it (apt-get install chromium) or pass --browser")


def screenshot(html: Path, png: Path, *, width: int = 1280, height: int = 4000, browser: str | None = None,
               timeout: float = 120.0) -> None:
    """Write ``png``: ``html`` rendered at ``width`` × ``height`` CSS pixels by headless Chromium."""
    exe = find_browser(browser)
    png = png.resolve()
    with tempfile.TemporaryDirectory(prefix="sigmaudit-chromium-") as profile:
        cmd = [
            exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size={width},{height}",
            html.resolve().as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not png.is_file():
        sys.stderr.write(proc.stderr[-2000:])
        sys.exit(f"screenshot_report: {exe} failed (exit {proc.returncode})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="the HTML file to render")
    parser.add_argument("-o", "--output", type=Path, help="PNG to write (default: next to the HTML, .png)")
    parser.add_argument("--width", type=int, default=1280, help="window width in CSS pixels")
    parser.add_argument("--height", type=int, default=4000, help="window height in CSS pixels")
    parser.add_argument("--browser", help="Chromium executable (default: found on PATH)")
    args = parser.parse_args(argv)
    if not args.html.is_file():
        parser.error(f"no such file: {args.html}")
    out = args.output or args.html.with_suffix(".png")
    screenshot(args.html, out, width=args.width, height=args.height, browser=args.browser)
    sys.stderr.write(f"screenshot_report: wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
