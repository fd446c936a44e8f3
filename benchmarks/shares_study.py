"""How close scan's gradient-mass shares come to the truth: a Monte Carlo study (issue 24, item 2).

    python benchmarks/shares_study.py            # 100 corpora per setting, 48 settings: 30 min CPU
    python benchmarks/shares_study.py --quick    # 10 per setting: 3 min CPU
    python benchmarks/shares_study.py --bins     # also the per-bin mean errors of each setting

Each simulated corpus draws N prompts' true pass rates p from a distribution, then k right of n samples per
prompt, and computes the share of each rule's total gradient mass in each of scan's 10 bins of p
(``mass_share.*.bins``) four ways:

- ``truth``: mass at each prompt's true p, binned by that p (for the drifting generator, p is the prompt's
  pass rate averaged over the steps its samples came from: what the pooled k/n estimates);
- ``plugin``: mass at p̂ = k/n binned by p̂ (scan ``--estimator plugin``, :func:`_mass_share`);
- ``posterior``: scan's default, the corpus's posterior mixture over the prior grid (:func:`_mass_share`);
- ``pmean``: each prompt binned by its posterior mean E[p | n, k], with its posterior expected mass (an
  alternative: close to plug-in at large n, but a prompt with k = 0 of 8 can still land in (0, 0.1));
- ``smooth``: the posterior mixture under the smoothed grid prior alone (one of the candidates the AIC
  chooses among, :func:`sigmaudit.core.prior.fit_smooth_prior`), whichever prior the AIC picked.

Printed per setting (distribution, n, N) and rule: the mean over corpora and bins of |estimate − truth|
(``mae``), the mean over corpora of the worst bin's |estimate − truth| (``worst``), the mean
|estimate − truth| of the extreme band (p < 0.1 or p > 0.9, ``ext``), for posterior and pmean the mean
and the largest (over corpora) worst-bin distance to plug-in, and how many corpora's priors the AIC took
from each family (one Beta plus atoms / two Betas / smoothed grid). Everything is seeded (``--seed``):
the same command prints the same table.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sigmaudit.audits.scan import _mass_share  # noqa: E402
from sigmaudit.core import prior as prior_fits  # noqa: E402
from sigmaudit.core.bands import EXTREME  # noqa: E402
from sigmaudit.core.corpus import Corpus  # noqa: E402
from sigmaudit.core.weighting import band_share, bin_shares, gradient_mass  # noqa: E402

SEED = 20261202
G_MAIN = 8
"""The finite G of ``grpo_finite`` (scan's ``--g-main`` on a log of groups of 8)."""
RULES = (("grpo", None), ("drgrpo", None), ("grpo", G_MAIN))
RULE_NAMES = ("grpo", "drgrpo", "grpo_finite")
ESTIMATORS = ("plugin", "posterior", "pmean", "smooth")
FAMILIES = ("beta+atoms/1", "beta+atoms/2", "smooth-grid")
SIZES = (8, 50, 160, 400)
PROMPTS = (200, 1000)
STEPS = 20


def _sample_log_module():
    spec = importlib.util.spec_from_file_location("make_sample_logs", ROOT / "scripts" / "make_sample_logs.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


SAMPLE = _sample_log_module()
Draw = Callable[[np.random.Generator, int, int], tuple[NDArray[np.int64], NDArray[np.float64]]]


def stationary(draw_p: Callable[[np.random.Generator, int], NDArray[np.float64]]) -> Draw:
    """k ~ Binomial(n, p) with p fixed over the log."""

    def draw(rng: np.random.Generator, N: int, n: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        p = draw_p(rng, N)
        return rng.binomial(n, p), p

    return draw


def drifting(rng: np.random.Generator, N: int, n: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The sample log's generator (scripts/make_sample_logs.py ``rollouts``): n samples spread over 20
    steps, each step's drawn at that step's pass rate; the truth is the samples' mean pass rate."""
    logit = SAMPLE.difficulty(rng, N)
    per_step = [len(s) for s in np.array_split(np.arange(n), STEPS)]
    k = np.zeros(N, dtype=np.int64)
    truth = np.zeros(N)
    for step, s in enumerate(per_step, start=1):
        p = SAMPLE.p_at(logit, step)
        k += rng.binomial(s, p)
        truth += s * p
    return k, truth / n


def _mixture(rng: np.random.Generator, N: int, weights: list[float],
             parts: list[Callable[[np.random.Generator, int], NDArray[np.float64]]]) -> NDArray[np.float64]:
    kind = rng.choice(len(parts), size=N, p=weights)
    out = np.zeros(N)
    for i, part in enumerate(parts):
        out[kind == i] = part(rng, int((kind == i).sum()))
    return out


SPIKES = np.array([0.03, 0.18, 0.41, 0.69, 0.88])
DISTRIBUTIONS: dict[str, tuple[str, Draw]] = {
    "samplelog": ("sample log's generator, pass rates drifting over 20 steps", drifting),
    "samplelog0": ("the same difficulty mix, no drift",
                   stationary(lambda r, N: SAMPLE.p_at(SAMPLE.difficulty(r, N), 0))),
    "beta": ("Beta(1.1, 1.3)", stationary(lambda r, N: r.beta(1.1, 1.3, N))),
    "bimodal": ("0.55 Beta(1.5, 12) + 0.45 Beta(9, 2.5)", stationary(lambda r, N: _mixture(
        r, N, [0.55, 0.45], [lambda q, m: q.beta(1.5, 12, m), lambda q, m: q.beta(9, 2.5, m)]))),
    "atoms": ("35% at p = 0, 15% at p = 1, 50% Beta(1.1, 1.3)", stationary(lambda r, N: _mixture(
        r, N, [0.35, 0.15, 0.5],
        [lambda q, m: np.zeros(m), lambda q, m: np.ones(m), lambda q, m: q.beta(1.1, 1.3, m)]))),
    "spiky": ("point masses at 0.03, 0.18, 0.41, 0.69, 0.88 (30/20/20/15/15%)", stationary(
        lambda r, N: SPIKES[r.choice(5, size=N, p=[0.3, 0.2, 0.2, 0.15, 0.15])])),
}


def shares(p: NDArray[np.float64], mass_of: Callable[[str, int | None], NDArray[np.float64]],
           weight: NDArray[np.float64]) -> NDArray[np.float64]:
    """(rules, 11): the 10 bin shares and the extreme-band share of each rule, mass ``mass_of(rule, G)``
    per point ``p`` (times ``weight``)."""
    out = np.empty((len(RULES), 11))
    for i, (rule, g) in enumerate(RULES):
        m = mass_of(rule, g) * weight
        out[i, :10] = bin_shares(p, m)
        out[i, 10] = band_share(p, m, EXTREME)
    return out


def smooth_prior(corpus: Corpus) -> prior_fits.GridPrior:
    """The smoothed grid prior that :func:`fit_corpus_prior` offers the AIC, fitted alone."""
    n_u, k_u, c_u = prior_fits.thin_pairs(corpus.n, corpus.k, corpus.weight)
    grid = prior_fits.default_grid()
    lik, _ = prior_fits._scaled_lik(n_u, k_u, grid)
    h = prior_fits.resolution_bandwidth(n_u, c_u)
    w, it = prior_fits.fit_smooth_prior(lik, c_u, prior_fits.smoothing_matrix(grid, h))
    return prior_fits.GridPrior(grid=grid, weights=w, iterations=it, log_likelihood=float("nan"), kind="smooth-grid")


def estimates(n: int, k: NDArray[np.int64], truth: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Shares (rules, 11) of the truth and of each estimator for one corpus; ``family``: the prior's index
    in :data:`FAMILIES`."""
    corpus = Corpus(np.full(k.size, n), k)
    out = {"truth": shares(truth, lambda r, g: np.asarray(gradient_mass(truth, r, g)), np.ones(k.size))}
    for name, est in (("plugin", "plugin"), ("posterior", "auto")):
        ms = _mass_share(corpus, G_MAIN, est)
        out[name] = np.array([[*b.bins, b.extreme] for b in (ms.grpo, ms.drgrpo, ms.grpo_finite)])
    grid, post = corpus.prior.grid, corpus.posterior
    pm = post @ grid
    out["pmean"] = shares(pm, lambda r, g: post @ np.asarray(gradient_mass(grid, r, g)), corpus.weight)
    smooth = corpus.weight @ smooth_prior(corpus).posterior(corpus.n, corpus.k)
    out["smooth"] = shares(grid, lambda r, g: np.asarray(gradient_mass(grid, r, g)), smooth)
    out["family"] = np.array(FAMILIES.index(corpus.prior.kind))
    return out


@dataclass
class Tally:
    """Per-corpus errors of one setting: arrays (corpora, rules, 11)."""

    err: dict[str, list[NDArray[np.float64]]] = field(default_factory=lambda: {e: [] for e in ESTIMATORS})
    vs_plugin: dict[str, list[NDArray[np.float64]]] = field(default_factory=lambda: {"posterior": [], "pmean": []})
    families: list[int] = field(default_factory=lambda: [0] * len(FAMILIES))

    def add(self, est: dict[str, NDArray[np.float64]]) -> None:
        self.families[int(est["family"])] += 1
        for e in ESTIMATORS:
            self.err[e].append(np.abs(est[e] - est["truth"]))
        for e in self.vs_plugin:
            self.vs_plugin[e].append(np.abs(est[e] - est["plugin"]))

    def summary(self, rule: int) -> dict[str, float]:
        """mae / worst / ext per estimator, and the distances to plug-in, for one rule."""
        out: dict[str, float] = {}
        for e in ESTIMATORS:
            a = np.array(self.err[e])[:, rule]
            out[f"{e}.mae"] = float(np.nanmean(a[:, :10]))
            out[f"{e}.worst"] = float(np.nanmean(np.nanmax(a[:, :10], axis=1)))
            out[f"{e}.ext"] = float(np.nanmean(a[:, 10]))
        for e, rows in self.vs_plugin.items():
            worst = np.nanmax(np.array(rows)[:, rule, :10], axis=1)
            out[f"{e}-plugin.mean"] = float(np.nanmean(worst))
            out[f"{e}-plugin.max"] = float(np.nanmax(worst))
        return out

    def per_bin(self, rule: int) -> dict[str, NDArray[np.float64]]:
        """Mean |estimate − truth| per bin (and extreme band) per estimator, for one rule."""
        return {e: np.nanmean(np.array(self.err[e])[:, rule], axis=0) for e in ESTIMATORS}


def run_setting(dist: str, n: int, N: int, reps: int, seed: int) -> Tally:
    """``reps`` corpora of one setting, each from its own seeded stream."""
    draw = DISTRIBUTIONS[dist][1]
    tally = Tally()
    for rep in range(reps):
        rng = np.random.default_rng([seed, list(DISTRIBUTIONS).index(dist), n, N, rep])
        k, truth = draw(rng, N, n)
        tally.add(estimates(n, k, truth))
    return tally


HEADER = (f"{'setting':<22} {'rule':<11} | {'mae: plug  post pmean smooth':<29} | "
          f"{'worst: plug  post pmean smooth':<29} | {'ext: plug  post pmean smooth':<29} | "
          f"{'post-plug':<13} | {'pmean-plug':<13} | b1/b2/sg")


def row(label: str, rule: str, s: dict[str, float], families: list[int]) -> str:
    def four(m: str) -> str:
        return " ".join(f"{s[f'{e}.{m}']:.4f}" for e in ESTIMATORS)

    return (f"{label:<22} {rule:<11} | {four('mae'):<29} | {four('worst'):<29} | {four('ext'):<29} | "
            f"{s['posterior-plugin.mean']:.4f} {s['posterior-plugin.max']:.4f} | "
            f"{s['pmean-plugin.mean']:.4f} {s['pmean-plugin.max']:.4f} | {'/'.join(map(str, families))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100, help="corpora per setting (default 100)")
    ap.add_argument("--quick", action="store_true", help="10 corpora per setting")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--dist", nargs="*", default=list(DISTRIBUTIONS), choices=list(DISTRIBUTIONS))
    ap.add_argument("--n", nargs="*", type=int, default=list(SIZES), help="samples per prompt")
    ap.add_argument("--prompts", nargs="*", type=int, default=list(PROMPTS))
    ap.add_argument("--rules", nargs="*", default=["grpo"], choices=RULE_NAMES)
    ap.add_argument("--bins", action="store_true", help="also print each setting's mean error per bin")
    args = ap.parse_args(argv)
    reps = 10 if args.quick else args.reps
    start = time.process_time()
    seen: list[tuple[str, int, str, dict[str, float]]] = []
    print(f"{reps} corpora per setting, seed {args.seed}; mean |estimate - truth| of the 10 bin shares (mae), "
          f"of the worst bin (worst), of the extreme band (ext); worst-bin |estimate - plug-in|: mean, max")
    for dist in args.dist:
        print(f"\n{dist}: {DISTRIBUTIONS[dist][0]}\n{HEADER}")
        for n in args.n:
            for N in args.prompts:
                tally = run_setting(dist, n, N, reps, args.seed)
                for rule in args.rules:
                    i = RULE_NAMES.index(rule)
                    seen.append((f"{dist} n={n} N={N}", n, rule, tally.summary(i)))
                    print(row(seen[-1][0], rule, seen[-1][3], tally.families))
                    if args.bins:
                        for e, v in tally.per_bin(i).items():
                            print(f"{'':<22} {e:<11} | " + " ".join(f"{x:.4f}" for x in v))
                sys.stdout.flush()
    verdict(seen)
    print(f"\n{time.process_time() - start:.0f} s CPU")
    return 0


def verdict(seen: list[tuple[str, int, str, dict[str, float]]]) -> None:
    """Per rule: in how many settings the posterior's mean error is at most plug-in's (n >= 50, and n < 50)."""
    print()
    for rule in dict.fromkeys(r for _, _, r, _ in seen):
        for big in (True, False):
            rows = [(label, s) for label, n, r, s in seen if r == rule and (n >= 50) == big]
            if not rows:
                continue
            for metric in ("mae", "worst", "ext"):
                worse = [label for label, s in rows if s[f"posterior.{metric}"] > s[f"plugin.{metric}"]]
                tail = f"; not in {', '.join(worse)}" if worse else ""
                print(f"{rule} n {'>=' if big else '<'} 50, {metric}: posterior <= plug-in in "
                      f"{len(rows) - len(worse)} of {len(rows)} settings{tail}")
            print(f"{rule} n {'>=' if big else '<'} 50: worst-bin |posterior - plug-in| at most "
                  f"{max(s['posterior-plugin.max'] for _, s in rows):.4f}")


if __name__ == "__main__":
    raise SystemExit(main())
