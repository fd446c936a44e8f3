"""Rollout logs -> per-prompt counts (n samples, k right).

>>> from sigmaudit.loaders import LoadOptions, load_counts
>>> lc = load_counts(["sample_logs/rollouts.parquet"], LoadOptions())  # doctest: +SKIP

Files (parquet, csv, jsonl/ndjson, csv/jsonl as .gz/.zst), directories (recursively) and
globs are accepted together. One pipeline (:mod:`.pipeline`): the inputs are resolved once
(:mod:`.inputs`), the input rules applied (:mod:`.rules`: skipped files, byte copies, the main
layout, series), each file scanned lazily and reduced by an engine (:mod:`.engines`: polars here,
duckdb, spark) to counts, which are assembled with every note (:mod:`.assemble`); the math layer
only ever sees the resulting counts. See :mod:`.detect` for the layout rules.
"""

from __future__ import annotations

from .by import MAX_BY_VALUES, load_by
from .engines.polars import count_file
from .options import LAYOUTS, FileCounts, LoadedCounts, LoadOptions
from .pipeline import load_counts
from .rules import drop_copied_files

__all__ = ["LAYOUTS", "MAX_BY_VALUES", "FileCounts", "LoadOptions", "LoadedCounts", "count_file",
           "drop_copied_files", "load_by", "load_counts"]
