"""The text view of a :class:`~sigmaudit.audits.report.ReportData`: the scan, plan and trend views in one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .forecast import backtest_view
from .labels import filtered_line
from .model import Section, View
from .plan import plan_view
from .scan import by_section, scan_view
from .trend import trend_view

if TYPE_CHECKING:
    from ..audits.report import ReportData


def report_part_views(result: ReportData) -> tuple[View, ...]:
    """The views of the parts, in report order: scan, plan, and trend and backtest when there are steps."""
    parts = [scan_view(result.scan), plan_view(result.plan)]
    if result.trend is not None:
        parts.append(trend_view(result.trend))
    if result.backtest is not None:
        parts.append(backtest_view(result.backtest))
    return tuple(parts)


def report_page_parts(parts: tuple[View, ...]) -> tuple[View, ...]:
    """The parts as the report page shows them: scan and plan (placed by the page), then the trend's
    first section under "Per step" and the backtest under "Forecast backtest" (the section choice
    is made here, not by the renderer)."""
    import dataclasses

    scan, plan, *rest = parts
    chosen = {"sigmaudit trend": ("Per step", 1), "sigmaudit backtest": ("Forecast backtest", None)}
    return (scan, plan, *(dataclasses.replace(v, heading=chosen[v.title][0], sections=v.sections[:chosen[v.title][1]])
                          for v in rest))


def report_view(result: ReportData) -> View:
    """Every section of the scan, plan and trend views, prefixed by the command each comes from."""
    parts = report_part_views(result)
    sections = [
        Section(f"{v.title.removeprefix('sigmaudit ')}: {s.title}", s.lines, s.tables)
        for v in parts for s in v.sections
    ]
    if result.filtered is not None:
        sections.insert(0, Section("post-filter dump", (filtered_line(result.filtered),)))
    if result.by is not None:
        sections.append(report_by_section(result))
    return View(result.title, tuple(sections), parts=report_page_parts(parts))


def report_by_section(result: ReportData) -> Section:
    """The per-value scan summary of ``report --by`` (the scan view's by table)."""
    assert result.by is not None
    return by_section(result.by, pooled="the rest of the report is the pooled log")

