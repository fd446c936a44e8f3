"""Regenerate (or check) the example outputs in README.md and docs/*.md from the current code.

Every fenced block whose first line starts with ``$ sigmaudit`` is an example: each ``$ CMD``
line in it is run from the repository root (``COLUMNS=100``, no colour; ``$ echo $?`` prints
the previous command's exit code) and the block is rewritten as the commands followed by what
they printed (stdout and stderr in the order a terminal shows them). A ``# comment`` after a command is kept but
not run.

    python scripts/readme_examples.py          # rewrite README.md and docs/*.md in place
    python scripts/readme_examples.py --check  # exit 1 and show the first difference if stale

``tests/test_docs.py`` runs the check, so neither the README nor the docs can drift from the tool.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(\$ sigmaudit.*?)^```\n", re.M | re.S)


def _run(command: str) -> tuple[int, str]:
    # one stream, unbuffered: stderr lines (notes, check's verdict) sit where a terminal shows them
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "PYTHONUNBUFFERED": "1"}
    env.pop("GITHUB_ACTIONS", None)
    argv = shlex.split(command)
    if argv[0] == "sigmaudit":
        argv = [sys.executable, "-m", "sigmaudit", *argv[1:]]
    proc = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    return proc.returncode, proc.stdout


def render_block(block: str) -> str:
    """The block with every command's output regenerated."""
    out: list[str] = []
    last = 0
    for line in block.splitlines():
        if not line.startswith("$ "):
            continue
        out.append(line)
        command = line[2:].split("  #", 1)[0].strip()
        if command == "echo $?":
            out.append(str(last))
            continue
        last, text = _run(command)
        out.extend(text.rstrip("\n").splitlines())
    return "\n".join(out) + "\n"


def regenerate(text: str) -> str:
    """README text with every example block regenerated."""
    return FENCE.sub(lambda m: m.group(0).replace(m.group(1), render_block(m.group(1))), text)


def main(argv: list[str]) -> int:
    stale = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        new = regenerate(text)
        if new == text:
            continue
        stale += 1
        if "--check" in argv:
            import difflib

            name = str(page.relative_to(ROOT))
            diff = difflib.unified_diff(text.splitlines(), new.splitlines(), name, "regenerated", lineterm="")
            sys.stdout.write("\n".join(list(diff)[:40]) + "\n")
        else:
            page.write_text(new, encoding="utf-8")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
