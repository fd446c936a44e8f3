"""Audits: one public call per command, each returning one frozen result.

``scan.audit``, ``plan.plan``, ``check.check``, ``trend.trend``, ``calc.calc``,
``simulate.simulate``, ``report.build_report``; ``allocate.allocate`` gives the plan its
per-prompt group sizes. Audits read :class:`~sigmaudit.loaders.LoadedCounts` and compute with
:class:`~sigmaudit.core.corpus.Corpus`; they never format, render or print.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts


def corpus_of(loaded: LoadedCounts) -> Corpus:
    """The load's per-prompt counts as a :class:`~sigmaudit.core.corpus.Corpus`, built once per load
    (so its prior is fitted once however many figures and audits use it)."""
    from ..core.corpus import Corpus

    if "corpus" not in loaded.cache:
        loaded.cache["corpus"] = Corpus(loaded.per_prompt["n"].to_numpy(), loaded.per_prompt["k"].to_numpy())
    corpus: Corpus = loaded.cache["corpus"]
    return corpus


def check_eps(eps: float) -> float:
    """ε for the group-size law, checked by the core's one ε rule; ConfigError naming ``eps``."""
    from ..core._validate import EPS_MIN, as_eps
    from ..errors import ConfigError

    try:
        if isinstance(eps, bool) or not isinstance(eps, int | float):
            raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
        as_eps(eps, minimum=EPS_MIN)
    except ValueError as exc:
        raise ConfigError(str(exc), location="eps", remedy="e.g. 0.05") from exc
    return float(eps)


def logged_group_size(loaded: LoadedCounts) -> int | None:
    """The log's most common group size (the smallest among ties), or None for a log without groups:
    what ``check`` and ``forecast`` take when ``-G`` is not given."""
    groups = loaded.per_group
    if groups is None or groups.height == 0:
        return None
    counts = groups.group_by("n").len().sort(["len", "n"], descending=[True, False])
    return int(counts["n"][0])


def identified_sizes(corpus: Corpus, sizes: tuple[int, ...]) -> tuple[tuple[int, ...], str | None]:
    """The default group sizes ``sizes`` a command shows, by the one identification rule
    (:meth:`~sigmaudit.core.corpus.Corpus.identification`): those below the first G the logs do not determine
    (larger ones are not tried: each try is a few linear programmes, and a thin log's range only widens
    with G), with every G ≤ the fewest samples per prompt put in their place (each has its unbiased estimate:
    G = 2 on a log of 2 samples per prompt), and a note naming the sizes left out and the range at the
    first. ``sizes`` unchanged (and no note) when all are identified, or when no G ≥ 2 would be left (the
    command then refuses with the reason)."""
    from ..core.identify import NOT_IDENTIFIED

    ordered = sorted(sizes)
    first = next((e for g in ordered if (e := corpus.identification(g)) is not None), None)
    if first is None:
        return sizes, None
    shown = tuple(sorted({g for g in ordered if g < first.G} | set(range(2, corpus.min_samples + 1))))
    if not shown:
        return sizes, None
    left = [g for g in ordered if g >= first.G]
    return shown, (f"G = {', '.join(map(str, left))} left out: {NOT_IDENTIFIED} ({first.reason}; at "
                   f"G = {first.G} every silent rate from {first.low:.4f} to {first.high:.4f} fits them); shown: "
                   f"G = {', '.join(map(str, shown))}, which they determine; log more samples per prompt for larger G")
