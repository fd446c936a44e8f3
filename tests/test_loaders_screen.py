"""The repeated-block check (a whole log appended to itself) reads every column of a file only when a
cheap necessary test passes (reduce._screen); the counts, the rows dropped and the notes must be those
of the full check on every file, including files built to pass the cheap test and fail the full one."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sigmaudit.errors import InputError
from sigmaudit.loaders import LoadOptions, load_counts
from sigmaudit.loaders import reduce as reduce_mod


def _log(steps: int = 2, prompts: int = 6, samples: int = 8, seed: int = 0) -> pl.DataFrame:
    """A long log whose rows name their samples (a ``sample`` column), so a repeat is detectable."""
    rows = [{"step": s, "prompt_id": f"q{p}", "reward": float((s * 7 + p * 3 + j + seed) % 3 == 0),
             "sample": f"{s}-{p}-{j}"} for s in range(steps) for p in range(prompts) for j in range(samples)]
    return pl.DataFrame(rows)


def _write(df: pl.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        df.write_parquet(path)
    elif path.suffix == ".csv":
        df.write_csv(path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in df.iter_rows(named=True)))
    return path


def _cases(tmp_path: Path, suffix: str) -> list[Path]:
    log = _log()
    other = log.with_columns(pl.format("{}-b", "sample").alias("sample"))
    odd = pl.concat([log, log.head(1)])
    return [
        _write(log, tmp_path / f"plain{suffix}"),
        _write(pl.concat([log, log]), tmp_path / f"twice{suffix}"),
        _write(pl.concat([log, log, log, log]), tmp_path / f"four{suffix}"),
        # the needed columns repeat, another column does not: the full check runs and keeps every row
        _write(pl.concat([log, other]), tmp_path / f"halves{suffix}"),
        # the first rows of both halves agree, the halves do not
        _write(pl.concat([log, log.head(1), log.slice(2), log.slice(1, 1)]), tmp_path / f"near{suffix}"),
        _write(odd, tmp_path / f"odd{suffix}"),
        _write(log.head(0), tmp_path / f"empty{suffix}") if suffix == ".parquet" else None,
    ]


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    def load():
        try:
            lc = load_counts([path], LoadOptions())
        except Exception as exc:  # noqa: BLE001 - the same error either way
            return type(exc).__name__, str(exc)
        return (lc.per_prompt.to_dicts(), None if lc.per_group is None else lc.per_group.to_dicts(), lc.notes,
                lc.n_rows)

    screened = load()
    with monkeypatch.context() as m:
        m.setattr(reduce_mod, "_screen", lambda src, lf, plan, needed: (True, None))
        full = load()
    return screened, full


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_screened_check_gives_the_full_checks_counts_and_notes(tmp_path, monkeypatch, suffix):
    for path in _cases(tmp_path, suffix):
        if path is None:
            continue
        screened, full = _both(path, monkeypatch)
        assert screened == full, path.name


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_a_log_appended_to_itself_is_still_dropped(tmp_path, suffix):
    log = _log()
    lc = load_counts([_write(pl.concat([log, log, log, log]), tmp_path / f"four{suffix}")], LoadOptions())
    assert lc.n_rows == log.height
    assert any(n.startswith(f"{3 * log.height} duplicate rows dropped") for n in lc.notes)
    lc = load_counts([_write(pl.concat([log, log.with_columns(pl.format("{}-b", "sample").alias("sample"))]),
                             tmp_path / f"halves{suffix}")], LoadOptions())
    assert lc.n_rows == 2 * log.height and not any("duplicate" in n for n in lc.notes)


def test_screen_skips_the_full_read_when_the_halves_differ(tmp_path, monkeypatch):
    """The full read (every column of the file) happens only when the cheap test passes."""
    calls = []
    real = reduce_mod.drop_repeated_blocks

    def spy(*args, **kwargs):
        calls.append(args[0].columns)
        return real(*args, **kwargs)

    monkeypatch.setattr(reduce_mod, "drop_repeated_blocks", spy)
    log = _log()
    for suffix in (".parquet", ".jsonl"):
        load_counts([_write(log, tmp_path / f"plain{suffix}")], LoadOptions())
        assert calls == []
        load_counts([_write(pl.concat([log, log]), tmp_path / f"twice{suffix}")], LoadOptions())
        assert calls == [["step", "prompt_id", "reward", "sample"]]
        calls.clear()


def test_a_late_value_of_another_type_counts_only_in_a_column_the_layout_uses(tmp_path):
    """The text read behind the check parses the columns the layout uses: a value past the
    schema-inference window that does not fit its column's type is refused in the reward column and
    ignored in a column nothing reads (the counts are those of the json module)."""
    lines = [{"step": 1, "prompt_id": f"q{i % 50}", "reward": float(i % 7 == 0),
              "extra": 1 if i < 1100 else "text"} for i in range(1200)]
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    got = load_counts([path], LoadOptions()).per_prompt.sort("prompt")
    expected = {}
    for line in lines:
        n, k = expected.get(line["prompt_id"], (0, 0))
        expected[line["prompt_id"]] = (n + 1, k + int(line["reward"]))
    assert got.rows() == sorted((p, n, k) for p, (n, k) in expected.items())
    for line in lines[1100:]:
        line["reward"] = "text"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    with pytest.raises(InputError, match='reward on line 1101 is "text", not a number or boolean'):
        load_counts([path], LoadOptions())
