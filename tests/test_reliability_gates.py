"""Issue 36 items 15-21 and 25-30: gates that keep their flags, windows cut per run, and the interfaces
that must refuse what the CLI refuses. Every expected figure is recomputed here from the rows written."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from cli_runner import run


def _write(path, rows):
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def _json(capsys, *args):
    code, out, err = run(capsys, *args, "--bootstrap", "0", "-f", "json", "-q")
    return code, (json.loads(out) if out else None), err


@pytest.fixture
def alternating(tmp_path):
    """4 steps × 10 prompts × 8 answers of source a: at the odd steps 6 of 10 groups are all wrong, at the even
    steps none, so the window's silent share is 12/40 = 0.3 and no two consecutive steps exceed 0."""
    rows = [{"step": s, "prompt_id": f"p{p}", "reward": 0 if (s % 2 and p < 6) else int(j < 4), "src": "a"}
            for s in range(1, 5) for p in range(10) for j in range(8)]
    return _write(tmp_path / "alt.parquet", rows)


def test_by_values_keep_consecutive(capsys, alternating):
    """Item 15: --by gated each value without --consecutive (0.3 > 0.2, FAIL) though the pooled gate, with
    the same rows, holds (the largest share held 2 steps running is 0)."""
    code, d, _ = _json(capsys, "check", alternating, "--max-silent", "0.2", "--consecutive", "2", "--by", "src")
    shares = [0.6, 0.0, 0.6, 0.0]
    held = max(min(shares[i:i + 2]) for i in range(3))
    part = d["by"]["groups"][0]
    assert held == 0.0 and code == 0 and d["passed"]
    assert part["consecutive"] == 2 and part["passed"]
    assert part["checks"][0]["value"] == pytest.approx(np.mean(shares)) and part["checks"][0]["tested"] == held


def test_by_values_keep_silent_by(capsys, tmp_path):
    """Item 15: --by gated each value by zero spread whatever --silent-by said: 0.2 passed where the value's
    correctness share is 1.0 (every reward below --threshold 0.5)."""
    rows = [{"step": s, "prompt_id": f"p{p}", "reward": (0.1 + 0.01 * j) if p < 8 else 0.3, "src": "a"}
            for s in (1, 2) for p in range(10) for j in range(8)]
    path = _write(tmp_path / "shaped.parquet", rows)
    code, d, _ = _json(capsys, "check", path, "--threshold", "0.5", "--max-silent", "0.5",
                       "--silent-by", "correctness", "--by", "src")
    part = d["by"]["groups"][0]
    assert code == 1 and part["silent_by"] == "correctness" and not part["passed"]
    assert part["checks"][0]["value"] == 1.0  # every group all below the threshold
    code, d, _ = _json(capsys, "check", path, "--threshold", "0.5", "--max-silent", "0.5", "--by", "src")
    assert code == 0 and d["by"]["groups"][0]["checks"][0]["value"] == pytest.approx(4 / 20)  # 2 flat prompts of 10


def test_consecutive_on_fewer_steps_than_k(capsys, alternating):
    """Item 17: 4 steps and --consecutive 5 failed on a NaN bound ('bound — > limit'); no run of 5 steps
    exists, so the limit cannot be crossed 5 steps running: the checks pass, and a warning says why."""
    code, d, _ = _json(capsys, "check", alternating, "--max-silent", "0.2", "--consecutive", "5")
    assert code == 0 and d["checks"][0]["tested"] == 0.0 and d["checks"][0]["value"] == pytest.approx(0.3)
    assert any("fewer than --consecutive 5" in w for w in d["warnings"])
    code, d, _ = _json(capsys, "check", alternating, "--max-silent", "0.2", "--consecutive", "1")
    assert code == 1 and d["checks"][0]["tested"] == pytest.approx(0.6)  # K = 1: the worst step


@pytest.fixture
def two_runs(tmp_path):
    """runA: steps 1-10, every group mixed (k = 4 of 8); runB: steps 1-5, every group all wrong."""
    a = _write(tmp_path / "runA.parquet", [{"step": s, "prompt_id": f"a{p}", "reward": int(j < 4)}
                                           for s in range(1, 11) for p in range(10) for j in range(8)])
    b = _write(tmp_path / "runB.parquet", [{"step": s, "prompt_id": f"b{p}", "reward": 0}
                                           for s in range(1, 6) for p in range(10) for j in range(8)])
    return a, b


def test_by_file_last_steps_cut_per_file(capsys, two_runs):
    """Item 16: --by file --last-steps 3 cut the pooled steps 8-10, so runB (steps 1-5, all silent) vanished
    and the gate passed (exit 0) where the whole log fails. Each file keeps its own last 3 steps now."""
    code, d, err = _json(capsys, "check", *two_runs, "--by", "file", "--max-silent", "0.5", "--last-steps", "3")
    windows = {g["value"]: (g["window"]["first_step"], g["window"]["last_step"], g["passed"])
               for g in d["by"]["groups"]}
    assert code == 1 and windows == {"runA.parquet": (8, 10, True), "runB.parquet": (3, 5, False)}
    assert d["checks"][0]["value"] == pytest.approx(30 / 60)  # the union of the two windows: 30 silent of 60
    code, d, _ = _json(capsys, "check", *two_runs, "--by", "file", "--max-silent", "0.5")
    assert code == 1  # the whole log fails too


def test_groups_generated_refused_with_a_window(capsys, tmp_path):
    """Item 18: N is the whole run's; with --last-steps 1 it was mixed with one step's 10 groups
    ((80 - 10) / 80 = 0.875 where that step's own share is (40 - 10) / 40 = 0.75). Refused now, one line."""
    path = _write(tmp_path / "dump.parquet", [{"step": s, "prompt_id": f"p{g}", "reward": int(j < 4)}
                                              for s in (1, 2) for g in range(10) for j in range(8)])
    code, d, err = _json(capsys, "check", path, "--groups-generated", "80", "--last-steps", "1", "--max-silent", "0.9")
    assert code == 2 and d is None and err.count("\n") == 1
    assert "--groups-generated" in err and "window (--last-steps 1)" in err
    code, d, _ = _json(capsys, "check", path, "--groups-generated", "80", "--max-silent", "0.9")
    assert code == 0 and d["checks"][0]["value"] == pytest.approx((80 - 20) / 80)


# ---------------------------------------------------------------- item 21: the Python API validates as the CLI

@pytest.fixture(scope="module")
def small_log(tmp_path_factory):
    """3 steps × 12 prompts × 4 answers: prompt i solved (i mod 5) of 4 times (k = 4 for i mod 5 = 4)."""
    rows = [{"step": s, "prompt_id": f"p{i}", "reward": int(j < min(i % 5, 4))}
            for s in (1, 2, 3) for i in range(12) for j in range(4)]
    return _write(tmp_path_factory.mktemp("api") / "log.parquet", rows)


def _refused(call, location):
    from sigmaudit.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        call()
    assert info.value.location == location
    return info.value


def test_api_refuses_what_the_cli_refuses(small_log):
    """Item 21: check(max_silent=5) passed any log; silent_by="bogus", bootstrap=-1, max_lost=-1 and
    Forecaster(threshold=nan) were accepted. Each is a ConfigError naming the parameter now, as the CLI's
    flag callbacks refuse them (exit 2)."""
    import sigmaudit

    _refused(lambda: sigmaudit.check(small_log, max_silent=5, bootstrap=0), "max_silent")
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, silent_by="bogus", bootstrap=0), "silent_by")
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, bootstrap=-1), "bootstrap")
    _refused(lambda: sigmaudit.backtest_logs(small_log, max_lost=-1), "max_lost")
    _refused(lambda: sigmaudit.Forecaster(threshold=float("nan")), "threshold")
    for args in (["--max-silent", "5"], ["--max-silent", "0.5", "--silent-by", "bogus"],
                 ["--max-silent", "0.5", "--bootstrap", "-1"]):
        assert sigmaudit.cli.app.main(["check", small_log, *args, "-q"]) == 2


def test_api_escapes_are_sigmaudit_errors(small_log):
    """Item 21: the inputs that escaped as bare ValueError / KeyError / TypeError / OverflowError (measured on
    the code before: check(G=2.5) KeyError 'silent_rate at G = 2.5 was not estimated'; check(level=2)
    ValueError 'Quantiles must be in the range [0, 1]'; check(consecutive=0) ValueError 'zero-size array';
    check(estimator="bogus") ValueError; scan(G=8) TypeError; Forecaster().update(2**70, ...) OverflowError;
    update_counts(n=["x"]) ValueError; check(123) TypeError; check(options="x") AttributeError)."""
    import sigmaudit

    f = sigmaudit.Forecaster()
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, G=2.5, bootstrap=0), "G")
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, level=2, bootstrap=20), "level")
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, consecutive=0, bootstrap=0), "consecutive")
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, estimator="bogus", bootstrap=0), "estimator")
    _refused(lambda: sigmaudit.scan(small_log, G=8), "G")
    _refused(lambda: f.update(2**70, ["a", "a"], [0, 1]), "step")
    _refused(lambda: f.update_counts(1, ["a"], ["x"], [1]), "n")
    _refused(lambda: f.update_counts(1, ["a"], [1.5], [1]), "n")  # was truncated to 1, silently
    _refused(lambda: sigmaudit.check(123, max_silent=0.5, bootstrap=0), "paths")
    _refused(lambda: sigmaudit.check(small_log, max_silent=0.5, bootstrap=0, options="x"), "options")
    _refused(lambda: sigmaudit.forecast_logs(small_log, G=0), "G")


_ODD = [None, 0, 1, -1, 2, 5, 20, 2**70, -2**70, 0.5, 1.5, -0.5, float("nan"), float("inf"), "0.5", "x", True,
        [], [0], [8], (4, 8)]


def test_api_fuzz_raises_only_sigmaudit_errors(small_log):
    """Item 21: hypothesis draws each argument of check, scan, backtest_logs, forecast_logs and the Forecaster
    from valid and odd values; every call returns or raises a SigmauditError subclass, nothing else."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import sigmaudit
    from sigmaudit.errors import SigmauditError

    odd = st.sampled_from(_ODD)
    calls = st.one_of(
        st.fixed_dictionaries({"max_silent": st.one_of(st.floats(0, 1), odd)},
                              optional={"G": odd, "bootstrap": odd, "level": odd, "confidence": odd,
                                        "consecutive": odd, "last_steps": odd, "steps": odd, "silent_by": odd,
                                        "basis": odd, "estimator": odd, "groups_generated": odd,
                                        "min_fidelity": odd}).map(lambda kw: ("check", kw)),
        st.fixed_dictionaries({}, optional={"G": odd, "g_main": odd, "eps": odd, "estimator": odd,
                                            "last_steps": odd}).map(lambda kw: ("scan", kw)),
        st.fixed_dictionaries({}, optional={"G": odd, "max_lost": odd}).map(lambda kw: ("backtest_logs", kw)),
        st.fixed_dictionaries({}, optional={"G": odd, "max_p_silent": odd, "target_saving": odd})
        .map(lambda kw: ("forecast_logs", kw)),
        st.tuples(odd, odd, odd, odd, odd).map(lambda a: ("Forecaster", a)))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(calls)
    def run_one(call):
        name, kw = call
        try:
            if name == "Forecaster":
                G, threshold, step, n, size = kw
                f = sigmaudit.Forecaster(G=G, threshold=threshold)
                f.update_counts(step, ["a", "b"], [4, 4] if n is None else [n, 4], [0, 2])
                f.update_counts(7, ["a", "b"], [4, 4], [1, 2])
                f.p_silent(size)
            else:
                kw = dict(kw, bootstrap=kw.get("bootstrap", 0)) if name == "check" else kw
                getattr(sigmaudit, name)(small_log, **kw)
        except SigmauditError:
            pass

    run_one()


# ---------------------------------------------------------------- item 25: a last step of 2**63 - 1

@pytest.mark.parametrize("command", [["forecast", "-G", "4"], ["watch", "--once"]])
@pytest.mark.parametrize("last", [2**63 - 1, -(2**63)])
def test_forecast_and_watch_refuse_steps_past_int64(capsys, tmp_path, command, last):
    """Item 25: a last step of 2**63 - 1 stopped forecast and watch with 'internal error: InvalidOperationError'
    (the next step overflows int64). A one-line refusal naming the step now (exit 2, nothing on stdout)."""
    steps = (last - 2, last - 1, last) if last > 0 else (last, last + 1, 0)
    rows = [{"step": s, "prompt_id": f"p{i}", "reward": int(j < i % 5)} for s in steps for i in range(12)
            for j in range(4)]
    path = tmp_path / "log.parquet"
    pl.DataFrame(rows, schema={"step": pl.Int64, "prompt_id": pl.Utf8, "reward": pl.Int64}).write_parquet(path)
    code, out, err = run(capsys, command[0], str(path), *command[1:], "-q")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"a logged step is {max(steps) if last > 0 else last}" in err and "internal error" not in err
    code, out, _ = run(capsys, "scan", str(path), "-q", "-f", "json")
    assert code == 0 and json.loads(out)["window"]["last_step"] == max(steps)


# ---------------------------------------------------------------- item 26: SIGINT during start-up

_SELF_SIGINT = """
import os, signal, sys
sys.argv = ["sigmaudit", "calc", "-G", "8", "-p", "0.5"]
{patch}
from sigmaudit.cli import run
run()
"""


@pytest.mark.parametrize(("where", "patch", "code", "line"), [
    # the signal lands in install(), after the handlers and before the watchdog started: Stop escaped as a
    # traceback with exit 1 (measured on the code before, SIGINT 0.26-0.30 s after start)
    ("install", "import socket\nreal = socket.socketpair\n"
                "def pair(*a):\n    os.kill(os.getpid(), signal.SIGINT)\n    return real(*a)\n"
                "socket.socketpair = pair", 2, True),
    # the signal lands while the CLI's modules are imported
    ("imports", "import builtins\nreal = builtins.__import__\n"
                "def imp(name, *a, **k):\n    if name == 'app' or name.endswith('cli.app'):\n"
                "        builtins.__import__ = real\n        os.kill(os.getpid(), signal.SIGINT)\n"
                "    return real(name, *a, **k)\nbuiltins.__import__ = imp", 2, True),
    # the signal lands after the outcome was reported (the exit): the outcome stands, no traceback
    ("exit", "import sigmaudit.cli.startup as s\nreal = s.finish\n"
             "def fin():\n    os.kill(os.getpid(), signal.SIGINT)\n    real()\ns.finish = fin", 0, False),
])
def test_sigint_during_start_up_is_one_line(tmp_path, where, patch, code, line):
    """Item 26: a SIGINT at any moment once sigmaudit's first module runs is one line on stderr and exit 2
    (or, once the outcome is reported, that outcome's exit code); never a traceback."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "run.py"
    script.write_text(_SELF_SIGINT.format(patch=patch))
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in done.stderr, (where, done.stderr[-500:])
    assert done.returncode == code, (where, done.returncode, done.stderr[-300:])
    assert (done.stderr == "sigmaudit: error: interrupted (SIGINT)\n") == line, (where, done.stderr)


# ---------------------------------------------------------------- item 29: intervals inside the identified range

@pytest.fixture
def thirty_nine_never(tmp_path):
    """200 prompts × 8 answers: 39 never solved (k = 0), 161 solved 3-5 times; at most 39/200 = 0.195 of the
    prompts can have p = 0 (a prompt with p = 0 never has k > 0)."""
    rng = np.random.default_rng(3)
    ks = [0] * 39 + [int(rng.integers(3, 6)) for _ in range(161)]
    rows = [{"step": 1, "prompt_id": f"p{i}", "reward": int(j < k)} for i, k in enumerate(ks) for j in range(8)]
    return _write(tmp_path / "log.parquet", rows), sum(k == 0 for k in ks) / len(ks)


def test_never_solved_interval_inside_the_range(capsys, thirty_nine_never):
    """Item 29: scan --bootstrap printed the never-solved interval past the range printed above it (measured
    here before the fix: range 0-0.195, interval 0.142-0.236); check --max-never-solved 0.2 --confidence 0.95
    failed on a bound 0.236 where at most 0.195 is possible."""
    path, most = thirty_nine_never
    code, out, _ = run(capsys, "scan", path, "--bootstrap", "200", "-q", "-f", "json")
    pr = json.loads(out)["pass_rate"]
    assert pr["never_solved_range"] == [0.0, pytest.approx(most)] and most == 0.195
    lo, hi = pr["never_solved_posterior_ci"]
    assert 0.0 <= lo <= pr["never_solved_posterior"] <= hi <= most
    code, out, _ = run(capsys, "check", path, "--max-never-solved", "0.2", "--confidence", "0.95", "-q", "-f", "json")
    c = json.loads(out)["checks"][0]
    assert code == 0 and c["tested"] <= most and c["value_ci"][1] <= most
    code, _, _ = run(capsys, "check", path, "--max-never-solved", "0.19", "--confidence", "0.95", "-q")
    assert code == 1  # a limit inside the range can still fail on the bound


# ---------------------------------------------------------------- item 30: csv carries the observed share and drift

def test_scan_csv_on_a_drifting_log_carries_observed_and_warning(capsys, tmp_path):
    """Item 30: on a drifting log `scan -f csv` wrote only the pooled predictions (here 0.0067 at G = 8) with
    no observed share (0.2) and no drift warning, which every other format prints."""
    import csv
    import io

    rng = np.random.default_rng(0)
    ks = {(s, i): int(rng.binomial(8, 0.05 + 0.9 * (s - 1) / 9)) for s in range(1, 11) for i in range(100)}
    rows = [{"step": s, "prompt_id": f"p{i}", "reward": int(j < k)} for (s, i), k in ks.items() for j in range(8)]
    path = _write(tmp_path / "drift.parquet", rows)
    observed = sum(k in (0, 8) for k in ks.values()) / len(ks)
    code, out, _ = run(capsys, "scan", path, "-f", "csv", "-q")
    table = list(csv.DictReader(io.StringIO(out)))
    at8 = next(r for r in table if r["G"] == "8")
    assert float(at8["observed"]) == pytest.approx(observed) and int(at8["observed_groups"]) == 1000
    assert float(at8["estimate"]) < observed / 10  # the pooled prediction alone reads far lower
    assert all(r["observed"] == "" for r in table if r["G"] != "8")
    _, js, _ = run(capsys, "scan", path, "-f", "json", "-q")
    message = json.loads(js)["drift"]["message"]
    assert message.startswith("warning: pass rates moved") and all(r["drift_warning"] == message for r in table)
    stationary = _write(tmp_path / "still.parquet", [{"step": s, "prompt_id": f"p{i}", "reward": int(j < 4)}
                                                     for s in range(1, 4) for i in range(50) for j in range(8)])
    _, out, _ = run(capsys, "scan", stationary, "-f", "csv", "-q")
    assert {r["drift_warning"] for r in csv.DictReader(io.StringIO(out))} == {""}  # same columns, empty
