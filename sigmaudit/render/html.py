"""HTML renderer: one self-contained page (inline SVG charts, inline CSS, no script, no network).

The only module that imports matplotlib; only ``sigmaudit report`` imports it.
Charts are drawn on a bare :class:`matplotlib.figure.Figure` (no pyplot, no GUI
backend), saved as SVG with text kept as text, and inlined after removing the
XML prologue, the DOCTYPE (its DTD address would be the only URL), the
metadata block and the global ``<style>``; ids are prefixed per chart so
several charts can share one page. Numbers come from the results; this module
formats and draws them, it never computes them.
"""

from __future__ import annotations

import html
import io
import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from ..fmt import format_value, pct
from ..views import Table, View
from ..views.labels import EXTREME_LABEL, MIDDLE_LABEL, QUANTILE_NAMES, filtered_line
from ..views.report import report_by_section

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# The results drawn here (report data, scan, trend, backtest, fidelity curves) arrive through the View
# (``view.source``, ``view.parts``; each part carries its heading and the sections the page shows): this
# module reads their fields and imports no audit.
ReportData = ScanReport = TrendResult = FidelityCurve = BacktestResult = Any

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


def _is_num(v: Any) -> bool:
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


def view_html(view: View, level: int = 3, fold_rows: int = 40) -> str:
    """Every section of a :class:`~sigmaudit.render.View`: a heading, its lines, its tables side by side.

    A table titled like its section gets no caption; one with more than ``fold_rows`` rows is folded
    into a ``<details>`` element (closed), so a long per-step table does not bury the rest.
    """
    out = []
    for s in view.sections:
        out.append(f"<h{level}>{esc(s.title)}</h{level}>")
        out += [f"<p>{esc(line)}</p>" for line in s.lines]
        tables = []
        for t in s.tables:
            body = table_html(t, caption=t.title != s.title)
            if len(t.rows) > fold_rows:
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


def _draw(draw: Callable[..., None], name: str, label: str, *args: Any, width: float = FIG_WIDTH,
          height: float = FIG_HEIGHT) -> str:
    from matplotlib import rc_context

    with rc_context(_RC):
        fig, ax = _figure(width, height)
        draw(fig, ax, *args)
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


def _mark_G(ax: Axes, G: int, label: str, *, style: str = "-", y: float = 0.0) -> None:
    """A vertical line at G, labelled at the foot of the axes (where legends and curves rarely are)."""
    ax.axvline(G, color=CORPUS, linestyle=style, linewidth=1.1, zorder=4)
    ax.annotate(label, xy=(G, y), xycoords=("data", "axes fraction"), xytext=(3, 3), textcoords="offset points",
                ha="left", va="bottom", fontsize=8, color=CORPUS, zorder=6,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})


def _legend(fig: Figure, ncols: int = 2) -> None:
    """The legend under the axes, outside the data (constrained layout makes room)."""
    fig.legend(loc="outside lower center", ncols=ncols)


def _percent_axis(ax: Axes, top: float = 1.0) -> None:
    from matplotlib.ticker import PercentFormatter

    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    ax.set_ylim(0.0, top)


# --------------------------------------------------------------------------- charts


def pass_rate_chart(histogram: Sequence[int], never: int, always: int, prompts: int) -> str:
    """Bars of prompts per p̂ bin (width 0.1); the never-solved (k = 0) and always-solved (k = n) prompts in colour."""
    from matplotlib.ticker import MaxNLocator

    def draw(fig: Figure, ax: Axes) -> None:
        bins = len(histogram)
        left = [i / bins for i in range(bins)]
        rest = list(histogram)
        rest[0] -= never
        rest[-1] -= always
        width = 1.0 / bins * 0.92
        ax.bar(left, rest, width=width, align="edge", color=GREY, label="0 < k < n")
        ax.bar([left[0]], [never], bottom=[rest[0]], width=width, align="edge", color=ALL_WRONG,
               label=f"never solved (k = 0): {never:,} ({pct(never / prompts)})")
        ax.bar([left[-1]], [always], bottom=[rest[-1]], width=width, align="edge", color=ALL_CORRECT,
               label=f"always solved (k = n): {always:,} ({pct(always / prompts)})")
        ax.set_xlim(0.0, 1.0)
        ax.set_xticks([i / bins for i in range(bins + 1)])
        ax.set_xlabel("pass rate p̂ = k/n of a prompt")
        ax.set_ylabel("prompts")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, max(histogram) * 1.28 if max(histogram) else 1)
        ax.grid(axis="x", visible=False)
        _legend(fig)

    return _draw(draw, "passrate", "histogram of per-prompt pass rates")


def mass_chart(prompt_share: Sequence[float], grpo: Sequence[float], grpo_finite: Sequence[float],
               drgrpo: Sequence[float], G: int, bands: dict[str, tuple[float, float]]) -> str:
    """Grouped bars: each rule's share of its total gradient mass per p̂ bin; the prompts' share as a step line."""

    def draw(fig: Figure, ax: Axes) -> None:
        bins = len(grpo)
        centers = [(i + 0.5) / bins for i in range(bins)]
        w = 1.0 / bins / 4.0
        series = (
            (f"GRPO, large G (extreme {pct(bands['grpo'][0], 0)}, middle {pct(bands['grpo'][1], 0)})", grpo, GRPO),
            (f"GRPO at G = {G:,} (extreme {pct(bands['grpo_finite'][0], 0)}, middle "
             f"{pct(bands['grpo_finite'][1], 0)})", grpo_finite, GRPO_LIGHT),
            (f"Dr. GRPO (extreme {pct(bands['drgrpo'][0], 0)}, middle {pct(bands['drgrpo'][1], 0)})", drgrpo, DRGRPO),
        )
        for j, (label, vals, color) in enumerate(series):
            xs = [c + (j - 1) * w for c in centers]
            ax.bar(xs, [0.0 if v is None or math.isnan(v) else v for v in vals], width=w, color=color, label=label)
        edges = [i / bins for i in range(bins + 1)]
        ax.stairs(list(prompt_share), edges, color=CORPUS, linewidth=1.0, linestyle="--", label="share of prompts")
        ax.set_xlim(0.0, 1.0)
        ax.set_xticks(edges)
        ax.set_xlabel("pass rate p̂ = k/n of a prompt")
        ax.set_ylabel("share of the rule's gradient mass")
        top = max([*(v for _, vals, _ in series for v in vals if v is not None and not math.isnan(v)),
                   *prompt_share, 0.01])
        _percent_axis(ax, top * 1.45)
        ax.grid(axis="x", visible=False)
        _legend(fig)

    return _draw(draw, "mass", "gradient-mass share by pass-rate bin, GRPO vs Dr. GRPO")


def silent_chart(Gs: Sequence[int], all_wrong: Sequence[float], all_correct: Sequence[float], chosen: int,
                 chosen_label: str, floor: float, max_silent: float | None, g_main: int | None = None) -> str:
    """Stacked areas of the all-wrong and all-correct silent rate along G; the chosen G and the floor marked."""

    def draw(fig: Figure, ax: Axes) -> None:
        total = [a + b for a, b in zip(all_wrong, all_correct, strict=True)]
        ax.fill_between(Gs, 0, all_wrong, color=ALL_WRONG, alpha=0.75, linewidth=0, label="all wrong (k = 0)")
        ax.fill_between(Gs, all_wrong, total, color=ALL_CORRECT, alpha=0.7, linewidth=0, label="all correct (k = G)")
        ax.plot(Gs, total, color=CORPUS, marker="o", markersize=3, linewidth=1.2, label="silent rate")
        ax.axhline(floor, color=CORPUS, linestyle=":", linewidth=1.0,
                   label=f"floor as G → ∞: {pct(floor)} (p = 0 or 1)")
        if max_silent is not None:
            ax.axhline(max_silent, color=GRPO, linestyle="--", linewidth=1.6, zorder=5,
                       label=f"target silent ≤ {max_silent:g}")
        if g_main is not None and g_main != chosen:
            _mark_G(ax, g_main, f"G = {g_main} (--g-main)", style=":", y=0.1)
        _mark_G(ax, chosen, f"G = {chosen} ({chosen_label})")
        _log2_axis(ax, Gs)
        _percent_axis(ax)
        ax.set_ylabel("silent groups (σ = 0)")
        _legend(fig)

    return _draw(draw, "silent", "silent-group rate versus group size")


def fidelity_chart(curves: Sequence[FidelityCurve], sweep_G: Sequence[int], corpus: Sequence[float | None],
                   eps: float, chosen: int, chosen_label: str, min_fidelity: float | None = None) -> str:
    """φ(p̂_q, G) along G at the quartiles of p̂; the corpus mean, 1 − ε and the chosen G marked."""

    def draw(fig: Figure, ax: Axes) -> None:
        xs = list(sweep_G)
        for c, color in zip(curves, QUARTILE_COLORS, strict=False):
            name = QUANTILE_NAMES.get(c.quantile, f"q = {c.quantile:g}")
            need = "unreachable" if c.exact_G is None else f"needs G ≥ {c.exact_G:,}"
            ax.plot(c.G, c.fidelity, color=color, linewidth=1.6, label=f"{name} p̂ = {format_value(c.p_hat)} ({need})")
            xs += list(c.G)
            if c.exact_G is not None and c.G[0] <= c.exact_G <= c.G[-1]:
                ax.plot([c.exact_G], [1.0 - eps], marker="o", color=color, markersize=5, zorder=5)
        pts = [(g, v) for g, v in zip(sweep_G, corpus, strict=True) if v is not None]
        if pts:
            ax.plot([g for g, _ in pts], [v for _, v in pts], color=CORPUS, linestyle="--", marker="o", markersize=3,
                    linewidth=1.1, label="corpus (GRPO-mass-weighted, bayes)")
        ax.axhline(1.0 - eps, color=GREY, linestyle=":", linewidth=1.2, label=f"1 − ε = {1 - eps:g}")
        if min_fidelity is not None:
            ax.axhline(min_fidelity, color=GRPO, linestyle="--", linewidth=1.6, zorder=5,
                       label=f"target corpus φ ≥ {min_fidelity:g}")
        _mark_G(ax, chosen, f"G = {chosen} ({chosen_label})")
        _log2_axis(ax, xs)
        ax.set_ylim(0.0, 1.02)
        ax.set_ylabel("fidelity φ = E[σ] / sqrt(p(1−p))")
        _legend(fig)
        if not curves and not pts:
            ax.text(0.5, 0.5, "no prompt with 0 < k < n: no G moves any prompt", transform=ax.transAxes,
                    ha="center", va="center")

    return _draw(draw, "fidelity", "fidelity versus group size at the quartiles of the pass rate")


def trend_chart(trend: TrendResult) -> str:
    """Per step: observed silent share of the logged groups (stacked all-wrong / all-correct), forecast, pass rate."""

    from matplotlib.ticker import MaxNLocator

    def draw(fig: Figure, ax: Axes) -> None:
        rows = trend.rows
        x = [r.step for r in rows]
        aw = [r.observed_all_wrong for r in rows]
        tot = [r.observed_silent for r in rows]
        ax.fill_between(x, 0, aw, color=ALL_WRONG, alpha=0.75, linewidth=0, step=None, label="observed all wrong")
        ax.fill_between(x, aw, tot, color=ALL_CORRECT, alpha=0.7, linewidth=0, label="observed all correct")
        fx = [(r.step, r.ahead_silent) for r in rows if r.ahead_silent is not None]
        if fx:
            ax.plot([a for a, _ in fx], [b for _, b in fx], color=CORPUS, linestyle="--", linewidth=1.3,
                    label="forecast silent (one step ahead)")
        ax.plot(x, [r.pass_rate for r in rows], color=PASS, linewidth=1.6, label="mean pass rate k/n")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if len(x) == 1:
            ax.set_xlim(x[0] - 1, x[0] + 1)
        else:
            ax.set_xlim(x[0], x[-1])
        _percent_axis(ax, 1.0)
        ax.set_xlabel("training step" if trend.every == 1 else f"training step (buckets of {trend.every})")
        ax.set_ylabel("share of the step's groups")
        _legend(fig, 4)

    return _draw(draw, "trend", "silent groups per training step", width=2 * FIG_WIDTH, height=3.3)


def calibration_chart(bt: BacktestResult) -> str:
    """Mean observed silent share against the mean forecast per bin (dot area ∝ groups), with the diagonal."""

    def draw(fig: Figure, ax: Axes) -> None:
        bins = [c for c in bt.calibration if c.n]
        ax.plot([0, 1], [0, 1], color=GREY, linewidth=1.0, linestyle="--", label="perfect calibration")
        biggest = max(c.n for c in bins)
        ax.scatter([c.predicted for c in bins], [c.observed for c in bins],
                   s=[20 + 180 * c.n / biggest for c in bins], color=ALL_CORRECT, alpha=0.85, zorder=3,
                   label="sigmaudit forecast (area ∝ groups)")
        ax.plot([c.predicted for c in bins], [c.observed for c in bins], color=ALL_CORRECT, linewidth=1.0)
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


def tradeoff_chart(bt: BacktestResult) -> str:
    """Silent groups avoided against informative groups lost, one curve per skip rule, the loss budget marked."""

    def draw(fig: Figure, ax: Axes) -> None:
        for rule, (color, marker, line) in TRADEOFF_STYLE.items():
            pts = sorted((t.informative_lost, t.silent_avoided) for t in bt.tradeoff if t.rule == rule)
            if not pts:
                continue
            ax.plot([0.0, *(a for a, _ in pts)], [0.0, *(b for _, b in pts)], color=color, marker=marker,
                    linestyle=line or "none", markersize=4, linewidth=1.4, label=rule)
        ax.axvline(bt.max_lost, color=CORPUS, linewidth=0.9, linestyle=":", label=f"{pct(bt.max_lost, 0)} lost")
        from matplotlib.ticker import PercentFormatter

        worst = max((t.informative_lost for t in bt.tradeoff if t.informative_lost == t.informative_lost), default=1.0)
        ax.set_xlim(0, min(1.0, max(worst, bt.max_lost) * 1.1 + 0.01))
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        _percent_axis(ax, 1.0)
        ax.set_xlabel("informative groups lost (skipped)")
        ax.set_ylabel("silent groups avoided")
        _legend(fig, 4)

    return _draw(draw, "tradeoff", "skip rules: silent groups avoided against informative groups lost")


# --------------------------------------------------------------------------- the page


def _figure_html(svg: str, caption: str) -> str:
    return f"<figure>\n{svg}\n<figcaption>{caption}</figcaption>\n</figure>"


def _cards(d: ReportData) -> str:
    s = d.scan
    w = s.wasted
    cards = [
        (f"{s.prompts:,}", f"prompts · {s.rollouts:,} rollouts"),
        (pct(w.silent_rollout_share), f"silent groups at G = {w.G:,} ({w.estimator}): all wrong "
                                      f"{pct(w.all_wrong_share)}, all correct {pct(w.all_correct_share)}"),
        (f"{pct(s.pass_rate.never_solved)} / {pct(s.pass_rate.always_solved)}",
         "of prompts never / always solved in the log"),
        ("—" if d.plan.recommended_G is None else f"G = {d.plan.recommended_G:,}",
         f"recommended ({d.plan.targets.describe()})"),
        (f"{pct(s.mass_share.grpo.extreme)} vs {pct(s.mass_share.drgrpo.extreme)}"
         if not math.isnan(s.mass_share.grpo.extreme) else "no mass",
         f"gradient mass on extreme prompts ({EXTREME_LABEL}): GRPO vs Dr. GRPO, large G"),
    ]
    if s.observed_silent is not None:
        o = s.observed_silent
        cards.insert(2, (pct(o.fraction), f"of the {o.groups:,} logged groups were silent (size {o.G:,})"))
    items = "".join(f'<div class="card"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
                    for v, k in cards)
    return f'<div class="cards">{items}</div>'


def _samples(s: ScanReport) -> str:
    sp = s.samples_per_prompt
    return f"n = {sp.min:,} samples per prompt" if sp.min == sp.max else f"n = {sp.min:,}–{sp.max:,} samples per prompt"


def _chosen_label(d: ReportData) -> str:
    return "recommended" if d.chosen_by == "recommended" else "--g-main"


Chart = tuple[str, str, str, bool]
"""(heading, svg, caption, wide) of one chart of the report page."""


def _charts(d: ReportData) -> list[Chart]:
    """(heading, svg, caption, wide) per chart, in page order: the scan's and the plan's four, then the
    trend's and the backtest's when the log has steps."""
    charts = [_pass_rate_chart(d), _silent_chart(d), _fidelity_chart(d), _mass_chart(d)]
    if d.trend is not None and d.trend.rows:
        charts.append(_trend_chart(d.trend))
    if d.backtest is not None:
        charts += _backtest_charts(d.backtest)
    return charts


def _pass_rate_chart(d: ReportData) -> Chart:
    s = d.scan
    pr = s.pass_rate
    never = round(pr.never_solved * s.prompts)
    always = round(pr.always_solved * s.prompts)
    return ("Pass rates",
            pass_rate_chart(pr.histogram, never, always, s.prompts),
            f"Prompts by pass rate p̂ = k/n in bins of width 0.1 (last bin includes 1), {s.prompts:,} prompts, "
            f"{_samples(s)}. <b>Never solved</b> (k = 0) and <b>always solved</b> (k = n) prompts give silent groups "
            f"at every G; from few samples some of them are merely rare, not impossible. "
            f"Mean p̂ {format_value(pr.mean)}, median {format_value(pr.median)}.", False)


def _silent_chart(d: ReportData) -> Chart:
    p = d.plan
    Gs = [r.G for r in p.sweep]
    est_note = (f"Model-based (bayes) estimate for every G: posterior expectations under a prior over p fitted to "
                f"the corpus, mean over {p.prompts:,} prompts")
    target_note = (f"Targets: {p.targets.describe()}" if p.targets.given else "No target given (--max-silent, "
                   "--min-fidelity), so the marked G is --g-main")
    return ("Silent groups versus G",
            silent_chart(Gs, [r.all_wrong for r in p.sweep], [r.all_correct for r in p.sweep], d.chosen_G,
                         _chosen_label(d), p.unreachable_share, p.targets.max_silent, d.g_main),
            f"Share of groups of G answers that all agree (σ = 0, no update), split into all wrong and all correct. "
            f"{esc(est_note)}. The dotted floor is the posterior share of prompts with p = 0 or 1, which no G helps. "
            f"{esc(target_note)}. At G = {d.chosen_G:,}: "
            + esc(_at(p, d.chosen_G)), False)


def _fidelity_chart(d: ReportData) -> Chart:
    s, p = d.scan, d.plan
    return ("Fidelity versus G",
            fidelity_chart(d.fidelity_curves, [r.G for r in p.sweep], [r.fidelity for r in p.sweep], d.eps,
                           d.chosen_G, _chosen_label(d), p.targets.min_fidelity),
            f"Fidelity φ(p, G) = E[σ](p, G) / sqrt(p(1−p)): the share of the large-G update a group of G delivers, "
            f"exact binomial sum at the quartiles of p̂ over the {s.group_size.in_between_prompts:,} prompts with "
            f"0 < k < n ({s.group_size.unreachable_prompts:,} with p̂ ∈ {{0, 1}} are unreachable). Dots: the smallest "
            f"G with φ ≥ 1 − ε, ε = {d.eps:g}. Dashed: the corpus mean φ weighted by GRPO gradient mass (bayes). "
            f"G = {s.group_size.G:,} meets the need of {pct(s.group_size.met_share)} of all prompts.", False)


def _mass_chart(d: ReportData) -> Chart:
    s = d.scan
    pr, ms = s.pass_rate, s.mass_share
    return ("Gradient mass by difficulty",
            mass_chart([c / s.prompts for c in pr.histogram], ms.grpo.bins, ms.grpo_finite.bins, ms.drgrpo.bins, ms.G,
                       {"grpo": (ms.grpo.extreme, ms.grpo.middle),
                        "grpo_finite": (ms.grpo_finite.extreme, ms.grpo_finite.middle),
                        "drgrpo": (ms.drgrpo.extreme, ms.drgrpo.middle)}),
            f"Share of each rule's total gradient mass falling in each p̂ bin, per-prompt mass at p = p̂ over "
            f"{s.prompts:,} prompts: GRPO ∝ sqrt(p̂(1−p̂)) at large G or E[σ](p̂, G = {ms.G:,}); Dr. GRPO ∝ p̂(1−p̂) "
            f"(same shares at every G). Extreme: {esc(EXTREME_LABEL)}; middle: {esc(MIDDLE_LABEL)}. Prompts with "
            f"p̂ ∈ {{0, 1}} carry no mass. Dashed: each bin's share of the prompts.", False)


def _trend_chart(t: TrendResult) -> Chart:
    logged = f"G = {t.G_logged}" if t.G_logged else "logged sizes " + ", ".join(map(str, t.G_logged_sizes))
    groups = sum(r.groups for r in t.rows)
    return (
        "Over training",
        trend_chart(t),
        f"Per training step ({len(t.rows):,} {'steps' if t.every == 1 else 'buckets'}, {groups:,} logged groups, "
        f"{logged}): the observed share of silent groups, split into all wrong and all correct; dashed, the "
        f"forecast one step ahead: the share predicted for the step from earlier steps only (corpus prior and "
        f"each prompt's earlier visits)"
        + (f", mean absolute error {format_value(t.ahead_mae)} over {t.mae_steps:,} steps against "
           f"{format_value(t.naive_mae)} "
           f"for the previous step's share" if t.ahead_mae is not None and t.naive_mae is not None else "")
        + "; green, the mean pass rate k/n."
        + (f" {t.dropped_groups:,} groups without a step value left out." if t.dropped_groups else ""),
        True,
    )


def _backtest_charts(bt: BacktestResult) -> list[Chart]:
    at = bt.avoided_at_max_lost
    base = ", ".join(f"{b.name} {format_value(b.brier)}" for b in bt.baselines)
    return [(
        "Forecast calibration",
        calibration_chart(bt),
        f"Every logged group after the first step ({bt.visits:,} groups of {bt.prompts:,} prompts) forecast "
        f"from earlier steps only: corpus prior fitted on earlier steps, each prompt's earlier visits "
        f"down-weighted with a half-life chosen online, recalibrated on earlier steps. Bins of width 0.1 of "
        f"the forecast P(silent) against the observed silent share; weighted mean gap "
        f"{format_value(bt.calibration_error)}. Brier score {format_value(bt.brier)} "
        f"(baselines: {esc(base)}).", False), (
        "What a skip rule buys",
        tradeoff_chart(bt),
        f"Skipping prompts before rollout: share of the silent groups avoided against the share of informative "
        f"groups lost, replayed on the log. sigmaudit: skip when the forecast P(silent) ≥ threshold; GRESO "
        f"(Zheng et al. 2025): skip with chance 1 − max(p_e^z, 0.01) after z silent visits; silent last time. "
        f"At most {pct(bt.max_lost, 0)} lost: sigmaudit avoids {pct(at.get('sigmaudit'))}, GRESO (best over its "
        f"two bases) {pct(at.get('greso'))}.", False)]


def _at(p: Any, G: int) -> str:
    row = next((r for r in p.sweep if r.G == G), None)
    if row is None:
        return "not on the swept grid."
    fid = format_value(row.fidelity)
    return (f"silent {pct(row.silent)} (all wrong {pct(row.all_wrong)}, all correct {pct(row.all_correct)}), "
            f"corpus fidelity {fid}.")


def render_html(view: View) -> str:
    """One self-contained HTML page: the full report (charts, then the scan, plan, trend and backtest
    tables) for a report's view, else the view's sections as tables."""
    if not view.parts:
        return _page(view.title, [view_html(view, level=2)])
    d = view.source
    scan_v, plan_v, *rest = view.parts
    s, p = d.scan, d.plan
    steps = "no steps" if s.steps is None else f"{s.steps:,} steps"
    files = ", ".join(d.files[:3]) + (f" and {len(d.files) - 3} more" if len(d.files) > 3 else "")
    sub = (f"{len(d.files):,} file{'s' if len(d.files) != 1 else ''} ({files}) · layout {s.layout} · "
           f"{s.prompts:,} prompts · {s.rollouts:,} rollouts · {_samples(s)} · {steps} · ε = {d.eps:g} · "
           f"G for the scan figures = {d.g_main}")
    parts = [f'<p class="sub">{esc(sub)}</p>']
    if d.filtered is not None:
        parts.append(f'<p class="warn"><b>Warning:</b> {esc(filtered_line(d.filtered).removeprefix("WARNING: "))}</p>')
    parts += ["<h2>Summary</h2>", _cards(d)]
    if p.recommended_G is not None:
        rec = f"Recommended G = <b>{p.recommended_G:,}</b>: {esc(p.reason)}."
    elif p.targets.given:
        rec = f"<b>No G recommended</b>: {esc(p.reason)}. The charts mark G = {d.g_main} (--g-main)."
    else:
        rec = (f"No target given (--max-silent, --min-fidelity), so no G is recommended; the charts mark "
               f"G = {d.g_main} (--g-main or the logged group size).")
    parts.append(f'<p class="rec">{rec}</p>')

    parts.append("<h2>Charts</h2>")
    parts.append('<div class="charts">')
    for heading, svg, caption, wide in _charts(d):
        parts.append(f"<section{' class=wide' if wide else ''}><h3>{esc(heading)}</h3>"
                     f"{_figure_html(svg, caption)}</section>")
    parts.append("</div>")

    parts.append("<h2>Recommendation</h2>")
    parts.append(view_html(plan_v))
    parts.append("<h2>Scan</h2>")
    parts.append(view_html(scan_v))
    if d.by is not None:
        parts.append(f"<h2>By {esc(d.by.column)}</h2>")
        parts.append(view_html(View(view.title, (report_by_section(d),)), fold_rows=200))
    for part in rest:  # their headings and sections chosen by views/report.py
        parts.append(f"<h2>{esc(part.heading or part.title)}</h2>")
        parts.append(view_html(part))
    if s.notes:
        parts.append("<h2>Notes</h2>")
        parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in s.notes) + "</ul>")
    return _page(d.title, parts)


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
