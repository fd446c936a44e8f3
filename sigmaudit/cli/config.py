"""Per-project defaults: ``sigmaudit.toml`` or ``[tool.sigmaudit]`` in ``pyproject.toml``.

Where an option's value comes from, first match wins (click's own order, which the CLI hands these to):

1. the command line;
2. the environment: ``SIGMAUDIT_<COMMAND>_<OPTION>`` (``SIGMAUDIT_CHECK_MAX_SILENT=0.5``);
3. the config file: the command's own table, then the shared table;
4. the built-in default.

The file is the first of ``sigmaudit.toml`` and ``pyproject.toml`` holding a ``[tool.sigmaudit]`` table found
from the current folder upwards (``sigmaudit.toml`` first within a folder: it exists for sigmaudit alone); ``sigmaudit
--config FILE`` names one (or ``SIGMAUDIT_CONFIG=FILE``) and ``sigmaudit --no-config`` reads none. In
``sigmaudit.toml`` the shared keys sit at the top level and each command's under ``[check]``, ``[scan]``, ...; in
``pyproject.toml`` under ``[tool.sigmaudit]`` and ``[tool.sigmaudit.check]``. A key is an option's long name
without its dashes (``max-silent``; ``max_silent`` too) or an argument's name (``paths``). A shared key applies to
every command that has that option; a key no command has, a command table naming no command, or a key that
command lacks is refused in one line naming the key and the file. ``--debug`` prints, for each value not from
the command line, where it came from.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

ENV_PREFIX = "SIGMAUDIT"
"""``SIGMAUDIT_<COMMAND>_<OPTION>`` sets an option from the environment (click's ``auto_envvar_prefix``)."""
CONFIG_ENV = "SIGMAUDIT_CONFIG"
"""Names the config file, as ``--config`` does (the flag wins)."""
FILE_NAMES = ("sigmaudit.toml", "pyproject.toml")


@dataclass(frozen=True)
class Config:
    """The config file read for a run: where it is, and each command's defaults by parameter name."""

    path: Path | None = None
    table: str = ""
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    """(command, parameter) -> the table the value came from (``[tool.sigmaudit.check]``)."""


def split_argv(argv: list[str]) -> tuple[list[str], Path | None, bool]:
    """``argv`` without the root's ``--config FILE`` / ``--config=FILE`` / ``--no-config`` (given before the
    command's name), the file named, and whether no file is to be read."""
    out: list[str] = []
    named: Path | None = None
    none = False
    words = list(argv)
    while words:
        word = words.pop(0)
        if not word.startswith("-") or word == "--":
            out += [word, *words]
            break
        if word == "--no-config":
            none = True
        elif word == "--config":
            if not words:
                raise ConfigError("--config needs a file", location="--config", remedy="--config sigmaudit.toml")
            named = Path(words.pop(0))
        elif word.startswith("--config="):
            named = Path(word.split("=", 1)[1])
        else:
            out.append(word)
    if named is not None and none:
        raise ConfigError("--config and --no-config contradict each other", location="--no-config",
                          remedy="give one of them")
    return out, named, none


def find(start: Path | None = None) -> tuple[Path, str] | None:
    """The config file for a run started in ``start`` (the current folder): the first folder upwards holding
    ``sigmaudit.toml``, or a ``pyproject.toml`` with a ``[tool.sigmaudit]`` table."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "sigmaudit.toml").is_file():
            return folder / "sigmaudit.toml", ""
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "sigmaudit" in _read(pyproject).get("tool", {}):
            return pyproject, "tool.sigmaudit"
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", location=str(path),
                          remedy="fix the file, or run with --no-config") from None
    except OSError as exc:
        raise ConfigError(exc.strerror or type(exc).__name__, location=str(path),
                          remedy="name a readable file with --config, or run with --no-config") from None


def load(named: Path | None, none: bool, commands: Callable[[], dict[str, Any]]) -> Config:
    """The run's :class:`Config`: ``named`` (else ``SIGMAUDIT_CONFIG``, else :func:`find`), checked against
    ``commands()`` (name -> click command, every command of the CLI; built only when a file is read)."""
    if none:
        return Config()
    if named is None and os.environ.get(CONFIG_ENV, "").strip():
        named = Path(os.environ[CONFIG_ENV].strip())
    if named is not None:
        if not named.is_file():
            raise ConfigError("no such config file", location=str(named),
                              remedy="name an existing file, or run with --no-config")
        found: tuple[Path, str] | None = (named, "tool.sigmaudit" if named.name == "pyproject.toml" else "")
    else:
        found = find()
    if found is None:
        return Config()
    path, table = found
    data: Any = _read(path)
    for part in filter(None, table.split(".")):
        data = data.get(part, {})
    if not isinstance(data, dict):
        raise ConfigError(f"[{table}] is not a table", location=str(path), remedy="write it as a TOML table")
    return _resolve(path, table, data, commands())


def _names(command: Any) -> dict[str, str]:
    """Config keys of a command -> its parameter names (``max-silent`` and ``max_silent`` -> ``max_silent``)."""
    out: dict[str, str] = {}
    for param in command.params:
        if param.name is None or param.name in ("help",):
            continue
        if param.param_type_name == "argument":
            out[param.name] = param.name
            continue
        for opt in (*param.opts, *param.secondary_opts):
            if opt.startswith("--"):
                out[opt[2:]] = param.name
                out[opt[2:].replace("-", "_")] = param.name
    return out


def _resolve(path: Path, table: str, data: dict[str, Any], commands: dict[str, Any]) -> Config:
    names = {name: _names(cmd) for name, cmd in commands.items()}
    here = f"[{table}]" if table else "(top level)"
    defaults: dict[str, dict[str, Any]] = {name: {} for name in commands}
    origin: dict[tuple[str, str], str] = {}
    shared = {k: v for k, v in data.items() if not isinstance(v, dict)}
    for key, value in shared.items():
        takers = [c for c, keys in names.items() if key in keys]
        if not takers:
            raise ConfigError(f"{here}: {key!r} is not an option of any command", location=str(path),
                              remedy="check the spelling against 'sigmaudit COMMAND --help'")
        for c in takers:
            defaults[c][names[c][key]] = value
            origin[(c, names[c][key])] = f"{path} {here}"
    for sub, values in ((k, v) for k, v in data.items() if isinstance(v, dict)):
        where = f"[{table + '.' if table else ''}{sub}]"
        if sub not in commands:
            raise ConfigError(f"{where}: {sub!r} is not a command", location=str(path),
                              remedy="name one of " + ", ".join(commands))
        for key, value in values.items():
            if isinstance(value, dict) or key not in names[sub]:
                raise ConfigError(f"{where}: {key!r} is not an option of {sub}", location=str(path),
                                  remedy=f"see 'sigmaudit {sub} --help'")
            defaults[sub][names[sub][key]] = value
            origin[(sub, names[sub][key])] = f"{path} {where}"
    return Config(path=path, table=table, defaults={c: d for c, d in defaults.items() if d}, origin=origin)


current = Config()
"""The config of the run in progress (what ``--debug`` reports)."""


def sources(command: str, ctx: Any) -> list[str]:
    """For ``--debug``: the config file read, and each parameter of ``command`` whose value came from it or from
    the environment, with where (nothing when every value is the command line's or built in)."""
    lines = [f"config: {current.path}"] if current.path else []
    for param in ctx.command.params:
        if param.name is None:
            continue
        kind = getattr(ctx.get_parameter_source(param.name), "name", "")
        if kind == "ENVIRONMENT":
            var = param.envvar
            lines.append(f"{param.name} = {ctx.params.get(param.name)!r} from the environment ({var})")
        elif kind == "DEFAULT_MAP":
            lines.append(f"{param.name} = {ctx.params.get(param.name)!r} from "
                         f"{current.origin.get((command, param.name), current.path)}")
    return lines


def origin_of(ctx: Any, param: Any) -> str | None:
    """Where a refused value came from when it was not the command line: the config table or the environment
    variable (an error names it, so the user knows which file or variable to fix)."""
    if ctx is None or param is None or getattr(param, "name", None) is None:
        return None
    kind = getattr(ctx.get_parameter_source(param.name), "name", "")
    if kind == "DEFAULT_MAP":
        return current.origin.get((ctx.info_name or "", param.name), str(current.path))
    if kind == "ENVIRONMENT":
        return param.envvar
    return None


def envvar(command: str, param: Any) -> str | None:
    """``SIGMAUDIT_<COMMAND>_<OPTION>``: the option's first long name in capitals (``check --max-silent`` ->
    ``SIGMAUDIT_CHECK_MAX_SILENT``; ``calc -G/--group-size`` -> ``SIGMAUDIT_CALC_GROUP_SIZE``)."""
    longs = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
    if not command or not longs:
        return None
    return f"{ENV_PREFIX}_{command}_{longs[0][2:]}".upper().replace("-", "_")
