"""What a config file's value must be: the TOML type its option takes, and where a path in it points.

A value is checked as strictly as the command line checks the same option, and more strictly than click would
convert it: a TOML boolean is not a number (``max-silent = true`` is refused, not read as 1.0), a decimal is not
a whole number (``group-size = 8.0``), a number is not a string, and a flag takes ``true`` or ``false`` only. A
repeatable option or the ``paths`` argument takes a list, or one value (as the option given once); a single-valued
option refuses a list.

A relative path in a file is relative to that file's folder (as ruff, uv and coverage read theirs), so the same
file means the same thing from any working folder; a file that is not a regular file (``--config <(…)``, a FIFO)
has no folder of its own, and its paths follow the working folder. A file the command writes (``output``,
``junit``, ``skip-out``, ...) must lie inside that folder once symbolic links are followed: a file checked into a
repository cannot make a run write outside it (``../outside.json``, ``/tmp/x``, a link out). ``-`` (standard
output) is kept.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..fmt import toml_text

URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
"""A URL (``s3://``, ``https://``): kept as written (the scheme test of :func:`sigmaudit.loaders.remote.is_remote`,
whose import would load Polars for a ``calc``)."""
READ_PATHS = frozenset({"paths", "init_from", "dataset"})
"""The path parameters a command reads (``paths``, ``simulate --init-from``, ``curate --dataset``); every other
path option names a file a command writes, so a new option is kept inside the file's folder unless listed here."""
EXPECTED = {"bool": "true or false", "int": "a whole number", "float": "a number", "str": "a string"}
"""What each kind of option takes, in words."""


def param_kind(param: Any) -> str | None:
    """PATH, INT, FLOAT or TEXT for a Typer parameter's type (None: a choice or a flag)."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or getattr(desc, "is_choice", False) or getattr(param, "is_flag", False):
        return None
    if getattr(desc, "is_path", False):
        return "PATH"
    bare = getattr(param, "bare_type", None)
    name = (desc.ranged_type_name if getattr(desc, "is_ranged", False) else bare() if bare else "").lower()
    for key, kind in (("path", "PATH"), ("int", "INT"), ("float", "FLOAT"), ("str", "TEXT")):
        if key in name:
            return kind
    return None


def expected(param: Any) -> tuple[str | None, bool]:
    """The TOML kind a parameter's value takes (bool, int, float, str; None: not checked) and whether it takes
    several (a repeatable option, the ``paths`` argument)."""
    many = bool(getattr(param, "multiple", False)) or param.nargs == -1
    if getattr(param, "is_flag", False):
        return "bool", many
    desc = getattr(param, "type_descriptor", None)
    if desc is not None and getattr(desc, "is_choice", False):
        return "str", many
    return {"INT": "int", "FLOAT": "float", "PATH": "str", "TEXT": "str"}.get(param_kind(param) or ""), many


def _what(value: Any) -> str:
    for kind, words in ((bool, "a boolean"), (int, "a whole number"), (float, "a decimal number"),
                        (str, "a string"), (list, "a list"), (dict, "a table")):
        if isinstance(value, kind):
            return words
    return "a date or time"


def _fits(kind: str, value: Any) -> bool:
    if kind == "float":
        return type(value) in (int, float)
    return type(value) is {"bool": bool, "int": int, "str": str}[kind]


def checked(value: Any, param: Any, key: str, where: str, path: Path, help_of: str, shared: str | None = None) -> Any:
    """``value`` as the option takes it (one value of a repeatable option as a list), or ConfigError naming the
    key, the value, what was expected and the file (``shared``: the command refusing a shared key's value)."""
    kind, many = expected(param)
    if kind is None:
        return value
    if isinstance(value, list) and not many:
        taker = f" ({shared} takes one: move the list under the tables of the commands that take several)" \
            if shared else ""
        raise ConfigError(f"{where}: {key} = {toml_text(value)}: one value is expected, not a list{taker}",
                          location=str(path), remedy=f"write one {EXPECTED[kind].removeprefix('a ')}; "
                                                     f"see {help_of}")
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not _fits(kind, item):
            raise ConfigError(f"{where}: {key} = {toml_text(item)}: {EXPECTED[kind]} is expected, not {_what(item)}",
                              location=str(path), remedy=f"see {help_of}")
    return list(items) if many else value


def folder_of(path: Path) -> Path:
    """The folder a config file's relative paths start from: the file's own (the working folder for a file that
    is not a regular file: a pipe or a FIFO has no folder of its own)."""
    here = Path(os.path.abspath(path))
    return here.parent if here.is_file() else Path.cwd()


def placed(value: Any, param: Any, key: str, where: str, path: Path) -> Any:
    """A path value (the ``paths`` argument, a PATH option) relative to the file's folder; an output outside
    that folder (symbolic links followed) is refused."""
    if param.name != "paths" and param_kind(param) != "PATH":
        return value
    folder = folder_of(path)
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, str) or URL.match(item) or item == "-":
            out.append(item)
            continue
        if "\x00" in item:
            raise ConfigError(f"{where}: {key} holds a NUL character", location=str(path), remedy="remove it")
        full = folder / item
        if param.name not in READ_PATHS and not _inside(full, folder):
            flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
            raise ConfigError(f"{where}: {key} = {toml_text(item)} is outside the config file's folder {folder}",
                              location=str(path),
                              remedy=f"name a file inside that folder, or give {flag} on the "
                                     "command line")
        out.append(str(full))
    return out if isinstance(value, list) else out[0]


def _inside(full: Path, folder: Path) -> bool:
    """``full`` lies inside ``folder`` once every symbolic link of both is followed."""
    real, base = os.path.realpath(full), os.path.realpath(folder)
    return os.path.commonpath([real, base]) == base and real != base
