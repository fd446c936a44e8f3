"""Issue 33 item 2: waste in tokens. Where a log carries each rollout's generated tokens (prime-rl's
``calls[].usage.completion_tokens``, NeMo-RL's ``token_loss_mask``; ``--length-col`` for a TRL ``log_extra``
column or a verl reward-extra key), scan, check and watch report the share of the tokens that fell in silent
groups beside the share of rollouts; where only text is logged they say tokens are not known.

The fixtures (tests/fixtures/writers/*-tokens) are laid out as each writer writes them (see each
reader's docstring for the writer function and commit), from one design: step 1, prompt a all-correct
(4 x 100 tokens) and prompt b mixed (50, 300 in two model calls, 60, 40); step 2, prompt a all-wrong
(4 x 500) and prompt c mixed (4 x 25). Silent tokens: 400 + 2000 of 2950. Each test also sums the tokens
by hand from the files themselves (plain json / parquet reads, the groups as the writer forms them).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.audits.watch import Watch
from sigmaudit.loaders import LoadOptions, load_counts

ROOT = Path(__file__).resolve().parents[1]
WRITERS = ROOT / "tests" / "fixtures" / "writers"
SAMPLES = ROOT / "sample_logs"
DESIGN = (400 + 2000) / 2950
"""The design's share of generated tokens in silent groups (rollouts: 8 of 16)."""


def _share(groups: dict[object, list[tuple[float, int]]]) -> tuple[float, int, float, float]:
    """(silent token share, total tokens, all-wrong share, all-correct share) of groups of (reward, tokens)."""
    total = sum(t for g in groups.values() for _, t in g)
    wrong = sum(t for g in groups.values() if all(r == 0 for r, _ in g) for _, t in g)
    right = sum(t for g in groups.values() if all(r == 1 for r, _ in g) for _, t in g)
    return (wrong + right) / total, total, wrong / total, right / total


def _prime_rl_by_hand(folder: Path) -> dict:
    """verifiers' Trace.usage: completion_tokens summed over the trace's calls; group = group.id."""
    groups: dict[object, list] = defaultdict(list)
    for f in sorted(folder.rglob("traces.jsonl")):
        for line in f.read_text().splitlines():
            ep = json.loads(line)
            for tr in ep["traces"]:
                reward = sum(r["score"] * r["weight"] for r in tr["rewards"].values())
                groups[ep["group"]["id"]].append((reward, sum(c["usage"]["completion_tokens"] for c in tr["calls"])))
    return groups


def _consecutive(rows: list[tuple[str, float, int]], tag: str) -> dict:
    """Groups as runs of consecutive rows with one prompt (NeMo-RL's repeat_interleave, TRL's RepeatSampler)."""
    groups: dict[object, list] = defaultdict(list)
    run_id, last = 0, None
    for prompt, reward, tokens in rows:
        run_id += prompt != last
        last = prompt
        groups[(tag, run_id)].append((reward, tokens))
    return groups


def _nemo_rl_by_hand(folder: Path) -> dict:
    groups: dict[object, list] = {}
    for f in sorted(folder.rglob("train_data_step*.jsonl")):
        rows = [(str(d["content"][0][:-1]), d["rewards"][0], sum(d["token_loss_mask"][0]))
                for d in map(json.loads, f.read_text().splitlines())]
        groups |= _consecutive(rows, f.name)
    return groups


def _trl_by_hand(folder: Path) -> dict:
    groups: dict[object, list] = {}
    for f in sorted(folder.rglob("*.parquet")):
        df = pl.read_parquet(f)
        groups |= _consecutive(list(zip(df["prompt"], df["accuracy_reward"], df["completion_tokens"], strict=True)),
                               f.name)
    return groups


def _verl_by_hand(folder: Path) -> dict:
    groups: dict[object, list] = defaultdict(list)
    for f in sorted(folder.rglob("*.jsonl")):
        for d in map(json.loads, f.read_text().splitlines()):
            groups[(d["step"], d["input"])].append((float(d["acc"]), d["response_length"]))
    return groups


CASES = {
    "prime-rl-tokens": ((), _prime_rl_by_hand, "traces[].calls[].usage.completion_tokens"),
    "nemo-rl-tokens": ((), _nemo_rl_by_hand, "sum of token_loss_mask"),
    "trl-tokens": (("--length-col", "completion_tokens"), _trl_by_hand, "column completion_tokens (--length-col)"),
    "verl-tokens": (("--length-col", "response_length"), _verl_by_hand, "column response_length (--length-col)"),
}


def _observed(capsys, path: Path, *extra: str) -> dict:
    code, out, err = run(capsys, "scan", str(path), "-f", "json", *extra)
    assert code == 0, err
    return json.loads(out)["observed_silent"]


@pytest.mark.parametrize("name", CASES)
def test_token_share_equals_the_hand_sum_for_each_writer(capsys, name):
    flags, by_hand, source = CASES[name]
    share, total, wrong, right = _share(by_hand(WRITERS / name))
    assert share == pytest.approx(DESIGN, abs=1e-15) and total == 2950  # the files hold the design
    o = _observed(capsys, WRITERS / name, *flags)
    assert o["token_fraction"] == pytest.approx(share, abs=1e-15)
    assert (o["tokens"], o["tokens_missing"], o["token_source"]) == (total, 0, source)
    assert o["all_wrong_token_share"] == pytest.approx(wrong, abs=1e-15)
    assert o["all_correct_token_share"] == pytest.approx(right, abs=1e-15)
    assert o["rollout_share"] == 0.5  # beside it, the share of rollouts: 8 of 16
    steps = {s["step"]: s["token_share"] for s in o["by_step"]}
    assert steps == pytest.approx({1: 400 / 850, 2: 2000 / 2100}, abs=1e-15)


@pytest.mark.parametrize("name", CASES)
def test_duckdb_gives_the_polars_token_share(capsys, name):
    pytest.importorskip("duckdb")
    flags = CASES[name][0]
    assert _observed(capsys, WRITERS / name, *flags, "--engine", "duckdb") == _observed(capsys, WRITERS / name, *flags)


@pytest.mark.parametrize("name", ["verl-tokens", "prime-rl-tokens"])
def test_spark_gives_the_polars_token_share(capsys, spark_engine, name):
    """verl: the SQL reduction; prime-rl: each file counted on an executor and sent back with its tokens."""
    flags = CASES[name][0]
    assert _observed(capsys, WRITERS / name, *flags, "--engine", "spark") == _observed(capsys, WRITERS / name, *flags)


@pytest.mark.parametrize("log", ["verl", "trl", "rollouts.parquet"])
def test_text_only_logs_say_tokens_are_not_known(capsys, log):
    """verl's _write_generations and TRL's completions table log decoded text; a character count is not a
    token count, so no token share is printed, and the words say why."""
    o = _observed(capsys, SAMPLES / log)
    assert (o["token_fraction"], o["tokens"], o["token_source"]) == (None, None, None)
    code, out, _ = run(capsys, "scan", str(SAMPLES / log), "--summary")
    (line,) = [x for x in out.splitlines() if x.startswith("generated tokens:")]
    assert code == 0 and line.startswith("generated tokens: not known") and "a character count is not one" in line


def _verl_dump(tmp_path: Path, lengths: list) -> Path:
    folder = tmp_path / "rollout"
    folder.mkdir()
    with open(folder / "1.jsonl", "w") as f:
        for i, t in enumerate(lengths):
            row = {"input": f"q{i // 4}", "output": "x", "gts": "1", "score": 1.0, "step": 1, "acc": i < 4}
            if t is not None:
                row["response_length"] = t
            f.write(json.dumps(row) + "\n")
    return folder


def test_a_rollout_without_length_makes_the_share_unknown(capsys, tmp_path):
    folder = _verl_dump(tmp_path, [10, 10, 10, None, 5, 5, 5, 5])
    o = _observed(capsys, folder, "--length-col", "response_length")
    assert (o["token_fraction"], o["tokens"], o["tokens_missing"]) == (None, None, 1)
    code, out, err = run(capsys, "check", str(folder), "--length-col", "response_length", "--max-silent-tokens", "0.5")
    assert (code, out) == (2, "") and "1 rollouts with a reward have no length" in err


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("bad", [-3, 2.5])
def test_a_length_that_is_no_token_count_is_refused_in_one_line(capsys, tmp_path, engine, bad):
    if engine == "duckdb":
        pytest.importorskip("duckdb")
    folder = _verl_dump(tmp_path, [10, 10, 10, bad, 5, 5, 5, 5])
    code, out, err = run(capsys, "scan", str(folder), "--length-col", "response_length", "--engine", engine)
    assert (code, out) == (2, "")
    assert err.strip().splitlines()[-1].startswith("sigmaudit: error:") and "not token counts" in err


def test_length_col_is_refused_where_it_cannot_be_read(capsys, tmp_path):
    code, _, err = run(capsys, "scan", str(SAMPLES / "grouped.parquet"), "--length-col", "rewards")
    assert code == 2 and "no row per rollout" in err
    code, _, err = run(capsys, "scan", str(WRITERS / "prime-rl-tokens"), "--length-col", "x")
    assert code == 2 and "it reads traces[].calls[].usage.completion_tokens" in err
    code, _, err = run(capsys, "scan", str(WRITERS / "verl-tokens"), "--length-col", "output")
    assert code == 2 and "not token counts" in err  # text is not a length


@pytest.mark.parametrize(("limit", "code"), [(0.81, 1), (0.82, 0)])
def test_check_gates_the_share_of_silent_tokens(capsys, limit, code):
    got, out, err = run(capsys, "check", str(WRITERS / "prime-rl-tokens"), "--max-silent-tokens", str(limit),
                        "--bootstrap", "0", "-f", "json")
    assert got == code, err
    (c,) = json.loads(out)["checks"]
    assert c["name"] == "silent_token_share" and c["value"] == pytest.approx(DESIGN, abs=1e-15)


def test_check_consecutive_holds_the_smaller_step_share(capsys):
    code, out, err = run(capsys, "check", str(WRITERS / "nemo-rl-tokens"), "--max-silent-tokens", "0.5",
                         "--consecutive", "2", "--bootstrap", "0", "-f", "json")
    assert code == 0, err
    (c,) = json.loads(out)["checks"]
    assert c["tested"] == pytest.approx(min(400 / 850, 2000 / 2100), abs=1e-15)


def test_check_refuses_silent_tokens_without_lengths_or_at_another_G(capsys):
    code, _, err = run(capsys, "check", str(SAMPLES / "verl"), "--max-silent-tokens", "0.5")
    assert code == 2 and "no token count per rollout" in err and "--length-col" in err
    code, _, err = run(capsys, "check", str(WRITERS / "prime-rl-tokens"), "--max-silent-tokens", "0.5", "-G", "8")
    assert code == 2 and "needs the observed basis" in err


def test_watch_reports_each_steps_token_share():
    loaded = load_counts([WRITERS / "prime-rl-tokens"])
    watch = Watch(forecast=False)
    reports = watch.advance(loaded.per_group, final=True)
    assert [r.observed.tokens for r in reports] == pytest.approx([400 / 850, 2000 / 2100], abs=1e-15)
    assert reports[-1].cumulative.tokens == pytest.approx(DESIGN, abs=1e-15)
    no_lengths = Watch(forecast=False).advance(load_counts([SAMPLES / "verl"]).per_group, final=True)
    assert {r.observed.tokens for r in no_lengths} == {None}


def test_length_col_option_reaches_the_loader():
    loaded = load_counts([WRITERS / "trl-tokens"], LoadOptions(length_col="completion_tokens"))
    assert loaded.length_source == "column completion_tokens (--length-col)"
    assert int(loaded.per_group["tokens"].sum()) == 2950


def test_all_zero_token_counts_are_refused_not_failed(capsys, tmp_path):
    """Issue 44: every rollout's token count 0 made the share 0/0 = NaN, which failed the gate (exit 1)."""
    folder = _verl_dump(tmp_path, [0] * 8)
    code, out, err = run(capsys, "check", str(folder), "--length-col", "response_length", "--max-silent-tokens", "0.5")
    assert (code, out) == (2, "") and "0/0, not defined" in err and "--max-silent-tokens" in err


def test_a_step_without_tokens_breaks_a_consecutive_run(tmp_path):
    from sigmaudit.audits.check import _held

    assert _held([0.9, float("nan"), 0.9, 0.8], 2) == 0.8
    assert _held([0.9, float("nan"), 0.9], 2) == 0.0
    assert _held([0.9, 0.7, 0.8], 2) == 0.7
