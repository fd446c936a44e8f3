"""The report's data (:mod:`sigmaudit.audits.report`) and its HTML renderer (:mod:`sigmaudit.render.html`).

Library level: which results the report gathers, the fidelity curves against the core formula,
the generic View → HTML table, the SVG clean-up, and that matplotlib stays out of every other module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sigmaudit.audits.plan import Targets
from sigmaudit.audits.report import ReportData, build_report, curve_G, default_title
from sigmaudit.core.fidelity import fidelity
from sigmaudit.loaders import LoadedCounts
from sigmaudit.render.json import render_json
from sigmaudit.views import Section, Table, View, build_view

PACKAGE = Path(__file__).resolve().parents[1] / "sigmaudit"


def loaded_from_groups(groups: list[tuple[int | None, str, int, int]]) -> LoadedCounts:
    """LoadedCounts built by hand from (step, prompt, n, k) groups; steps None means no step column."""
    per_group = pl.DataFrame(
        {"step": [g[0] for g in groups], "prompt": [g[1] for g in groups], "n": [g[2] for g in groups],
         "k": [g[3] for g in groups]},
        schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64},
    )
    per_prompt = per_group.group_by("prompt").agg(pl.col("n").sum(), pl.col("k").sum()).sort("prompt")
    has_steps = any(g[0] is not None for g in groups)
    return LoadedCounts(
        per_prompt=per_prompt, per_group=per_group, layout="long", files=("hand.csv",),
        n_rows=int(per_group["n"].sum()), missing_rewards=0, n_single_sample_prompts=0, notes=(),
        reward_source="reward", has_steps=has_steps,
    )


def small_groups(steps: bool = True) -> list[tuple[int | None, str, int, int]]:
    """12 prompts × 3 steps × groups of 8 with a spread of difficulties (some never/always solved)."""
    ks = {f"q{i:02d}": k for i, k in enumerate((0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 8))}
    out: list[tuple[int | None, str, int, int]] = []
    for step in (1, 2, 3):
        for prompt, k in ks.items():
            kk = min(8, max(0, k + (step - 2) * (0 < k < 8)))
            out.append((step if steps else None, prompt, 8, kk))
    return out


@pytest.fixture(scope="module")
def data() -> ReportData:
    return build_report(loaded_from_groups(small_groups()), g_main=8, eps=0.05, targets=Targets(max_silent=0.5))


@pytest.fixture(scope="module")
def page(data: ReportData) -> str:
    from sigmaudit.render.html import render_html

    return render_html(build_view(data))


# ----------------------------------------------------------------------------- ReportData


def test_report_gathers_scan_plan_trend(data):
    assert data.scan.prompts == data.plan.prompts == 12
    assert data.g_main == data.scan.wasted.G == data.scan.group_size.G == 8
    assert data.eps == data.scan.group_size.eps == 0.05
    assert data.trend is not None and [r.step for r in data.trend.rows] == [1, 2, 3]
    assert data.trend.estimator == "auto"  # the shared rule: bayes at the logged size
    assert [r.G for r in data.plan.sweep] == sorted(r.G for r in data.plan.sweep)


def test_chosen_G_is_the_recommendation_else_g_main(data):
    assert data.plan.recommended_G is not None
    assert (data.chosen_G, data.chosen_by) == (data.plan.recommended_G, "recommended")
    from sigmaudit.audits.plan import PlanOptions, plan_logs

    loaded = loaded_from_groups(small_groups())
    plain = build_report(loaded, G=[4, 8, 16], g_main=16)
    # issue 41 item 3: without a target the report recommends what plan does, on the same counts and flags
    alone = plan_logs(loaded, [4, 8, 16], options=PlanOptions("snr"))
    assert plain.plan.recommended_G == alone.recommended_G is not None
    assert plain.plan.budget == alone.budget and plain.plan.snr_choice == alone.snr_choice
    assert (plain.chosen_G, plain.chosen_by) == (alone.recommended_G, "recommended")
    # -G reaches both the scan's table and the plan's sweep (which adds the flat range's ends)
    assert [r.G for r in plain.scan.silent] == [4, 8, 16] and {4, 8, 16} <= {r.G for r in plain.plan.sweep}


@pytest.mark.parametrize("args", [[], ["-G", "16"], ["-G", "2"]])
def test_report_recommends_what_plan_does(capsys, tmp_path, args):
    """Issue 41 item 3: one R rule and one recommendation in report and plan, on the same file and flags."""
    from cli_runner import run

    sample = "sample_logs/rollouts.parquet"
    d = json.loads(run(capsys, "plan", sample, "-q", "-f", "json", "--bootstrap", "0", *args)[1])
    rep_args = args
    code, out, err = run(capsys, "report", sample, "-q", "-f", "json", "-o", str(tmp_path / "r.json"), *rep_args)
    assert code == 0, err
    r = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert r["plan"]["recommended_G"] == d["recommended_G"] and r["plan"]["budget"] == d["budget"]
    assert r["plan"]["snr_choice"]["flat_runs"] == d["snr_choice"]["flat_runs"]


def test_no_trend_without_steps():
    d = build_report(loaded_from_groups(small_groups(steps=False)))
    assert d.trend is None and d.scan.steps is None


def test_fidelity_curves_are_the_core_formula_at_the_scan_quartiles(data):
    rows = data.scan.group_size.quantiles
    assert [c.quantile for c in data.fidelity_curves] == [q.quantile for q in rows] == [0.25, 0.5, 0.75]
    for c, q in zip(data.fidelity_curves, rows, strict=True):
        assert c.p_hat == q.p_hat and c.exact_G == q.exact
        np.testing.assert_allclose(c.fidelity, fidelity(q.p_hat, np.array(c.G)), rtol=0, atol=0)
        assert all(0.0 <= v <= 1.0 for v in c.fidelity)
        assert list(c.fidelity) == sorted(c.fidelity)  # φ grows with G
        # the curve crosses 1 − ε exactly at the scan's exact group size
        if c.exact_G is not None and c.exact_G in c.G:
            assert fidelity(c.p_hat, c.exact_G) >= 1 - data.eps > fidelity(c.p_hat, c.exact_G - 1)


def test_curve_G_is_whole_ascending_and_keeps_the_swept_sizes():
    g = curve_G([2, 8, 256])
    assert g[0] == 2 and g[-1] == 256 and {2, 8, 256} <= set(g)
    assert list(g) == sorted(set(g)) and all(isinstance(x, int) for x in g)
    assert curve_G([8]) == (8,)


def test_to_dict_is_a_json_contract(data):
    d = json.loads(render_json(build_view(data)))
    assert d["schema_version"] == 1
    assert {"title", "files", "g_main", "chosen_G", "chosen_by", "eps", "scan", "plan", "trend",
            "fidelity_curves"} <= d.keys()
    assert d["scan"]["prompts"] == 12 and d["plan"]["recommended_G"] == data.plan.recommended_G
    assert len(d["trend"]["steps"]) == 3


def test_view_holds_every_part(data):
    titles = [s.title for s in build_view(data).sections]
    assert any(t.startswith("scan: ") for t in titles)
    assert any(t.startswith("plan: ") for t in titles)
    assert any(t.startswith("trend: ") for t in titles)
    assert any(t.startswith("backtest: ") for t in titles)


def test_default_title():
    assert default_title(["/x/rollouts.parquet"]) == "sigmaudit report — rollouts.parquet"
    assert default_title(["a/1.jsonl", "a/2.jsonl", "a/3.jsonl"]) == "sigmaudit report — 1.jsonl and 2 more files"


# ----------------------------------------------------------------------------- HTML


def test_page_has_the_charts_and_sections(page):
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 7
    h2 = re.findall(r"<h2>(.*?)</h2>", page)
    assert h2 == ["Summary", "Charts", "Recommendation", "Scan", "Per step", "Forecast backtest"]
    h3 = re.findall(r"<h3>(.*?)</h3>", page)
    for heading in ("Pass rates", "Silent groups versus G", "Fidelity versus G", "Gradient mass by difficulty",
                    "Over training", "Forecast calibration", "What a skip rule buys", "G sweep", "corpus",
                    "silent groups", "group size", "calibration", "skip rules"):
        assert heading in h3
    assert page.count("<figcaption>") == 7


def test_captions_say_what_the_numbers_mean(data, page):
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page, re.S)
    silent, fid = captions[1], captions[2]
    assert "bayes" in silent and "12 prompts" in silent and f"At G = {data.chosen_G}" in silent
    assert "ε = 0.05" in fid and "quartiles" in fid
    assert "E[σ](p̂, G = 8)" in captions[3]
    assert "G = 8" in captions[4] and "one step ahead" in captions[4] and "earlier steps only" in captions[4]
    bt = data.backtest
    assert f"{bt.visits:,} groups" in captions[5] and f"{bt.calibration_error:.4f}" in captions[5]
    assert "GRESO" in captions[6] and "Zheng et al. 2025" in captions[6]


def test_page_makes_no_network_request(page):
    lowered = page.lower()
    for bad in ('src="http', "src='http", 'href="http', "href='http", "url(http", "url('http", 'url("http',
                "@import", "<script", "<link", "<iframe", 'src="//', 'href="//', "<!doctype svg"):
        assert bad not in lowered, bad
    # the only addresses left are XML namespace names, which are never fetched
    without_ns = re.sub(r'\sxmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", page)
    assert "http:" not in without_ns and "https:" not in without_ns
    # every reference inside the SVGs points into the same chart
    for ref in re.findall(r'(?:href="|url\()#([^")]+)', page):
        assert f'id="{ref}"' in page


def test_svg_ids_are_unique_across_charts(page):
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_charts_render_deterministically():
    from sigmaudit.render.html import pass_rate_chart
    from sigmaudit.views.report import pass_rate_data

    one = pass_rate_chart(pass_rate_data((3, 1, 0, 2, 0, 0, 1, 0, 0, 2), 2, 1, 9))
    assert one == pass_rate_chart(pass_rate_data((3, 1, 0, 2, 0, 0, 1, 0, 0, 2), 2, 1, 9))
    assert "never solved (k = 0): 2 (22.2%)" in one and "always solved (k = n): 1 (11.1%)" in one


def test_marked_G_and_target_appear_in_the_charts(data, page):
    assert f"G = {data.chosen_G} (recommended)" in page
    assert "target silent ≤ 0.5" in page
    assert f"Recommended G = <b>{data.plan.recommended_G}</b>" in page


@pytest.fixture(scope="module")
def page_without_steps() -> str:
    from sigmaudit.render.html import render_html

    return render_html(build_view(build_report(loaded_from_groups(small_groups(steps=False)), G=[4, 8, 16],
                                               title="<b>run & co</b>")))


def test_page_without_steps_has_no_trend_chart(page_without_steps):
    assert page_without_steps.count("<svg") == 4
    assert "Over training" not in page_without_steps and "<h2>Per step</h2>" not in page_without_steps
    assert "No target given" in page_without_steps


def test_title_is_escaped(page_without_steps):
    assert "<b>run & co</b>" not in page_without_steps
    assert "<title>&lt;b&gt;run &amp; co&lt;/b&gt;</title>" in page_without_steps


def test_mass_card_is_the_extreme_share_at_G_with_the_limit_beside_it():
    """The card shows what scan's summary shows: the extreme band's share of gradient mass at the scan's
    G (GRPO ∝ E[σ](p̂, G), Dr. GRPO ∝ p̂(1−p̂)), and GRPO's G → ∞ limit (∝ sqrt(p̂(1−p̂))) labelled as such.
    Brute force on p̂ = k/16 (plug-in basis): p̂ = 1/16 and 15/16 are the extreme prompts."""
    from math import comb, sqrt

    from sigmaudit.views.report import report_page

    ks, n, G = (1, 4, 8, 12, 15, 6), 16, 8
    p = [k / n for k in ks]

    def e_sigma(q: float) -> float:
        return sum(comb(G, j) * q**j * (1 - q) ** (G - j) * sqrt(j * (G - j)) / G for j in range(G + 1))

    def extreme_share(mass) -> float:
        return sum(mass(q) for q in p if q < 0.1 or q > 0.9) / sum(mass(q) for q in p)

    at_g, drgrpo = extreme_share(e_sigma), extreme_share(lambda q: q * (1 - q))
    limit = extreme_share(lambda q: sqrt(q * (1 - q)))
    assert (f"{100 * at_g:.1f}", f"{100 * drgrpo:.1f}", f"{100 * limit:.1f}") == ("14.6", "12.0", "20.7")
    d = build_report(loaded_from_groups([(None, f"q{i}", n, k) for i, k in enumerate(ks)]), g_main=G,
                     estimator="plugin")
    card = next(c for c in report_page(d).cards if "gradient mass" in c.label)
    assert card.value == f"{100 * at_g:.1f}% vs {100 * drgrpo:.1f}%"
    assert card.label == ("gradient mass on extreme prompts (p < 0.1 or p > 0.9) at G = 8: GRPO vs Dr. GRPO; "
                          f"GRPO in the G → ∞ limit {100 * limit:.1f}%")


def test_corpus_with_no_in_between_prompt_still_renders():
    from sigmaudit.render.html import render_html

    groups = [(1, f"q{i}", 8, 0 if i % 2 else 8) for i in range(6)]
    d = build_report(loaded_from_groups(groups), G=[4, 8])
    assert d.fidelity_curves == ()
    assert render_html(build_view(d)).count("<svg") == 5


# ----------------------------------------------------------------------------- View → HTML table


def test_table_html_formats_and_escapes():
    from sigmaudit.render.html import table_html, view_html

    t = Table("rates <G>", ("G", "rate", "estimator"), ((8, 0.123456, "unbiased"), (16, None, "a<b")), note="ε = 0.05")
    html = table_html(t)
    assert "<caption>rates &lt;G&gt;</caption>" in html
    assert "<td class=num>0.1235</td>" in html and "<td>—</td>" in html and "<td>a&lt;b</td>" in html
    assert '<th class=num scope="col">G</th>' in html and '<th scope="col">estimator</th>' in html
    assert '<p class="note">ε = 0.05</p>' in html
    v = View("x", (Section("rates <G>", ("one line",), (t,)),))
    out = view_html(v)
    assert "<h3>rates &lt;G&gt;</h3>" in out and "<p>one line</p>" in out
    assert "<caption>" not in out  # the heading already names the table
    long = Table("steps", ("step",), tuple((i,) for i in range(50)))
    assert "<details><summary>steps (50 rows)</summary>" in view_html(View("x", (Section("s", (), (long,)),)))


def test_svg_of_strips_prologue_and_prefixes_ids():
    from matplotlib.figure import Figure

    from sigmaudit.render.html import svg_of

    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1], [0, 1])
    svg = svg_of(fig, "demo", "a line")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<?xml" not in svg and "DOCTYPE" not in svg and "<metadata" not in svg and "<style" not in svg
    assert 'aria-label="a line"' in svg and 'width="' not in svg.split(">", 1)[0]
    assert all(i.startswith("demo-") for i in re.findall(r'\bid="([^"]+)"', svg))


# ----------------------------------------------------------------------------- matplotlib stays in html.py


def test_only_the_html_renderer_imports_matplotlib():
    importers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                       if re.search(r"^\s*(import matplotlib|from matplotlib)", p.read_text(), re.M))
    assert importers == ["render/html.py"]


def test_cli_and_other_commands_do_not_load_matplotlib():
    code = ("import sys; from sigmaudit.cli.app import main; import sigmaudit.audits.report; "
            "main(['calc', '-p', '0.5', '-G', '8', '-f', 'json']); "
            "sys.exit('matplotlib' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_caption_spans_escape_what_could_be_markup():
    from sigmaudit.render.html import prose, spans_html
    from sigmaudit.views.page import Span

    assert prose("0 < k < n, <0.1%, a & b, <b>x</b>") == "0 < k < n, <0.1%, a &amp; b, &lt;b>x&lt;/b>"
    assert spans_html((Span("G = "), Span("8", "strong"), Span(": "), Span("'check' <x>", "quote"))) == (
        "G = <b>8</b>: &#x27;check&#x27; &lt;x&gt;")


# ----------------------------------------------------------------------------- the page, pinned

GOLDEN = Path(__file__).parent / "golden"


def _without_charts(page: str) -> str:
    """The page with each chart's SVG reduced to ``<svg/>`` and the version in the footer elided: what
    the views put around the charts (cards, captions, headings, tables), not matplotlib's drawing."""
    page = re.sub(r"<svg\b.*?</svg>", "<svg/>", page, flags=re.S)
    return re.sub(r"<footer>sigmaudit \S+ ·", "<footer>sigmaudit VERSION ·", page)


@pytest.mark.parametrize(("name", "fixture"), [("report_small.html", "page"),
                                               ("report_small_no_steps.html", "page_without_steps")])
def test_page_is_the_golden_page(name, fixture, request):
    """The page around the charts, byte for byte (it moved from render/html.py to views/report.py
    unchanged). Regenerate with ``SIGMAUDIT_REGEN_GOLDEN=1 pytest tests/test_report.py`` only for a
    deliberate change, and say so in the commit message."""
    got = _without_charts(request.getfixturevalue(fixture))
    path = GOLDEN / name
    if os.environ.get("SIGMAUDIT_REGEN_GOLDEN"):
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
