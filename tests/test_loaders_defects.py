"""Input defects of issues 22 and 23, one test each, named after the defect (``23.1`` is issue 23's
item 1). Inputs are made small here, or kept in tests/fixtures/bad/."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import SigmauditError
from sigmaudit.loaders import LoadOptions, load_counts

BAD = Path(__file__).resolve().parent / "fixtures" / "bad"
SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"


def _prompts(loaded) -> dict[str, tuple[int, int]]:  # noqa: ANN001
    return {r["prompt"]: (r["n"], r["k"]) for r in loaded.per_prompt.iter_rows(named=True)}


# ------------------------------------------------------------- 23.1 keys that look like numbers


def test_23_1_csv_prompt_ids_that_look_like_numbers_stay_apart(tmp_path):
    """"3.1"/"3.10" and "1"/"01" are four prompts, not two (a float or int inferred from the csv)."""
    log = tmp_path / "log.csv"
    rows = ["prompt_id,reward"]
    for pid, rewards in (("3.1", "1111"), ("3.10", "0000"), ("1", "1010"), ("01", "1111")):
        rows += [f"{pid},{r}" for r in rewards]
    log.write_text("\n".join(rows) + "\n")
    assert _prompts(load_counts([log])) == {"3.1": (4, 4), "3.10": (4, 0), "1": (4, 2), "01": (4, 4)}


def test_23_1_csv_group_ids_and_run_columns_are_text_too(tmp_path):
    """A group id 1 and 01, and a run column 0.7/0.70 (part of the key), are compared as written."""
    log = tmp_path / "log.csv"
    rows = ["step,group_id,temperature,prompt_id,reward"]
    rows += [f"0,1,0.7,7,{r}" for r in "11"] + [f"0,01,0.70,7,{r}" for r in "00"]
    log.write_text("\n".join(rows) + "\n")
    loaded = load_counts([log])
    assert _prompts(loaded) == {"0.7 | 7": (2, 2), "0.70 | 7": (2, 0)}
    assert sorted(loaded.per_group["k"].to_list()) == [0, 2]


def test_23_1_counts_csv_keys_are_text(tmp_path):
    log = tmp_path / "counts.csv"
    log.write_text("task_id,n,k\n1,4,4\n01,4,0\n1.0,4,2\n")
    assert _prompts(load_counts([log])) == {"1": (4, 4), "01": (4, 0), "1.0": (4, 2)}


def test_23_1_numeric_jsonl_key_is_compared_as_written(tmp_path):
    """A numeric key column in jsonl keeps its JSON text: 1 stays "1" (not "1.0" when a later id is 1.5)."""
    log = tmp_path / "log.jsonl"
    lines = [{"prompt_id": pid, "reward": r} for pid in (1, 1.5, 2) for r in (0, 1)]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert _prompts(load_counts([log])) == {"1": (2, 1), "1.5": (2, 1), "2": (2, 1)}


def test_23_1_duckdb_keys_are_the_text_polars_reads(tmp_path):
    pytest.importorskip("duckdb")
    from sigmaudit.loaders.engines import get_engine

    log = tmp_path / "log.csv"
    log.write_text("prompt_id,reward\n" + "".join(f"{p},{r}\n" for p in ("3.1", "3.10", "1", "01") for r in (0, 1)))
    polars = load_counts([log])
    assert len(polars.per_prompt) == 4
    assert load_counts([log], engine=get_engine("duckdb")).per_prompt.equals(polars.per_prompt)


# ------------------------------------------------------- 23.2 a list column beats a scalar reward


def test_23_2_scalar_reward_column_beats_a_list_column(tmp_path):
    """A long log with a scalar ``reward`` and a list of token ids is long (one row per sample)."""
    log = tmp_path / "log.parquet"
    pl.DataFrame({
        "step": [0] * 8, "prompt_id": ["a"] * 4 + ["b"] * 4, "reward": [1, 1, 1, 1, 0, 1, 0, 0],
        "response_mask": [[1, 1, 0]] * 8, "token_ids": [[5, 6, 7, 8]] * 8,
    }).write_parquet(log)
    loaded = load_counts([log])
    assert loaded.layout == "long" and loaded.n_rows == 8
    assert _prompts(loaded) == {"a": (4, 4), "b": (4, 1)}


def test_23_2_a_list_of_rewards_is_still_grouped(tmp_path):
    log = tmp_path / "log.parquet"
    pl.DataFrame({"prompt_id": ["a", "b"], "rewards": [[1, 0, 1], [0, 0, 0]],
                  "score": [0.66, 0.0]}).write_parquet(log)
    loaded = load_counts([log], LoadOptions(reward_col="rewards"))
    assert loaded.layout == "grouped" and _prompts(loaded) == {"a": (3, 2), "b": (3, 0)}
    only = tmp_path / "only.parquet"
    pl.DataFrame({"prompt_id": ["a", "b"], "rewards": [[1, 0, 1], [0, 0, 0]]}).write_parquet(only)
    assert load_counts([only]).layout == "grouped"


# ------------------------------------------------------------ 23.5 a backup copy drops the original


def test_23_5_a_backup_copy_keeps_the_original(tmp_path):
    from sigmaudit.loaders.rules import drop_copied_files

    (tmp_path / "train_data_step3.jsonl").write_text("x,y\n1,2\n")
    (tmp_path / "backup_train_data_step3.jsonl").write_text("x,y\n1,2\n")
    (tmp_path / "a.csv").write_text("x,y\n3,4\n")
    (tmp_path / "a (copy).csv").write_text("x,y\n3,4\n")
    files = sorted(tmp_path.iterdir())
    kept, copies = drop_copied_files(files)
    assert [f.name for f in kept] == ["a.csv", "train_data_step3.jsonl"]
    assert copies == [f"{tmp_path / 'a (copy).csv'} = {tmp_path / 'a.csv'}",
                      f"{tmp_path / 'backup_train_data_step3.jsonl'} = {tmp_path / 'train_data_step3.jsonl'}"]


def test_23_5_a_backup_copy_beside_nemo_rl_steps_keeps_every_step(tmp_path, capsys):
    """The issue's reproducer: a NeMo-RL log folder holding ``backup_train_data_step3.jsonl`` (a byte
    copy sorting first) reads step 3 from the original; the note names the backup as the copy."""
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(SAMPLES / "nemo-rl", root)
    steps = next(p.parent for p in root.rglob("train_data_step3.jsonl"))
    want = load_counts([root])
    shutil.copy(steps / "train_data_step3.jsonl", steps / "backup_train_data_step3.jsonl")
    got = load_counts([root])
    assert got.per_group.equals(want.per_group) and got.n_rows == want.n_rows
    note = next(n for n in got.notes if "byte-for-byte" in n)
    assert note.startswith(f"1 file skipped as a byte-for-byte copy of another input "
                           f"({steps / 'backup_train_data_step3.jsonl'} = {steps / 'train_data_step3.jsonl'})")
    assert not any("fits no layout" in n for n in got.notes)


def test_23_5_the_copy_note_names_the_copy_and_its_original(tmp_path, capsys):
    log = tmp_path / "logs"
    log.mkdir()
    rows = "prompt_id,reward\n" + "".join(f"p{i % 3},{i % 2}\n" for i in range(12))
    (log / "run.csv").write_text(rows)
    (log / "backup_run.csv").write_text(rows)
    code, _, err = run(capsys, "scan", str(log), "-f", "json", "-G", "4")
    assert code == 0
    assert f"1 file skipped as a byte-for-byte copy of another input ({log / 'backup_run.csv'} = " \
           f"{log / 'run.csv'})" in err


# --------------------------------------------------- 23.24 reward type changes after line 1,000


@pytest.mark.parametrize("later", [0.0, 1.0, True, False], ids=["float0", "float1", "true", "false"])
def test_23_24_jsonl_reward_type_changing_after_line_1000_reads(tmp_path, later):
    log = tmp_path / "log.jsonl"
    lines = [{"prompt_id": f"p{i % 50}", "reward": i % 2} for i in range(1_200)]
    lines += [{"prompt_id": f"p{i % 50}", "reward": later} for i in range(100)]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    loaded = load_counts([log])
    assert loaded.n_rows == 1_300 and loaded.missing_rewards == 0
    assert int(loaded.per_prompt["k"].sum()) == 600 + (100 if float(later) == 1.0 else 0)


def test_23_24_a_string_reward_after_line_1000_is_still_refused(tmp_path):
    log = tmp_path / "log.jsonl"
    lines = [{"prompt_id": "p", "reward": i % 2} for i in range(1_100)] + [{"prompt_id": "p", "reward": "yes"}]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(SigmauditError) as err:
        load_counts([log])
    assert err.value.one_line() == (f'{log}:1101: reward on line 1101 is "yes", not a number or boolean; fix that '
                                    "line, or pick another column with --reward-col")


# --------------------------------------------------------- 23.10 compression bombs by content

def _stdin(monkeypatch, data: bytes) -> None:  # noqa: ANN001
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _zstd_bomb() -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(b'{"prompt_id": "p", "reward": 1}\n' + b" " * (8 << 20))


@pytest.mark.parametrize("name", ["bomb.csv", "bomb.jsonl"])
def test_23_10_gzip_bytes_in_a_plain_named_file_are_bounded(tmp_path, capsys, name):
    bomb = tmp_path / name
    bomb.write_bytes((BAD / "gzip_bomb.jsonl.gz").read_bytes())
    code, out, err = run(capsys, "scan", str(bomb))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{bomb}: decompresses to more than 250x its size (a compression bomb?)" in err


def test_23_10_zstd_bytes_in_a_plain_named_file_are_bounded(tmp_path, capsys):
    bomb = tmp_path / "bomb.jsonl"
    bomb.write_bytes(_zstd_bomb())
    code, _, err = run(capsys, "scan", str(bomb))
    assert code == 2 and "decompresses to more than 250x its size" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("pack", ["gzip", "zstd"])
def test_23_10_a_bomb_piped_to_stdin_is_bounded(capsys, monkeypatch, pack):
    data = (BAD / "gzip_bomb.jsonl.gz").read_bytes() if pack == "gzip" else _zstd_bomb()
    _stdin(monkeypatch, data)
    code, out, err = run(capsys, "scan", "-")
    assert code == 2 and out == ""
    assert err.startswith("sigmaudit: error: <stdin>: decompresses to more than 250x its size")


@pytest.mark.parametrize("pack", ["bz2", "xz"])
def test_23_10_bz2_and_xz_text_is_read_by_content(tmp_path, capsys, monkeypatch, pack):
    import bz2
    import lzma

    text = (SAMPLES / "long.csv").read_bytes()
    packed = tmp_path / "long.csv"
    packed.write_bytes(bz2.compress(text) if pack == "bz2" else lzma.compress(text))
    want = run(capsys, "scan", str(SAMPLES / "long.csv"), "-q", "-f", "json")[1]
    code, out, err = run(capsys, "scan", str(packed), "-q", "-f", "json")
    assert code == 0, err
    assert {k: v for k, v in json.loads(out).items() if k != "files"} == \
        {k: v for k, v in json.loads(want).items() if k != "files"}
    _stdin(monkeypatch, packed.read_bytes())
    code, out, err = run(capsys, "scan", "-", "-q", "-f", "json")
    assert code == 0 and json.loads(out)["rollouts"] == json.loads(want)["rollouts"], err


# ------------------------------------------------------------------- 23.14 standard input

def test_23_14_closed_stdin_is_one_line_exit_2(capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "stdin", None)
    code, out, err = run(capsys, "scan", "-")
    assert (code, out) == (2, "")
    assert err == ("sigmaudit: error: <stdin>: standard input is closed; pipe a log into sigmaudit, "
                   "or give its path instead of '-'\n")


def test_23_14_closed_stdin_from_the_shell(tmp_path):
    import subprocess
    import sys

    # stdin closed by a tiny Python that then execs sigmaudit (`scan - <&-`); no preexec_fn, so no fork
    # handler of the test worker (grpc's, after the Spark Connect tests) runs in the child
    close_and_exec = ("import os, sys; os.close(0); "
                      "os.execv(sys.executable, [sys.executable, '-m', 'sigmaudit', 'scan', '-'])")
    done = subprocess.run([sys.executable, "-c", close_and_exec], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("sigmaudit: error: <stdin>: standard input is closed")


def test_23_14_stdin_with_gzip_magic_but_not_gzip(capsys, monkeypatch):
    _stdin(monkeypatch, b"\x1f\x8bprompt_id,reward\nq1,1\n")
    code, out, err = run(capsys, "scan", "-")
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
    assert err.startswith("sigmaudit: error: <stdin>: starts like gz data but is not valid gz (")
    assert "Traceback" not in err and "internal error" not in err


# ---------------------------------------------------------------------- 23.29 messages

def test_23_29_a_near_binary_reward_is_shown_in_full(tmp_path, capsys):
    log = tmp_path / "log.csv"
    log.write_text("prompt_id,reward\n" + "".join(f"p{i},{'1.0000001' if i % 2 else '0'}\n" for i in range(8)))
    code, _, err = run(capsys, "scan", str(log))
    assert code == 2 and "is not binary (values such as 1.0000001);" in err


def test_23_29_a_json_array_on_stdin_is_named(capsys, monkeypatch):
    _stdin(monkeypatch, json.dumps([{"prompt_id": "p", "reward": 1}] * 4).encode())
    code, out, err = run(capsys, "scan", "-")
    assert (code, out) == (2, "")
    assert err == ("sigmaudit: error: <stdin>: standard input holds a JSON array; sigmaudit reads JSON lines "
                   "(one object per line); convert it, e.g. jq -c '.[]' < log.json | sigmaudit scan -\n")


# ------------------------------------------- 23.21 an empty unrelated file aborts a folder scan

@pytest.mark.parametrize(("name", "content"), [("empty.jsonl", b""), ("notes.jsonl", b"see the run log\n"),
                                               ("header.csv", b"a,b\n"), ("blank.csv", b"\n\n")])
def test_23_21_an_empty_or_unparsable_unrelated_file_does_not_abort_a_folder_scan(tmp_path, name, content):
    import shutil

    shutil.copy(SAMPLES / "long.csv", tmp_path / "long.csv")
    (tmp_path / name).write_bytes(content)
    want = load_counts([SAMPLES / "long.csv"])
    got = load_counts([tmp_path])
    assert got.per_prompt.equals(want.per_prompt) and got.files == (str(tmp_path / "long.csv"),)
    assert any(n.startswith(f"skipped {tmp_path / name}: holds no data (") for n in got.notes), got.notes
    with pytest.raises(SigmauditError):  # named, it is refused
        load_counts([tmp_path / "long.csv", tmp_path / name])


def test_23_21_a_log_with_a_bad_line_further_down_still_refuses_the_folder(tmp_path):
    import shutil

    shutil.copy(SAMPLES / "long.csv", tmp_path / "long.csv")
    (tmp_path / "more.jsonl").write_text('{"prompt_id": "x", "reward": 1}\n{"prompt_id": \n')
    with pytest.raises(SigmauditError, match="malformed JSON on line 2"):
        load_counts([tmp_path])


# ------------------------------------------------------- 23.26 an unreadable sub-folder is skipped

def _deny(monkeypatch, folder: Path) -> None:  # noqa: ANN001
    """The OS refusing to list ``folder`` (as for a folder without read permission, which root ignores)."""
    import os

    real = os.scandir

    def scandir(path=".") -> object:  # noqa: ANN001
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_23_26_an_unreadable_sub_folder_is_refused_by_name(tmp_path, monkeypatch, capsys):
    import shutil

    shutil.copytree(SAMPLES / "nemo-rl", tmp_path / "run")
    steps = next((tmp_path / "run").rglob("train_data_step3.jsonl")).parent
    hidden = steps / "step4"
    hidden.mkdir()
    shutil.copy(steps / "train_data_step3.jsonl", hidden / "train_data_step4.jsonl")
    _deny(monkeypatch, hidden)
    code, out, err = run(capsys, "scan", str(tmp_path / "run"))
    assert (code, out) == (2, "")
    assert err == (f"sigmaudit: error: {hidden}: folder is unreadable (Permission denied); fix its permissions, "
                   "or name the folders to read\n")


def test_23_26_an_unreadable_folder_named_directly_is_unreadable(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "logs"
    folder.mkdir()
    _deny(monkeypatch, folder)
    code, _, err = run(capsys, "scan", str(folder))
    assert code == 2 and f"{folder}: folder is unreadable (Permission denied)" in err
    assert "holds no supported files" not in err


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
                    reason="root reads every folder")
def test_23_26_a_folder_without_read_permission_is_refused(tmp_path, capsys):
    import shutil

    shutil.copy(SAMPLES / "long.csv", tmp_path / "long.csv")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        code, _, err = run(capsys, "scan", str(tmp_path))
    finally:
        locked.chmod(0o755)
    assert code == 2 and f"{locked}: folder is unreadable" in err


# ---------------------------------------------------------------- 22.3 globs that match folders

def test_22_3_a_glob_of_folders_reads_their_files(tmp_path):
    """prime-rl's ``rollouts/step_*/train/all``-like glob: each matched folder's files are read (with
    the usual skip rules), as if the folders were named."""

    for step in (1, 2, 3):
        folder = tmp_path / "rollouts" / f"step_{step}" / "train" / "all"
        folder.mkdir(parents=True)
        rows = "".join(f"{step},p{i % 10},{(i * step) % 3 == 0:d}\n" for i in range(40))
        (folder / "rollouts.csv").write_text("step,prompt_id,reward\n" + rows)
        (folder / "empty.jsonl").write_bytes(b"")
    (tmp_path / "rollouts" / "step_2" / "train" / "plots").mkdir()
    folders = sorted((tmp_path / "rollouts").glob("step_*/train/all"))
    want = load_counts(folders)
    got = load_counts([str(tmp_path / "rollouts" / "step_*" / "train" / "all")])
    assert got.files == want.files and len(got.files) == 3
    assert got.per_prompt.equals(want.per_prompt) and got.n_rows == want.n_rows
    assert any("holds no data" in n for n in got.notes)
    mixed = load_counts([str(tmp_path / "rollouts" / "step_*" / "train" / "*")])
    assert mixed.files == want.files  # the empty plots folder is passed over
    with pytest.raises(SigmauditError, match="glob matches no supported files"):
        load_counts([str(tmp_path / "rollouts" / "step_*" / "train" / "plots")])


# ------------------------------------------------------------- 22.5 pass rates in percent

def _percent_file(tmp_path: Path) -> Path:
    log = tmp_path / "leaderboard.csv"
    log.write_text("task_id,pass@1\n" + "".join(f"t{i},{100 * (i % 9) / 8:g}\n" for i in range(40)))
    return log


def test_22_5_percent_pass_rates_are_named_with_the_flag_that_reads_them(tmp_path, capsys):
    log = _percent_file(tmp_path)
    code, out, err = run(capsys, "scan", str(log), "--rate-col", "pass@1", "--samples", "8")
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
    assert err == (f"sigmaudit: error: {log}:3: invalid counts: pass@1 outside [0, 1] (up to 100): the pass rates "
                   "look like percentages; pass --rate-scale 100 to read them as percentages\n")


def test_22_5_rate_scale_reads_percent_pass_rates(tmp_path):
    log = _percent_file(tmp_path)
    got = load_counts([log], LoadOptions(rate_col="pass@1", samples=8, rate_scale=100))
    assert _prompts(got) == {f"t{i}": (8, i % 9) for i in range(40)}
    assert "k from pass@1/100 x 8" in got.notes[0]
    fractions = tmp_path / "fractions.csv"
    fractions.write_text("task_id,pass@1\n" + "".join(f"t{i},{(i % 9) / 8:g}\n" for i in range(40)))
    assert got.per_prompt.equals(load_counts([fractions], LoadOptions(rate_col="pass@1", samples=8)).per_prompt)


def test_22_5_rates_above_100_are_not_called_percentages(tmp_path, capsys):
    log = tmp_path / "odd.csv"
    log.write_text("task_id,pass_rate\nt1,0.5\nt2,250\n")
    code, _, err = run(capsys, "scan", str(log), "--samples", "8")
    assert code == 2 and "pass_rate outside [0, 1]" in err and "percent" not in err


@pytest.mark.parametrize("value", ["0", "-100", "nan"])
def test_22_5_rate_scale_must_be_positive(tmp_path, capsys, value):
    code, _, err = run(capsys, "scan", str(_percent_file(tmp_path)), "--rate-col", "pass@1", "--samples", "8",
                       "--rate-scale", value)
    assert code == 2 and "--rate-scale: must be a positive number" in err
