"""Where rendered reports go: stdout, or a file written atomically after the work succeeded."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError, InputError
from ..render import Format

_SUFFIX_FORMATS = {".json": Format.json, ".md": Format.markdown, ".markdown": Format.markdown, ".csv": Format.csv}


def resolve_format(fmt: Format | None, output: Path | None) -> Format:
    """The explicit ``--format``, else the one named by ``-o``'s suffix, else the table."""
    if fmt is not None:
        return fmt
    if output is not None:
        return _SUFFIX_FORMATS.get(output.suffix.lower(), Format.table)
    return Format.table


def stdout_is_terminal() -> bool:
    """True when stdout is an interactive terminal."""
    return sys.stdout.isatty()


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("folder does not exist", location=str(folder), remedy="create it or choose another -o path")
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
            fh.write(data)
        # mkstemp creates the file 0600; give it the mode a plain open() would (or the old file's).
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def emit(text: str, output: Path | None) -> None:
    """Send a rendered report to stdout, or atomically to ``output``."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if output.is_dir():
        raise ConfigError("is a directory", location=str(output), remedy="give -o a file name")
    write_atomic(output, text)


def note(message: str) -> None:
    """A one-line note on stderr (never mixed into the report)."""
    sys.stderr.write(f"sigmaudit: {message}\n")
