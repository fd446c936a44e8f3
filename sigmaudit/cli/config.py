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
command lacks is refused in one line naming the key and the file (with the nearest spelling); so are two spellings
of one option in one table. Values are typed strictly and paths follow the file's folder
(:mod:`.config_values`).

Every run prints one line naming the file and each value it set that nothing overrode (:func:`settings_note`),
whatever ``--quiet`` says; ``--debug`` prints, for each value not from the command line, where it came from, and
each ``pyproject.toml`` passed over. A ``pyproject.toml`` that is not sigmaudit's (no ``[tool.sigmaudit]``,
``tool`` not a table, a file that does not parse and shows no sigmaudit table) is passed over. An error in the
file is kept (:attr:`Config.error`) and raised when a command is about to run with it (:func:`raise_error`),
never for ``--version``, ``--help`` or shell completion.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError

ENV_PREFIX = "SIGMAUDIT"
"""``SIGMAUDIT_<COMMAND>_<OPTION>`` sets an option from the environment (click's ``auto_envvar_prefix``)."""
CONFIG_ENV = "SIGMAUDIT_CONFIG"
"""Names the config file, as ``--config`` does (the flag wins)."""
FILE_NAMES = ("sigmaudit.toml", "pyproject.toml")


TOP = "(top level)"
"""How an error names the shared keys of ``sigmaudit.toml`` (no table)."""
MAX_BYTES = 1 << 20
"""A config file larger than this (1 MiB) is refused: no settings file is that long, and ``--config /dev/zero``
must not read forever."""


@dataclass(frozen=True)
class Config:
    """The config file read for a run: where it is, and each command's defaults by parameter name."""

    path: Path | None = None
    table: str = ""
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    """(command, parameter) -> the table the value came from (``[tool.sigmaudit.check]``)."""
    written: dict[tuple[str, str], tuple[str, str, Any]] = field(default_factory=dict)
    """(command, parameter) -> (table, key as written, value as written): what the settings note prints."""
    error: ConfigError | None = None
    """The file could not be used: raised when a command runs (never for ``--version``, ``--help``, completion)."""
    passed_over: tuple[str, ...] = ()
    """Files passed over on the way up, and why (``--debug`` prints them)."""
    unread: Path | None = None
    """With ``--no-config``: the file that would have been read (a note says it was not)."""


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


_OURS = re.compile(r"""(?m)^[ \t]*(\[+[ \t]*)?(tool[ \t]*\.[ \t]*)?["']?sigmaudit["']?[ \t]*([.=\]]|$)""")
"""A line of a TOML file that does not parse which looks like sigmaudit's table (``[tool.sigmaudit]``,
``tool.sigmaudit.check = …``, ``sigmaudit = …`` under ``[tool]``): that file is not passed over."""


def find(start: Path | None = None, passed: list[str] | None = None) -> tuple[Path, str] | None:
    """The config file for a run started in ``start`` (the current folder): the first folder upwards holding
    ``sigmaudit.toml``, or a ``pyproject.toml`` with a ``[tool.sigmaudit]`` table. A ``pyproject.toml`` that is
    not sigmaudit's (no such table, ``tool`` not a table, a file that does not parse and shows no sigmaudit
    table, one that cannot be read) is passed over, with why appended to ``passed``."""
    passed = [] if passed is None else passed
    try:
        here = (start or Path.cwd()).resolve()
    except OSError as exc:  # the working folder was removed: nothing to find
        passed.append(f"the working folder: {exc.strerror or type(exc).__name__}")
        return None
    for folder in (here, *here.parents):
        if (folder / "sigmaudit.toml").is_file():
            return folder / "sigmaudit.toml", ""
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _holds_ours(pyproject, passed):
            return pyproject, "tool.sigmaudit"
    return None


def _holds_ours(pyproject: Path, passed: list[str]) -> bool:
    """``pyproject`` has a ``[tool.sigmaudit]`` entry (or does not parse yet shows one: then it is ours, and
    reading it gives the error)."""
    try:
        data = _read(pyproject)
    except ConfigError as exc:
        try:
            text = pyproject.read_bytes()[:MAX_BYTES].decode("utf-8", "replace")
        except OSError:
            text = ""
        if _OURS.search(text):
            return True
        passed.append(f"{pyproject} (not sigmaudit's, and {exc.message})")
        return False
    tool = data.get("tool")
    if tool is not None and not isinstance(tool, dict):
        passed.append(f"{pyproject} ([tool] is not a table)")
        return False
    if tool is None or "sigmaudit" not in tool:
        return False
    return True


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(exc.strerror or type(exc).__name__, location=str(path),
                          remedy="name a readable file with --config, or run with --no-config") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"larger than {MAX_BYTES // (1 << 20)} MiB: not a config file", location=str(path),
                          remedy="name the sigmaudit.toml or pyproject.toml with --config, or run with --no-config")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line, column = raw.count(b"\n", 0, exc.start) + 1, exc.start - raw.rfind(b"\n", 0, exc.start)
        raise ConfigError(f"not UTF-8 text (line {line}, column {column})", location=str(path),
                          remedy="save it as UTF-8, or run with --no-config") from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, tomllib.TOMLDecodeError) else "nested too deeply"
        raise ConfigError(f"not valid TOML: {reason}", location=str(path),
                          remedy="fix the file, or run with --no-config") from None


def load(named: Path | None, none: bool, commands: Callable[[], dict[str, Any]]) -> Config:
    """The run's :class:`Config`: ``named`` (else ``SIGMAUDIT_CONFIG``, else :func:`find`), checked against
    ``commands()`` (name -> click command, every command of the CLI; built only when a file is read). A file that
    cannot be used gives a Config holding the error (raised when a command runs: :func:`raise_error`)."""
    global used
    used = None
    passed: list[str] = []
    if none:
        try:
            found = find(passed=passed)
        except ConfigError:
            found = None
        return Config(unread=found[0] if found else None)
    try:
        return _load(named, commands, passed)
    except ConfigError as exc:
        return Config(error=exc, passed_over=tuple(passed))


def _named() -> Path | None:
    text = os.environ.get(CONFIG_ENV, "")
    return Path(text.strip()) if text.strip() else None


def _load(named: Path | None, commands: Callable[[], dict[str, Any]], passed: list[str]) -> Config:
    named = named if named is not None else _named()
    if named is not None:
        _usable(named)
        found: tuple[Path, str] | None = (named, "tool.sigmaudit" if named.name == "pyproject.toml" else "")
    else:
        found = find(passed=passed)
    if found is None:
        return Config(passed_over=tuple(passed))
    path, table = found
    data: Any = _read(path)
    for part in filter(None, table.split(".")):
        if not isinstance(data, dict):
            break
        if part not in data:
            raise ConfigError(f"has no [{table}] table", location=str(path),
                              remedy="add one, or name a sigmaudit.toml with --config")
        data = data[part]
    if not isinstance(data, dict):
        raise ConfigError(f"[{table}] is not a table", location=str(path), remedy="write it as a TOML table")
    return replace(_resolve(path, table, data, commands()), passed_over=tuple(passed))


def _usable(named: Path) -> None:
    """A file named with ``--config`` / ``SIGMAUDIT_CONFIG`` exists and is not a folder (a FIFO or a pipe,
    ``--config <(…)``, is read)."""
    import stat

    try:
        mode = named.stat().st_mode
    except FileNotFoundError:
        raise ConfigError("no such config file", location=str(named),
                          remedy="name an existing file, or run with --no-config") from None
    except OSError as exc:
        raise ConfigError(exc.strerror or type(exc).__name__, location=str(named),
                          remedy="name a readable file with --config, or run with --no-config") from None
    if stat.S_ISDIR(mode):
        raise ConfigError("is a folder, not a config file", location=str(named),
                          remedy=f"name the file: --config {named / 'sigmaudit.toml'} (or its pyproject.toml)")


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


def _unknown(message: str, key: str, known: Any, path: Path, remedy: str) -> ConfigError:
    """A key or table no command has, with the nearest spelling (``did you mean 'max-silent'?``)."""
    import difflib

    near = difflib.get_close_matches(key, sorted({k.replace("_", "-") for k in known}), n=1)
    return ConfigError(message, location=str(path), remedy=f"did you mean {near[0]!r}? ({remedy})" if near else remedy)


@dataclass
class _Reading:
    """What :func:`_resolve` has gathered so far."""

    path: Path
    shared: str
    """The shared table's label (``(top level)``, ``[tool.sigmaudit]``)."""
    commands: dict[str, Any]
    names: dict[str, dict[str, str]]
    defaults: dict[str, dict[str, Any]]
    origin: dict[tuple[str, str], str] = field(default_factory=dict)
    written: dict[tuple[str, str], tuple[str, str, Any]] = field(default_factory=dict)

    def put(self, command: str, key: str, value: Any, where: str, seen: dict[tuple[str, str], str]) -> None:
        """Set ``key`` of ``command`` from the table ``where`` (checked, its paths placed)."""
        from . import config_values as cv

        name = self.names[command][key]
        if (command, name) in seen:
            raise ConfigError(f"{where}: {seen[(command, name)]!r} and {key!r} both set "
                              f"--{key.replace('_', '-')}", location=str(self.path), remedy="keep one of them")
        seen[(command, name)] = key
        param = next(p for p in self.commands[command].params if p.name == name)
        shared = where == self.shared
        help_of = f"'sigmaudit {'COMMAND' if shared else command} --help'"
        typed = cv.checked(value, param, key, where, self.path, help_of, command if shared else None)
        self.defaults[command][name] = cv.placed(typed, param, key, where, self.path)
        self.origin[(command, name)] = f"{self.path} {where}"
        self.written[(command, name)] = (where, key, value)


def _resolve(path: Path, table: str, data: dict[str, Any], commands: dict[str, Any]) -> Config:
    names = {name: _names(cmd) for name, cmd in commands.items()}
    here = f"[{table}]" if table else TOP
    reading = _Reading(path, here, commands, names, {name: {} for name in commands})
    seen: dict[tuple[str, str], str] = {}
    for key, value in ((k, v) for k, v in data.items() if not isinstance(v, dict)):
        takers = [c for c, keys in names.items() if key in keys]
        if not takers:
            raise _unknown(f"{here}: {key!r} is not an option of any command", key,
                           {k for keys in names.values() for k in keys}, path,
                           "check the spelling against 'sigmaudit COMMAND --help'")
        for c in takers:
            reading.put(c, key, value, here, seen)
    for sub, values in ((k, v) for k, v in data.items() if isinstance(v, dict)):
        where = f"[{table + '.' if table else ''}{sub}]"
        if sub not in commands:
            raise _unknown(f"{where}: {sub!r} is not a command", sub, commands, path,
                           "name one of " + ", ".join(commands))
        seen = {}
        for key, value in values.items():
            if isinstance(value, dict) or key not in names[sub]:
                raise _unknown(f"{where}: {key!r} is not an option of {sub}", key, names[sub], path,
                               f"see 'sigmaudit {sub} --help'")
            reading.put(sub, key, value, where, seen)
    return Config(path=path, table=table, defaults={c: d for c, d in reading.defaults.items() if d},
                  origin=reading.origin, written=reading.written)


current = Config()
"""The config of the run in progress (what ``--debug`` reports)."""


def sources(command: str, ctx: Any) -> list[str]:
    """For ``--debug``: the config file read, and each parameter of ``command`` whose value came from it or from
    the environment, with where (nothing when every value is the command line's or built in)."""
    lines = [f"passed over {why}" for why in current.passed_over]
    lines += [f"config: {current.path}"] if current.path else []
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


def shown(path: Path) -> str:
    """A config file's path as a note names it: relative to the working folder when inside it
    (``./sigmaudit.toml``), else absolute."""
    try:
        here = Path.cwd()
        full = Path(os.path.abspath(path))
        return "./" + full.relative_to(here).as_posix() if full.is_relative_to(here) else str(full)
    except (OSError, ValueError):
        return str(path)


def in_effect(command: str, ctx: Any) -> tuple[tuple[str, str, Any], ...]:
    """The values of ``command`` the config file set and nothing overrode (not the command line, not the
    environment): (table as written, "" for top-level keys; key as written; value as written, a URL's secrets
    hidden), in file order."""
    out = []
    for (of, name), (where, key, value) in current.written.items():
        if of == command and getattr(ctx.get_parameter_source(name), "name", "") == "DEFAULT_MAP":
            out.append(("" if where == TOP else where, key, _safe(value)))
    return tuple(out)


def _safe(value: Any) -> Any:
    """``value`` as a note or a report may show it: a URL's credentials, query string and Spark Connect parameters
    as ``***`` (:func:`sigmaudit.loaders.remote.redact`, imported only for a value holding a URL)."""
    if isinstance(value, list):
        return [_safe(v) for v in value]
    if isinstance(value, str) and "://" in value:
        from ..loaders.remote import redact

        return redact(value)
    return value


used: tuple[str, tuple[tuple[str, str, Any], ...]] | None = None
"""The config file (as :func:`shown`) and :func:`in_effect` for the command running, set when it starts (a gate
writes them into its report); None when no file set anything."""


def settings_note(command: str, ctx: Any) -> str | None:
    """The note every run prints when values of ``command`` came from the config file, whatever ``--quiet``
    says: the file and each key it set, as written (``settings from ./sigmaudit.toml: [check] last-steps = 1,
    quiet = true``); with ``--no-config``, the file it did not read. None when the file set nothing here."""
    from ..fmt import settings_line

    global used
    values = in_effect(command, ctx) if current.path is not None else ()
    used = (shown(current.path), values) if current.path is not None and values else None
    if used is not None:
        return settings_line(*used)
    return f"--no-config: {shown(current.unread)} not read" if current.unread is not None else None


def raise_error() -> None:
    """Raise the config file's error, if any: a command is about to run with it."""
    if current.error is not None:
        raise current.error


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
