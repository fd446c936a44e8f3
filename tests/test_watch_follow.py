"""``sigmaudit watch`` as a follower that loses nothing (issue 36, items 1-14, 31, 34; issue 37 item 8).

Every figure is checked against a brute-force count of the rows written (groups = (step, prompt) of a
verl-style dump, silent = all answers agree), never against watch's own output."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from sigmaudit.audits.watch import Watch
from sigmaudit.cli.app import main
from sigmaudit.loaders.follow import Follower

G = 4
ROOT = Path(__file__).resolve().parents[1]
WRITERS = Path(__file__).resolve().parent / "fixtures" / "writers"


def _rows(step: int, prompts: int = 6, seed: int = 0, tag: str = "") -> list[dict]:
    """One step of a verl (legacy) dump: G lines per prompt."""
    rng = np.random.default_rng(seed * 1000 + step)
    out = []
    for i in range(prompts):
        p = rng.choice([0.0, 0.5, 1.0, 0.3])
        for _ in range(G):
            ok = bool(rng.random() < p)
            out.append({"input": f"q{tag}{i}", "output": "...", "gts": "x", "score": float(ok), "step": step,
                        "acc": ok})
    return out


def _jsonl(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def _truth(rows: list[dict], right: str = "acc") -> dict[int, tuple[int, int]]:
    """step -> (groups, silent groups) by brute force: a group is the rows of one (step, prompt)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for r in rows:
        groups[(r["step"], r["input"])].append(int(bool(r[right])))
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for (step, _), ks in groups.items():
        out[step][0] += 1
        out[step][1] += sum(ks) in (0, len(ks))
    return {s: (g, q) for s, (g, q) in sorted(out.items())}


def _groups_of(per_group) -> dict[int, tuple[int, int]]:
    """step -> (groups, silent groups) of a snapshot."""
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for s, n, k in zip(per_group["step"].to_list(), per_group["n"].to_list(), per_group["k"].to_list(), strict=True):
        out[s][0] += 1
        out[s][1] += k in (0, n)
    return {s: (g, q) for s, (g, q) in sorted(out.items())}


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _once(folder: Path, *extra: str) -> tuple[int, list[dict], str]:
    code, out, err = _run("watch", str(folder), "--once", "--interval", "0.01", "-f", "json", *extra)
    return code, [json.loads(line) for line in out.splitlines()], err


def _run_folder(tmp_path: Path, steps: range = range(1, 4)) -> tuple[Path, list[dict]]:
    folder = tmp_path / "run"
    folder.mkdir()
    rows = []
    for s in steps:
        rows += _rows(s)
        (folder / f"{s}.jsonl").write_bytes(_jsonl(_rows(s)))
    return folder, rows


# ---- items 1, 2, 3, 13, 14: --events goes through the output writers -----------------------------------

@pytest.mark.parametrize("flag", ["--events", "--skip-out"])
@pytest.mark.parametrize("named", [False, True])
def test_an_output_naming_an_input_log_is_refused_and_the_log_kept(tmp_path, flag, named):
    """Item 1: ``--events F`` / ``--skip-out F`` naming one of the logs emptied or replaced it (exit 0)."""
    folder, _ = _run_folder(tmp_path)
    log = folder / "2.jsonl"
    before = log.read_bytes()
    code, out, err = _run("watch", str(log if named else folder), "--once", "--interval", "0.01", flag, str(log))
    assert code == 2 and out == ""
    assert f"{log}: {flag} names one of the input logs" in err or "is one of the input logs" in err
    assert log.read_bytes() == before


def test_a_hard_link_to_a_log_is_refused_as_an_output(tmp_path):
    folder, _ = _run_folder(tmp_path)
    link = tmp_path / "events.jsonl"
    os.link(folder / "1.jsonl", link)
    before = link.read_bytes()
    code, _, err = _run("watch", str(folder), "--once", "--interval", "0.01", "--events", str(link))
    assert code == 2 and "input logs" in err and (folder / "1.jsonl").read_bytes() == before


@pytest.mark.parametrize("bad", ["missing", "broken"])
def test_a_watch_that_cannot_run_leaves_the_old_events_file(tmp_path, bad):
    """Item 2: a watch exiting 2 (a mistyped path, a bad file) had already emptied --events."""
    events = tmp_path / "events.jsonl"
    events.write_bytes(b'{"step": 1}\n')
    target = tmp_path / "nothing-here"
    if bad == "broken":
        target = tmp_path / "broken.jsonl"
        target.write_bytes(b"this is not json\n")
    code, _, err = _run("watch", str(target), "--once", "--interval", "0.01", "--events", str(events))
    assert code == 2 and err
    assert events.read_bytes() == b'{"step": 1}\n'
    assert not list(tmp_path.glob(".events.jsonl.*"))


def test_outputs_inside_the_watched_folder_are_never_read_as_logs(tmp_path):
    """Item 3: --events / --skip-out inside the folder were read back: --once never reported the last
    step, and the next run failed on its own skip.csv."""
    folder, rows = _run_folder(tmp_path)
    truth = _truth(rows)
    for _ in range(2):  # the second run finds the first run's outputs there
        code, objs, err = _once(folder, "--events", str(folder / "watch.jsonl"), "--skip-out",
                                str(folder / "skip.csv"), "-q")
        assert code == 0, err
        assert [(o["step"], o["observed"]["groups"]) for o in objs[:-1]] == [(s, g) for s, (g, _) in truth.items()]
        events = [json.loads(line) for line in (folder / "watch.jsonl").read_text().splitlines()]
        assert [e["step"] for e in events] == list(truth)


def test_a_live_watch_with_its_events_in_the_folder_keeps_going(tmp_path):
    """Item 3, live: the first report changed watch.jsonl in the folder, and the next poll read it."""
    folder, rows = _run_folder(tmp_path)
    code, out, err = _run("watch", str(folder), "--interval", "0.02", "--until-idle", "0.2",
                          "--events", str(folder / "watch.jsonl"), "-q")
    assert code == 0, err
    assert [line.split(" · ")[0] for line in out.splitlines()[:3]] == ["step 1", "step 2", "step 3"]


@pytest.mark.parametrize("other", [("--skip-out", "out.jsonl"), ("-o", "out.json")])
def test_events_and_another_output_on_one_file_are_refused(tmp_path, other):
    """Item 13: --events F with --skip-out F or -o F was accepted and the event stream replaced."""
    folder, _ = _run_folder(tmp_path)
    target = tmp_path / other[1]
    target.write_text("kept\n")
    code, out, err = _run("watch", str(folder), "--once", "--interval", "0.01", "--events", str(target),
                          other[0], str(target))
    assert code == 2 and out == "" and "name the same file" in err
    assert target.read_text() == "kept\n"


def test_events_dash_is_refused_not_a_file_named_dash(tmp_path, monkeypatch):
    """Item 14: --events - wrote a file named '-' (everywhere else - is standard output)."""
    folder, _ = _run_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = _run("watch", str(folder), "--once", "--interval", "0.01", "--events", "-")
    assert code == 2 and out == "" and "--events -" in err and "--format json" in err
    assert not (tmp_path / "-").exists()


def test_watch_says_once_what_it_is_waiting_for(tmp_path):
    """Issue 37 item 8: a watch with nothing to read yet said nothing."""
    folder = tmp_path / "run"
    folder.mkdir()
    code, out, err = _run("watch", str(folder), "--interval", "0.02", "--until-idle", "0.2")
    assert code == 0
    assert err.count("waiting for") == 1 and f"the first rollout file in {folder}" in err
    (folder / "1.jsonl").write_bytes(_jsonl(_rows(1))[:30])  # not one complete line yet
    code, out, err = _run("watch", str(folder), "--interval", "0.02", "--until-idle", "0.2")
    assert err.count("waiting for") == 1 and f"{folder / '1.jsonl'}: not one complete line yet" in err


# ---- items 4-9, 11: the follower ---------------------------------------------------------------------------

def test_a_step_logged_after_a_later_step_is_reported_late_and_counted(tmp_path):
    """Item 4: a step whose file lands after a later step was reported was never reported, nor counted."""
    folder = tmp_path / "run"
    folder.mkdir()
    rows = {s: _rows(s, prompts=5 + s) for s in range(1, 6)}
    for s in (1, 2, 4, 5):
        (folder / f"{s}.jsonl").write_bytes(_jsonl(rows[s]))
    truth = _truth([r for s in rows for r in rows[s]])
    watch = Watch(window=2)
    with Follower([folder]) as follower:
        assert watch.advance(follower.poll().per_group) == []  # step 5 first seen: 1-4 complete from the next poll
        first = watch.advance(follower.poll().per_group)
        (folder / "3.jsonl").write_bytes(_jsonl(rows[3]))
        second = watch.advance(follower.poll().per_group)
        third = watch.advance(follower.poll().per_group, final=True)
    assert [r.step for r in first] == [1, 2, 4] and [r.step for r in second] == [3] and [r.step for r in third] == [5]
    late = second[0]
    assert late.late and late.forecast is None and not any(r.late for r in first + third)
    assert (late.observed.groups, late.observed.silent) == (truth[3][0], truth[3][1] / truth[3][0])
    summary = watch.summary("once")
    assert (summary.steps, summary.late_steps, summary.late_groups) == (5, (3,), truth[3][0])
    total = sum(g for g, _ in truth.values())
    assert summary.cumulative.groups == total
    assert summary.cumulative.silent == sum(q for _, q in truth.values()) / total


def _cut(rows: list[dict]) -> bytes:
    data = _jsonl(rows)
    return data[: len(data) - 17]  # a half-written last line


def test_a_log_truncated_and_rewritten_keeps_what_was_read(tmp_path):
    """Item 5: a followed log truncated (logrotate copytruncate) or reopened with "w" lost everything read
    from it: cumulative figures restarted at 0, the pending step was never reported."""
    log = tmp_path / "run" / "log.jsonl"
    log.parent.mkdir()
    first, second = _rows(1) + _rows(2), _rows(3) + _rows(4)
    log.write_bytes(_jsonl(first) + _cut(_rows(3, tag="x")))
    first += _rows(3, tag="x")[:-1]  # its complete lines are read (and were copied away by the rotation)
    watch = Watch()
    with Follower([log.parent]) as follower:
        got = [r.step for r in watch.advance(follower.poll().per_group)]
        with log.open("r+b") as fh:  # copytruncate: the copy elsewhere, the file cut to 0 in place
            fh.truncate(0)
        assert _groups_of(follower.poll().per_group) == _truth(first)
        log.write_bytes(_jsonl(second))  # the writer goes on (a reopen with "w" is the same)
        snap = follower.poll()
        got += [r.step for r in watch.advance(snap.per_group, final=True)]
    assert _groups_of(snap.per_group) == _truth(first + second)
    assert got == [1, 2, 3, 4]
    assert watch.summary("once").cumulative.groups == sum(g for g, _ in _truth(first + second).values())


def test_a_log_rewritten_whole_with_more_rows_is_not_counted_twice(tmp_path):
    """A writer that rewrites the whole file at each step (old rows first): each group once; a poll during
    the rewrite (the start of the old rows again) adds nothing."""
    log = tmp_path / "log.jsonl"
    rows = _rows(1) + _rows(2)
    log.write_bytes(_jsonl(rows))
    with Follower([log]) as follower:
        follower.poll()
        log.write_bytes(_jsonl(_rows(1)))  # "w", the old rows being written again
        assert _groups_of(follower.poll().per_group) == _truth(rows)
        rows += _rows(3)
        log.write_bytes(_jsonl(rows))
        assert _groups_of(follower.poll().per_group) == _truth(rows)


def test_a_log_rotated_by_rename_keeps_its_rows(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "log.jsonl").write_bytes(_jsonl(_rows(1)))
    with Follower([folder]) as follower:
        follower.poll()
        os.rename(folder / "log.jsonl", folder / "log.1.jsonl")
        (folder / "log.jsonl").write_bytes(_jsonl(_rows(2)))
        assert _groups_of(follower.poll().per_group) == _truth(_rows(1) + _rows(2))
        (folder / "log.1.jsonl").unlink()  # rotated away: what was read stays
        assert _groups_of(follower.poll().per_group) == _truth(_rows(1) + _rows(2))


def test_a_parquet_file_being_written_is_waited_for(tmp_path):
    """Item 7: a parquet file a ParquetWriter still holds (no footer until close) killed a live watch
    ("not a parquet file")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "1.jsonl").write_bytes(_jsonl(_rows(1)))
    table = pa.Table.from_pylist(_rows(2))
    writer = pq.ParquetWriter(folder / "2.parquet", table.schema)
    writer.write_table(table)
    try:
        with Follower([folder]) as follower:
            for _ in range(3):  # unchanged: still waited for, never an error
                snap = follower.poll()
                assert _groups_of(snap.per_group) == _truth(_rows(1))
                assert snap.waiting == (f"{folder / '2.parquet'}: a parquet file without its footer yet (still being "
                                        "written)",)
            code, objs, err = _once(folder)  # step 1 may have rows in the open file: not reported yet
            assert code == 0 and [o["step"] for o in objs[:-1]] == [] and objs[-1]["summary"]["unreported_step"] == 1
            assert "still being written when the watch ended" in err and "2.parquet" in err
            writer.close()
            writer = None
            snap = follower.poll()
            assert snap.pending == () and _groups_of(snap.per_group) == _truth(_rows(1) + _rows(2))
    finally:
        if writer is not None:
            writer.close()


def test_a_finished_jsonl_without_a_trailing_newline_is_read_whole(tmp_path):
    """Item 8: its last line was dropped at every step and the last step never reported."""
    folder = tmp_path / "run"
    folder.mkdir()
    rows = _rows(1) + _rows(2)
    (folder / "log.jsonl").write_bytes(_jsonl(rows).rstrip(b"\n"))
    code, objs, err = _once(folder, "-q")
    truth = _truth(rows)
    assert code == 0, err
    assert [(o["step"], o["observed"]["groups"], o["observed"]["silent"]) for o in objs[:-1]] == \
        [(s, g, q / g) for s, (g, q) in truth.items()]


def test_a_csv_cut_mid_line_is_not_read_as_a_row(tmp_path):
    """Item 9: a csv cut inside its last line was read as a row (a new prompt of one sample, unanimous)."""
    rows = _rows(1) + _rows(2)
    lines = ["step,reward,prompt"] + [f"{r['step']},{int(r['acc'])},problem-{r['input']}-long" for r in rows]
    log = tmp_path / "log.csv"
    log.write_text("\n".join(lines) + "\n")
    complete = log.read_bytes()
    log.write_bytes(complete + b"2,1,problem-q")  # a row being written
    with Follower([log]) as follower:
        snap = follower.poll()
        assert _groups_of(snap.per_group) == _truth(rows) and snap.pending == (str(log),)
    code, objs, _ = _once(log, "-q")
    assert [o["step"] for o in objs[:-1]] == [1] and objs[-1]["summary"]["unreported_step"] == 2
    log.write_bytes(complete)
    code, objs, _ = _once(log, "-q")
    truth = _truth(rows)
    assert [(o["step"], o["observed"]["silent"]) for o in objs[:-1]] == [(s, q / g) for s, (g, q) in truth.items()]


def test_a_prime_rl_group_straddling_two_step_folders_is_one_group():
    """Item 11: watch read each step_N folder on its own and split group b (dispatched at step 1, two
    episodes in step_1 and two in step_2) into two unanimous halves; scan joins them: step 1 holds b
    (4 of 4 right) and a, step 2 holds c and d (see tests/test_loaders_writers.py for the truth)."""
    from sigmaudit.loaders import load_counts

    scanned = load_counts([WRITERS / "prime-rl-straddle"]).per_group
    code, objs, err = _once(WRITERS / "prime-rl-straddle", "-q")
    assert code == 0, err
    by_step = _groups_of(scanned)
    assert sum(g for g, _ in by_step.values()) == 4  # the fixture's four groups
    assert [(o["step"], o["observed"]["groups"], o["observed"]["silent"]) for o in objs[:-1]] == \
        [(s, g, q / g) for s, (g, q) in by_step.items()]


def test_under_threshold_silent_is_zero_spread_as_check_counts_it(tmp_path):
    """Item 10: under --threshold watch counted correctness-unanimous groups (all rewards above the
    threshold but different: a gradient remains), not zero spread as check does."""
    rng = np.random.default_rng(5)
    lines = ["step,prompt,reward"]
    flat = defaultdict(lambda: [0, 0])
    unanimous = 0
    for step in (1, 2, 3):
        for i in range(10):
            kind = rng.integers(3)
            rewards = ([0.7] * G if kind == 0 else list(np.round(rng.uniform(0.6, 0.9, G), 3)) if kind == 1
                       else list(np.round(rng.uniform(0.0, 1.0, G), 3)))
            lines += [f"{step},p{i},{r}" for r in rewards]
            flat[step][0] += 1
            flat[step][1] += len(set(rewards)) == 1
            unanimous += len({r >= 0.5 for r in rewards}) == 1
    log = tmp_path / "shaped.csv"
    log.write_text("\n".join(lines) + "\n")
    code, objs, err = _once(log, "--threshold", "0.5", "-q")
    assert code == 0, err
    assert [(o["step"], o["observed"]["silent"]) for o in objs[:-1]] == [(s, q / g) for s, (g, q) in flat.items()]
    zero = sum(q for _, q in flat.values()) / 30
    assert objs[-1]["summary"]["cumulative"]["silent"] == zero and zero != unanimous / 30
    limit = (zero + unanimous / 30) / 2  # between the two: check passes, so must watch's guard
    code, out, err = _run("check", str(log), "--threshold", "0.5", "--max-silent", str(limit), "-q")
    assert code == (0 if zero <= limit else 1)
    code, _, _ = _run("watch", str(log), "--once", "--interval", "0.01", "--threshold", "0.5", "--max-silent",
                      str(max(limit, max(q / g for g, q in flat.values()))), "-q")
    assert code == 0


def test_once_is_linear_in_the_steps(tmp_path):
    """Item 12: --once filtered the whole history once per step (8,000 steps x 16 prompts: 26 s against
    scan's 0.9 s). The steps' figures for 8,000 steps x 4 groups, from the running sums; that the work does
    not grow with the history is counted, not timed, in the next test (no timed unit tests)."""
    import polars as pl

    steps = 8000
    frame = pl.DataFrame({"step": np.repeat(np.arange(1, steps + 1), 4),
                          "prompt": [f"p{i % 50}" for i in range(4 * steps)],
                          "n": np.full(4 * steps, 8), "k": np.arange(4 * steps) % 9})
    reports = Watch(window=5, forecast=False).advance(frame, final=True)
    assert len(reports) == steps and reports[-1].cumulative.groups == 4 * steps
    silent = ((frame["k"] == 0) | (frame["k"] == 8)).to_numpy()
    assert reports[-1].cumulative.silent == silent.mean()
    assert reports[-1].window.groups == 20 and reports[-1].window.silent == silent[-20:].mean()


def test_once_filters_and_forecasts_a_constant_number_of_times(monkeypatch):
    """Item 12 without a clock: --once over a history of S steps must filter the groups and call the
    forecast a number of times that does not grow with S (the quadratic version filtered the history
    once per step). Counted on 40 and 80 steps: watch's own filters (outside the one forecast) must be
    as many for both, with one forecast each."""
    import polars as pl

    import sigmaudit.audits.forecast as fc

    def counts(steps: int) -> tuple[int, int]:
        calls = {"filter": 0, "forecast": 0, "inside": 0}
        real_filter, real_forecast = pl.DataFrame.filter, fc.forecast

        def filt(self, *a, **k):
            calls["filter"] += not calls["inside"]  # watch's own filters, not the forecast's
            return real_filter(self, *a, **k)

        def fore(*a, **k):
            calls["forecast"] += 1
            calls["inside"] += 1
            try:
                return real_forecast(*a, **k)
            finally:
                calls["inside"] -= 1

        frame = pl.DataFrame({"step": np.repeat(np.arange(1, steps + 1), 4),
                              "prompt": [f"p{i % 50}" for i in range(4 * steps)],
                              "n": np.full(4 * steps, 8), "k": np.arange(4 * steps) % 9})
        with monkeypatch.context() as m:
            m.setattr(pl.DataFrame, "filter", filt)
            m.setattr(fc, "forecast", fore)
            reports = Watch(window=5).advance(frame, final=True)
        assert len(reports) == steps and reports[-1].forecast is not None
        return calls["filter"], calls["forecast"]

    small, big = counts(40), counts(80)
    assert small[1] == big[1] == 1
    assert small[0] == big[0], (small, big)


# ---- the fuzz test: appends, truncations, rewrites and rotations under a live watch ---------------------

class _Polls:
    """Counts the follower's polls, so the writer can wait until what it wrote was seen."""

    def __init__(self) -> None:
        self.count = 0
        self.cond = threading.Condition()

    def tick(self) -> None:
        with self.cond:
            self.count += 1
            self.cond.notify_all()

    def seen(self, more: int = 2) -> None:
        """Wait for ``more`` polls (the last of them began after this call)."""
        with self.cond:
            target = self.count + more
            self.cond.wait_for(lambda: self.count >= target, timeout=30)


def _fuzz_writer(folder: Path, seed: int, written: list[dict], polls: _Polls) -> None:
    """Random operations on two logs while a watch follows them: append a step's rows (in random cuts,
    mid-line included), truncate in place and go on (logrotate copytruncate), rewrite whole with "w"
    (old rows first), rotate by rename. ``written``: every row written, each once. A truncation destroys
    rows: it waits until a poll has seen them (rows written and cut away between two polls cannot be
    seen by any follower; copytruncate's copy holds them)."""
    rnd = random.Random(seed)
    polls.seen(1)
    logs = dict.fromkeys(("a.jsonl", "b.jsonl"), b"")
    step = 0
    rotated = 0
    for _ in range(14):
        op = rnd.choice(["append", "append", "append", "truncate", "rewrite", "rotate"])
        name = rnd.choice(sorted(logs))
        path = folder / name
        if op == "truncate" and logs[name]:
            polls.seen()
            with path.open("r+b") as fh:
                fh.truncate(0)
            logs[name] = b""
        elif op == "rotate" and logs[name]:
            rotated += 1
            os.rename(path, folder / f"{name[:-6]}.old{rotated}.jsonl")
            logs[name] = b""
        elif op == "rewrite" and logs[name]:
            path.write_bytes(logs[name][: len(logs[name]) // 2])  # "w": the old rows again, then on
            time.sleep(0.01)
            path.write_bytes(logs[name])
        step += 1
        rows = _rows(step, prompts=3, seed=seed, tag=name[0])
        written.extend(rows)
        data = _jsonl(rows)
        cuts = sorted(rnd.sample(range(1, len(data)), 2)) + [len(data)]
        with path.open("ab") as fh:
            start = 0
            for cut in cuts:
                fh.write(data[start:cut])
                fh.flush()
                start = cut
                time.sleep(rnd.uniform(0, 0.02))
        logs[name] += data
        time.sleep(rnd.uniform(0, 0.03))


def _follow_to_the_end(folder: Path, during_first_poll) -> list:  # noqa: ANN001
    """Poll ``folder`` with ``during_first_poll`` run once inside the first poll, then until settled: the
    steps reported."""
    watch, reports = Watch(forecast=False), []
    with Follower([folder]) as follower:
        during_first_poll(follower)
        for _ in range(3):
            reports += watch.advance(follower.poll().per_group)
        reports += watch.advance(follower.poll().per_group, final=True)
    return [(r.step, r.observed.groups, r.observed.silent) for r in reports]


def _truth_reports(rows: list[dict]) -> list:
    return [(s, g, q / g) for s, (g, q) in _truth(rows).items()]


def test_a_log_rotated_between_the_listing_and_its_read_is_counted_once(tmp_path, monkeypatch):
    """Issue 42 (the fuzz under load): a poll lists b.jsonl, the writer rotates it (mv) and starts a new
    b.jsonl, then the poll reads the path: the new file's rows were taken for the old file's next version
    and counted again once the move was followed (steps 8 and 9 with 6 groups instead of 3)."""
    import sigmaudit.loaders.follow as follow

    folder = tmp_path / "run"
    folder.mkdir()
    rows = {s: _rows(s, prompts=3, seed=7, tag="b") for s in (1, 2, 3)}
    (folder / "b.jsonl").write_bytes(_jsonl(rows[1]))
    real = follow._stamps

    def rotate_after_listing(follower):  # noqa: ANN001
        def stamps(files):  # noqa: ANN001
            out = real(files)
            monkeypatch.setattr(follow, "_stamps", real)
            with (folder / "b.jsonl").open("ab") as fh:
                fh.write(_jsonl(rows[2]))
            os.rename(folder / "b.jsonl", folder / "b.old1.jsonl")
            (folder / "b.jsonl").write_bytes(_jsonl(rows[3]))
            return out

        monkeypatch.setattr(follow, "_stamps", stamps)

    got = _follow_to_the_end(folder, rotate_after_listing)
    assert got == _truth_reports(rows[1] + rows[2] + rows[3])


def test_a_log_truncated_between_its_read_and_its_count_gives_the_bytes_read(tmp_path, monkeypatch):
    """The rows counted are the bytes read, not the path read again: a log cut and rewritten with other rows
    after the poll read it (copytruncate) counted the new rows under the old bytes' digest, then lost steps."""
    folder = tmp_path / "run"
    folder.mkdir()
    rows = {s: _rows(s, prompts=3, seed=8, tag="a") for s in (1, 2, 3)}
    log = folder / "a.jsonl"
    log.write_bytes(_jsonl(rows[1] + rows[2]))
    real = Follower._local_copy

    def cut_after_read(follower):  # noqa: ANN001
        def local_copy(self, f, part):  # noqa: ANN001
            monkeypatch.setattr(Follower, "_local_copy", real)
            with log.open("r+b") as fh:  # copytruncate after the read: the rows of steps 1-2 are in the copy
                fh.truncate(0)
            log.write_bytes(_jsonl(rows[3]))
            return real(self, f, part)

        monkeypatch.setattr(Follower, "_local_copy", local_copy)

    got = _follow_to_the_end(folder, cut_after_read)
    assert got == _truth_reports(rows[1] + rows[2] + rows[3])


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_fuzz_a_live_watch_loses_nothing(tmp_path, seed):
    """The watch's loop (:class:`Follower` polled, :class:`Watch` advanced; no forecasts, which cost a
    replay each and are tested in test_watch.py) against a writer appending, truncating, rewriting and
    rotating: every step reported once, each equal to the brute-force count of the rows written, nothing
    late, nothing lost."""
    folder = tmp_path / "run"
    folder.mkdir()
    written: list[dict] = []
    polls = _Polls()
    writer = threading.Thread(target=_fuzz_writer, args=(folder, seed, written, polls))
    writer.start()
    watch = Watch(forecast=False)
    reports = []
    deadline = time.monotonic() + 60
    with Follower([folder]) as follower:
        while writer.is_alive() and time.monotonic() < deadline:
            polls.tick()
            reports += watch.advance(follower.poll().per_group)
            time.sleep(0.002)
        writer.join()
        snap = follower.poll()
        assert snap.pending == (), snap.waiting
        reports += watch.advance(snap.per_group, final=True)
    truth = _truth(written)
    assert [r.step for r in reports] == list(truth)  # every step once, in order
    assert [(r.observed.groups, r.observed.silent) for r in reports] == [(g, q / g) for g, q in truth.values()]
    summary = watch.summary("idle")
    total = sum(g for g, _ in truth.values())
    assert (summary.cumulative.groups, summary.late_groups) == (total, 0)
    assert summary.cumulative.silent == sum(q for _, q in truth.values()) / total


# ---- items 31, 34: pipes -----------------------------------------------------------------------------------

def _sigmaudit(*argv: str, **kwargs) -> subprocess.CompletedProcess:  # noqa: ANN003
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    kwargs.setdefault("capture_output", "stdout" not in kwargs)
    return subprocess.run([sys.executable, "-m", "sigmaudit", *argv], env=env, timeout=120, **kwargs)


def _fifo_fed(tmp_path: Path, data: bytes, name: str = "log") -> Path:
    """A named pipe that a thread writes ``data`` into (once a reader opens it)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            fh.flush()
            time.sleep(0.2)
            fh.write(data[half:])

    threading.Thread(target=feed, daemon=True).start()
    return fifo


def test_scan_reads_a_pipe_path_as_it_reads_the_file(tmp_path):
    """Item 31: ``scan <(zcat log.csv.gz)`` (a /dev/fd pipe) and a FIFO were refused as "no such file"."""
    folder, rows = _run_folder(tmp_path)
    log = folder / "2.jsonl"
    want = json.loads(_run("scan", str(log), "-f", "json", "-q")[1])["observed_silent"]
    code, out, err = _run("scan", str(_fifo_fed(tmp_path, log.read_bytes())), "-f", "json", "-q")
    assert code == 0, err
    assert json.loads(out)["observed_silent"] == want
    import gzip

    (tmp_path / "log.jsonl.gz").write_bytes(gzip.compress(log.read_bytes()))
    proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m sigmaudit scan <(zcat "{tmp_path}/log.jsonl.gz") '
                           "-f json -q"], env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["observed_silent"] == want


@pytest.mark.parametrize("how", ["stdin", "fifo"])
def test_watch_follows_standard_input_and_a_fifo_to_their_end(tmp_path, how):
    """Item 31: ``watch -`` and ``watch FIFO``: each step as it arrives, then the end of the stream ends it."""
    folder, rows = _run_folder(tmp_path)
    data = b"".join((folder / f"{s}.jsonl").read_bytes() for s in (1, 2, 3))
    truth = _truth(rows)
    if how == "stdin":
        proc = _sigmaudit("watch", "-", "--interval", "0.02", "-f", "json", input=data)
    else:
        proc = _sigmaudit("watch", str(_fifo_fed(tmp_path, data)), "--interval", "0.02", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(o["step"], o["observed"]["groups"], o["observed"]["silent"]) for o in objs[:-1]] == \
        [(s, g, q / g) for s, (g, q) in truth.items()]
    assert objs[-1]["summary"]["ended_by"] == "eof"
    assert "stream" not in proc.stderr.decode()  # the copy is never named, its source is


@pytest.mark.parametrize("argv", [["scan", str(ROOT / "sample_logs" / "rollouts.parquet")],
                                  ["watch", str(ROOT / "sample_logs" / "verl"), "--once", "--interval", "0.01"]])
def test_a_closed_pipe_ends_as_unix_tools_do(argv):
    """Item 34: ``sigmaudit scan ... | head -1`` exited 2 ("could not run") with no message: now it is
    killed by SIGPIPE, silently (the shell's 141), as ``yes | head -1`` ends ``yes``."""
    import signal

    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line
    try:
        proc = _sigmaudit(*argv, "-q", stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert proc.returncode == -signal.SIGPIPE and proc.stderr == b""
    shell = subprocess.run(["bash", "-c", f'"{sys.executable}" -m sigmaudit {" ".join(argv)} -q | true; '
                            'echo "${PIPESTATUS[0]}"'], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, timeout=120)
    assert shell.stdout.strip() == "141" and shell.stderr == ""
