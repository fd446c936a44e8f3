"""Option values without Pydantic, where a plain conversion is provably Typer's own.

Typer (0.29) converts every parameter's value through a Pydantic ``TypeAdapter``: importing Pydantic and
building the adapters of a command's ~30 parameters took ~0.15 s CPU of a 0.9 s ``scan`` of the sample log.
:func:`install` gives each parameter a :class:`PlainCoercion` (Typer's own per-parameter slot,
``_runtime_param``, which Typer fills lazily): a string, a flag, a whole number or decimal written the plain
way (``8``, ``-3``, ``0.05``, ``1e-3``) within the parameter's bounds, a choice that names one of its
values, a path. For those Pydantic returns exactly ``int(text)``, ``float(text)``, the choice, the path
(tests/test_cli_startup.py compares the two on every parameter of every command). Anything else (``08``,
``1_000``, ``inf``, a value out of bounds, a choice that names none) goes to Typer's Pydantic coercion, so
its values and its error messages are Typer's, unchanged.
"""

from __future__ import annotations

import math
import re
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

_UNSURE = object()
"""A value :func:`plain_value` leaves to Typer."""

_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?(?:[eE]-?[0-9]{1,2})?")
"""The plain ways to write a number (no sign '+', no leading zero, no '_', no spaces, no 'inf'/'nan'):
``int()`` and ``float()`` read them as Pydantic does (both round a decimal correctly)."""


def _unicode(text: str) -> bool:
    """No lone surrogate (undecodable bytes of argv) and no NUL: left to Typer."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def _number(kind: type, value: Any, info: Any) -> Any:
    if type(value) is kind and (kind is int or math.isfinite(value)):
        number = value
    elif kind is float and type(value) is int and abs(value) <= 2**53:
        number = float(value)  # an int default of a float option: Pydantic's float(value), exact
    elif type(value) is str and (_INT if kind is int else _FLOAT).fullmatch(value):
        number = kind(value)
        if kind is float and not math.isfinite(number):
            return _UNSURE
    else:
        return _UNSURE
    if info.clamp or (info.min is not None and not number >= info.min) or (
            info.max is not None and not number <= info.max):
        return _UNSURE
    return number


def plain_value(annotation: Any, value: Any, param: Any, ctx: Any) -> Any:
    """``value`` converted as Typer's Pydantic adapter would for ``annotation``, or :data:`_UNSURE`."""
    from typer._param_types import coerce_cli_choice, coerce_cli_path

    info = param.type_descriptor.parameter_info
    if annotation is bool:
        return value if type(value) is bool else _UNSURE
    if annotation is int or annotation is float:
        return _number(annotation, value, info)
    if annotation is str:
        return value if type(value) is str and _unicode(value) else _UNSURE
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        try:
            return coerce_cli_choice(value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
        except Exception:  # noqa: BLE001 - Typer's own coercion raises its own message
            return _UNSURE
    if annotation is Path and info.path_type is None:
        if type(value) is str and value and _unicode(value):
            value = Path(value)  # what Pydantic's Path validator returns for a str
        if not isinstance(value, Path):
            return _UNSURE
        try:
            return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
        except Exception:  # noqa: BLE001 - e.g. not readable: Typer's message names the text as typed
            return _UNSURE
    return _UNSURE


class PlainCoercion:
    """One parameter's runtime coercion (Typer's ``RuntimeParam.coerce`` contract): the plain conversion
    where :func:`plain_value` is sure, Typer's own coercion (built on first need) otherwise."""

    def __init__(self, param: Any) -> None:
        self.param = param
        self._typer: Any = None

    def typer(self) -> Any:
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self.param.type_descriptor)
        return self._typer

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        annotation = param.type_descriptor.annotation
        if many:
            if get_origin(annotation) is list and isinstance(value, list | tuple):
                items = [plain_value(get_args(annotation)[0], v, param, ctx) for v in value]
                if not any(item is _UNSURE for item in items):
                    return items
        elif get_origin(annotation) is None:
            plain = plain_value(annotation, value, param, ctx)
            if plain is not _UNSURE:
                return plain
        return self.typer().coerce(value, param=param, ctx=ctx)


def install(command: Any) -> None:
    """Give every parameter of ``command`` and of its subcommands a :class:`PlainCoercion` (:func:`give`)."""
    for cmd in [command, *(getattr(command, "commands", {}) or {}).values()]:
        for param in cmd.params:
            give(param)


def give(param: Any) -> Any:
    """``param`` with a :class:`PlainCoercion`, unless it has been coerced already, has a custom parser or a file
    type, or is not a Typer parameter with the slot (another Typer): then it keeps Typer's."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or getattr(param, "_runtime_param", _UNSURE) is not None:
        return param
    if desc.parameter_info.parser is None and desc.file_annotation is None:
        param._runtime_param = PlainCoercion(param)
    return param
