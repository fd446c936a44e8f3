"""inspect_ai: ``EvalRecorder`` / ``ZipLogFile`` (``src/inspect_ai/log/_recorders/eval.py``), read at
UKGovernmentBEIS/inspect_ai 499e6152e7b8fc8cbd8ac5283536572aa6e4ab17.

``logs/*.eval`` is a zip: ``header.json`` (``eval.task``...), ``summaries.json``,
``reductions.json``, ``_journal/...`` and one ``samples/{id}_epoch_{epoch}.json`` per sample and
epoch (``_sample_filename``), with ``scores`` {scorer: {``value``, ``answer``, ...}}. Members are
written with ``compression=ZIP_ZSTANDARD`` (method 93, via ``zipfile_zstd`` before Python 3.14),
which Python's ``zipfile`` cannot read before 3.14: such members are decompressed here with
``zstandard``.

- group = the epochs of one sample id; prompt = (task, id); no step.
- reward = the score value: ``C`` 1, ``I``/``N`` 0, ``P`` 0.5 (needs ``--threshold``), numbers
  and booleans as they are (inspect's ``value_to_float``). With several scorers,
  ``--reward-col SCORER`` picks one.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
from pathlib import Path

import polars as pl

from ...errors import InputError, SchemaError
from ..options import LoadOptions
from ..paths import zstd_errors
from ._common import Normalised, TrainerReader

NAME = "inspect-ai"
SAMPLE = re.compile(r"samples/(.+)_epoch_(\d+)\.json")
ZSTD = 93
LETTERS = {"C": 1.0, "I": 0.0, "N": 0.0, "P": 0.5, "yes": 1.0, "no": 0.0, "true": 1.0,
           "false": 0.0}


def claims_path(path: Path) -> bool:
    """``*.eval`` logs."""
    return path.suffix.lower() == ".eval"


def _member(zf: zipfile.ZipFile, raw: io.BufferedReader, info: zipfile.ZipInfo) -> bytes:
    if info.compress_type != ZSTD:
        return zf.read(info)
    import zstandard

    raw.seek(info.header_offset)
    header = raw.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    raw.seek(info.header_offset + 30 + name_len + extra_len)
    data = raw.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    return reader.read()


def _value(value) -> float | None:  # noqa: ANN001
    if value is None:
        return None
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        if value in LETTERS or value.lower() in LETTERS:
            return LETTERS.get(value, LETTERS.get(value.lower()))
        try:
            return float(value)
        except ValueError:
            return None
    raise TypeError(type(value).__name__)


def read(path: Path, opts: LoadOptions) -> Normalised:
    """One ``.eval`` zip as a long frame."""
    rows = []
    scorer = opts.reward_col
    try:
        with open(path, "rb") as raw, zipfile.ZipFile(raw) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            task = path.stem
            if "header.json" in infos:
                header = json.loads(_member(zf, raw, infos["header.json"]))
                task = (header.get("eval") or {}).get("task") or task
            for name, info in infos.items():
                m = SAMPLE.fullmatch(name)
                if not m:
                    continue
                sample = json.loads(_member(zf, raw, info))
                scores = sample.get("scores") or {}
                if scorer is None:
                    if len(scores) > 1:
                        raise SchemaError(f"several scorers ({', '.join(scores)}); which one "
                                          f"means correct?", location=f"{path}: {name}",
                                          remedy="pass --reward-col SCORER")
                    scorer = next(iter(scores), None)
                score = scores.get(scorer) if scorer else None
                try:
                    value = _value(score.get("value") if isinstance(score, dict) else None)
                except TypeError as exc:
                    raise SchemaError(f"scorer {scorer!r} gives a {exc} value, not a number or "
                                      f"C/I/P/N", location=f"{path}: {name}",
                                      remedy="pass --reward-col with a scalar scorer") from exc
                sid = str(sample.get("id", m.group(1)))
                rows.append((f"{task} | {sid}", f"{path}:{sid}", value))
    except (zipfile.BadZipFile, OSError, ValueError, *zstd_errors()) as exc:
        if isinstance(exc, SchemaError):
            raise
        raise InputError(f"cannot read inspect .eval log: {exc}", location=str(path)) from exc
    except ImportError as exc:
        raise InputError("this .eval log is zstd-compressed: reading it needs the zstandard "
                         "package", location=str(path), remedy="pip install zstandard") from exc
    if not rows:
        raise SchemaError("inspect .eval log holds no samples/ entries", location=str(path))
    frame = pl.DataFrame(rows, schema={"prompt": pl.Utf8, "group": pl.Utf8, "reward": pl.Float64},
                         orient="row").with_columns(pl.lit(None, pl.Int64).alias("step"))
    return Normalised(frame, NAME, f"detected inspect_ai .eval log: group = the epochs of one "
                      f"sample id, prompt = (task, id), no step, reward from scores.{scorer} "
                      f"(C = 1, I/N = 0)", f"scores.{scorer}")


class InspectAI(TrainerReader):
    """inspect_ai ``.eval`` logs (see the module docstring)."""

    name = NAME

    def run_root(self, path: Path) -> Path:
        """Each ``.eval`` log is one evaluation run."""
        return path
    claims_path = staticmethod(claims_path)
    read = staticmethod(read)


READER = InspectAI()
