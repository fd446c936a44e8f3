"""An incremental forecaster for use inside a training loop: ``sigmaudit.Forecaster``.

Feed it each step's groups as they are scored (:meth:`Forecaster.update` with one reward per
sample, or :meth:`Forecaster.update_counts` with one (n, k) per group) and ask, at any point, for
what ``sigmaudit forecast`` would say on the same groups: each prompt's P(silent) at its next visit
with G samples (a prediction from its visit history and a corpus prior, see
:mod:`sigmaudit.audits.forecast`), the skip list at ``max_p_silent``, and a suggested group size
per prompt. :meth:`Forecaster.result` *is* ``forecast``'s result on the groups fed so far, so it
equals ``sigmaudit forecast`` run on a dump of them.

Cost: each query after an update replays the history (as ``forecast`` does); corpus priors already
fitted for an earlier step are reused (:func:`sigmaudit.audits.forecast.prior_of_pairs`), so a query per
training step costs about one prior fit plus a pass over the groups.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigError
from ..loaders.options import Window
from . import arguments
from .skip_rule import DEFAULT_MAX_P_SILENT

if TYPE_CHECKING:
    import polars as pl

    from .forecast import ForecastResult, Replay
    from .watch import Shares

DEFAULT_SIZES: tuple[int, ...] = (4, 8, 16, 32, 64)
"""Group sizes :meth:`Forecaster.suggested_n` chooses from."""
SUGGEST_MAX_P_SILENT = 0.5
"""Default P(silent) a suggested group size must reach: the group is more likely informative than not."""


def _ids(prompt_ids: Any) -> list[str]:
    """The prompt ids as text, one per sample (or group); ConfigError for a non-sequence (a bare 5 or "abc")."""
    if isinstance(prompt_ids, str | bytes) or not hasattr(prompt_ids, "__iter__"):
        raise ConfigError(f"prompt_ids must be a sequence of prompt ids, got {prompt_ids!r}", location="prompt_ids")
    return [str(p) for p in prompt_ids]


def _array(values: ArrayLike, dtype: Any, name: str) -> np.ndarray:
    """``values`` as a flat array of ``dtype``; ConfigError when they are not numbers."""
    try:
        raw = np.asarray(values)
        if raw.dtype.kind not in "biuf":
            raise TypeError
        return raw.astype(dtype).ravel()
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{name} must be numbers, got {values!r}"[:200], location=name) from None


def _whole_array(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` as int64, each a whole number (1.5 is refused, not truncated) below 2**62 in magnitude."""
    x = _array(values, np.float64, name)
    if not (np.isfinite(x) & (x == np.round(x)) & (np.abs(x) <= 2.0**62)).all():
        raise ConfigError(f"{name} must be whole numbers, got {values!r}"[:200], location=name)
    return np.asarray(values).astype(np.int64).ravel() if np.asarray(values).dtype.kind in "iu" else x.astype(np.int64)


@dataclass(frozen=True)
class _Batch:
    step: np.ndarray
    prompt: list[str]
    n: np.ndarray
    k: np.ndarray


class Forecaster:
    """Per-prompt P(silent) at the next visit, updated step by step (see the module docstring).

    ``G``: the group size of the next visit (None: the most common size fed so far);
    ``max_p_silent``: a prompt is on the skip list when its P(silent) exceeds this;
    ``threshold``: a reward >= threshold counts as correct in :meth:`update` (None: rewards must be
    0/1 or booleans, as the loaders require without ``--threshold``).

    >>> f = Forecaster(G=4)
    >>> f.update(1, ["a"] * 4 + ["b"] * 4, [1, 1, 1, 1, 0, 1, 0, 0])
    >>> f.update_counts(2, ["a", "b"], n=[4, 4], k=[4, 2])
    >>> f.steps, f.groups
    ((1, 2), 4)
    >>> sorted(f.p_silent()) == ["a", "b"] and f.p_silent()["a"] > f.p_silent()["b"]
    True
    """

    def __init__(self, G: int | None = None, *, max_p_silent: float = DEFAULT_MAX_P_SILENT,
                 threshold: float | None = None) -> None:
        self.G = None if G is None else arguments.group_size(G)
        self.max_p_silent = arguments.rate(max_p_silent, "max_p_silent")
        self.threshold = None if threshold is None else arguments.real(threshold, "threshold")
        self._batches: list[_Batch] = []
        self._frame: pl.DataFrame | None = None
        self._replay: Replay | None = None
        self._results: dict[int, ForecastResult] = {}

    # ------------------------------------------------------------------ feeding

    def update(self, step: int, prompt_ids: Sequence[Hashable], rewards: ArrayLike) -> None:
        """One training step's scored samples: one prompt id and one reward per sample. The samples
        of one prompt at one step form one group (call :meth:`update_counts` when a prompt is drawn
        in several groups at a step)."""
        r = _array(rewards, np.float64, "rewards")
        ids = _ids(prompt_ids)
        if len(ids) != r.size:
            raise ConfigError(f"{len(ids)} prompt ids but {r.size} rewards", location="rewards")
        if np.isnan(r).any():
            raise ConfigError("a reward is NaN: leave unscored samples out", location="rewards")
        if np.isinf(r).any():
            raise ConfigError("a reward is infinite", location="rewards")
        if self.threshold is None:
            if not np.isin(r, (0.0, 1.0)).all():
                raise ConfigError("rewards must be 0/1 (or booleans) unless a threshold is given",
                                  location="rewards", remedy="pass Forecaster(threshold=...)")
            right = r == 1.0
        else:
            right = r >= self.threshold
        uniq, inverse = np.unique(np.asarray(ids, dtype=object), return_inverse=True)
        n = np.bincount(inverse, minlength=uniq.size)
        k = np.bincount(inverse, weights=right, minlength=uniq.size).astype(np.int64)
        self.update_counts(step, [str(u) for u in uniq], n, k)

    def update_counts(self, step: int, prompt_ids: Sequence[Hashable], n: ArrayLike, k: ArrayLike) -> None:
        """One training step's groups: per group its prompt id, size n and right answers k."""
        step = arguments.step(step)
        nn, kk = _whole_array(n, "n"), _whole_array(k, "k")
        ids = _ids(prompt_ids)
        if not len(ids) == nn.size == kk.size:
            raise ConfigError(f"{len(ids)} prompt ids, {nn.size} n and {kk.size} k: one each per group",
                              location="update_counts")
        if (nn < 1).any() or (kk < 0).any() or (kk > nn).any():
            raise ConfigError("each group needs n >= 1 and 0 <= k <= n", location="update_counts")
        if (nn > arguments.MAX_GROUP_SIZE).any():
            raise ConfigError("a group's n is above 2**62", location="n")
        self._batches.append(_Batch(np.full(nn.size, int(step), dtype=np.int64), ids, nn, kk))
        self._frame, self._replay, self._results = None, None, {}

    # ------------------------------------------------------------------ what was fed

    @property
    def per_group(self) -> pl.DataFrame:
        """Every group fed: step, prompt, n, k (the loaders' per-group table)."""
        import polars as pl

        if self._frame is None:
            b = self._batches
            self._frame = pl.DataFrame({
                "step": np.concatenate([x.step for x in b]) if b else np.zeros(0, dtype=np.int64),
                "prompt": [p for x in b for p in x.prompt],
                "n": np.concatenate([x.n for x in b]) if b else np.zeros(0, dtype=np.int64),
                "k": np.concatenate([x.k for x in b]) if b else np.zeros(0, dtype=np.int64),
            }, schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64})
        return self._frame

    @property
    def steps(self) -> tuple[int, ...]:
        """Distinct steps fed, ascending."""
        return tuple(sorted({int(s) for b in self._batches for s in np.unique(b.step)}))

    @property
    def groups(self) -> int:
        """Groups fed."""
        return sum(b.n.size for b in self._batches)

    def observed(self, step: int | None = None) -> Shares:
        """The observed silent shares of one step's groups (default: the last step fed)."""
        from .watch import shares

        if not self._batches:
            raise ConfigError("nothing fed yet", location="observed", remedy="call update() first")
        s = self.steps[-1] if step is None else arguments.step(step)
        if s not in self.steps:
            raise ConfigError(f"no group was fed at step {s}", location="step",
                              remedy=f"steps fed: {self.steps[0]}..{self.steps[-1]}")
        n = np.concatenate([b.n[b.step == s] for b in self._batches])
        k = np.concatenate([b.k[b.step == s] for b in self._batches])
        return shares(n, k)

    # ------------------------------------------------------------------ forecasts

    def _size(self, G: int | None) -> int:
        if G is not None:
            return arguments.group_size(G)
        if self.G is not None:
            return self.G
        sizes, counts = np.unique(self.per_group["n"].to_numpy(), return_counts=True)
        if sizes.size == 0:
            raise ConfigError("nothing fed yet", location="Forecaster", remedy="call update() first")
        return int(sizes[np.argmax(counts)])  # the most common size, the smallest among ties

    def result(self, G: int | None = None) -> ForecastResult:
        """``sigmaudit forecast``'s result on the groups fed so far, at group size G (default :attr:`G`).
        Needs two steps (the first has nothing earlier to forecast from)."""
        from .forecast import forecast, replay

        size = self._size(G)
        if size not in self._results:
            if self._replay is None:
                self._replay = replay(self.per_group)
            result = forecast(self.per_group, size, max_p_silent=self.max_p_silent, replayed=self._replay)
            self._results[size] = dataclasses.replace(result, window=self._window())
        return self._results[size]

    def _window(self) -> Window | None:
        """The steps fed so far, as the command's ``window`` of a whole log (drift is not tested here:
        :func:`sigmaudit.forecast_logs` on the files says when pass rates moved)."""
        steps = self.per_group["step"].drop_nulls() if self.per_group.height else None
        if steps is None or steps.is_empty():
            return None
        return Window(int(steps.min()), int(steps.max()), int(steps.n_unique()))  # type: ignore[arg-type]

    def p_silent(self, G: int | None = None) -> dict[str, float]:
        """Each prompt's P(silent) at its next visit with G samples (a prediction)."""
        table = self.result(G).table
        return dict(zip(table["prompt"].to_list(), table["p_silent"].to_list(), strict=True))

    def skip_list(self, G: int | None = None) -> list[str]:
        """Prompts whose P(silent) exceeds ``max_p_silent``, most likely silent first."""
        table = self.result(G).table
        return [p for p, s in zip(table["prompt"].to_list(), table["skip"].to_list(), strict=True) if s]

    def expected_silent_share(self, G: int | None = None) -> float:
        """Mean P(silent) over the prompts seen: the silent share expected if each were drawn once more."""
        r = self.result(G)
        return r.expected_silent / r.prompts if r.prompts else float("nan")

    def suggested_n(self, sizes: Sequence[int] = DEFAULT_SIZES,
                    max_p_silent: float = SUGGEST_MAX_P_SILENT) -> dict[str, int | None]:
        """Per prompt, the smallest group size in ``sizes`` whose forecast P(silent) is at most
        ``max_p_silent`` (default 0.5); None when no size gets there (a skip candidate). P(silent) at
        a size other than the one logged is the model-based forecast, not recalibrated (a prediction)."""
        limit = arguments.rate(max_p_silent, "max_p_silent")
        out: dict[str, int | None] = {}
        for size in sorted(set(arguments.group_sizes(sizes, "sizes")), reverse=True):
            for prompt, p in self.p_silent(size).items():
                if p <= limit:
                    out[prompt] = size
                else:
                    out.setdefault(prompt, None)
        return out

    def to_dict(self, G: int | None = None) -> dict[str, Any]:
        """``sigmaudit forecast``'s JSON contract (without ``schema_version``)."""
        return self.result(G).to_dict()
