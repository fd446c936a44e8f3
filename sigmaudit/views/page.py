"""What the report page shows besides tables, as plain typed data: the summary cards, the
recommendation, and each chart's numbers, legend words and caption (:func:`sigmaudit.views.report.report_page`
builds them from a :class:`~sigmaudit.audits.report.ReportData`; ``render/html.py`` only draws and lays
them out).

Captions are runs of :class:`Span`: the view's prose, text quoted from the data, or emphasis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Span:
    """A stretch of a caption or paragraph."""

    text: str
    kind: Literal["prose", "quote", "strong"] = "prose"
    """``prose``: the view's own sentence; ``quote``: text taken from a result (a reason, a label: escaped
    like every value on the page, quotes included); ``strong``: emphasised."""


Spans = tuple[Span, ...]


@dataclass(frozen=True)
class Card:
    """One summary card: a big value and what it is."""

    value: str
    label: str


@dataclass(frozen=True)
class Mark:
    """A group size marked on a chart by a vertical line."""

    G: int
    label: str
    secondary: bool = False
    """Dotted and labelled higher up (``--g-main`` when the marked G is another)."""


@dataclass(frozen=True)
class PassRateChart:
    """Prompts per p̂ bin of width 1/len(histogram), the never- and always-solved prompts apart."""

    histogram: tuple[int, ...]
    never: int
    always: int
    never_label: str
    always_label: str


@dataclass(frozen=True)
class SilentChart:
    """The silent rate along G, split into all wrong and all correct; its floor, target and marked G."""

    G: tuple[int, ...]
    all_wrong: tuple[float, ...]
    all_correct: tuple[float, ...]
    floor: float
    floor_label: str
    target: float | None
    target_label: str
    marks: tuple[Mark, ...]
    """Drawn in order (the last on top)."""


@dataclass(frozen=True)
class FidelityLine:
    """φ along G at one quantile of p̂, with a dot where it first reaches 1 − ε (None: no dot)."""

    G: tuple[int, ...]
    fidelity: tuple[float, ...]
    label: str
    dot_G: int | None


@dataclass(frozen=True)
class FidelityChart:
    """φ along G at the quartiles of p̂, the corpus mean, 1 − ε, the target and the marked G."""

    lines: tuple[FidelityLine, ...]
    sweep_G: tuple[int, ...]
    corpus: tuple[tuple[int, float], ...]
    """(G, corpus φ) where defined."""
    corpus_label: str
    need: float
    """1 − ε."""
    need_label: str
    target: float | None
    target_label: str
    mark: Mark
    empty_text: str | None
    """Shown in the middle when there is nothing to draw."""


@dataclass(frozen=True)
class Series:
    """One labelled row of values (a bar series, a curve)."""

    label: str
    values: tuple[float, ...]


@dataclass(frozen=True)
class MassChart:
    """Each rule's share of its gradient mass per p̂ bin (grouped bars) and the prompts' share per bin."""

    rules: tuple[Series, ...]
    """GRPO at large G, GRPO at the finite G, Dr. GRPO (NaN shown as 0)."""
    prompt_share: tuple[float, ...]
    prompt_label: str


@dataclass(frozen=True)
class TrendChart:
    """Per step: the observed silent share (all wrong under all correct), the forecast, the pass rate."""

    steps: tuple[int, ...]
    all_wrong: tuple[float, ...]
    silent: tuple[float, ...]
    ahead: tuple[tuple[int, float], ...]
    """(step, forecast silent share) where there is a forecast."""
    pass_rate: tuple[float, ...]
    x_label: str


@dataclass(frozen=True)
class CalibrationChart:
    """Mean observed silent share against the mean forecast, per bin with groups."""

    predicted: tuple[float, ...]
    observed: tuple[float, ...]
    groups: tuple[int, ...]


@dataclass(frozen=True)
class TradeoffChart:
    """Silent groups avoided against informative groups lost, one curve per skip rule."""

    curves: tuple[tuple[str, tuple[tuple[float, float], ...]], ...]
    """(rule, ((informative lost, silent avoided), ...) ascending)."""
    max_lost: float
    max_lost_label: str
    worst_lost: float
    """The largest share lost on any curve (1.0 when none is defined)."""


ChartData = PassRateChart | SilentChart | FidelityChart | MassChart | TrendChart | CalibrationChart | TradeoffChart


@dataclass(frozen=True)
class Chart:
    """One chart of the page: its heading, data, caption and whether it spans the page's width."""

    heading: str
    data: ChartData
    caption: Spans
    wide: bool = False


@dataclass(frozen=True)
class Page:
    """The report page around its tables: the line under the title, its warnings, the cards, the
    recommendation, the charts and the notes (the tables are the view's ``parts``)."""

    subtitle: str
    warnings: tuple[str, ...]
    """Each shown as ``Warning: ...``: a post-filter dump, pass rates that moved within the window (drift)."""
    cards: tuple[Card, ...]
    recommendation: Spans
    charts: tuple[Chart, ...]
    notes: tuple[str, ...]
