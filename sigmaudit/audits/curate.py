"""``sigmaudit curate``: which prompts to drop, keep or re-probe by their value at the G to be run, and the
training set handed back without the dropped rows.

The rule and its figures are :func:`sigmaudit.audits.curation.value_curation` (docs/theory.md, "Curating by
value"); the join to the training set is :mod:`sigmaudit.loaders.dataset` (docs/commands.md, "curate"). A
dataset row is dropped only when at least one logged prompt matched it (one row, not several) and every
logged prompt that matched it is in the ``drop`` class; every other row is kept, and rows never seen in
the log are counted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .curation import ValueCuration

if TYPE_CHECKING:
    import polars as pl

    from ..core.corpus import Corpus
    from ..core.update import Advantage, StdConvention
    from ..loaders import LoadedCounts
    from ..loaders.dataset import Match, TrainingSet
    from .drift import Drift

EXAMPLES = 5
"""Logged prompts quoted for each kind of failed match (every one is in the ``--drop-out`` list)."""
CANDIDATES = 20
"""Candidate rows the ``--drop-out`` list names for a prompt matching several."""


@dataclass(frozen=True)
class DatasetJoin:
    """How the logged prompts met the training set's rows."""

    path: str
    """``--dataset``."""
    column: str
    """The prompt column read."""
    shape: str
    """``messages``, ``text`` or ``mixed``."""
    files: int
    rows: int
    """Rows of the training set."""
    prompts_matched: int
    """Logged prompts matched to one row."""
    prompts_unmatched: int
    """Logged prompts matching no row (listed, never guessed)."""
    prompts_several: int
    """Logged prompts matching several rows (listed, never guessed)."""
    unmatched_examples: tuple[str, ...]
    several_examples: tuple[str, ...]
    rows_dropped: int
    """Rows the curated set leaves out."""
    rows_kept: int
    """Rows it keeps: matched and not dropped, plus ``rows_unseen``."""
    rows_unseen: int
    """Rows no logged prompt matched, even as one of several candidates: kept."""
    rows_ambiguous: int
    """Rows only prompts matching several rows point at: kept."""
    rows_reprobe: int
    """Kept rows of a prompt in the ``reprobe`` class."""
    rows_mixed: int
    """Rows matched by logged prompts of different classes (kept)."""


@dataclass(frozen=True)
class CurateResult:
    """The value rule on a log, and its join to the training set."""

    value: ValueCuration
    G_source: str
    """``given`` (-G), ``recommended`` (``plan``'s recommendation at the log's R), ``logged`` (the log's group
    size) or ``default`` (8)."""
    G_logged: int | None
    G_recommended: int | None
    """``plan``'s recommended G at the log's rollouts per step (None when it recommends none)."""
    prompts: int
    samples_median: float
    """Median samples per prompt."""
    estimator: str = "bayes"
    """Every figure is a posterior mean under the corpus prior."""
    dataset: DatasetJoin | None = None
    difficulty: str | None = None
    window: Any = None
    drift: Drift | None = None
    per_prompt: Any = field(default=None, compare=False, repr=False)
    """The ``--drop-out`` table (a polars DataFrame)."""
    keep_rows: tuple[bool, ...] = field(default=(), compare=False, repr=False)
    """Per training-set row: kept (``--curated-out``)."""
    training_set: Any = field(default=None, compare=False, repr=False)
    """The :class:`~sigmaudit.loaders.dataset.TrainingSet` read."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract (docs/json.md)."""
        from .drift import context_json

        return {"G": self.value.G, "G_source": self.G_source, "G_logged": self.G_logged,
                "G_recommended": self.G_recommended, "prompts": self.prompts,
                "samples_median": self.samples_median, "estimator": self.estimator, "value": asdict(self.value),
                "dataset": None if self.dataset is None else asdict(self.dataset),
                **context_json(self.window, self.drift), "difficulty": self.difficulty}


def curate_logs(loaded: LoadedCounts, G: int | None = None, *, min_value: float, confidence: float,
                advantage: Advantage = "grpo", std: StdConvention = "sample",
                training_set: TrainingSet | None = None) -> CurateResult:
    """The value rule at G (default: ``plan``'s recommendation, else the logged group size, else 8: the G ``plan``'s
    data lever values prompts at) on the log's current difficulty (:func:`sigmaudit.audits.plan.current_difficulty`),
    shown at G, the logged G and the recommended G; with ``training_set`` the join and the rows to keep."""
    from . import corpus_of, logged_group_size
    from .curation import value_curation, value_pairs
    from .objective import DEFAULT_REFERENCE_G
    from .plan import current_difficulty

    basis, drift, difficulty = current_difficulty(loaded)
    corpus = corpus_of(basis)
    logged = logged_group_size(loaded)
    recommended = None if G else recommended_G(basis, corpus, logged, advantage, std)
    chosen = int(G or recommended or logged or DEFAULT_REFERENCE_G)
    source = "given" if G else "recommended" if recommended else "logged" if logged else "default"
    corpus.require_identified(chosen)  # a value at a G the counts do not determine is refused, with the range
    also = [g for g in (logged, recommended) if g and corpus.identification(g) is None]  # the counts fix them
    value = value_curation(corpus, chosen, also, min_value=min_value, confidence=confidence, advantage=advantage,
                           std=std)
    pv = value_pairs(corpus, chosen, min_value, confidence)
    prompts = basis.per_prompt["prompt"].to_list()
    join, keep, matches = None, (), None
    if training_set is not None:
        from ..loaders.dataset import match_prompts

        refuse_token_ids(loaded, prompts)
        matches = match_prompts(prompts, training_set)
        join, keep = dataset_join(training_set, matches, pv.decision[corpus.index], prompts)
    table = drop_list(corpus, basis.per_prompt, pv, chosen, confidence, matches, training_set)
    return CurateResult(value=value, G_source=source, G_logged=logged, G_recommended=recommended,
                        prompts=corpus.n_prompts,
                        samples_median=float(np.median(corpus.n[corpus.index])), dataset=join,
                        difficulty=difficulty, window=basis.window, drift=drift, per_prompt=table,
                        keep_rows=keep, training_set=training_set)


def recommended_G(basis: LoadedCounts, corpus: Corpus, logged: int | None, advantage: Advantage,
                  std: StdConvention) -> int | None:
    """``plan``'s recommendation with its defaults (the log's R, the run's G the logged one, the default band):
    :func:`sigmaudit.audits.snr_choice.choose_snr` as :func:`sigmaudit.audits.plan.plan` calls it."""
    from ..core.identify import NotIdentifiedError
    from .objective import DEFAULT_REFERENCE_G
    from .plan import DEFAULT_BATCH_PROMPTS, MAX_PLAN_G, MIN_ROLLOUTS_PER_STEP, log_budget, search_end
    from .snr_choice import choose_snr

    R = log_budget(basis, None, DEFAULT_BATCH_PROMPTS, logged or DEFAULT_REFERENCE_G).rollouts_per_step
    if R < MIN_ROLLOUTS_PER_STEP:
        return None
    try:
        choice, _ = choose_snr(corpus, R, search_end(corpus, min(R, MAX_PLAN_G)), run_G=logged,
                               run_G_source="logged" if logged else None, advantage=advantage, std=std)
    except NotIdentifiedError:  # plan refuses this log; curate values at the logged G (or refuses there)
        return None
    return choice.recommended_G


def refuse_token_ids(loaded: LoadedCounts, prompts: list[str]) -> None:
    """A log whose prompts are token ids (open-instruct's dumps) cannot be matched to text without the
    tokenizer that made them: refused, naming why and what fixes it."""
    from ..errors import InputError

    ids = loaded.layout == "open-instruct" or (
        bool(prompts) and all(p.replace(" ", "").isdigit() and " " in p.strip() for p in prompts[:50]))
    if ids:
        raise InputError("the log's prompts are token ids (open-instruct dumps), not text: matching them to the "
                         "training set's rows needs the tokenizer that made them, which sigmaudit does not load",
                         location=loaded.files[0] if loaded.files else "--dataset",
                         remedy="decode the ids into a prompt column with that tokenizer (or log the prompt text), "
                                "or join the --drop-out list yourself")


def dataset_join(data: TrainingSet, matches: list[Match], decision: np.ndarray, prompts: list[str]
                 ) -> tuple[DatasetJoin, tuple[bool, ...]]:
    """The join's figures and, per row, kept or not (module docstring)."""
    from ..errors import few

    classes: list[set[str]] = [set() for _ in range(data.rows)]
    candidate = [False] * data.rows
    for m, d in zip(matches, decision.tolist(), strict=True):
        if m.row is not None:
            classes[m.row].add(str(d))
        for r in m.candidates:
            candidate[r] = True
    keep = tuple(c != {"drop"} for c in classes)
    unmatched = [p for p, m in zip(prompts, matches, strict=True) if m.status == "none"]
    several = [p for p, m in zip(prompts, matches, strict=True) if m.status == "several"]
    pairs = list(zip(classes, candidate, strict=True))
    join = DatasetJoin(
        path=str(data.root), column=data.column, shape=data.shape, files=len(data.files), rows=data.rows,
        prompts_matched=sum(m.status == "row" for m in matches), prompts_unmatched=len(unmatched),
        prompts_several=len(several), unmatched_examples=tuple(few([u], 1, 80) for u in unmatched[:EXAMPLES]),
        several_examples=tuple(few([s], 1, 80) for s in several[:EXAMPLES]),
        rows_dropped=sum(not k for k in keep), rows_kept=sum(keep), rows_unseen=sum(not c and not a for c, a in pairs),
        rows_ambiguous=sum(not c and a for c, a in pairs),
        rows_reprobe=sum(c == {"reprobe"} for c in classes), rows_mixed=sum(len(c) > 1 for c in classes))
    return join, keep


def drop_list(corpus: Corpus, per_prompt: pl.DataFrame, pv: Any, G: int, confidence: float,
              matches: list[Match] | None, data: TrainingSet | None) -> pl.DataFrame:
    """``--drop-out``: one row per logged prompt with its counts, value, q = P(V < t), class, the extra samples
    that would settle a re-probe and, with ``--dataset``, its row's keys (row index, file, row in file, sha256
    of the row's text, the text) or how the match failed."""
    import polars as pl

    from ..core.value import samples_to_settle

    pair = corpus.index
    settle = {int(i): samples_to_settle(corpus.prior.posterior, corpus.prior.grid, int(corpus.n[i]),
                                        int(corpus.k[i]), G, pv.threshold, confidence)
              for i in np.flatnonzero(pv.decision == "reprobe")}
    columns: dict[str, Any] = {
        "prompt": per_prompt["prompt"], "samples": corpus.n[pair], "k": corpus.k[pair],
        "value": pv.value[pair], "p_below": pv.below[pair],
        "decision": pl.Series(pv.decision[pair].tolist(), dtype=pl.Utf8),
        "settle_samples": pl.Series([settle.get(int(i)) for i in pair], dtype=pl.Int64),
    }
    if matches is not None and data is not None:
        columns |= _row_keys(matches, data)
    return pl.DataFrame(columns)


def _row_keys(matches: list[Match], data: TrainingSet) -> dict[str, Any]:
    import polars as pl

    from ..loaders.dataset import text_hash

    rows = [m.row for m in matches]
    where = [None if r is None else data.locate(r) for r in rows]
    return {
        "match": pl.Series([m.status for m in matches], dtype=pl.Utf8),
        "dataset_row": pl.Series(rows, dtype=pl.Int64),
        "dataset_file": pl.Series([None if w is None else str(w[0].path) for w in where], dtype=pl.Utf8),
        "file_row": pl.Series([None if w is None else w[1] for w in where], dtype=pl.Int64),
        "text_sha256": pl.Series([None if r is None else text_hash(data.texts[r]) for r in rows], dtype=pl.Utf8),
        "text": pl.Series([None if r is None else data.texts[r] for r in rows], dtype=pl.Utf8),
        "candidate_rows": pl.Series([" ".join(map(str, m.candidates[:CANDIDATES])) or None for m in matches],
                                    dtype=pl.Utf8),
    }
