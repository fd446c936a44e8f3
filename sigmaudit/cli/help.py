"""``--help`` for people: plain usage lines and metavars, ranges in words, no word or option cut at a hyphen.

Typer (0.29) draws a required argument as ``{PATH}...`` in the usage line, adds its type
(``PATH <list[str]>``) in the Arguments list and a range as ``[x>=1]``; click's text wrapper breaks
``--min-fidelity`` after ``--min-``. :class:`Command` and :class:`Group` (given to Typer with
``cls=``, its supported hook) draw ``PATH...``, ``[at least 1]`` and wrap only at spaces, so an
option and a ``\\b`` example block (shown verbatim) can be copied as printed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from typer.core import TyperCommand, TyperGroup

# Typer 0.29 runs on its own copy of click (typer._click): derive from the classes its commands use,
# found through the public TyperCommand, rather than from the click package.
_Context: Any = TyperCommand.context_class
_Formatter: Any = _Context.formatter_class

_NB_HYPHEN = "\u2011"
"""A non-breaking hyphen: stands in for '-' while text is wrapped, so a line never breaks at one."""

_RANGE = re.compile(r"(?<![\w.])(?:(-?[\d.]+)<=x<=(-?[\d.]+)|x>=(-?[\d.]+)|x<=(-?[\d.]+)|x>(-?[\d.]+)|x<(-?[\d.]+))")


def _num(text: str) -> str:
    return f"{int(text):,}" if re.fullmatch(r"-?\d+", text) else text


def _range_words(match: re.Match[str]) -> str:
    lo, hi, at_least, at_most, above, below = match.groups()
    if lo is not None:
        return f"{_num(lo)} to {_num(hi)}"
    if at_least is not None:
        return f"at least {_num(at_least)}"
    if at_most is not None:
        return f"at most {_num(at_most)}"
    return f"more than {_num(above)}" if above is not None else f"less than {_num(below)}"


def plain_ranges(text: str) -> str:
    """``[default: 200; x>=0]`` -> ``[default: 200; at least 0]`` (click's range notation in words)."""
    return _RANGE.sub(_range_words, text)


def argument_metavar(param: Any) -> str:
    """``PATH...`` for a required variadic argument, ``[PATH]...`` for an optional one (click's style)."""
    name = param.metavar or (param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return f"{name}..." if param.nargs != 1 else name


class HelpFormatter(_Formatter):  # type: ignore[misc]
    """click's formatter, wrapping only at spaces (never after a hyphen inside ``--min-fidelity``)."""

    def write_text(self, text: str) -> None:
        super().write_text(text.replace("-", _NB_HYPHEN))

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(a, b.replace("-", _NB_HYPHEN)) for a, b in rows], col_max, col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_NB_HYPHEN, "-")


class HelpContext(_Context):  # type: ignore[misc]
    """A context whose help uses :class:`HelpFormatter`."""

    formatter_class = HelpFormatter


class Command(TyperCommand):
    """A Typer command whose help shows ``PATH...`` (not ``{PATH}...`` / ``PATH <list[str]>``) and ranges in words."""

    context_class = HelpContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        import copy

        from . import settings
        from .config import envvar

        self._own = {p.name for p in self.params}
        taken = {o for p in self.params for o in (*p.opts, *p.secondary_opts)}
        self.params.extend(copy.copy(p) for p in settings.params()
                           if p.name not in self._own and not taken & {*p.opts, *p.secondary_opts})
        for param in self.params:  # SIGMAUDIT_CHECK_MAX_SILENT: named by the flag a user knows, not the parameter
            if param.param_type_name == "option" and param.envvar is None:
                param.envvar = envvar(self.name or "", param)

    def get_help_option(self, ctx: Any) -> Any:
        """Typer's ``--help`` option, converting its value without Pydantic (:mod:`.coerce`)."""
        from .coerce import give

        return give(super().get_help_option(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse the command's arguments, after raising the config file's error (the command is to run with that
        file): not for ``--help`` or shell completion, which need no config and must not break on one."""
        from .config import raise_error

        words = args[: args.index("--")] if "--" in args else args
        if not ctx.resilient_parsing and not {"--help", "-h"} & set(words):
            raise_error()
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """Run the command with its outputs reserved first and committed together after it succeeded
        (a verdict, exit 1, is a success; any other way out leaves no output: :func:`writers.run_outputs`)."""
        import typer

        from ..writers import run_outputs
        from . import startup
        from .output import ClosedPipe, planned_outputs

        startup.over()  # the command's own work runs with the collector as Python sets it
        from . import settings

        settings.take(ctx.params, self._own)
        from .settings import debugging

        if debugging():
            import sys

            from .config import sources

            for line in sources(self.name or "", ctx):
                sys.stderr.write(f"sigmaudit: debug: {line}\n")
        from .config import settings_note
        from .output import note

        told = settings_note(self.name or "", ctx)
        if told:
            note(told, always=True, redacted=True)  # never hidden, not even by a quiet = true in the file

        try:
            with run_outputs(planned_outputs(self.name or "", ctx.params)) as commit:
                try:
                    result = super().invoke(ctx)
                except typer.Exit as exc:
                    if exc.exit_code in (0, 1):
                        commit()
                    raise
                commit()
        except BrokenPipeError as exc:  # Typer would make it exit 1 ("gate failed")
            raise ClosedPipe from exc
        return result

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(argument_metavar(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record: Any = param.get_help_record(ctx)
            if record is None:
                continue
            name, text = record
            if param.param_type_name == "argument":
                args.append((argument_metavar(param), plain_ranges(text)))
            else:
                opts.append((name, plain_ranges(text)))
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


class Group(TyperGroup):
    """The ``sigmaudit`` group: its help wraps like the commands' (only at spaces)."""

    context_class = HelpContext

    def get_help_option(self, ctx: Any) -> Any:
        """Typer's ``--help`` option, converting its value without Pydantic (:mod:`.coerce`)."""
        from .coerce import give

        return give(super().get_help_option(ctx))
