"""HTML renderer: one self-contained page (inline SVG charts, inline CSS, no script, no network).

The only module that imports matplotlib; only ``sigmaudit report`` imports it.
Charts are drawn on a bare :class:`matplotlib.figure.Figure` (no pyplot, no GUI
backend), saved as SVG with text kept as text, and inlined after removing the
XML prologue, the DOCTYPE (its DTD address would be the only URL), the
metadata block and the global ``<style>``; ids are prefixed per chart so
several charts can share one page. Every number, word and choice of section comes from the
:class:`~sigmaudit.views.View` (its ``page``: :mod:`sigmaudit.views.page`); this module turns them into
HTML and SVG, and never computes or chooses them.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from ..views import Table, View
from ..views.page import (
    CalibrationChart,
    Card,
    Chart,
    ChartData,
    FidelityChart,
    Mark,
    MassChart,
    Page,
    PassRateChart,
    SilentChart,
    Spans,
    TradeoffChart,
    TrendChart,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# Okabe–Ito colours (readable with colour-blindness).
ALL_WRONG = "#D55E00"
ALL_CORRECT = "#0072B2"
GREY = "#9a9a9a"
GRPO = "#E69F00"
GRPO_LIGHT = "#F5D08A"
DRGRPO = "#009E73"
CORPUS = "#222222"
QUARTILE_COLORS = ("#CC79A7", "#56B4E9", "#7B5EA7")
PASS = "#009E73"

FIG_WIDTH = 6.4
"""Chart width in inches (drawn at 100 dpi; the page scales it to its column)."""
FIG_HEIGHT = 4.0
"""Chart height in inches."""

_RC = {
    "svg.fonttype": "none",  # text stays text (searchable, small), drawn in the page's font
    "svg.hashsalt": "sigmaudit",  # stable ids: the same report renders to the same bytes
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 8.0,
}

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #dadce0; --bg: #ffffff; --panel: #f7f8fa;
        --warn: #8a4b00; --warn-bg: #fff4e0; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
       font: 15px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 32px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p { margin: 6px 0; }
.sub { color: var(--muted); margin: 0 0 14px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px; margin: 14px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .v { font-size: 24px; font-weight: 600; line-height: 1.2; }
.card .k { color: var(--muted); font-size: 13px; }
.warn { background: var(--warn-bg); color: var(--warn); border-left: 4px solid #e8a33d; padding: 8px 12px;
        border-radius: 4px; margin: 10px 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(500px, 1fr)); gap: 18px 28px; }
figure { margin: 0; min-width: 0; }
.charts section { min-width: 0; }
.charts .wide { grid-column: 1 / -1; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 2px; }
figcaption b { color: var(--fg); }
svg * { stroke-linejoin: round; stroke-linecap: butt; }
.rec { font-size: 17px; }
.rec b { font-size: 20px; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13px; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td { white-space: pre-wrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
.note { color: var(--muted); font-size: 12.5px; max-width: 1000px; }
.tables { display: flex; flex-wrap: wrap; gap: 0 36px; align-items: flex-start; overflow-x: auto; }
.tables > div { max-width: 100%; }
details > summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
ul.notes { color: var(--muted); font-size: 13px; margin: 4px 0; padding-left: 20px; }
footer { color: var(--muted); font-size: 12px; margin-top: 40px; border-top: 1px solid var(--line);
         padding-top: 8px; }
"""


# --------------------------------------------------------------------------- small helpers


def esc(text: object) -> str:
    """HTML-escape any value's text."""
    return html.escape(str(text), quote=True)


def _is_num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# --------------------------------------------------------------------------- View → HTML


def table_html(t: Table, caption: bool = True) -> str:
    """One :class:`~sigmaudit.render.Table` as an HTML table (numbers right-aligned, note below).

    ``caption=False`` leaves out the title (when a heading already says it).
    """
    numeric = [bool(t.rows) and all(v is None or _is_num(v) for v in col) and any(_is_num(v) for v in col)
               for col in zip(*t.rows, strict=True)] if t.rows else [False] * len(t.columns)
    head = "".join(f'<th{" class=num" if num else ""} scope="col">{esc(c)}</th>'
                   for c, num in zip(t.columns, numeric, strict=True))
    body = []
    for row, texts in zip(t.rows, t.cells(), strict=True):
        cells = "".join(f'<td{" class=num" if _is_num(v) else ""}>{esc(text)}</td>'
                        for v, text in zip(row, texts, strict=True))
        body.append(f"<tr>{cells}</tr>")
    cap = f"<caption>{esc(t.title)}</caption>" if t.title and caption else ""
    out = [f"<div><table>{cap}<thead><tr>{head}</tr></thead>",
           f"<tbody>{''.join(body)}</tbody></table>"]
    if t.note:
        out.append(f'<p class="note">{esc(t.note)}</p>')
    out.append("</div>")
    return "\n".join(out)


def view_html(view: View, level: int = 3) -> str:
    """Every section of a :class:`~sigmaudit.render.View`: a heading, its lines, its tables side by side.

    A table titled like its section gets no caption; one with more than the view's ``fold_rows`` rows is
    folded into a ``<details>`` element (closed), so a long per-step table does not bury the rest.
    """
    out = []
    for s in view.sections:
        out.append(f"<h{level}>{esc(s.title)}</h{level}>")
        out += [f"<p>{esc(line)}</p>" for line in s.lines]
        tables = []
        for t in s.tables:
            body = table_html(t, caption=t.title != s.title)
            if len(t.rows) > view.fold_rows:
                body = f"<details><summary>{esc(t.title)} ({len(t.rows):,} rows)</summary>{body}</details>"
            tables.append(body)
        if tables:
            out.append(f'<div class="tables">{"".join(tables)}</div>')
    return "\n".join(out)


# --------------------------------------------------------------------------- SVG plumbing

_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_STYLE = re.compile(r"\s*<defs>\s*<style[^>]*>.*?</style>\s*</defs>", re.S)
_SIZE = re.compile(r'<svg\b([^>]*?)\s+width="[^"]*"\s+height="[^"]*"')
_ID = re.compile(r'\bid="([^"]+)"')


def _figure(width: float = FIG_WIDTH, height: float = FIG_HEIGHT) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return fig, fig.add_subplot()


def svg_of(fig: Figure, name: str, label: str) -> str:
    """The figure as an inline ``<svg>``: no prologue, DOCTYPE or metadata; ids prefixed by ``name``."""
    from matplotlib import rc_context

    buf = io.StringIO()
    with rc_context(_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = _PROLOGUE.sub("", buf.getvalue(), count=1)
    text = _METADATA.sub("", text)
    text = _STYLE.sub("", text, count=1)
    text = _SIZE.sub(rf'<svg\1 role="img" aria-label="{esc(label)}"', text, count=1)
    for old in dict.fromkeys(_ID.findall(text)):
        new = f"{name}-{old}"
        text = (text.replace(f'id="{old}"', f'id="{new}"').replace(f"url(#{old})", f"url(#{new})")
                .replace(f'href="#{old}"', f'href="#{new}"'))
    return text.strip()


def _draw(draw: Callable[[Figure, Axes], None], name: str, label: str, *, width: float = FIG_WIDTH,
          height: float = FIG_HEIGHT) -> str:
    from matplotlib import rc_context

    with rc_context(_RC):
        fig, ax = _figure(width, height)
        draw(fig, ax)
    return svg_of(fig, name, label)


def _log2_axis(ax: Axes, Gs: Sequence[int]) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.set_xscale("log", base=2)
    ticks = [g for g in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096) if min(Gs) <= g <= max(Gs)]
    ax.xaxis.set_major_locator(FixedLocator(ticks or list(Gs)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(g) for g in (ticks or list(Gs))])
    if min(Gs) < max(Gs):
        ax.set_xlim(min(Gs) / 1.08, max(Gs) * 1.08)
    ax.set_xlabel("group size G (log scale)")


def _mark_G(ax: Axes, mark: Mark) -> None:
    """A vertical line at G, labelled at the foot of the axes (where legends and curves rarely are); a
    secondary mark dotted, its label higher up."""
    style, y = (":", 0.1) if mark.secondary else ("-", 0.0)
    ax.axvline(mark.G, color=CORPUS, linestyle=style, linewidth=1.1, zorder=4)
    ax.annotate(mark.label, xy=(mark.G, y), xycoords=("data", "axes fraction"), xytext=(3, 3),
                textcoords="offset points", ha="left", va="bottom", fontsize=8, color=CORPUS, zorder=6,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def _legend(fig: Figure, ncols: int = 2) -> None:
    """The legend under the axes, outside the data (constrained layout makes room)."""
    fig.legend(loc="outside lower center", ncols=ncols)


def _percent_axis(ax: Axes, top: float = 1.0) -> None:
    from matplotlib.ticker import PercentFormatter

    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_ylim(0.0, top)


# --------------------------------------------------------------------------- charts


def pass_rate_chart(c: PassRateChart) -> str:
    """Bars of prompts per p̂ bin (width 0.1); the never-solved (k = 0) and always-solved (k = n) prompts in colour."""
    from matplotlib.ticker import MaxNLocator

    def draw(fig: Figure, ax: Axes) -> None:
        histogram = c.histogram
        bins = len(histogram)
        left = [i / bins for i in range(bins)]
        rest = list(histogram)
        rest[0] -= c.never
        rest[-1] -= c.always
        width = 1.0 / bins * 0.92
        ax.bar(left, rest, width=width, align="edge", color=GREY, label="0 < k < n")
        ax.bar([left[0]], [c.never], bottom=[rest[0]], width=width, align="edge", color=ALL_WRONG,
               label=c.never_label)
        ax.bar([left[-1]], [c.always], bottom=[rest[-1]], width=width, align="edge", color=ALL_CORRECT,
               label=c.always_label)
        ax.set_xlim(0.0, 1.0)
        ax.set_xticks([i / bins for i in range(bins + 1)])
        ax.set_xlabel("pass rate p̂ = k/n of a prompt")
        ax.set_ylabel("prompts")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, max(histogram) * 1.28 if max(histogram) else 1)
        ax.grid(axis="x", visible=False)
        _legend(fig)

    return _draw(draw, "passrate", "histogram of per-prompt pass rates")


MASS_COLORS = (GRPO, GRPO_LIGHT, DRGRPO)
"""Colours of the mass chart's rules, in the view's order (GRPO large G, GRPO at G, Dr. GRPO)."""


def mass_chart(c: MassChart) -> str:
    """Grouped bars: each rule's share of its total gradient mass per p̂ bin; the prompts' share as a step line."""

    def draw(fig: Figure, ax: Axes) -> None:
        bins = len(c.prompt_share)
        centers = [(i + 0.5) / bins for i in range(bins)]
        w = 1.0 / bins / 4.0
        for j, (rule, color) in enumerate(zip(c.rules, MASS_COLORS, strict=True)):
            ax.bar([x + (j - 1) * w for x in centers], list(rule.values), width=w, color=color, label=rule.label)
        edges = [i / bins for i in range(bins + 1)]
        ax.stairs(list(c.prompt_share), edges, color=CORPUS, linewidth=1.0, linestyle="--", label=c.prompt_label)
        ax.set_xlim(0.0, 1.0)
        ax.set_xticks(edges)
        ax.set_xlabel("pass rate p̂ = k/n of a prompt")
        ax.set_ylabel("share of the rule's gradient mass")
        top = max([*(v for rule in c.rules for v in rule.values), *c.prompt_share, 0.01])
        _percent_axis(ax, top * 1.45)
        ax.grid(axis="x", visible=False)
        _legend(fig)

    return _draw(draw, "mass", "gradient-mass share by pass-rate bin, GRPO vs Dr. GRPO")


def silent_chart(c: SilentChart) -> str:
    """Stacked areas of the all-wrong and all-correct silent rate along G; the marked G and the floor."""

    def draw(fig: Figure, ax: Axes) -> None:
        Gs = list(c.G)
        total = [a + b for a, b in zip(c.all_wrong, c.all_correct, strict=True)]
        ax.fill_between(Gs, 0, c.all_wrong, color=ALL_WRONG, alpha=0.75, linewidth=0, label="all wrong (k = 0)")
        ax.fill_between(Gs, c.all_wrong, total, color=ALL_CORRECT, alpha=0.7, linewidth=0,
                        label="all correct (k = G)")
        ax.plot(Gs, total, color=CORPUS, marker="o", markersize=3, linewidth=1.2, label="silent rate")
        ax.axhline(c.floor, color=CORPUS, linestyle=":", linewidth=1.0, label=c.floor_label)
        if c.target is not None:
            ax.axhline(c.target, color=GRPO, linestyle="--", linewidth=1.6, zorder=5, label=c.target_label)
        for mark in c.marks:
            _mark_G(ax, mark)
        _log2_axis(ax, Gs)
        _percent_axis(ax)
        ax.set_ylabel("silent groups (σ = 0)")
        _legend(fig)

    return _draw(draw, "silent", "silent-group rate versus group size")


def fidelity_chart(c: FidelityChart) -> str:
    """φ(p̂_q, G) along G at the quartiles of p̂; the corpus mean, 1 − ε and the marked G."""

    def draw(fig: Figure, ax: Axes) -> None:
        xs = list(c.sweep_G)
        for line, color in zip(c.lines, QUARTILE_COLORS, strict=False):
            ax.plot(line.G, line.fidelity, color=color, linewidth=1.6, label=line.label)
            xs += list(line.G)
            if line.dot_G is not None:
                ax.plot([line.dot_G], [c.need], marker="o", color=color, markersize=5, zorder=5)
        if c.corpus:
            ax.plot([g for g, _ in c.corpus], [v for _, v in c.corpus], color=CORPUS, linestyle="--", marker="o",
                    markersize=3, linewidth=1.1, label=c.corpus_label)
        ax.axhline(c.need, color=GREY, linestyle=":", linewidth=1.2, label=c.need_label)
        if c.target is not None:
            ax.axhline(c.target, color=GRPO, linestyle="--", linewidth=1.6, zorder=5, label=c.target_label)
        _mark_G(ax, c.mark)
        _log2_axis(ax, xs)
        ax.set_ylim(0.0, 1.02)
        ax.set_ylabel("fidelity φ = E[σ] / sqrt(p(1−p))")
        _legend(fig)
        if c.empty_text is not None:
            ax.text(0.5, 0.5, c.empty_text, transform=ax.transAxes, ha="center", va="center")

    return _draw(draw, "fidelity", "fidelity versus group size at the quartiles of the pass rate")


def trend_chart(c: TrendChart) -> str:
    """Per step: observed silent share of the logged groups (stacked all-wrong / all-correct), forecast, pass rate."""

    from matplotlib.ticker import MaxNLocator

    def draw(fig: Figure, ax: Axes) -> None:
        x = list(c.steps)
        ax.fill_between(x, 0, c.all_wrong, color=ALL_WRONG, alpha=0.75, linewidth=0, step=None,
                        label="observed all wrong")
        ax.fill_between(x, c.all_wrong, c.silent, color=ALL_CORRECT, alpha=0.7, linewidth=0,
                        label="observed all correct")
        if c.ahead:
            ax.plot([a for a, _ in c.ahead], [b for _, b in c.ahead], color=CORPUS, linestyle="--", linewidth=1.3,
                    label="forecast silent (one step ahead)")
        ax.plot(x, list(c.pass_rate), color=PASS, linewidth=1.6, label="mean pass rate k/n")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if len(x) == 1:
            ax.set_xlim(x[0] - 1, x[0] + 1)
        else:
            ax.set_xlim(x[0], x[-1])
        _percent_axis(ax, 1.0)
        ax.set_xlabel(c.x_label)
        ax.set_ylabel("share of the step's groups")
        _legend(fig, 4)

    return _draw(draw, "trend", "silent groups per training step", width=2 * FIG_WIDTH, height=3.3)


def calibration_chart(c: CalibrationChart) -> str:
    """Mean observed silent share against the mean forecast per bin (dot area ∝ groups), with the diagonal."""

    def draw(fig: Figure, ax: Axes) -> None:
        ax.plot([0, 1], [0, 1], color=GREY, linewidth=1.0, linestyle="--", label="perfect calibration")
        biggest = max(c.groups)
        ax.scatter(list(c.predicted), list(c.observed), s=[20 + 180 * n / biggest for n in c.groups],
                   color=ALL_CORRECT, alpha=0.85, zorder=3, label="sigmaudit forecast (area ∝ groups)")
        ax.plot(list(c.predicted), list(c.observed), color=ALL_CORRECT, linewidth=1.0)
        ax.set_xlim(0, 1)
        _percent_axis(ax, 1.0)
        from matplotlib.ticker import PercentFormatter

        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("forecast P(silent), mean in the bin")
        ax.set_ylabel("observed silent share")
        _legend(fig, 2)

    return _draw(draw, "calibration", "forecast calibration: observed silent share against the forecast")


TRADEOFF_STYLE = {"sigmaudit": (ALL_CORRECT, "o", "-"), "greso": (GRPO, "s", "--"),
                  "silent-last-time": (ALL_WRONG, "D", "")}
"""Colour, marker and line of each skip rule on the trade-off chart."""


def tradeoff_chart(c: TradeoffChart) -> str:
    """Silent groups avoided against informative groups lost, one curve per skip rule, the loss budget marked."""

    def draw(fig: Figure, ax: Axes) -> None:
        for rule, pts in c.curves:
            color, marker, line = TRADEOFF_STYLE[rule]
            ax.plot([0.0, *(a for a, _ in pts)], [0.0, *(b for _, b in pts)], color=color, marker=marker,
                    linestyle=line or "none", markersize=4, linewidth=1.4, label=rule)
        ax.axvline(c.max_lost, color=CORPUS, linewidth=0.9, linestyle=":", label=c.max_lost_label)
        from matplotlib.ticker import PercentFormatter

        ax.set_xlim(0, min(1.0, max(c.worst_lost, c.max_lost) * 1.1 + 0.01))
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        _percent_axis(ax, 1.0)
        ax.set_xlabel("informative groups lost (skipped)")
        ax.set_ylabel("silent groups avoided")
        _legend(fig, 4)

    return _draw(draw, "tradeoff", "skip rules: silent groups avoided against informative groups lost")


_CHARTS: dict[type, Callable[..., str]] = {
    PassRateChart: pass_rate_chart, SilentChart: silent_chart, FidelityChart: fidelity_chart, MassChart: mass_chart,
    TrendChart: trend_chart, CalibrationChart: calibration_chart, TradeoffChart: tradeoff_chart,
}
"""Chart data type -> the function drawing it."""


def chart_svg(data: ChartData) -> str:
    """The inline SVG of one chart's data."""
    return _CHARTS[type(data)](data)


# --------------------------------------------------------------------------- the page


_MARKUP = re.compile(r"&|<(?=[A-Za-z/!?])")


def prose(text: str) -> str:
    """The view's own wording as element text: ``&`` and a ``<`` that would open a tag escaped; a ``<``
    before a space or a digit (``0 < k < n``, ``<0.1%``) is text to an HTML parser and kept as written."""
    return _MARKUP.sub(lambda m: "&amp;" if m.group(0) == "&" else "&lt;", text)


def spans_html(spans: Spans) -> str:
    """A caption or paragraph: prose as element text, quoted text escaped as every value on the page
    (:func:`esc`), emphasis bold."""
    out = []
    for s in spans:
        if s.kind == "strong":
            out.append(f"<b>{esc(s.text)}</b>")
        elif s.kind == "quote":
            out.append(esc(s.text))
        else:
            out.append(prose(s.text))
    return "".join(out)


def _cards_html(cards: Sequence[Card]) -> str:
    items = "".join(f'<div class="card"><div class="v">{esc(c.value)}</div><div class="k">{esc(c.label)}</div></div>'
                    for c in cards)
    return f'<div class="cards">{items}</div>'


def _chart_html(c: Chart) -> str:
    figure = f"<figure>\n{chart_svg(c.data)}\n<figcaption>{spans_html(c.caption)}</figcaption>\n</figure>"
    return f"<section{' class=wide' if c.wide else ''}><h3>{esc(c.heading)}</h3>{figure}</section>"


def _report_html(page: Page, parts: Sequence[View]) -> list[str]:
    """The report page's body: the line under the title, the warning, the summary, the charts, then each
    part under its heading, then the notes."""
    out = [f'<p class="sub">{esc(page.subtitle)}</p>']
    out += [f'<p class="warn"><b>Warning:</b> {esc(w)}</p>' for w in page.warnings]
    out += ["<h2>Summary</h2>", _cards_html(page.cards), f'<p class="rec">{spans_html(page.recommendation)}</p>']
    out += ["<h2>Charts</h2>", '<div class="charts">', *(_chart_html(c) for c in page.charts), "</div>"]
    for part in parts:
        out += [f"<h2>{esc(part.heading or part.title)}</h2>", view_html(part)]
    if page.notes:
        out.append("<h2>Notes</h2>")
        out.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in page.notes) + "</ul>")
    return out


def render_html(view: View) -> str:
    """One self-contained HTML page: the report page (charts, then its parts' tables) for a view with a
    ``page``, else the view's sections as tables."""
    if view.page is None:
        return _page(view.title, [view_html(view, level=2)])
    return _page(view.title, _report_html(view.page, view.parts))


def _page(title: str, body: list[str]) -> str:
    """The page around ``body``: head, inline CSS, title, footer."""
    from importlib.metadata import version

    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>{esc(title)}</h1>",
        *body,
        f"<footer>sigmaudit {esc(version('sigmaudit'))} · self-contained page: no scripts, no network "
        f"requests. Rates are means over prompts. Exit codes and JSON contracts: see the README.</footer>",
        "</main></body></html>",
    ]) + "\n"
