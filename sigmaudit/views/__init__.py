"""Results -> views: what each audit result looks like to a reader (tables, sections, sparklines).

:func:`build_view` is the one entry: it picks the module for the result's type
(``views/scan.py`` for a :class:`~sigmaudit.audits.scan.ScanReport`, ...), and attaches the
result's JSON contract, so the renderers below need nothing but the :class:`View`.
"""

from __future__ import annotations

import dataclasses
from importlib import import_module
from typing import Any

from .model import Section, Table, View

__all__ = ["Section", "Table", "View", "build_view", "worded"]

_BUILDERS: dict[str, tuple[str, str, str | None]] = {
    "ScanReport": ("scan", "scan_view", "silent"),
    "PlanResult": ("plan", "plan_view", "sweep"),
    "CurateResult": ("curate", "curate_view", None),
    "CheckResult": ("check", "check_view", "checks"),
    "CalcResult": ("calc", "calc_view", "results"),
    "TrendResult": ("trend", "trend_view", "steps"),
    "ForecastResult": ("forecast", "forecast_view", "per_prompt"),
    "BacktestResult": ("forecast", "backtest_view", "calibration"),
    "SimulateResult": ("simulate", "simulate_view", None),
    "SeriesReport": ("simulate", "series_report_view", None),
    "ReportData": ("report", "report_view", None),
}
"""Result class -> (module, view function, the JSON list whose rows ``--format csv`` writes)."""


def build_view(result: Any) -> View:
    """The :class:`View` of an audit result, carrying its JSON contract (``to_dict()``)."""
    name = type(result).__name__
    if name not in _BUILDERS:
        raise TypeError(f"no view for {name}")
    module, func, records_key = _BUILDERS[name]
    result = worded(result)
    view: View = _with_context(getattr(import_module(f".{module}", __name__), func)(result), result)
    data = result.to_dict()
    records = None if records_key is None else tuple(_flat(row) for row in data[records_key])
    return dataclasses.replace(view, data=data, csv_records=None if records is None else _csv_context(records, data))


def _csv_context(records: tuple[dict[str, Any], ...], data: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The CSV rows with what every other format says beside the table (issue 36 item 30): scan's observed
    silent share in the row of the logged G (``observed``, ``observed_groups``: empty in the other rows and
    without logged groups), and on every row the drift WARNING when pass rates moved within the window
    (``drift_warning``, empty when they did not), so a CSV of a drifting log does not read as the pooled
    predictions alone. Both columns are always there: the shape does not depend on the log."""
    extra: list[dict[str, Any]] = [{} for _ in records]
    observed = data.get("observed_silent") if "silent" in data and "observed_silent" in data else None
    if "silent" in data and "observed_silent" in data:
        for row, out in zip(records, extra, strict=True):
            hit = observed is not None and row.get("G") == observed.get("G")
            out["observed"] = observed["fraction"] if hit else None  # type: ignore[index]
            out["observed_groups"] = observed["groups"] if hit else None  # type: ignore[index]
    if "drift" in data:
        message = None if data["drift"] is None else data["drift"].get("message")
        for out in extra:
            out["drift_warning"] = message
    return tuple({**row, **more} for row, more in zip(records, extra, strict=True))


_WORDS: dict[str, str] = {"CheckResult": "check", "PlanResult": "plan", "ReportData": "report",
                          "SimulateResult": "simulate", "SeriesReport": "simulate"}
"""Result class -> the view module whose ``worded`` writes the words of its JSON contract."""


def worded(result: Any) -> Any:
    """``result`` with the words of its JSON contract written (a check's sentence, a plan's reason, a
    simulation's initial difficulty, the drift WARNING of any result whose pass rates moved): audits
    return numbers, views write the words (results without words are returned as they are)."""
    from .drift import worded as drift_worded

    module = _WORDS.get(type(result).__name__)
    result = result if module is None else import_module(f".{module}", __name__).worded(result)
    return drift_worded(result)


def _flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A JSON object as one CSV row: nested objects flattened to ``outer_inner`` keys, lists joined."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}_"))
        elif isinstance(value, list | tuple):
            out[name] = " ".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def context_lines(result: Any) -> tuple[str, ...]:
    """Which steps a result covers and, when its pass rates moved, the drift WARNING line."""
    from .drift import message

    window = getattr(result, "window", None)
    drift = getattr(result, "drift", None)
    lines = [] if window is None else [f"window: {window.describe()}"]
    return (*lines, *([] if drift is None else [message(drift)]))


def _with_context(view: View, result: Any) -> View:
    """``view`` with :func:`context_lines` opening its first section."""
    from dataclasses import replace

    lines = context_lines(result)
    if not lines:
        return view
    first = view.sections[0] if view.sections else Section(view.title)
    view = replace(view, sections=(replace(first, lines=(*lines, *first.lines)), *view.sections[1:]))
    if view.brief and view.brief[0] is not first and not set(lines) & set(view.brief[0].lines):
        view = replace(view, brief=(replace(view.brief[0], lines=(*lines, *view.brief[0].lines)), *view.brief[1:]))
    return view
