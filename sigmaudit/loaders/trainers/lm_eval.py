"""lm-evaluation-harness: ``EvaluationTracker.save_results_samples``
(``lm_eval/loggers/evaluation_tracker.py``), read at EleutherAI/lm-evaluation-harness
4e7e0d47f33bc71070c1d38394bafbb52b117163.

``{output_path}/{model}/samples_{task}_{date}.jsonl``: one line per (document, filter) with
``doc_id``, ``doc``, ``target``, ``arguments``, ``resps`` (every repeat's raw response),
``filtered_resps``, ``filter``, ``metrics``, ``doc_hash``... and one value per metric (e.g.
``exact_match``), computed once per document even with ``repeats``. So k of n is not in the
file: refused in one line, saying what would work.
"""

from __future__ import annotations

import polars as pl

from ...errors import SchemaError
from ..columns import ColumnMap
from ..options import LoadOptions
from ._common import TrainerReader

NAME = "lm-eval"
KEYS = {"doc_id", "resps", "filtered_resps"}


def recognize(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
    """Refuse lm-eval samples files (unless columns are named: then the user knows)."""
    if KEYS <= set(schema) and not (opts.reward_col or opts.k_col or opts.rate_col):
        raise SchemaError(
            "lm-evaluation-harness samples file: one score per (document, filter) even with "
            "repeats, so k of n is not in the file",
            location=where,
            remedy="score every entry of resps yourself and pass a long file (doc_id, reward) "
                   "or a counts file (doc_id, n, k)")
    return None


class LmEval(TrainerReader):
    """lm-evaluation-harness samples files: recognised to be refused (see the module docstring)."""

    name = NAME
    recognize = staticmethod(recognize)


READER = LmEval()
