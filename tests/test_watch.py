"""``sigmaudit watch`` against a writer appending a verl dump step by step (half-written lines included):
its per-step lines and --events equal ``scan`` and ``forecast`` run afterwards on each prefix of the
dump; the --max-silent guard trips at the right step; --once and SIGTERM end as documented."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sigmaudit.cli.app import main
from sigmaudit.fmt import pct

ROOT = Path(__file__).resolve().parents[1]
STEPS = 5
G = 4
PROMPTS_PER_STEP = 10


def _dump(seed: int = 3) -> dict[int, bytes]:
    """A verl (legacy) dump: ``{step}.jsonl``, one line per sample, groups of G = 4 per (step, input);
    16 prompts whose pass rates drift up, 10 of them drawn per step."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(-3, 2, size=16)
    files = {}
    for step in range(1, STEPS + 1):
        drawn = rng.choice(16, size=PROMPTS_PER_STEP, replace=False)
        lines = []
        for i in drawn:
            p = 1 / (1 + np.exp(-(base[i] + 0.3 * step)))
            for _ in range(G):
                ok = bool(rng.random() < p)
                lines.append(json.dumps({"input": f"Problem {i}: what is {i} + {step}?", "output": "...",
                                         "gts": str(i), "score": 1.0 if ok else 0.0, "step": step, "acc": ok}))
        files[step] = ("\n".join(lines) + "\n").encode()
    return files


DUMP = _dump()


def _write_prefix(folder: Path, steps: range) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for s in steps:
        (folder / f"{s}.jsonl").write_bytes(DUMP[s])
    return folder


def _writer(folder: Path, pause: float, started: threading.Event) -> None:
    """Append the dump step by step as a trainer would, each step's file in three writes: the first and
    second end inside a line (a half-written last line), a pause between writes and between steps.
    Starts once the watch has polled the empty folder: a watch joining a run midway forecasts only the
    last step already there."""
    started.wait(60)
    for s in range(1, STEPS + 1):
        data = DUMP[s]
        cuts = [len(data) // 3 + 5, 2 * len(data) // 3 + 7, len(data)]
        with (folder / f"{s}.jsonl").open("ab") as fh:
            start = 0
            for cut in cuts:
                fh.write(data[start:cut])
                fh.flush()
                start = cut
                time.sleep(pause)
        time.sleep(pause)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _json(*argv: str) -> dict:
    code, out, err = _run(*argv, "-f", "json", "-q")
    assert code == 0, err
    return json.loads(out)


def _observed(folder: Path) -> dict:
    """``scan``'s observed silent shares of the logged groups (-G 4: the silent table's G does not move them)."""
    return _json("scan", str(folder), "-G", str(G))["observed_silent"]


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    """watch following the writer (in this process, the writer in a thread), and its outputs."""
    folder = tmp_path_factory.mktemp("run") / "rollout_data"
    folder.mkdir()
    events = folder.parent / "events.jsonl"
    skip = folder.parent / "skip.csv"
    from sigmaudit.loaders.follow import Follower

    polled = threading.Event()
    poll = Follower.poll

    def signalling(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        out = poll(self, *args, **kwargs)
        polled.set()
        return out

    writer = threading.Thread(target=_writer, args=(folder, 0.05, polled))
    writer.start()
    Follower.poll = signalling
    try:
        code, out, err = _run("watch", str(folder), "--interval", "0.01", "--until-idle", "0.5", "--window", "2",
                              "--events", str(events), "--skip-out", str(skip), "-q")
    finally:
        Follower.poll = poll
        polled.set()
        writer.join()
    return code, out, err, [json.loads(line) for line in events.read_text().splitlines()], skip


def test_watch_reports_every_step_once_in_order(followed):
    code, out, err, events, _ = followed
    assert code == 0, err
    assert [e["step"] for e in events] == list(range(1, STEPS + 1))
    lines = out.splitlines()
    assert [line.split(" · ")[0] for line in lines[:STEPS]] == [f"step {s}" for s in range(1, STEPS + 1)]
    assert lines[STEPS] == "watch ended: the logs stopped changing (--until-idle)"


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """``scan`` afterwards on each prefix of the dump (steps 1..s), and each step's own silent and
    all-wrong group counts (the difference of two prefixes)."""
    base = tmp_path_factory.mktemp("prefixes")
    prefix = {s: _observed(_write_prefix(base / f"upto{s}", range(1, s + 1))) for s in range(1, STEPS + 1)}

    def counts(o: dict) -> np.ndarray:
        return np.array([round(o[key] * o["groups"]) for key in ("fraction", "all_wrong", "all_correct")] +
                        [o["groups"]])

    step = {s: counts(prefix[s]) - (counts(prefix[s - 1]) if s > 1 else 0) for s in prefix}
    return prefix, step


def test_each_step_equals_scan_on_the_prefix(followed, scanned):
    _, out, _, events, _ = followed
    prefix, step = scanned
    lines = out.splitlines()
    for e, line in zip(events, lines, strict=False):
        s = e["step"]
        theirs = prefix[s]
        assert e["cumulative"] == {"groups": theirs["groups"], "silent": theirs["fraction"],
                                   "all_wrong": theirs["all_wrong"], "all_correct": theirs["all_correct"],
                                   "tokens": theirs["token_fraction"]}  # no lengths logged: None in both
        silent, wrong, right, groups = step[s]
        assert e["observed"] == {"groups": groups, "silent": silent / groups, "all_wrong": wrong / groups,
                                 "all_correct": right / groups, "tokens": None}
        assert groups == PROMPTS_PER_STEP and e["G"] == theirs["G"] == G
        assert f"{groups} groups G={G} · silent {pct(silent / groups)} " in line
        # the rolling window (--window 2): this step's and the previous step's groups pooled
        inside = [step[t] for t in range(max(1, s - 1), s + 1)]
        pooled = sum(inside)
        assert (e["window_steps"], e["window"]["groups"]) == (len(inside), pooled[3])
        assert e["window"]["silent"] == pooled[0] / pooled[3]


def test_each_forecast_equals_forecast_on_the_prefix(followed, tmp_path):
    _, _, _, events, skip = followed
    assert events[0]["forecast"] is None and events[0]["skipped"] == 0
    before: set[str] = set()
    for e in events[1:]:
        s = e["step"]
        theirs = _json("forecast", str(_write_prefix(tmp_path / f"upto{s}", range(1, s + 1))), "--max-p-silent", "0.9")
        f = e["forecast"]
        assert (f["step"], f["G"], f["prompts"]) == (s + 1, theirs["G"], theirs["prompts"])
        assert f["expected_silent"] == pytest.approx(theirs["expected_silent"], rel=1e-12)
        assert f["silent"] == pytest.approx(theirs["expected_silent"] / theirs["prompts"], rel=1e-12)
        skipped = {r["prompt"] for r in theirs["per_prompt"] if r["skip"]}
        assert e["skipped"] == theirs["skipped"] == len(skipped)
        assert set(e["newly_skipped"]) == skipped - before and set(e["no_longer_skipped"]) == before - skipped
        before = skipped
    import csv

    rows = list(csv.DictReader(skip.open()))
    assert {r["prompt"] for r in rows if r["skip"] == "true"} == before and len(rows) == events[-1]["prompts"]


def test_guard_exits_1_at_the_step_it_trips(tmp_path, scanned):
    folder = _write_prefix(tmp_path / "run", range(1, STEPS + 1))
    shares = [c[0] / c[3] for _, c in sorted(scanned[1].items())]
    limit = float(np.median(shares)) - 1e-9
    over = [x > limit for x in shares]
    trip = next(i for i in range(1, STEPS) if over[i] and over[i - 1]) + 1  # the first 2-step run ends here
    events = tmp_path / "ev.jsonl"
    code, out, _ = _run("watch", str(folder), "--once", "--interval", "0.01", "--max-silent", str(limit),
                        "--for", "2", "--events", str(events), "-q")
    got = [json.loads(x) for x in events.read_text().splitlines()]
    assert code == 1
    assert [e["step"] for e in got] == list(range(1, trip + 1))
    assert [e["over_limit"] for e in got] == over[:trip] and got[-1]["failed"] and got[-1]["streak"] == 2
    assert f"FAILED at step {trip}" in out


def test_once_waits_for_a_half_written_step(tmp_path):
    folder = _write_prefix(tmp_path / "run", range(1, 4))
    (folder / "4.jsonl").write_bytes(DUMP[4][: len(DUMP[4]) // 2])  # step 4 mid-line
    code, out, err = _run("watch", str(folder), "--once", "--interval", "0.01", "-f", "json", "-q")
    objs = [json.loads(x) for x in out.splitlines()]
    assert code == 0, err
    assert [o["step"] for o in objs[:-1]] == [1, 2, 3]  # step 3 completed by step 4's rows; 4 still written
    assert objs[-1]["summary"]["unreported_step"] == 4 and objs[-1]["summary"]["ended_by"] == "once"
    (folder / "4.jsonl").write_bytes(DUMP[4])  # step 4 done, nothing grows: the last step counts
    code, out, _ = _run("watch", str(folder), "--once", "--interval", "0.01", "-f", "json", "-q")
    objs = [json.loads(x) for x in out.splitlines()[:-1]]
    assert [o["step"] for o in objs] == [1, 2, 3, 4]
    # a run joined midway: only the last of the steps already there gets the (costly) forecast
    assert [o["forecast"] is None for o in objs] == [True, True, True, False]
    theirs = _json("forecast", str(folder), "--max-p-silent", "0.9")
    assert objs[-1]["forecast"]["expected_silent"] == pytest.approx(theirs["expected_silent"], rel=1e-12)
    assert objs[-1]["skipped"] == theirs["skipped"] == len(objs[-1]["newly_skipped"])


def test_unchanged_files_are_not_read_again(tmp_path):
    from sigmaudit.loaders.follow import Follower

    folder = _write_prefix(tmp_path / "run", range(1, 3))
    with Follower([str(folder)]) as f:
        first = f.poll()
        assert (first.changed, f.files_read, first.per_group.height) == (True, 2, 2 * PROMPTS_PER_STEP)
        again = f.poll()
        assert (again.changed, f.files_read) == (False, 2)
        (folder / "3.jsonl").write_bytes(DUMP[3][:100])  # not one complete line yet
        third = f.poll()
        assert (third.changed, f.files_read, third.pending) == (True, 2, (str(folder / "3.jsonl"),))
        (folder / "3.jsonl").write_bytes(DUMP[3])
        fourth = f.poll()
        assert (fourth.pending, f.files_read, fourth.per_group.height) == ((), 3, 3 * PROMPTS_PER_STEP)


@pytest.mark.parametrize(("sig", "how"), [(signal.SIGTERM, "terminated (SIGTERM)"),
                                          (signal.SIGINT, "interrupted (Ctrl-C)")])
def test_a_signal_ends_the_watch_cleanly_with_a_summary(tmp_path, sig, how):
    folder = _write_prefix(tmp_path / "run", range(1, 3))
    events = tmp_path / "ev.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    summary = tmp_path / "summary.json"
    proc = subprocess.Popen([sys.executable, "-m", "sigmaudit", "watch", str(folder), "--interval", "0.05",
                             "--events", str(events), "-o", str(summary), "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (events.exists() and events.read_text().count("\n") >= 1):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert err == ""
    assert out.splitlines()[0].startswith("step 1 · ")
    assert f"watch ended: {how}" in out and "step 2 was still being written: not reported" in out
    written = json.loads(summary.read_text())["summary"]
    assert (written["steps"], written["last_step"], written["unreported_step"]) == (1, 1, 2)
    assert [json.loads(x)["step"] for x in events.read_text().splitlines()] == [1]
    assert not list(folder.parent.glob(".*.tmp"))
    shutil.rmtree(folder)


def test_a_run_joined_midway_says_why_its_past_steps_have_no_forecast(capsys):
    """Of the steps already logged when the watch starts only the last is forecast; that is said once, above
    their lines (issue 42: "— (already logged when the watch started)" on 18 of 20 lines, 179-203 characters),
    and every line fits 100 columns."""
    verl = Path(__file__).resolve().parents[1] / "sample_logs" / "verl"
    code = main(["watch", str(verl), "--once"])
    out, err = capsys.readouterr()
    out, err = out.splitlines(), err.splitlines()
    lines = [line for line in out if line.startswith("step ")]
    assert code == 0 and len(lines) == 5
    assert "no forecast yet (first step)" in lines[0]
    assert all("forecast" not in line for line in lines[1:4])
    assert "step 6 forecast 57.6%" in lines[4]
    assert sum("logged before the watch started" in line for line in err) == 1  # a note, once
    assert max(len(line) for line in out + err) <= 100
