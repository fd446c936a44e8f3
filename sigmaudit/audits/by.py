"""``--by COLUMN``: one audit per value of a column, each on its own corpus (its own prior fit),
beside the pooled audit. The JSON of a result gains ``by: {column, groups: [{value, ...the
usual keys...}]}`` (null without ``--by``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ByGroup:
    """The audit of the rows with one value of the ``--by`` column."""

    value: str
    """The column's value (as text)."""
    result: Any
    """The same kind of result as the pooled one (ScanReport, CheckResult, PlanResult)."""


@dataclass(frozen=True)
class ByResult:
    """Every value's audit, in sorted value order."""

    column: str
    """The ``--by`` column."""
    groups: tuple[ByGroup, ...]
    """One per value."""

    def to_dict(self) -> dict[str, Any]:
        """``{column, groups: [{value, ...the result's keys}]}``."""
        return {"column": self.column,
                "groups": [{"value": g.value, **g.result.to_dict()} for g in self.groups]}
