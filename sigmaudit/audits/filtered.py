"""Post-filter dumps: is a log written after zero-variance filtering, and what did the run see?

A dump written after zero-variance filtering (verl DAPO ``filter_groups``, open-instruct's default
``filter_zero_std_samples``, prime-rl's ``effective`` subset, NeMo-RL dynamic sampling, ROLL's
``query_filter``) holds fewer silent groups than the run sampled, and pass rates skewed toward
mixed prompts. :func:`resolve` says whether a load is such a dump, and why:

- ``structure``: the dump itself carries a marker (set by the loader, ``LoadedCounts.filtered``);
- ``flag``: the user said so (``--post-filter``);
- ``statistics``: no logged group is silent although the pass rates predict at least
  ``FILTERED_MIN_EXPECTED`` of them (the scan's test).

Pre-filter silent fraction (``--groups-generated N``). The filter drops silent groups only.
If the run generated N groups of which the dump logs L, and s of the logged ones are silent
(0 for a strict filter), then N − L groups were dropped, all silent, and before the filter

    silent fraction = (N − L + s) / N,

exactly (no model). Its split into all-wrong and all-correct is not recoverable: the dropped
groups left no trace of which kind they were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..loaders.options import Filtered

if TYPE_CHECKING:
    from ..loaders import LoadedCounts

FLAG_MESSAGE = "--post-filter: the dump was written after zero-variance filtering (user's word)"


def resolve(loaded: LoadedCounts, post_filter: bool = False,
            statistical: Filtered | Callable[[], Filtered | None] | None = None) -> Filtered | None:
    """Why ``loaded`` is a post-filter dump: structure first, then flag, then ``statistical`` (the
    scan's test, :func:`sigmaudit.audits.observed.statistical_filter`, or a callable computing it)."""
    if loaded.filtered is not None:
        return loaded.filtered
    if post_filter:
        return Filtered("flag", FLAG_MESSAGE)
    return statistical() if callable(statistical) else statistical


@dataclass(frozen=True)
class PreFilter:
    """The observed silent fraction before the filter, from the number of groups generated."""

    G: int
    """Group size of the logged groups (their most common size)."""
    groups_generated: int
    """N: groups sampled before the filter (``--groups-generated``)."""
    groups_logged: int
    """L: groups in the dump."""
    silent_logged: int
    """s: silent groups in the dump (0 for a strict filter)."""
    silent_fraction: float
    """(N − L + s) / N."""


def pre_filter(loaded: LoadedCounts, groups_generated: int) -> PreFilter:
    """The pre-filter silent fraction (module docstring); ConfigError if N < L, or when the load was cut to a
    step window (N counts the groups sampled over the whole log: mixing it with a window's logged groups would
    read most of the run's filtered groups as the window's; issue 36 item 18)."""
    window = loaded.window
    if window is not None and window.asked is not None:
        raise ConfigError(f"counts the groups sampled over the whole log, not over the window "
                          f"({window.asked})", location="--groups-generated",
                          remedy=f"drop {window.asked.split()[0]}, or gate the whole log (N is not known per step)")
    frame = loaded.per_group
    if frame is None or frame.height == 0:
        raise ConfigError("--groups-generated needs a log with group membership (steps or group ids)",
                          location="--groups-generated", remedy="drop it, or pass --allow-filtered")
    import numpy as np

    n = frame["n"].to_numpy()
    k = frame["k"].to_numpy()
    logged = int(n.size)
    silent = int(((k == 0) | (k == n)).sum())
    if groups_generated < logged:
        raise ConfigError(f"--groups-generated {groups_generated} is below the {logged} groups "
                          f"in the dump", location="--groups-generated",
                          remedy="give the number of groups sampled before the filter")
    values, counts = np.unique(n, return_counts=True)
    G = int(values[np.argmax(counts)])
    return PreFilter(G=G, groups_generated=int(groups_generated), groups_logged=logged,
                     silent_logged=silent,
                     silent_fraction=(groups_generated - logged + silent) / groups_generated)
