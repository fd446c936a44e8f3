"""Step windows (issue 21 item 1): ``--steps A:B`` / ``--last-steps N`` give exactly the audit of the same
groups cut out by hand, on every sample log with steps; a log without steps is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import ConfigError, SchemaError
from sigmaudit.loaders import load_counts
from sigmaudit.loaders.window import cut, parse_steps

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted(p.name for p in (ROOT / "sample_logs").iterdir())
SAME = ("prompts", "rollouts", "steps", "samples_per_prompt", "pass_rate", "silent", "observed_silent", "wasted",
        "mass_share", "group_size", "drift")
"""The scan's figures; what differs between the two inputs is what was read (files, layout, rows, notes)."""


def _scan(capsys, *args: str) -> dict:
    code, out, err = run(capsys, "scan", *args, "-f", "json", "-q")
    assert code == 0, err
    return json.loads(out)


def _trend(capsys, *args: str) -> dict:
    code, out, err = run(capsys, "trend", *args, "-f", "json", "-q")
    assert code == 0, err
    return json.loads(out)


def _windows(steps: list[int]) -> list[tuple[list[str], list[int]]]:
    """(flags, steps kept) for a last-N window and an A:B window of a log's distinct steps."""
    last = max(1, len(steps) // 3)
    a, b = steps[len(steps) // 4], steps[max(len(steps) // 4, (3 * len(steps)) // 4 - 1)]
    return [(["--last-steps", str(last)], steps[-last:]), (["--steps", f"{a}:{b}"], [s for s in steps if a <= s <= b])]


@pytest.mark.parametrize("name", SAMPLES)
def test_window_equals_the_groups_cut_by_hand(capsys, tmp_path, name):
    path = str(ROOT / "sample_logs" / name)
    try:
        loaded = load_counts([path])
    except SchemaError:  # needs flags to read at all (lm-eval): the window is refused the same way
        code, _, _ = run(capsys, "scan", path, "--last-steps", "3", "-q")
        assert code == 2
        return
    if loaded.layout == "series":  # a per-step curve of shares: trend reads it, cut to the window's rows
        d = _trend(capsys, path, "--last-steps", "3")
        last = loaded.series["step"].sort()[-3:].to_list()
        assert [r["step"] for r in d["steps"]] == last and d["window"]["steps"] == 3
        return
    groups = loaded.per_group
    if groups is None or groups["step"].drop_nulls().len() == 0:
        code, _, err = run(capsys, "scan", path, "--last-steps", "3", "-q")
        assert code == 2 and "has no training steps" in err and err.count("\n") == 1
        return
    # the same groups as a counts table with steps and group ids (one row per logged group)
    counts = groups.with_row_index("group_id").select("step", "group_id", "prompt", "n", "k")
    steps = sorted(counts["step"].drop_nulls().unique().to_list())
    for flags, kept in _windows(steps):
        counts.filter(pl.col("step").is_in(kept)).write_parquet(tmp_path / "cut.parquet")
        windowed = _scan(capsys, path, *flags)
        by_hand = _scan(capsys, str(tmp_path / "cut.parquet"))
        for key in SAME:
            assert windowed[key] == by_hand[key], (name, flags, key)
        assert windowed["window"] == {"first_step": kept[0], "last_step": kept[-1], "steps": len(kept),
                                      "asked": " ".join(flags) if flags[0] == "--last-steps" else
                                      f"--steps {flags[1]}"}
        assert by_hand["window"]["asked"] is None and by_hand["window"]["steps"] == len(kept)


def test_every_command_takes_a_window(capsys):
    log = str(ROOT / "sample_logs" / "rollouts.parquet")
    for command, extra in (("check", ["--max-silent", "1"]), ("plan", []), ("trend", []), ("forecast", []),
                           ("report", ["-f", "json"])):
        fmt = ["-o", "-"] if command == "report" else ["-f", "json"]
        code, out, err = run(capsys, command, log, "--steps", "15:", *extra, *fmt, "-q")
        assert code == 0, (command, err)
        assert json.loads(out)["window"] == {"first_step": 15, "last_step": 20, "steps": 6, "asked": "--steps 15:"}


def test_parse_and_refuse():
    assert parse_steps(" 3 : 9 ") == (3, 9) and parse_steps("4:") == (4, None) and parse_steps(":4") == (None, 4)
    for bad in ("a:b", "1:2:3", "9:3", ""):
        with pytest.raises(ConfigError):
            parse_steps(bad)
    loaded = load_counts([ROOT / "sample_logs" / "rollouts.parquet"])
    with pytest.raises(ConfigError, match="no logged group in the window"):
        cut(loaded, "500:")
    with pytest.raises(ConfigError, match="both name a window"):
        cut(loaded, "1:2", 3)
    whole = cut(loaded)
    assert whole.window is not None and (whole.window.first_step, whole.window.last_step) == (1, 20)
    assert whole.per_prompt.equals(loaded.per_prompt)
    last = cut(loaded, last_steps=500)  # more than the log has: the whole log
    assert last.per_group.height == loaded.per_group.height and last.window.steps == 20
