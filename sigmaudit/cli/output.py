"""Where rendered reports go, and in which format: stdout, or ``-o FILE`` written atomically after the
work succeeded. The one output contract of every command:

- ``--format`` given: that format; ``-o``'s suffix, when it names a known format, must agree;
- no ``--format``: the format ``-o``'s suffix names (``.json``, ``.md``, ``.csv``, ``.html``), else
  the command's default (a table on the terminal); an ``-o`` suffix naming no format is an error;
- ``-o -`` is stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..render import Format
from ..writers import write_file

SUFFIX_FORMATS = {".json": Format.json, ".md": Format.markdown, ".markdown": Format.markdown, ".csv": Format.csv,
                  ".html": Format.html, ".htm": Format.html, ".txt": Format.table}
"""Report formats named by an ``-o`` file's suffix."""


class ClosedPipe(Exception):  # noqa: N818 - not an error: the reader of standard output went away
    """Standard output was closed early (``| head -1``): raised past Typer, which would make it exit 1."""


def is_stdout(output: Path | None) -> bool:
    """No ``-o``, or ``-o -``."""
    return output is None or str(output) == "-"


def resolve_format(fmt: Format | None, output: Path | None, default: Format = Format.table,
                   offered: Sequence[Format] = tuple(Format)) -> Format:
    """The format to write (see the module docstring); ConfigError when ``--format`` and ``-o``
    disagree, ``-o`` names no known format, or the command does not offer the format."""
    named = None
    if not is_stdout(output):
        assert output is not None
        suffix = output.suffix.lower()
        named = SUFFIX_FORMATS.get(suffix)
        if named is None and fmt is None:
            known = ", ".join(sorted({s for s, f in SUFFIX_FORMATS.items() if f in offered}))
            raise ConfigError(f"cannot tell the format from the suffix {suffix or '(none)'!r}",
                              location=f"-o {output}", remedy=f"add --format, or name the file {known}")
        if fmt is not None and named is not None and named is not fmt:
            raise ConfigError(f"the file's suffix {suffix!r} says {named.value} but --format says {fmt.value}",
                              location=f"-o {output}", remedy="make them agree")
    chosen = fmt or named or default
    if chosen not in offered:
        raise ConfigError(f"this command does not write {chosen.value}", location="--format",
                          remedy="choose one of " + ", ".join(f.value for f in offered))
    return chosen


def stdout_is_terminal() -> bool:
    """True when stdout is an interactive terminal."""
    return sys.stdout.isatty()


def emit(text: str, output: Path | None) -> None:
    """Send a rendered report to stdout, or atomically to ``output`` (staged until the command's outputs
    are committed together: :func:`~sigmaudit.writers.run_outputs`). A Ctrl-C whose Stop was dropped on the
    way (:func:`.signals.check`) stops the run here, before any of the report is written."""
    from .signals import check

    check()
    write_file(Path("-") if output is None else output, text)  # devices and FIFOs written through


OUTPUT_FLAGS = {"output": "-o", "table_out": "-o", "junit": "--junit", "per_prompt": "--per-prompt",
                "alloc_out": "--alloc-out", "skip_out": "--skip-out", "log_out": "--log-out", "events": "--events",
                "drop_out": "--drop-out"}
"""The parameters that name a file a command writes, with their flags."""
REPORT_FILE_BY_DEFAULT = ("report", "watch", "reduce")
"""Commands whose report does not go to stdout when -o is not given (a file, or lines of their own)."""


def planned_outputs(command: str, params: dict[str, Any]) -> list[tuple[Path, str]]:
    """The files a command is asked to write, with their flags, reserved before any work; ConfigError
    when two outputs would both go to standard output (``check -f json --junit -``)."""
    outputs = [(Path(params[name]), flag) for name, flag in OUTPUT_FLAGS.items() if params.get(name) is not None]
    on_stdout = ["the report" if flag == "-o" else flag for path, flag in outputs if is_stdout(path)]
    if "output" in params and params["output"] is None and command not in REPORT_FILE_BY_DEFAULT:
        on_stdout.insert(0, "the report")
    if len(on_stdout) > 1:
        raise ConfigError(f"{' and '.join(on_stdout)} would both go to standard output", location=on_stdout[-1],
                          remedy="give all but one of them a file")
    return [(path, flag) for path, flag in outputs if not is_stdout(path)]


def note(message: str, *, always: bool = False, redacted: bool = False) -> None:
    """A one-line note on stderr (never mixed into the report); control characters escaped, a URL's secrets hidden
    (``redacted``: the caller hid them already, value by value). Under ``-q`` (:mod:`.settings`) only warnings and
    the ``always`` notes (what a config file set) are written."""
    from ..fmt import printable
    from .settings import current

    if current.quiet and not always and not message.lower().startswith(("warning", "error")):
        return

    if "://" in message and not redacted:  # a URL's credentials and signatures never reach the terminal or a CI log
        from ..loaders.remote import redact

        message = redact(message)
    sys.stderr.write(f"sigmaudit: {printable(message)}\n")


def filtered_note(filtered: Any) -> str:
    """The stderr warning for a post-filter dump (a :class:`~sigmaudit.loaders.options.Filtered`)."""
    if filtered.source == "statistics":
        return f"warning: {filtered.message}"
    return f"warning: post-filter dump ({filtered.source}): {filtered.message}"
