"""The drift WARNING line (:mod:`sigmaudit.audits.drift` returns the numbers; this module writes the words)."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import TypeVar

from ..audits.by import ByGroup, ByResult
from ..audits.drift import Drift
from .labels import WARNING

T = TypeVar("T")


def message(drift: Drift) -> str:
    """The one warning line every view prints when pass rates moved: the observed and predicted silent
    shares of the tested groups, z, and what to do."""
    span = "the log" if drift.window is None else drift.window.span()
    return (f"{WARNING}pass rates moved within {span}: {drift.observed:.1%} of its {drift.groups:,} logged "
            f"groups were silent, pooling each prompt's samples predicts {drift.predicted:.1%} "
            f"(z = {drift.statistic:.1f}); figures from pooled counts understate what happened: read the observed "
            "figures, or cut a window (--last-steps N) for the current difficulty")


def worded(result: T) -> T:
    """``result`` with the :attr:`~sigmaudit.audits.drift.Drift.message` of its ``drift`` written, and of
    every result it holds (each ``--by`` value's, a report's scan, plan and trend): the words of its JSON
    contract. Anything else is returned as it is."""
    if isinstance(result, Drift):
        return replace(result, message=message(result))  # type: ignore[return-value]
    if isinstance(result, ByResult):
        return ByResult(result.column, tuple(ByGroup(g.value, worded(g.result)) for g in result.groups))  # type: ignore[return-value]
    if not is_dataclass(result) or isinstance(result, type):
        return result
    changes: dict[str, object] = {}
    for f in fields(result):
        value = getattr(result, f.name)
        if isinstance(value, Drift | ByResult) or _holds_drift(value):
            changes[f.name] = worded(value)
    return replace(result, **changes) if changes else result  # type: ignore[type-var]


def _holds_drift(value: object) -> bool:
    """``value`` is a result with a ``drift`` field (a report's scan, plan or trend)."""
    return is_dataclass(value) and not isinstance(value, type) and any(f.name == "drift" for f in fields(value))
