"""The ``sigmaudit`` command line: parse options, call the audits, pick a renderer.

Each command lives in ``sigmaudit/cli/commands/<name>.py``. Errors become one line
on stderr and exit code 2 here, at the edge; nothing else prints tracebacks.
"""

from __future__ import annotations

import os
import sys

import typer

from ..errors import SigmauditError
from ..exitcodes import ExitCode
from .help import Command, Group

_SETTINGS: dict[str, object] = {
    "cls": Group,
    "name": "sigmaudit",
    "help": (
        "Audit RL-with-verifiable-rewards rollout logs: how much compute sits in silent groups "
        "(all G answers agree, σ = 0, no update), which group size G to use, and where GRPO vs "
        "Dr. GRPO spend their gradient. Exit codes: 0 ok, 1 a gate/target failed, 2 could not run."
    ),
    "no_args_is_help": True,
    "rich_markup_mode": None,
    "add_completion": True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
    "pretty_exceptions_enable": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}
"""The Typer app's settings (one app with every command, or one with the command a run names)."""


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        sys.stdout.write(f"sigmaudit {version('sigmaudit')}\n")
        raise typer.Exit(0)


from .settings import DEBUG_ENV, debugging  # noqa: E402  (the run's flags live in settings)


def _set_debug(value: bool) -> None:
    from . import settings

    settings.current.debug = settings.current.debug or value


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", callback=_set_debug, is_eager=True,
        help=f"On an error, print its Python traceback on stderr before the one-line message (also {DEBUG_ENV}=1): "
             "for a bug report; also where each option's value came from (command line, environment, config file).",
    ),
    config_file: str = typer.Option(
        None, "--config", metavar="FILE", show_default=False,
        help="Read option defaults from FILE (sigmaudit.toml, or a pyproject.toml's [tool.sigmaudit]; a pipe "
             "too) instead of the first found from the current folder upwards (also SIGMAUDIT_CONFIG=FILE). "
             "Precedence: command line > environment (SIGMAUDIT_<COMMAND>_<OPTION>) > config file > built-in. "
             "Every value a file sets is printed on stderr; its relative paths follow its folder.",
    ),
    no_config: bool = typer.Option(False, "--no-config", help="Read no config file (what a CI gate should run)."),
) -> None:
    """Audit RL-with-verifiable-rewards rollout logs (see --help of each command)."""


COMMANDS: tuple[str, ...] = ("scan", "plan", "curate", "check", "calc", "trend", "forecast", "backtest", "simulate",
                             "report", "reduce", "watch")
"""The commands in the order ``--help`` lists them: each is the function of that name in ``commands/<name>.py``;
the app, not the module, registers it (so no command module imports this one). Each module's import is light
(heavy imports happen inside the command), and a run imports only the module of the command it names."""


def _new_app(names: tuple[str, ...]) -> typer.Typer:
    """A Typer app with the root options and the commands ``names``."""
    from importlib import import_module

    new = typer.Typer(**_SETTINGS)  # type: ignore[arg-type]
    new.callback()(_root)
    for name in names:
        new.command(cls=Command)(getattr(import_module(f".commands.{name}", __package__), name))
    return new


def _full_app() -> typer.Typer:
    built = globals().get("app")
    if built is None:
        globals()["app"] = built = _new_app(COMMANDS)
    return built


def __getattr__(name: str) -> typer.Typer:
    """``app``: the Typer app with every command, built on first use (PEP 562)."""
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PARAM_FLAGS = {"budget": "--budget", "eps": "--eps", "min_g": "--min-g", "max_g": "--max-g", "G": "-G",
               "g_main": "--g-main", "batch_prompts": "--batch-prompts", "max_p_silent": "--max-p-silent",
               "target_saving": "--target-saving", "max_lost": "--max-lost",
               "group_sizes": "-G", "rollouts_per_step": "--rollouts-per-step"}
"""Library parameter names -> the CLI flags that set them (library errors name parameters)."""


def _as_flags(exc: SigmauditError) -> str:
    """The error's one line, with a library parameter name in its location, message and remedy
    replaced by the flag that sets it (``budget must be at least 1`` -> ``--budget must ...``)."""
    import re

    if exc.location not in PARAM_FLAGS:
        return exc.one_line(MAX_MESSAGE)
    words = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, PARAM_FLAGS)) + r")(?![\w-])")

    def swap(text: str | None) -> str | None:
        return None if text is None else words.sub(lambda m: PARAM_FLAGS[m.group(1)], text)

    flagged = type(exc)(swap(exc.message) or "", location=None, remedy=swap(exc.remedy))
    return flagged.one_line(MAX_MESSAGE)


def _humanize(message: str) -> str:
    """Typer/pydantic validation text rewritten for a person, naming the flag first:
    ``Invalid value for '-G' / '--group-size': Input should be greater than or equal to 1`` becomes
    ``-G/--group-size: must be at least 1``."""
    import re

    message = re.sub(r" \(env var: '[^']*'\)", "", message)  # click's hint; the error names a variable it read
    m = re.match(r"Invalid value for (.+?): (.*)$", message, flags=re.S)
    if not m:
        return message
    flags = "/".join(re.findall(r"'([^']+)'", m.group(1))) or m.group(1)
    text = m.group(2).strip()
    text = re.sub(r"^Value error, ", "", text)
    bound = re.match(r"Input should be (greater|less) than( or equal to)? (\S+)$", text)
    if bound:
        word = {("greater", True): "at least", ("greater", False): "more than",
                ("less", True): "at most", ("less", False): "less than"}[(bound.group(1), bool(bound.group(2)))]
        text = f"must be {word} {bound.group(3)}"
    choice = re.match(r"'(.*)' is not one of (.*?)\.?$", text)
    if choice:
        options = ", ".join(re.findall(r"'([^']+)'", choice.group(2)))
        text = f"{choice.group(1)!r} is not a choice here; choose one of {options}"
    text = re.sub(r"^Input should be a valid integer.*", "must be a whole number", text)
    text = re.sub(r"^Input should be a valid number.*", "must be a number", text)
    return f"{flags}: {text}"


def _flag_first(message: str) -> str:
    """A library ``ValueError`` that starts with a parameter's name, named by its flag instead
    (``G must be a whole number >= 1, got 1e+20`` -> ``-G: must be ...``)."""
    name, sep, rest = message.partition(" must ")
    return f"{PARAM_FLAGS[name]}: must {rest}" if sep and name in PARAM_FLAGS else message


TYPER_CTRL_C = 130
"""What Typer's command returns (with ``standalone_mode=False``) when a KeyboardInterrupt reached it."""
MAX_MESSAGE = 400
"""An error line longer than this is cut (a hostile value must not flood the terminal)."""


def _traceback() -> None:
    """Under :func:`debugging`, the traceback of the exception being handled (not of a usage error: that
    one-line message is the whole story) on stderr."""
    import traceback

    from typer.exceptions import TyperException

    exc = sys.exc_info()[1]
    if exc is None or not debugging() or isinstance(exc, TyperException | typer.Exit | typer.Abort):
        return
    text = "".join(traceback.format_exception(exc))
    if "://" in text:  # a presigned URL's signature stays out of a bug report too
        from ..loaders.remote import redact

        text = redact(text)
    sys.stderr.write(text)


def _fail(message: str) -> int:
    from ..fmt import printable

    _traceback()

    text = " ".join(str(message).split())
    if "://" in text:  # a URL's credentials and signatures never reach the terminal or a CI log
        from ..loaders.remote import redact

        text = redact(text)
    text = printable(text)
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    sys.stderr.write(f"sigmaudit: error: {text}\n")
    if os.environ.get("GITHUB_ACTIONS"):  # exit 2 is a CI failure too: annotate it like a failed gate
        escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        sys.stderr.write(f"::error title=sigmaudit could not run::{escaped}\n")
    return int(ExitCode.ERROR)


def _os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or type(exc).__name__}"


def _tidy_metavars(command: object) -> None:
    """Plain metavars in --help (``PATH``, ``INT``, ``FLOAT``) instead of Typer's ``<list[Path]>`` and
    ``<int range>``: set on every parameter that does not name its own (an argument's ``...`` and its
    usage without braces come from :class:`~sigmaudit.cli.help.Command`)."""
    from .config_values import param_kind

    for sub in (getattr(command, "commands", {}) or {}).values():
        for param in sub.params:
            if param.metavar is not None:
                continue
            kind = param_kind(param)
            if kind is not None:
                param.metavar = kind


def _app_for(argv: list[str] | None) -> typer.Typer:
    """The app with only the command ``argv`` runs, when its first word (after ``--debug``) names one: Typer
    builds every registered command's parameters (~0.03 s for eleven, and their modules' imports ~0.01 s), and a
    command's parsing, help and errors do not depend on its siblings. Anything else (``--help``, ``--version``,
    no command, a mistyped one): the whole app."""
    words = list(sys.argv[1:] if argv is None else argv)
    while words and words[0] == "--debug":
        words.pop(0)
    if not words or words[0] not in COMMANDS:
        return _full_app()
    return _new_app((words[0],))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (0 ok, 1 gate failed, 2 could not run).

    Exit 1 comes only from a gate or target verdict (``typer.Exit(1)`` raised by ``check`` or
    ``plan``); every other way out, including a native crash (a Rust panic in a reader derives
    from BaseException), SIGINT and SIGTERM (:mod:`.signals`), is exit 2 with one line on stderr.
    """
    import warnings

    from . import settings, signals

    settings.reset()  # --debug and the global flags hold for one run (tests call main() many times in one process)

    previous = signals.handle()
    try:
        with warnings.catch_warnings():
            # numerical warnings (overflow in a closed form at extreme p, a long --title in matplotlib)
            # are not messages for the user: results are checked, and failures raise
            warnings.simplefilter("ignore")
            return _main(argv)
    finally:
        signals.restore(previous)


def _command(argv: list[str] | None) -> tuple[object, list[str]]:
    """The click command for ``argv`` (the root's ``--config`` / ``--no-config`` taken out and the config file
    read into :data:`config.current`), and the words it parses."""
    from . import coerce, config

    words, named, none = config.split_argv(list(sys.argv[1:] if argv is None else argv))
    config.current = config.load(named, none, lambda: dict(typer.main.get_command(_full_app()).commands))
    command = typer.main.get_command(_app_for(words))
    _tidy_metavars(command)
    coerce.install(command)  # option values without Pydantic where that is provably the same
    return command, words


def _config_defaults() -> dict[str, dict[str, object]]:
    """Each command's defaults from the config file read for this run (click's ``default_map``)."""
    from .config import current

    return current.defaults


def _usage_error(exc: Exception) -> int:
    """A usage error's one line: the flag first, where a refused value came from when not the command line
    (the config file or the environment), and the help to see."""
    from .config import origin_of

    if type(exc).__name__ == "NoArgsIsHelpError":  # bare `sigmaudit`: the help, on stderr, exit 2
        sys.stderr.write(exc.format_message().rstrip() + "\n")  # type: ignore[attr-defined]
        return int(ExitCode.ERROR)
    code = getattr(exc, "exit_code", 2)
    msg = _humanize(exc.format_message())  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    came = origin_of(ctx, getattr(exc, "param", None))
    if came:
        msg = f"{msg} (from {came})"
    name = getattr(exc, "option_name", None)
    if type(exc).__name__ == "NoSuchOption" and name in GLOBAL_OPTIONS and ctx is not None and ctx.parent is not None:
        msg = (f"no such option of {ctx.info_name}: {name} is a global option and goes before the command "
               f"('sigmaudit {name}{' FILE' if name == '--config' else ''} {ctx.info_name} ...')")
    if ctx is not None:
        msg = f"{msg} (see '{ctx.command_path} --help')"
    return _fail(msg) if code else 0


GLOBAL_OPTIONS = ("--config", "--no-config", "--debug", "--version")
"""Options of ``sigmaudit`` itself, given before the command (a command that is given one names where it goes)."""


def _main(argv: list[str] | None) -> int:
    import signal

    from typer.exceptions import TyperException

    from ..writers import guarding_inputs
    from .output import ClosedPipe
    from .signals import MESSAGES, Stop

    try:
        command, words = _command(argv)
        with guarding_inputs():
            rv = command.main(args=words, prog_name="sigmaudit", standalone_mode=False,  # type: ignore[attr-defined]
                              default_map=_config_defaults())
    except Stop as stop:
        return _fail(stop.message)
    except typer.Exit as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # Typer's own Ctrl-C handling (exit 130, silent)
            return _fail(MESSAGES[signal.SIGINT])
        code = int(exc.exit_code)
        return code if code in (0, 1, 2) else int(ExitCode.ERROR)
    except typer.Abort:
        return _fail("aborted")
    except SigmauditError as exc:
        return _fail(_as_flags(exc))
    except TyperException as exc:
        return _usage_error(exc)
    except MemoryError as exc:
        from ..errors import memory_shortage

        return _fail(_as_flags(memory_shortage(exc)))  # type: ignore[arg-type]
    except OverflowError as exc:
        return _fail(f"a value is too large to compute with ({type(exc).__name__}: {exc}); use smaller options")
    except RecursionError:
        return _fail("input nested too deeply to process")
    except ValueError as exc:
        return _fail(_flag_first(str(exc)))
    except KeyboardInterrupt:
        return _fail(MESSAGES[signal.SIGINT])
    except (BrokenPipeError, ClosedPipe):
        return closed_pipe()
    except OSError as exc:
        return _fail(_os_error(exc))
    except SystemExit as exc:  # a library calling sys.exit: never let it read as "gate failed"
        return int(ExitCode.OK) if exc.code in (0, None) else int(ExitCode.ERROR)
    except Exception as exc:  # noqa: BLE001 - a crash must never read as "gate failed"
        return _crash(exc)
    except BaseException as exc:  # noqa: BLE001 - e.g. pyo3's PanicException (a Rust panic)
        return _fail(f"internal error: a native library failed ({type(exc).__name__}: {exc}) (please report this, "
                     f"with the traceback 'sigmaudit --debug ...' prints)")
    if rv == TYPER_CTRL_C:  # Typer's own Ctrl-C handling: a silent return of 130
        return _fail(MESSAGES[signal.SIGINT])
    return int(rv) if isinstance(rv, int) else int(ExitCode.OK)


def _crash(exc: Exception) -> int:
    """An unexpected exception's one line: out of memory when it says so, an internal error otherwise (naming
    a memory limit, under which a library that could not load or allocate fails in its own words)."""
    from ..errors import limit_words, memory_shortage

    short = memory_shortage(exc)
    if short is not None:
        return _fail(_as_flags(short))
    if limit_words():
        return _fail(f"internal error: {type(exc).__name__}: {exc}, running{limit_words()}: if the limit is "
                     "tight, raise it; else please report this, with the traceback 'sigmaudit --debug ...' prints")
    return _fail(f"internal error: {type(exc).__name__}: {exc} (please report this, with the traceback "
                 f"'sigmaudit --debug ...' prints)")


def closed_pipe() -> int:
    """Standard output was closed early (a pipe into ``head``): nothing more goes there (its descriptor now
    points at /dev/null, so Python's flush at exit cannot fail), and the exit is :data:`ExitCode.CLOSED_PIPE`."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stream without a descriptor (in-process): nothing to redirect
        pass
    return int(ExitCode.CLOSED_PIPE)


def run() -> None:
    """Console-script entry point (signal handling from the first instant: see :func:`sigmaudit.cli.run`)."""
    from . import run as run_cli

    run_cli()
