"""The checks on an audit's arguments that the CLI makes with its option callbacks, for the library calls
(:mod:`sigmaudit.api`, :class:`~sigmaudit.audits.forecaster.Forecaster`): each raises
:class:`~sigmaudit.errors.ConfigError` naming the parameter, never a bare ValueError, TypeError, KeyError or
OverflowError from deeper down (issue 36 item 21). The CLI's callbacks apply the same rules to its flags
(:mod:`sigmaudit.cli.options`): one rule per argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

from ..errors import ConfigError

MIN_REPLICATES = 20
"""Fewest bootstrap replicates behind an interval: a percentile interval from fewer is noise."""
MAX_REPLICATES = 100_000
"""Most bootstrap replicates: at 100,000 the Monte Carlo error of a 5 % percentile's rank is
√(0.05·0.95/100,000) = 0.07 percentage points, far below the bootstrap's own error from a finite corpus;
more only costs time and memory (``--bootstrap 100000000`` ran out of memory; issue 44)."""

DEFAULT_RUN_STEPS = 100
"""S of "P(a run of S steps raises)" (DAPO's figures) when ``--run-steps`` is not given: here, not in
:mod:`.dapo`, so the CLI's check of the DAPO flags imports no DAPO code when none is given."""

MAX_GROUP_SIZE = 2**62
"""Largest group size any command takes (the core's rule: larger values wrap around in 64-bit integers)."""

MAX_PLAN_G = 65_536
"""The largest G ``plan`` evaluates (its sweep, its search and its allocation's ``--max-g``): no trainer samples
more answers per prompt in one step, and the exact binomial sums cost time in proportion to G (docs/theory.md)."""

MAX_STEP = 2**62
"""Largest training step magnitude a library call takes: forecasts look one step past the last, and the
per-group tables hold steps as 64-bit integers."""


def real(value: Any, name: str) -> float:
    """``value`` as a finite float (a bool, a string, NaN or ±inf is refused)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ConfigError(f"{name} must be a number, got {value!r}", location=name)
    out = float(value)
    if not math.isfinite(out):
        raise ConfigError(f"{name} must be a finite number, got {value!r}", location=name)
    return out


def rate(value: Any, name: str) -> float:
    """A probability or rate in [0, 1] (``--max-silent``, ``--max-lost``, ``--max-p-silent``...)."""
    out = real(value, name)
    if not 0.0 <= out <= 1.0:
        raise ConfigError(f"{name} must lie in [0, 1], got {value!r}", location=name)
    return out


def level(value: Any, name: str) -> float:
    """An interval level or a confidence strictly between 0 and 1."""
    out = real(value, name)
    if not 0.0 < out < 1.0:
        raise ConfigError(f"{name} must lie strictly between 0 and 1 (e.g. 0.9), got {value!r}", location=name)
    return out


def whole(value: Any, name: str, minimum: int = 1, maximum: int = MAX_GROUP_SIZE) -> int:
    """A whole number in [minimum, maximum] (a float with a fraction, a bool or a string is refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral | Real):
        raise ConfigError(f"{name} must be a whole number, got {value!r}", location=name)
    if not isinstance(value, Integral) and not (math.isfinite(value) and float(value).is_integer()):
        raise ConfigError(f"{name} must be a whole number, got {value!r}", location=name)
    out = int(value)
    if out < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value!r}", location=name)
    if out > maximum:
        raise ConfigError(f"{name} must be at most {_power(maximum)}, got {value!r}", location=name)
    return out


def _power(x: int) -> str:
    return f"2**{x.bit_length() - 1}" if x > 1 and x & (x - 1) == 0 else f"{x:,}"


def group_size(value: Any, name: str = "G") -> int:
    """A group size in [1, :data:`MAX_GROUP_SIZE`]."""
    return whole(value, name, 1, MAX_GROUP_SIZE)


def group_sizes(values: Any, name: str = "G") -> tuple[int, ...]:
    """A non-empty sequence of group sizes (one int is refused: ``G=[8]``, as ``-G 8`` may repeat)."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ConfigError(f"{name} must be a sequence of group sizes, e.g. [8, 16], got {values!r}", location=name)
    if not values:
        raise ConfigError(f"{name} names no group size", location=name, remedy="e.g. [8, 16]")
    return tuple(group_size(v, name) for v in values)


def step(value: Any, name: str = "step") -> int:
    """A training step: a whole number of magnitude at most :data:`MAX_STEP`."""
    return whole(value, name, -MAX_STEP, MAX_STEP)


def replicates(value: Any, name: str = "bootstrap") -> int:
    """Bootstrap replicates: 0 (no intervals) or at least :data:`MIN_REPLICATES`."""
    out = whole(value, name, 0, MAX_REPLICATES)
    if 0 < out < MIN_REPLICATES:
        raise ConfigError(f"{name} must be 0 (no intervals) or at least {MIN_REPLICATES} (a percentile interval from "
                          f"{out} replicates is noise), got {out}", location=name)
    return out


def choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}", location=name)
    return value


def text(value: Any, name: str) -> str:
    """A string (a column name, a step range)."""
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {value!r}", location=name)
    return value
