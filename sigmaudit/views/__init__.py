"""Results -> views: what each audit result looks like to a reader (tables, sections, sparklines).

:func:`build_view` is the one entry: it picks the module for the result's type
(``views/scan.py`` for a :class:`~sigmaudit.audits.scan.ScanReport`, ...), and attaches the
result's JSON contract, so the renderers below need nothing but the :class:`View`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .model import Section, Table, View

__all__ = ["Section", "Table", "View", "build_view"]

_BUILDERS: dict[str, tuple[str, str]] = {
    "ScanReport": ("scan", "scan_view"),
    "PlanResult": ("plan", "plan_view"),
    "CheckResult": ("check", "check_view"),
    "CalcResult": ("calc", "calc_view"),
    "TrendResult": ("trend", "trend_view"),
    "SimulateResult": ("simulate", "simulate_view"),
    "SeriesReport": ("simulate", "series_report_view"),
    "ReportData": ("report", "report_view"),
}


def build_view(result: Any) -> View:
    """The :class:`View` of an audit result, carrying its JSON contract (``to_dict()``)."""
    name = type(result).__name__
    if name not in _BUILDERS:
        raise TypeError(f"no view for {name}")
    module, func = _BUILDERS[name]
    view: View = getattr(import_module(f".{module}", __name__), func)(result)
    return View(view.title, view.sections, view.csv_table, data=result.to_dict(), source=result, parts=view.parts)
