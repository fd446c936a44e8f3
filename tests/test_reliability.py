"""Issue 15: one test per defect a fuzz and attack run found (named after the defect).

Bad-input files live in tests/fixtures/bad/ (covered by tests/test_loaders_inputs.py); the
bounded fuzz of the whole CLI contract is tests/test_fuzz.py.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run

from sigmaudit.cli.app import main
from sigmaudit.core.corpus import Corpus
from sigmaudit.core.group_size import EPS_MIN, group_size_exact
from sigmaudit.core.identify import NotIdentifiedError, silent_interval

ROOT = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------- 3. tiny --eps ate all memory


@pytest.mark.parametrize("args", [
    ("calc", "-p", "0.3", "-G", "8", "--eps", "1e-15"),
    ("scan", "sample_logs/rollouts.parquet", "-q", "--eps", "1e-10"),
    ("plan", "sample_logs/rollouts.parquet", "-q", "--eps", "1e-15"),
])
def test_tiny_eps_is_refused_in_one_line(capsys, args):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "at least 1e-06" in err and "Traceback" not in err


def test_tiny_eps_refused_by_the_core():
    with pytest.raises(ValueError, match="at least 1e-06"):
        group_size_exact(0.3, 1e-15)


def test_exact_group_size_at_the_eps_floor_is_the_smallest_passing_g():
    """At ε = EPS_MIN the galloping search still returns a G that passes while G − 1 fails."""
    from sigmaudit.core.group_size import _phi_pairs

    for p in (0.5, 0.3, 0.02):
        g = group_size_exact(p, EPS_MIN)
        phi = _phi_pairs(np.array([p, p]), np.array([g - 1, g]))
        assert phi[1] >= 1 - EPS_MIN > phi[0]


@pytest.mark.parametrize("p", [0.5, 0.3, 0.1, 0.01, 0.001])
@pytest.mark.parametrize("eps", [0.2, 0.05, 0.01])
def test_exact_group_size_matches_a_linear_scan(p, eps):
    from sigmaudit.core.group_size import _phi_pairs

    g = group_size_exact(p, eps)
    grid = np.arange(1, g + 1)
    passing = _phi_pairs(np.full(grid.size, p), grid) >= 1 - eps
    assert passing[-1] and not passing[:-1].any()


# ---------------------------------------------------------------- 4. one sample per prompt: a confident, wrong gate

TRUTH_03 = 0.3**8 + 0.7**8  # 0.0577: every prompt has p = 0.3


def _bernoulli_corpus(n: int, prompts: int = 100_000, seed: int = 0) -> Corpus:
    k = np.random.default_rng(seed).binomial(n, 0.3, size=prompts)
    return Corpus(np.full(prompts, n), k)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_few_samples_per_prompt_refuse_or_match_the_truth(n):
    """100,000 prompts, n Bernoulli(0.3) samples each, silent rate at G = 8: either a refusal or the
    truth 0.3⁸ + 0.7⁸ = 0.0577 (never 0.96, the old answer at n = 1)."""
    corpus = _bernoulli_corpus(n)
    try:
        s = corpus.silent(8)
    except NotIdentifiedError as exc:
        assert n < 4 and "not identified" in str(exc)
        return
    assert s.silent_rate == pytest.approx(TRUTH_03, abs=0.005)


def test_one_sample_per_prompt_is_refused():
    with pytest.raises(NotIdentifiedError, match=r"from 0\.05\d+ to 1\.0000"):
        _bernoulli_corpus(1).silent(8)


def test_one_sample_per_prompt_gate_exits_2_not_1(tmp_path, capsys):
    k = np.random.default_rng(1).binomial(1, 0.3, size=20_000)
    path = tmp_path / "one_sample.csv"
    path.write_text("prompt_id,reward\n" + "".join(f"q{i},{v}\n" for i, v in enumerate(k)))
    code, out, err = run(capsys, "check", str(path), "-G", "8", "--max-silent", "0.5", "-q")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "not identified" in err and "--samples" in err


def test_spread_of_p_unknown_at_two_samples_is_refused():
    """Beta(0.5, 0.8) pass rates, two samples each: mean and variance known, the silent rate at G = 8
    (0.355) is not; the interval says so and the corpus refuses."""
    rng = np.random.default_rng(2)
    p = rng.beta(0.5, 0.8, size=50_000)
    k = rng.binomial(2, p)
    lo, hi = silent_interval(np.full(p.size, 2), k, np.ones(p.size), 8)
    truth = float(np.mean(p**8 + (1 - p) ** 8))
    assert lo <= truth <= hi and hi - lo > 0.1
    with pytest.raises(NotIdentifiedError):
        Corpus(np.full(p.size, 2), k).silent(8)


def test_well_sampled_corpus_is_not_refused():
    corpus = _bernoulli_corpus(8, prompts=5_000)
    assert corpus.silent(16, "bayes").silent_rate == pytest.approx(0.3**16 + 0.7**16, abs=0.01)


# ---------------------------------------------------------------- 1. -o replaced device files, FIFOs and symlinks

ROLLOUTS = str(ROOT / "sample_logs" / "rollouts.parquet")
PRIME_TRACES = str(ROOT / "sample_logs" / "prime-rl" / "rollouts" / "step_1" / "train" / "all" / "traces.jsonl")


def test_output_dev_full_reports_no_space_and_stays_a_device(capsys):
    code, out, err = run(capsys, "scan", ROLLOUTS, "-q", "-f", "json", "-o", "/dev/full")
    assert code == 2 and out == "" and "no space left" in err and err.count("\n") == 1
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_output_dev_null_is_written_through_not_replaced(capsys):
    code, out, err = run(capsys, "scan", ROLLOUTS, "-q", "-f", "json", "-o", "/dev/null")
    assert code == 0 and out == "" and err == ""
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_dev_stdout_is_written_through(capfd):
    code = main(["scan", ROLLOUTS, "-q", "-f", "json", "-o", "/dev/stdout"])
    out, err = capfd.readouterr()
    assert code == 0 and err == "" and json.loads(out)["prompts"] == 200
    assert os.path.islink("/dev/stdout")


def test_output_fifo_gets_the_report(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run(capsys, "scan", ROLLOUTS, "-q", "-f", "json", "-o", str(fifo))
    reader.join(timeout=30)
    assert code == 0 and err == ""
    assert json.loads(got[0])["prompts"] == 200
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_output_symlink_is_followed_and_stays_a_link(tmp_path, capsys):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, _ = run(capsys, "scan", ROLLOUTS, "-q", "-o", str(link))
    assert code == 0 and link.is_symlink()
    assert json.loads(target.read_text())["prompts"] == 200


@pytest.mark.parametrize("args", [
    ("scan", ROLLOUTS, "-q", "-f", "json"),
    ("plan", ROLLOUTS, "-q", "-f", "json"),
    ("check", ROLLOUTS, "-q", "-G", "8", "--max-silent", "0.9", "-f", "json"),
    ("calc", "-p", "0.3", "-G", "8", "-f", "json"),
    ("trend", ROLLOUTS, "-q", "-f", "json"),
    ("simulate", "--prompts", "200", "--num-steps", "3", "-f", "json"),
])
def test_output_dash_means_stdout_for_every_command(tmp_path, monkeypatch, capsys, args):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, *args, "-o", "-")
    assert code == 0 and json.loads(out)
    assert list(tmp_path.iterdir()) == []  # no file named '-'


def test_report_dash_means_stdout(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "report", ROLLOUTS, "-q", "-o", "-")
    assert code == 0 and out.lstrip().lower().startswith("<!doctype html")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- 2. a Rust panic read as "gate failed"; nan thresholds

BAD = ROOT / "tests" / "fixtures" / "bad"


def test_corrupt_parquet_panic_exits_2_not_1(capfd):
    """One byte changed in grouped.parquet made polars panic (pyo3 PanicException, a BaseException):
    a 63-line traceback and exit 1. Now: one line naming the file, exit 2, no native noise."""
    code = main(["check", str(BAD / "corrupt_data_page.parquet"), "-G", "8", "--max-silent", "0.5"])
    out, err = capfd.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "corrupt_data_page.parquet: corrupt parquet file" in err
    assert "panicked" not in err and "Traceback" not in err


def test_a_panic_anywhere_exits_2(monkeypatch, capsys):
    import polars as pl

    def boom(*a, **k):
        raise pl.exceptions.PanicException("assertion failed")

    monkeypatch.setattr("sigmaudit.audits.check.estimate_metrics", boom)
    code, out, err = run(capsys, "check", ROLLOUTS, "-q", "-G", "8", "--max-silent", "0.5")
    assert code == 2 and "internal error" in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_reward_threshold_is_refused(capsys, value):
    code, out, err = run(capsys, "check", str(ROOT / "sample_logs" / "long.csv"), "-G", "8",
                         "--max-silent", "0.5", f"--threshold={value}")
    assert code == 2 and "--threshold: must be a finite number" in err


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_gate_limit_is_refused(capsys, value):
    code, _, err = run(capsys, "check", ROLLOUTS, "-G", "8", f"--max-silent={value}")
    assert code == 2 and "--max-silent" in err


# ---------------------------------------------------------------- 5. exact duplicate rows / whole files

def test_whole_log_written_twice_is_dropped_with_a_note(tmp_path, capsys):
    import polars as pl

    df = pl.read_parquet(ROLLOUTS)
    doubled = tmp_path / "doubled.parquet"
    pl.concat([df, df]).write_parquet(doubled)
    code, out, err = run(capsys, "scan", str(doubled), "-G", "8", "-f", "json")
    report = json.loads(out)
    assert code == 0 and "32000 duplicate rows dropped" in err
    assert report["rollouts"] == 32000
    assert report["observed_silent"]["G"] == 8 and report["observed_silent"]["groups"] == 4000
    _, once, _ = run(capsys, "scan", ROLLOUTS, "-G", "8", "-f", "json")
    assert report["wasted"] == json.loads(once)["wasted"]  # the log read once: observed 0.6025
    code, out, err = run(capsys, "scan", str(doubled), "-G", "8", "-f", "json", "--keep-duplicates")
    assert code == 0 and json.loads(out)["rollouts"] == 64000 and "duplicate" not in err


def test_copied_input_file_is_skipped_with_a_note(tmp_path, capsys):
    import shutil

    for name in ("a.csv", "b.csv"):
        shutil.copy(ROOT / "sample_logs" / "long.csv", tmp_path / name)
    code, out, err = run(capsys, "scan", str(tmp_path), "-f", "json")
    assert code == 0 and json.loads(out)["rollouts"] == 4800
    assert f"1 file skipped as a byte-for-byte copy of another input ({tmp_path / 'b.csv'} = {tmp_path / 'a.csv'})" \
        in err


def test_a_silent_group_alone_in_a_log_is_not_taken_for_a_duplicate():
    import polars as pl

    from sigmaudit.loaders.reduce import drop_repeated_blocks

    same = pl.DataFrame({"step": [1] * 16, "prompt_id": ["p"] * 16, "reward": [0] * 16})
    assert drop_repeated_blocks(same, None, distinct=True, steps_col="step")[1] == 0
    # one step, all wrong, sampled round-robin over 8 prompts: the halves agree by nature
    robin = pl.DataFrame({"step": [3] * 64, "prompt_id": [f"p{i % 8}" for i in range(64)], "reward": [0] * 64})
    assert drop_repeated_blocks(robin, None, distinct=True, steps_col="step")[1] == 0
    # the same log appended to itself over two steps is a repeat
    two = pl.concat([robin, robin.with_columns(pl.lit(4, dtype=pl.Int64).alias("step"))])
    assert drop_repeated_blocks(pl.concat([two, two]), None, distinct=True, steps_col="step")[1] == 128


# ---------------------------------------------------------------- 6. null prompt keys dropped silently

def test_null_prompt_keys_are_counted_and_reported(tmp_path, capsys):
    import polars as pl

    df = pl.read_parquet(ROLLOUTS)
    half = df.with_columns(pl.when(pl.int_range(pl.len()) % 2 == 0).then(None).otherwise(pl.col("prompt_id"))
                           .alias("prompt_id"))
    path = tmp_path / "half_null.parquet"
    half.write_parquet(path)
    code, out, err = run(capsys, "scan", str(path), "-f", "json")
    assert code == 0 and json.loads(out)["rollouts"] == 16000
    assert "16000 rows with a null prompt key (prompt_id) dropped" in err


# ---------------------------------------------------------------- 7. CSV formula injection

HOSTILE_IDS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(1)", "\tTAB", "\rCR"]


def test_csv_formula_injection_neutralised_in_the_allocation_file(tmp_path, capsys):
    rows = [f"{pid},{s},{r}" for i, pid in enumerate(HOSTILE_IDS * 2 + [f"q{j}" for j in range(30)])
            for s in range(8) for r in [int((i + s) % 3 == 0)]]
    log = tmp_path / "hostile.csv"
    import csv as csvmod

    with open(log, "w", newline="") as fh:
        w = csvmod.writer(fh)
        w.writerow(["prompt_id", "sample_idx", "reward"])
        for line in rows:
            pid, s, r = line.rsplit(",", 2)
            w.writerow([pid, s, r])
    out = tmp_path / "alloc.csv"
    code, _, err = run(capsys, "plan", str(log), "-q", "--budget", "200", "--alloc-out", str(out))
    assert code in (0, 1), err
    with open(out, newline="") as fh:
        cells = [row[0] for row in csvmod.reader(fh)][1:]
    assert cells and all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
    assert "'=HYPERLINK(\"http://x\",\"y\")" in cells and "'-2+3" in cells


def test_csv_renderer_neutralises_formula_cells():
    from sigmaudit.render.csv import render_csv
    from sigmaudit.views import Section, Table, View

    view = View("t", (Section("s", tables=(Table("x", ("name", "value"), (("=1+1", -2.5), ("@A", 1.0))),)),))
    lines = render_csv(view).splitlines()
    assert lines[1] == "'=1+1,-2.5" and lines[2] == "'@A,1.0"


# ---------------------------------------------------------------- 8. terminal escape sequences in names

def test_escape_sequences_in_column_and_file_names_are_escaped(tmp_path, capsys):
    path = tmp_path / "evil\x1b[2J.csv"
    path.write_text("alpha\x1b]8;;http://x\x1b\\,beta\x1b[2J\n1,2\n")
    code, out, err = run(capsys, "scan", str(path))
    assert code == 2 and "\x1b" not in err and "\\x1b[2J" in err


def test_escape_sequences_in_prompt_ids_do_not_reach_the_table(tmp_path, capsys):
    log = tmp_path / "ids.csv"
    log.write_text("prompt_id,reward\n" + "".join(f"\x1b[2Jp{i % 40},{i % 3 == 0:d}\n" for i in range(400)))
    code, out, err = run(capsys, "plan", str(log), "--budget", "100")
    assert code in (0, 1) and "\x1b" not in out and "\x1b" not in err


def test_printable_escapes_every_control_character():
    from sigmaudit.fmt import printable

    assert printable("a\x1b[2Jb\x07\u202e\x9b") == "a\\x1b[2Jb\\x07\\u202e\\x9b"
    assert printable("ordinary p̂ ≥ 0.5") == "ordinary p̂ ≥ 0.5"


# ---------------------------------------------------------------- 9. "internal error ... please report this"

@pytest.mark.parametrize(("args", "needle"), [
    (("scan", str(BAD / "corrupt_gzip.jsonl.gz")), "corrupt or truncated gz data"),
    (("scan", str(BAD / "not_zstd.jsonl.zst")), "not valid zstd data"),
    (("scan", ROLLOUTS, "-q", "-o", "/proc/self/sigmaudit.json"), "/proc/self/sigmaudit.json: cannot write"),
    (("scan", ROLLOUTS, "-q", "-f", "json", "-o", "/dev/full"), "/dev/full: cannot write: no space left"),
    (("scan", ROLLOUTS, "-q", "-o", "/nonexistent-folder/x.json"), "folder does not exist"),
    (("scan", ROLLOUTS, "-q", "-o", "x" * 300 + ".json"), "file name too long"),
    (("scan", PRIME_TRACES, "--reward-col", "nope"), "--reward-col"),
    (("trend", str(BAD / "series_non_integer_step.csv")), "is not numeric"),
    (("simulate", "--prompts", "99999999999999999999"), "--prompts"),
    (("simulate", "-G", "100000000"), "--group-size"),
    (("scan", str(BAD / "json_nested_too_deep.jsonl")), "nested too deeply"),
])
def test_each_listed_error_is_one_specific_line(capsys, args, needle):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err
    assert "internal error" not in err and "Traceback" not in err


def test_reward_col_missing_beside_a_plain_traces_column(tmp_path, capsys):
    import polars as pl

    path = tmp_path / "t.parquet"
    pl.DataFrame({"prompt_id": ["a", "b"], "reward": [1, 0], "traces": ["x", "y"]}).write_parquet(path)
    code, _, err = run(capsys, "scan", str(path), "--reward-col", "nope")
    assert code == 2 and "column 'nope' not found" in err and "internal error" not in err


# ---------------------------------------------------------------- 10. decompressed temp data

def _jsonl_gz(path):
    lines = "".join(f'{{"prompt_id": "p{i % 50}", "reward": {i % 3 == 0:d}}}\n' for i in range(2000))
    path.write_bytes(gzip.compress(lines.encode()))
    return path


def test_gz_input_leaves_no_temporary_data(tmp_path, monkeypatch):
    from sigmaudit.loaders import load_counts
    from sigmaudit.loaders.tempdirs import temp_root

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tempfile.tempdir = None
    try:
        assert load_counts([_jsonl_gz(tmp_path / "log.jsonl.gz")]).n_rows == 2000
        assert list(temp_root().iterdir()) == []
    finally:
        tempfile.tempdir = None


def test_stale_run_folders_are_cleaned_by_the_next_run(tmp_path):
    """A folder whose run died on this host (its lock free) is removed; the live run's own is kept."""
    from sigmaudit.loaders.tempdirs import clean_stale, run_folder

    stale = tmp_path / "run-4242-abc"
    stale.mkdir()
    (stale / ".lock").write_text(f"{socket.gethostname()} 4242\n")  # written on this host, lock not held
    (stale / "0_big.jsonl").write_text("x")
    with run_folder() as mine:
        assert clean_stale(tmp_path) == 1 and clean_stale(mine.parent) == 0
        assert not stale.exists() and mine.exists() and (mine / ".lock").exists()
        assert mine.name.startswith(f"run-{os.getpid()}-")
    assert not mine.exists()


def test_sigterm_mid_run_cleans_up_and_exits_2(tmp_path, monkeypatch, capsys):
    import signal

    from sigmaudit.loaders import readers
    from sigmaudit.loaders.tempdirs import temp_root

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tempfile.tempdir = None
    real_scan = readers.scan

    def scan_then_sigterm(path, tmpdir, like=None, outcome_key=None):
        src = real_scan(path, tmpdir, like, outcome_key)
        assert any(tmpdir.iterdir())  # the decompressed copy exists now
        os.kill(os.getpid(), signal.SIGTERM)
        return src

    monkeypatch.setattr("sigmaudit.loaders.engines.polars.scan", scan_then_sigterm)
    try:
        code, out, err = run(capsys, "scan", str(_jsonl_gz(tmp_path / "log.jsonl.gz")))
        assert code == 2 and "terminated" in err
        assert list(temp_root().iterdir()) == []
    finally:
        tempfile.tempdir = None


# ---------------------------------------------------------------- 11. the smaller ones

def test_numpy_and_matplotlib_warnings_do_not_leak(tmp_path, capsys):
    code, _, err = run(capsys, "calc", "-p", "5e-324", "-G", "2147483648")
    assert code == 0 and err == ""
    code, _, err = run(capsys, "report", ROLLOUTS, "-q", "--title", "x" * 10_000, "-o", str(tmp_path / "r.html"))
    assert code == 0 and err == ""


def test_jsonl_with_a_bom_reads_like_one_without(tmp_path):
    from sigmaudit.loaders import load_counts

    body = b"".join(b'{"prompt_id": "p%d", "reward": %d}\n' % (i % 5, i % 2) for i in range(50))
    (tmp_path / "plain.jsonl").write_bytes(body)
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + body)
    plain = load_counts([tmp_path / "plain.jsonl"]).per_prompt
    assert load_counts([tmp_path / "bom.jsonl"]).per_prompt.equals(plain)


def test_file_names_with_glob_characters_are_read_as_names(tmp_path):
    """Found by the fuzz: polars read ``run[1].csv`` as a glob pattern ("invalid glob pattern")."""
    import shutil

    from sigmaudit.loaders import load_counts

    for name, source in (("run[1].csv", "long.csv"), ("v[1]*.jsonl", "verl/rollout_data/1.jsonl")):
        shutil.copy(ROOT / "sample_logs" / source, tmp_path / name)
        assert load_counts([tmp_path / name]).n_rows > 0


def test_csv_formula_injection_neutralised_in_the_per_prompt_file(tmp_path, capsys):
    import csv as csvmod

    log = tmp_path / "hostile.csv"
    with open(log, "w", newline="") as fh:
        w = csvmod.writer(fh)
        w.writerow(["prompt_id", "sample_idx", "reward"])
        for i, pid in enumerate(HOSTILE_IDS + [f"q{j}" for j in range(20)]):
            for s in range(8):
                w.writerow([pid, s, int((i + s) % 3 == 0)])
    out = tmp_path / "per_prompt.csv"
    code, _, err = run(capsys, "scan", str(log), "-q", "--per-prompt", str(out), "-f", "json")
    assert code == 0, err
    with open(out, newline="") as fh:
        cells = [row[0] for row in csvmod.reader(fh)][1:]
    assert len(cells) == len(HOSTILE_IDS) + 20
    assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)


def test_thin_verl_fixture_reads_as_before_and_is_refused(capsys):
    """tests/fixtures/fastpath/verl_step.jsonl.gz (28 prompts, 1-6 samples each) read the same counts as
    the golden scan pinned before issue 15; its silent rates are now refused, not guessed."""
    from sigmaudit.loaders import load_counts

    loaded = load_counts([ROOT / "tests" / "fixtures" / "fastpath" / "verl_step.jsonl.gz"])
    assert (loaded.per_prompt.height, loaded.n_rows, loaded.n_single_sample_prompts) == (28, 80, 6)
    p_hat = (loaded.per_prompt["k"] / loaded.per_prompt["n"]).to_numpy()
    assert p_hat.mean() == pytest.approx(0.35178571428571426)
    assert ((p_hat == 0).mean(), (p_hat == 1).mean()) == pytest.approx((16 / 28, 8 / 28))


# ---------------------------------------------------------------- issue 23: temp folders, signals

def _hold_lock(folder: Path, host: str, pid: int) -> subprocess.Popen:
    """Another process (as if in another container: a pid that means nothing here) holding ``folder``'s lock."""
    folder.mkdir()
    code = ("import fcntl, os, sys, time\n"
            f"fd = os.open({str(folder / '.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            f"os.write(fd, b'{host} {pid}\\n')\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "locked"
    return child


def test_stale_temp_sweep_keeps_a_live_run_of_another_pid_namespace(tmp_path):
    """Item 9: a live run of another host or container (its pid unknown here, or reused) keeps its folder
    while it holds the lock, whatever its pid and age; once the lock is free, this host's folder goes at
    once, another host's only after a day untouched; a folder without a lock only after a day."""
    from sigmaudit.loaders.tempdirs import STALE_SECONDS, clean_stale

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live_here = _hold_lock(tmp_path / f"run-{dead.pid}-live", socket.gethostname(), dead.pid)
    live_there = _hold_lock(tmp_path / "run-1-other", "other-host", 1)
    bare = tmp_path / f"run-{dead.pid}-bare"
    bare.mkdir()
    old = tmp_path / "run-7-old"
    old.mkdir()
    (old / ".lock").write_text("other-host 7\n")
    os.utime(old, (0, 0))
    young = tmp_path / "run-8-young"
    young.mkdir()
    (young / ".lock").write_text("other-host 8\n")
    try:
        for folder in (tmp_path / f"run-{dead.pid}-live", tmp_path / "run-1-other"):
            os.utime(folder, (0, 0))  # older than STALE_SECONDS: still live while locked
        assert clean_stale(tmp_path) == 1 and not old.exists()
        assert all(f.exists() for f in (tmp_path / f"run-{dead.pid}-live", tmp_path / "run-1-other", bare, young))
    finally:
        live_here.kill()
        live_there.kill()
        live_here.wait()
        live_there.wait()
    assert time.time() - STALE_SECONDS > 0
    assert clean_stale(tmp_path) == 2  # both lock holders gone: the old folders go (this host's at any age)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([bare.name, young.name])  # any pid


def test_vanished_temp_file_is_not_blamed_on_the_input(tmp_path):
    """Item 9: a decompressed copy removed under a running read is the temporary folder's failure."""
    from sigmaudit.loaders.readers import read_error

    path = _jsonl_gz(tmp_path / "log.jsonl.gz")
    gone = tmp_path / "run-1-gone"
    err = read_error(path, gone / "0_log.jsonl", "jsonl",
                     FileNotFoundError(2, "No such file or directory", str(gone / "0_log.jsonl")))
    line = err.one_line()
    assert "temporary folder" in line and "removed while this run used it" in line
    assert "the input is not at fault" in line
    assert "corrupt" not in line and "malformed" not in line


@pytest.mark.parametrize("how", ["gz", "stdin"])
def test_full_tmpdir_is_not_blamed_on_the_input(tmp_path, capsys, monkeypatch, how):
    """Item 11: ENOSPC while writing a temporary copy names TMPDIR and the fix, not the input."""
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if how == "gz":
        monkeypatch.setattr("sigmaudit.loaders.readers._copy_bounded", full)
        code, out, err = run(capsys, "scan", str(_jsonl_gz(tmp_path / "log.jsonl.gz")))
    else:
        monkeypatch.setattr(Path, "write_bytes", full)
        monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": open(ROOT / "sample_logs" / "long.csv", "rb")})())
        code, out, err = run(capsys, "scan", "-")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "not enough free space in TMPDIR" in err and "point TMPDIR at a larger disk" in err
    assert "corrupt" not in err


def test_ctrl_c_inside_typer_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    """Item 13: Typer turns a KeyboardInterrupt into a silent exit 130; the CLI reports it."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("sigmaudit.loaders.engines.polars.scan", interrupted)
    code, out, err = run(capsys, "scan", ROLLOUTS)
    assert (code, out) == (2, "") and err.strip().splitlines()[-1] == "sigmaudit: error: interrupted (SIGINT)"


RESET_SIGINT_AND_EXEC = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                         "os.execv(sys.executable, [sys.executable, '-m', 'sigmaudit', *sys.argv[1:]])")


def _wait_for_handlers(pid: int, timeout: float = 30.0) -> None:
    """Until the process catches SIGTERM (/proc/PID/status SigCgt): sigmaudit's handlers are installed, the
    first thing the console script does (``sigmaudit.cli.run``). A signal before that meets the interpreter's
    own start-up, which no program can answer (on a loaded machine that took over 0.4 s)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():  # not Linux: the fixed delay alone
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            caught = next(int(line.split()[1], 16) for line in status.read_text().splitlines()
                          if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return
        if caught >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.005)


def _signalled(args: list[str], signum: int, delay: float, env: dict | None = None) -> tuple[int, str, float]:
    """``python -m sigmaudit *args`` sent ``signum`` ``delay`` s after its signal handlers are installed:
    (exit code, stderr, seconds to exit)."""
    # SIGINT back to its default (a pytest worker may ignore it) by a tiny Python that execs sigmaudit: no
    # preexec_fn, so the child is spawned without running the worker's fork handlers (grpc's, after the
    # Spark Connect tests, log or abort in a forked child before it execs)
    child = subprocess.Popen([sys.executable, "-c", RESET_SIGINT_AND_EXEC, *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, **(env or {})})
    _wait_for_handlers(child.pid)
    time.sleep(delay)
    child.send_signal(signum)
    sent = time.monotonic()
    _, err = child.communicate(timeout=60)
    return child.returncode, err, time.monotonic() - sent


def _stalling_url(seconds: float = 60.0) -> str:
    """An http URL on 127.0.0.1 whose server accepts and never answers (a read that never ends by
    itself, whatever the machine's speed); the server stops by itself."""
    from stalling import silent_port

    return f"http://127.0.0.1:{silent_port(seconds)}/log.csv.gz"


GRPC_LOG = re.compile(r"^[EWI]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+\.cc:\d+\] ")


def _without_grpc_fork_lines(err: str) -> str:
    """stderr less grpc's own log lines: a pytest worker that loaded grpc (the Spark Connect tests share
    the worker) runs grpc's fork handler in the child between fork and exec, before sigmaudit starts."""
    return "".join(line for line in err.splitlines(keepends=True) if not GRPC_LOG.match(line))


def test_grpc_fork_lines_are_told_from_sigmaudits():
    line = "E1201 22:03:33.501970    4342 ev_epoll1_linux.cc:373] (event_engine) Epoll1Poller: epoll_wait error\n"
    assert _without_grpc_fork_lines(line + "sigmaudit: error: interrupted (SIGINT)\n") == (
        "sigmaudit: error: interrupted (SIGINT)\n")
    assert _without_grpc_fork_lines("sigmaudit: error: E1201 x.cc:1] y\n") == "sigmaudit: error: E1201 x.cc:1] y\n"


@pytest.mark.parametrize(("signum", "delay"), [(signal.SIGINT, 0.4), (signal.SIGINT, 4.0), (signal.SIGTERM, 4.0)])
def test_signal_at_any_moment_is_one_line_exit_2_and_no_temp_left(tmp_path, signum, delay):
    """Item 13: SIGINT during the imports (0.4 s after the handlers, while the loaders import) or a read that would
    never end, and SIGTERM, exit 2 with one line and leave no temporary folder."""
    (tmp_path / "tmp").mkdir()
    code, err, _ = _signalled(["scan", _stalling_url()], signum, delay, {"TMPDIR": str(tmp_path / "tmp")})
    err = _without_grpc_fork_lines(err)
    name = {signal.SIGINT: "interrupted (SIGINT)", signal.SIGTERM: "terminated (SIGTERM)"}[signum]
    assert code == 2, err
    assert "Traceback" not in err and err.strip().splitlines() == [f"sigmaudit: error: {name}"]
    assert list((tmp_path / "tmp").glob("sigmaudit/run-*")) == []
