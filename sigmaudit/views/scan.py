"""The :class:`~sigmaudit.views.View` of a :class:`~sigmaudit.audits.scan.ScanReport`: one panel per topic.

Numbers come from the report; this module only arranges them and says what
they mean (which estimator, which G, which ε, how many prompts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.identify import NOT_IDENTIFIED
from ..core.weighting import EXTREME, MIDDLE
from ..fmt import AMOUNT, RATE, format_count, format_value, pct, plural
from .labels import QUANTILE_NAMES, WARNING, filtered_line, tokens_words
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.by import ByResult
    from ..audits.observed import ObservedSilent
    from ..audits.scan import MassBands, ScanReport

SILENT_TABLE = "predicted silent-group rate of a future group of G"
SILENT_MEANS = ("Silent = no advantage gradient, not no gradient: with a KL loss (verl use_kl_loss, TRL beta > 0) or "
                "an entropy bonus (verl entropy_coeff) on, a silent group still moves the policy, toward the reference "
                "or higher entropy, not toward the verifier's answers (docs/theory.md).")
"""What "silent" means when the loss has terms beside the advantage."""
"""Title of the table ``--format csv`` writes."""



def _range(lo_hi: tuple[float, float]) -> str:
    """An identified range as printed: both ends at 4 decimals."""
    return f"{lo_hi[0]:.4f} – {lo_hi[1]:.4f}"


def posterior_share(point: float, ci: tuple[float, float] | None) -> str:
    """A posterior never/always-solved share as printed: the point with its interval."""
    assert ci is not None
    return f"{point:.4f} (interval {ci[0]:.4f} – {ci[1]:.4f})"


def _posterior_rows(r: ScanReport) -> tuple[tuple[str, str], ...]:
    """The prior's never/always-solved shares, each with its bootstrap interval; none without replicates."""
    pr = r.pass_rate
    if pr.never_solved_posterior is None or pr.never_solved_posterior_ci is None:
        return ()
    return (("never solved, posterior P(p = 0)",
             posterior_share(pr.never_solved_posterior, pr.never_solved_posterior_ci)),
            ("always solved, posterior P(p = 1)",
             posterior_share(pr.always_solved_posterior, pr.always_solved_posterior_ci)))


def prior_words(prior: dict) -> str:
    """The corpus prior's family in a few words (JSON ``prior.selection`` says how the data chose it)."""
    if prior.get("family") == "beta+atoms":
        c = prior.get("components", 1)
        return f"masses at 0 and 1 + {'a Beta' if c == 1 else f'{c} Betas'}"
    if prior.get("family") == "smooth-grid":
        return "smoothed grid"
    return str(prior.get("family", ""))


def _bin_labels(bins: int) -> list[str]:
    return [f"[{i / bins:.1f}, {(i + 1) / bins:.1f}{']' if i == bins - 1 else ')'}" for i in range(bins)]


def _corpus(r: ScanReport) -> Section:
    steps = "unknown" if r.steps is None else f"{r.steps:,}"
    s = r.samples_per_prompt
    lines = [
        f"{plural(r.prompts, 'prompt')} · {plural(r.rollouts, 'rollout')} · {plural(r.files, 'file')} · "
        f"steps: {steps} · layout {r.layout}" + (f" (reward from {r.reward_source})" if r.reward_source else ""),
        f"samples per prompt: min {s.min:,} · median {format_count(s.median)} · max {s.max:,}",
    ]
    if r.missing_rewards:
        lines.append(f"{r.missing_rewards:,} missing (null/NaN) rewards excluded, not counted as wrong")
    if r.single_sample_prompts:
        have = "prompt has" if r.single_sample_prompts == 1 else "prompts have"
        lines.append(f"{r.single_sample_prompts:,} {have} a single sample (p̂ is 0 or 1)")
    pr = r.pass_rate
    rate = Table(
        f"pass rate p̂ = k/n over {r.prompts:,} prompts",
        ("quantity", "value"),
        (
            ("mean p̂ (each prompt counts once)", pr.mean),
            ("median p̂", pr.median),
            ("never solved in the log (k = 0)", pr.never_solved),
            ("always solved in the log (k = n)", pr.always_solved),
            ("never solved (p = 0): range the data allow", _range(pr.never_solved_range)),
            ("always solved (p = 1): range the data allow", _range(pr.always_solved_range)),
            *_posterior_rows(r),
        ),
        note="in the log: k = 0 from a few samples is not p = 0; range: from 0 (a tiny p > 0 fits k = 0 as well) "
             "to the share in the log; "
             + (f"posterior: the corpus prior's choice inside that range ({prior_words(r.prior)}), with its "
                f"{r.level:.0%} bootstrap interval over prompts ({r.replicates:,} replicates)"
                if _posterior_rows(r) else
                "the corpus prior's point inside that range is printed with its interval under --bootstrap N"
                if pr.never_solved_posterior is not None else "no prior point (plug-in or thin corpus)"),
    )
    hist = Table(
        "p̂ histogram",
        ("p̂ bin", "prompts", "share"),
        tuple((label, c, c / r.prompts) for label, c in zip(_bin_labels(len(pr.histogram)), pr.histogram,
                                                             strict=True)),
    )
    return Section("corpus", tuple(lines), (rate, hist))


def _silent(r: ScanReport) -> Section:
    min_n = r.samples_per_prompt.min
    table = Table(
        SILENT_TABLE,
        ("G", "estimate", "estimator", "all-wrong", "all-correct", "plug-in", "unbiased", "model-based"),
        tuple((s.G, s.estimate, s.estimator, s.estimate_all_wrong, s.estimate_all_correct, s.plugin, s.unbiased,
               s.bayes) for s in r.silent),
        note=(
            f"Means over {r.prompts:,} prompts. estimate = unbiased (hypergeometric; needs n ≥ G for every prompt, "
            f"min n = {min_n:,}) else model-based (prior over p fitted to the corpus); all-wrong/all-correct split "
            "the estimate. Plug-in p̂^G + (1−p̂)^G is biased when n is small. — = undefined."
        ),
    )
    lines: list[str] = []
    tables = [table]
    o = r.observed_silent
    if o is None:
        lines.append("Logged groups: group membership unknown (no group or step column), so no observed fraction; "
                     "every rate below is a prediction from the per-prompt counts.")
    else:
        lines.append(f"What happened: {pct(o.fraction)} of the {o.groups:,} logged groups were silent "
                     f"({pct(o.all_wrong)} all-wrong, {pct(o.all_correct)} all-correct), holding "
                     f"{pct(o.rollout_share)} of the logged rollouts.")
        if o.zero_spread is not None:
            lines.append(f"Shaped rewards (--threshold): {pct(o.zero_spread)} of the logged groups had raw rewards of "
                         f"zero spread (no gradient at all, {pct(o.zero_spread_rollout_share)} of the rollouts); "
                         f"{pct(o.fraction)} were silent on correctness (all on one side of the threshold), the "
                         "silence p^G + (1 − p)^G predicts.")
        if o.by_step:
            lines.append(_per_step_line(o))
        tables.insert(0, Table(
            f"observed: logged groups ({o.groups:,}; most common size G = {o.G:,})",
            ("quantity", "value"),
            (
                ("silent groups (k = 0 or k = n)", o.fraction),
                ("  all-wrong", o.all_wrong),
                ("  all-correct", o.all_correct),
                ("rollouts in silent groups", o.rollout_share),
                ("generated tokens in silent groups", o.token_fraction),
                *((("zero-spread groups (raw rewards all equal)", o.zero_spread),)
                  if o.zero_spread is not None else ()),
                (f"predicted silent rate at G = {o.G:,} from pooled counts ({o.expected_estimator})", o.expected),
                ("predicted silent groups", o.expected_groups),
            ),
            row_digits=(None, None, None, None, None, *((None,) if o.zero_spread is not None else ()), None, AMOUNT),
            note=_tokens_note(o),
        ))
    lines.extend(n for n in r.notes if NOT_IDENTIFIED in n)  # the sizes a thin log leaves out, and why
    if r.filtered_warning and (r.filtered is None or r.filtered.source != "statistics"):
        lines.append(f"{WARNING}{r.filtered_warning}")
    if r.filtered is not None:
        lines.append(filtered_line(r.filtered))
    lines.append(SILENT_MEANS)
    return Section("silent groups", tuple(lines), tuple(tables))


def _tokens(o: ObservedSilent) -> str:
    """The observed share of generated tokens in silent groups in words (or why it is not known)."""
    if o.token_fraction is None:
        return tokens_words(o.tokens_missing, o.token_source)
    spread = "" if o.zero_spread_token_share is None else f", zero-spread groups {pct(o.zero_spread_token_share)}"
    return (f"{pct(o.token_fraction)} of {o.tokens:,} sat in silent groups (all-wrong {pct(o.all_wrong_token_share)}, "
            f"all-correct {pct(o.all_correct_token_share)}{spread}; lengths from {o.token_source})")


def _tokens_note(o: ObservedSilent) -> str:
    """The observed table's note on its token row."""
    if o.token_fraction is not None:
        return f"generated tokens: over the rollouts with a reward, lengths from {o.token_source}"
    return "generated tokens: — = not known (see wasted compute)"


def _per_step_line(o: ObservedSilent) -> str:
    """The observed silent share step by step, as a sparkline with its first, last, lowest and highest."""
    from .sparkline import sparkline

    fr = [s.fraction for s in o.by_step]
    first, last = o.by_step[0], o.by_step[-1]
    chart = sparkline(fr, lo=0.0, hi=1.0, width=60)
    # on the 0–100 % scale a narrow range draws one block repeated: say "flat", not a line that reads as a level trend
    shape = "flat on a 0–100% scale;" if len(set(chart)) == 1 and len(fr) > 1 else chart
    return (f"per step (observed, steps {first.step}–{last.step}): {shape} "
            f"first {pct(first.fraction)}, last {pct(last.fraction)}, range {pct(min(fr))}–{pct(max(fr))}")


def _wasted(r: ScanReport) -> Section:
    w = r.wasted
    if w.basis == "observed":
        lines: tuple[str, ...] = (
            f"{pct(w.silent_rollout_share)} of the {w.rollouts:,} logged rollouts sat in silent groups (no update; "
            f"observed in the logged groups of G = {w.G:,}"
            + ("; silent = raw rewards of zero spread, all-wrong/all-correct on correctness)." if w.estimator !=
               "observed" else ")."),
            f"Prediction for a fresh budget in groups of G = {w.G:,} from the pooled per-prompt counts: "
            f"{pct(w.predicted)} ({w.predicted_estimator}, mean over {r.prompts:,} prompts).",
            *((f"Generated tokens: {_tokens(r.observed_silent)}.",) if r.observed_silent is not None else ()),
        )
    else:
        lines = (
            f"{pct(w.silent_rollout_share)} of a budget sampled in groups of G = {w.G:,} would land in silent groups "
            f"(no update; predicted: {w.estimator} estimate, mean over {r.prompts:,} prompts).",
        )
    table = Table(
        f"wasted compute at G = {w.G:,} ({'observed' if w.basis == 'observed' else 'predicted, ' + w.estimator})",
        ("quantity", "value"),
        (
            ("rollouts in silent groups (share)", w.silent_rollout_share),
            ("  in all-wrong groups", w.all_wrong_share),
            ("  in all-correct groups", w.all_correct_share),
            (f"effective rollouts of {w.rollouts:,} logged "
             f"({'in the log' if w.effective_from == 'log' else w.effective_from})",
             int(w.effective_rollouts) if w.effective_from == "log" and float(w.effective_rollouts).is_integer()
             else w.effective_rollouts),  # a count of logged rollouts, or an expected one
            (f"effective rollouts per group of {w.G:,}", w.effective_rollouts_per_group),
        ),
        row_digits=(None, None, None, AMOUNT, AMOUNT),
    )
    return Section("wasted compute", lines, (table,))


def _mass(r: ScanReport) -> Section:
    m = r.mass_share
    rules: tuple[MassBands, ...] = (m.grpo, m.drgrpo, m.grpo_finite, m.drgrpo_finite)
    cols = ("GRPO G→∞", "Dr. GRPO G→∞", f"GRPO G={m.G:,}", f"Dr. GRPO G={m.G:,}")
    post = m.basis == "posterior"
    v = "p" if post else "p̂"
    basis = (f"Per-prompt mass as a posterior expectation under the corpus prior over {r.prompts:,} prompts "
             "(small-sample-proof: p̂ = k/n cannot fall inside (0, 0.1) with fewer than 10 samples)"
             if post else f"Per-prompt mass at p = p̂ over {r.prompts:,} prompts (plug-in)")
    bands = Table(
        f"share of each rule's gradient mass by band of {v}",
        ("band", *cols),
        (
            (f"extreme ({EXTREME.describe(v)})", *(b.extreme for b in rules)),
            (f"middle ({MIDDLE.describe(v)})", *(b.middle for b in rules)),
        ),
        note=(
            f"{basis}: GRPO ∝ sqrt({v}(1−{v})) (the G → ∞ limit) or E[σ]({v}, G) (at G = {m.G:,}: the run's "
            f"share when G = {m.G:,} is what it samples); "
            f"Dr. GRPO ∝ {v}(1−{v}); prompts with {v} ∈ {{0, 1}} carry none."
            + ("" if m.grpo_extreme_ci is None else
               f" GRPO extreme share {m.grpo.extreme:.4f}: {r.level:.0%} bootstrap interval "
               f"{m.grpo_extreme_ci[0]:.4f} – {m.grpo_extreme_ci[1]:.4f} ({r.replicates:,} replicates).")
        ),
    )
    hist = r.pass_rate.histogram
    bins = Table(
        f"share of gradient mass by {v} bin (prompt share: p̂ in the log)",
        ("p̂ bin", "prompt share", *cols),
        tuple((label, hist[i] / r.prompts, *(b.bins[i] for b in rules))
              for i, label in enumerate(_bin_labels(len(hist)))),
    )
    return Section("gradient mass", (), (bands, bins))


def _group_size(r: ScanReport) -> Section:
    g = r.group_size
    lines = [
        f"Group-size law at ε = {g.eps:g} (fidelity φ ≥ {1 - g.eps:g}) over the {g.in_between_prompts:,} prompts "
        f"with 0 < k < n; {g.unreachable_prompts:,} prompts with p̂ ∈ {{0, 1}} are unreachable (no G helps).",
    ]
    floor = g.least_need  # computed by the audit: views do not compute
    if g.met_prompts == 0 and floor is not None and g.G < floor:
        ceiling = ("" if g.fidelity_ceiling is None else
                   f": φ ≤ φ(1/2, {g.G:,}) = {format_value(g.fidelity_ceiling, RATE)}")
        lines.append(f"G = {g.G:,} cannot meet φ ≥ {1 - g.eps:g} for any prompt{ceiling} (even p = 1/2 needs "
                     f"G ≥ {floor:,}).")
    else:
        lines.append(f"G = {g.G:,} meets the exact need of {g.met_prompts:,} of {r.prompts:,} prompts "
                     f"({pct(g.met_share)}; unreachable prompts count as unmet).")
    if g.dapo_groups_per_kept_group is not None:
        lines.append(
            f"DAPO at G = {g.G:,} draws {format_value(g.dapo_groups_per_kept_group, AMOUNT)} groups per kept group "
            f"(1/(1 − silent rate at G = {g.G:,}); DAPO fills its batch with fresh prompts)."
        )
    tables: tuple[Table, ...] = ()
    if g.quantiles:
        tables = (Table(
            f"group size needed at quantiles of p̂ (ε = {g.eps:g})",
            ("p̂ quantile", "p̂", f"φ at G = {g.G:,}", "G closed form", "G exact", f"met by G = {g.G:,}"),
            tuple((QUANTILE_NAMES.get(q.quantile, f"q = {q.quantile:g}"), q.p_hat, q.fidelity, q.closed_form, q.exact,
                   q.met) for q in g.quantiles),
        ),)
        lines.append("Closed form ceil(1/(8 ε p̂(1−p̂))) understates the need near p̂ ∈ {0, 1}; exact = smallest G "
                     "with φ(p̂, G) ≥ 1 − ε.")
    return Section("group size", tuple(lines), tables)


def scan_view(r: ScanReport) -> View:
    """The panels of ``sigmaudit scan``: corpus, silent groups, wasted compute, gradient mass, group size; the
    first screen (``View.brief``) is the headline and what to do."""
    sections = (_corpus(r), _silent(r), _wasted(r), _mass(r), _group_size(r))
    if r.by is not None:
        sections += (_by(r),)
    brief = (Section("headline", tuple(_wasted_first(scan_summary(r)))), Section("what to do", tuple(next_steps(r))))
    return View("sigmaudit scan", sections, csv_table=SILENT_TABLE, brief=brief)


_RANGE_LINE = "range the data allow"
"""The summary line of the true p = 0 / p = 1 shares the data allow (with the posterior's point under --bootstrap)."""
_MASS_LINE = "share of the gradient signal from prompts near p = 0 or 1"
"""The summary line of the extreme-band share of gradient mass at the scan's G."""
_FULL_ONLY = ("samples per prompt", "pass rate p̂", "no filtering detected", "generated tokens: not known",
              "per-prompt fidelity", _RANGE_LINE, _MASS_LINE)
"""Summary lines left to ``--summary`` and ``--full`` (the corpus, gradient mass panels): the first screen keeps to 30
lines, and keeps to lines a user acts on (the identified ranges and the extreme-band share need their panel's note)."""
_LEAD = ("wasted at", "observed silent groups", "zero-spread groups", "per step", "token")
"""The summary lines the first screen leads with: what the logged groups wasted, observed."""


def _wasted_first(lines: list[str]) -> list[str]:
    """The summary with what was wasted first; the window line (what the figures cover) and any warning stay on
    top."""
    lines = [line for line in lines if not line.startswith(_FULL_ONLY)]
    lead = [line for line in lines if line.startswith(_LEAD)]
    top = [line for line in lines if line.startswith(("window:", WARNING))]
    return top + lead + [line for line in lines if line not in lead and line not in top]


def next_steps(r: ScanReport) -> list[str]:
    """What to do after a scan, most useful first: curation when prompts were never or always solved (their
    groups are silent at any G), then the group size and the gate."""
    pr, lines = r.pass_rate, []
    unreachable = pr.never_solved + pr.always_solved
    if unreachable > 0:
        lines.append(f"data first: {pct(unreachable)} of prompts were never or always solved in the log, and a "
                     "prompt at p = 0 or 1 is silent at any G. `sigmaudit curate` says which to drop, keep or "
                     "probe again, and writes the curated training set (--dataset, --curated-out).")
    rec = r.recommendation
    if rec is not None:
        from .plan import snr_sentences

        b = rec.budget
        lines.append(f"choose G (plan's answer at R = {b.rollouts_per_step:,} rollouts/step, {b.description}): "
                     f"{snr_sentences(rec.choice, rec.max_samples)} `sigmaudit plan` shows the sweep.")
    lines.append("gate waste in CI: `sigmaudit check --max-silent T`; follow a live run: `sigmaudit watch`"
                 + ("" if rec is not None else "; choose G at your rollout budget: `sigmaudit plan`") + ".")
    return lines


def by_section(by: ByResult, pooled: str = "the panels above are the pooled audit") -> Section:
    """One row per value of the --by column (each value's :class:`ScanReport`, audited on its own):
    prompts, rollouts, logged groups, observed silent fraction, the silent rate of a future group of
    G (the scan's default estimate at --g-main, as in wasted compute) split into all-wrong/all-correct,
    never/always-solved shares and the value's post-filter state."""
    rows = []
    for g in by.groups:
        s: ScanReport = g.result
        o, w = s.observed_silent, s.wasted
        rows.append((g.value, s.prompts, s.rollouts, None if o is None else o.groups,
                     None if o is None else o.fraction, w.silent_rollout_share, w.all_wrong_share,
                     w.all_correct_share, s.pass_rate.never_solved, s.pass_rate.always_solved,
                     None if s.filtered is None else s.filtered.source))
    G = by.groups[0].result.wasted.G if by.groups else None
    cols = (by.column, "prompts", "rollouts", "groups", "observed silent", f"wasted G={G}",
            "all-wrong", "all-correct", "never solved", "always solved", "post-filter")
    if all(row[-1] is None for row in rows):  # the column only when a value is a post-filter dump
        cols, rows = cols[:-1], [row[:-1] for row in rows]
    ests = ", ".join(sorted({g.result.wasted.estimator for g in by.groups})) or "—"
    note = (f"each value audited on its own (own prior fit); wasted G={G}: share of rollouts in silent groups "
            f"({ests}: observed where the value's groups are logged at G, else predicted over its prompts), as in "
            "wasted compute; never/always solved: shares of its prompts with "
            f"k = 0 / k = n; {pooled}")
    return Section(f"by {by.column}", tables=(Table(f"by {by.column}", cols, tuple(rows), note=note),))


def _by(r: ScanReport) -> Section:
    """One row per value of the --by column, each value audited on its own."""
    assert r.by is not None
    return by_section(r.by)


def _group_size_summary(r: ScanReport) -> str:
    """The group-size line of the summary: how many prompts G meets, or (when none can be met at G: every
    φ at G is below 1 − ε) the ceiling at G, with the median prompt's φ at G and the G it needs."""
    g = r.group_size
    head = f"per-prompt fidelity φ ≥ {1 - g.eps:g} (not G at a budget): "
    if g.met_prompts == 0 and g.least_need is not None and g.G < g.least_need and g.fidelity_ceiling is not None:
        head += (f"out of reach at G = {g.G:,} for every prompt (φ ≤ φ(1/2, {g.G:,}) = "
                 f"{format_value(g.fidelity_ceiling, RATE)})")
    else:
        head += f"G = {g.G:,} meets {g.met_prompts:,} of {r.prompts:,} prompts ({pct(g.met_share)})"
    if len(g.quantiles) == len(QUANTILE_NAMES):
        mid = g.quantiles[1]
        head += (f"; φ at G = {g.G:,} at the in-between prompts' p̂ quartiles "
                 f"{', '.join(format_value(q.fidelity, RATE) for q in g.quantiles)}"
                 + (f"; the median prompt needs G = {mid.exact:,}" if mid.exact else ""))
    return head


def scan_summary(r: ScanReport) -> list[str]:
    """The dozen lines a person needs from a scan, what happened first (``sigmaudit scan --summary``)."""
    pr, w, m = r.pass_rate, r.wasted, r.mass_share
    est = {s.G: s for s in r.silent}
    rates = ", ".join(f"G={s.G:,} {pct(s.estimate)}" for s in est.values())
    post = (f"{_RANGE_LINE} (k = 0 of a few samples is not p = 0): truly unsolvable (p = 0) "
            f"{pct(pr.never_solved_range[0])}–{pct(pr.never_solved_range[1])}, truly always solved (p = 1) "
            f"{pct(pr.always_solved_range[0])}–{pct(pr.always_solved_range[1])}")
    if _posterior_rows(r):
        (nlo, nhi), (alo, ahi) = pr.never_solved_posterior_ci, pr.always_solved_posterior_ci  # type: ignore[misc]
        post += (f"; posterior P(p = 0) {pct(pr.never_solved_posterior)} ({pct(nlo)}–{pct(nhi)}), "
                 f"P(p = 1) {pct(pr.always_solved_posterior)} ({pct(alo)}–{pct(ahi)})")
    from . import context_lines

    o = r.observed_silent
    lines = [
        *context_lines(r),
        f"corpus: {plural(r.prompts, 'prompt')}, {plural(r.rollouts, 'rollout')}, {plural(r.files, 'file')}, "
        f"layout {r.layout}",
        f"samples per prompt: min {r.samples_per_prompt.min:,}, median {format_count(r.samples_per_prompt.median)}, "
        f"max {r.samples_per_prompt.max:,}",
        f"pass rate p̂: mean {format_value(pr.mean, RATE)}, median {format_value(pr.median, RATE)}",
        f"never solved in the log {pct(pr.never_solved)}, always solved in the log {pct(pr.always_solved)}",
        post,
        ("observed silent groups: none logged by group" if o is None else
         f"observed silent groups: {pct(o.fraction)} of {o.groups:,} logged groups at G = {o.G:,} "
         f"(all-wrong {pct(o.all_wrong)}, all-correct {pct(o.all_correct)})"),
        *([] if o is None or o.zero_spread is None else
          [f"zero-spread groups (raw rewards all equal, no gradient): {pct(o.zero_spread)}; silent on correctness "
           f"(--threshold): {pct(o.fraction)}"]),
        *([] if o is None or not o.by_step else [_per_step_line(o)]),
        *([] if o is None else [f"generated tokens: {_tokens(o)}"]),
        (f"wasted at G = {w.G:,}: {pct(w.silent_rollout_share)} of logged rollouts in silent groups ({w.estimator}); "
         f"predicted from pooled counts {pct(w.predicted)} ({w.predicted_estimator})" if w.basis == "observed" else
         f"wasted at G = {w.G:,}: {pct(w.silent_rollout_share)} of rollouts in silent groups "
         f"(predicted, {w.estimator})"),
        f"predicted silent-group rate of a fresh group ({r.estimator}, pooled counts): {rates}",
        f"{_MASS_LINE} ({EXTREME.describe('p')}) at G = {m.G:,} ({m.basis}): "
        f"GRPO {pct(m.grpo_finite.extreme)}, Dr. GRPO {pct(m.drgrpo_finite.extreme)}",
        _group_size_summary(r),
        ("no filtering detected in the log" if r.filtered is None
         else f"{WARNING}post-filter log ({r.filtered.source}): {r.filtered.message}"),
        *(f"{WARNING}{n}" for n in r.notes if NOT_IDENTIFIED in n),  # the sizes a thin log leaves out
    ]
    return lines
