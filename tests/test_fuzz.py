"""A bounded fuzz of the CLI contract (issue 15): seeded mutations of sample_logs/ and option values.

Every case runs the real CLI in-process and asserts the contract of the README's "Guarantees":

- the exit code is 0, 1 or 2; 1 only from a gate or target verdict (``check``, ``plan``);
- exit 2 prints at most 3 lines on stderr (file descriptor 2 included, so a native panic's
  message counts), starting ``sigmaudit: error:``, with no traceback and no "internal error";
- the input files are byte-for-byte unchanged;
- a failed run leaves no output file.

The cases are fixed by the seed (reproducible), a few hundred of them, under a minute.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest

from sigmaudit.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
SEED = 15
CASES = 300
SOURCES = [
    "counts.csv", "long.csv", "grouped.parquet", "verl/rollout_data/1.jsonl", "verl-v1/rollout_data/1.jsonl",
    "prime-rl/rollouts/step_1/train/all/traces.jsonl", "open-instruct/rollouts/grpo_qwen3_rlzero_rollouts_000000.jsonl",
    "trl/completions/completions_00001.parquet", "nemo-rl/logs/exp_001/train_data_step1.jsonl",
    "roll/rollout_dump/rollout_dump_data.step_0.jsonl",
]
HOSTILE = ["\x1b[2J", "\x1b]8;;http://x\x1b\\", "=HYPERLINK(1)", "\u202e", "\x00", "ÿ", "\r", '"', ","]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """One of: flip bytes, cut, insert junk, duplicate a block, inject hostile text, or nothing."""
    kind = rng.choice(["flip", "cut", "insert", "duplicate", "hostile", "none", "none", "none", "flip"])
    buf = bytearray(data)
    if kind == "flip" and buf:
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif kind == "cut" and buf:
        buf = buf[: rng.randrange(len(buf))]
    elif kind == "insert":
        at = rng.randrange(len(buf) + 1)
        buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif kind == "duplicate" and buf:
        a = rng.randrange(len(buf))
        b = min(len(buf), a + rng.randint(1, 400))
        buf[b:b] = buf[a:b]
    elif kind == "hostile":
        at = rng.randrange(len(buf) + 1)
        buf[at:at] = rng.choice(HOSTILE).encode()
    return bytes(buf)


def _options(command: str, rng: random.Random) -> list[str]:
    """Options for ``command``: mostly sensible values, a quarter of the time hostile ones."""
    def pick(good: list[str], bad: list[str]) -> str:
        return rng.choice(bad if rng.random() < 0.25 else good)

    args: list[str] = []
    if command == "check" or (command in ("scan", "plan", "report") and rng.random() < 0.6):
        args += ["-G", pick(["8", "2", "16", "64"], ["1", "0", "-3", "nan", "1e9", "99999999999999999999"])]
    if command == "check":
        args += [rng.choice(["--max-silent", "--min-fidelity", "--max-never-solved", "--max-extreme-share"]),
                 pick(["0.5", "0.1", "0.9", "0", "1"], ["nan", "inf", "-0.1", "1.5", "x"])]
    if command == "plan" and rng.random() < 0.5:
        args += rng.choice([["--budget", pick(["100", "400"], ["0", "-5", "10000000"])],
                            ["--eps", pick(["0.05", "0.2"], ["1e-9", "0", "nan"])],
                            ["--max-silent", pick(["0.5", "0.2"], ["2", "nan"])]])
    if command in ("scan", "report") and rng.random() < 0.3:
        args += ["--eps", pick(["0.05", "0.2"], ["1e-15", "nan", "1"])]
    if rng.random() < 0.15:
        args += ["--threshold", pick(["0.5", "1"], ["nan", "inf", "-inf"])]
    if rng.random() < 0.1:
        args += [rng.choice(["--prompt-col", "--reward-col", "--step-col"]),
                 rng.choice(["prompt_id", "nope", "\x1b[2J", "reward"])]
    if rng.random() < 0.1:
        args += ["--keep-duplicates"]
    if command != "report":
        args += ["-f", rng.choice(["json", "csv", "markdown", "table"])]
    return args


def _case(index: int, tmp: Path) -> tuple[list[str], list[Path], Path | None]:
    rng = random.Random(SEED * 100_003 + index)
    command = rng.choice(["scan", "scan", "check", "check", "plan", "trend", "calc", "simulate"])
    if command == "calc":
        args = ["calc", "-p", rng.choice(["0.3", "0", "1", "5e-324", "nan", "-1", "0.999999"]),
                "-G", rng.choice(["8", "1", "2147483648", "0", "1e3"])]
        if rng.random() < 0.4:
            args += ["--eps", rng.choice(["0.05", "1e-15", "1e-6", "0", "nan"])]
        return args, [], None
    if command == "simulate":
        args = ["simulate", "--prompts", rng.choice(["50", "0", "99999999999999999999", "200"]),
                "--steps", rng.choice(["2", "0", "3"]), "-G", rng.choice(["4", "8", "100000000", "1"])]
        return args, [], None
    inputs = []
    for j in range(rng.choice([1, 1, 1, 2])):
        source = SAMPLES / rng.choice(SOURCES)
        data = _mutate(source.read_bytes(), rng)
        name = source.name if rng.random() < 0.9 else f"x\x1b[2J{j}{source.suffix}"
        path = tmp / f"in{j}" / name
        path.parent.mkdir(exist_ok=True)
        if rng.random() < 0.1 and source.suffix in (".jsonl", ".csv"):
            path = path.with_name(path.name + ".gz")
            data = gzip.compress(data) if rng.random() < 0.8 else data[: len(data) // 2]
        path.write_bytes(data)
        inputs.append(path)
    output = tmp / "out" / rng.choice(["report.json", "report.md", "report.csv", "report.txt"])
    output.parent.mkdir(exist_ok=True)
    args = [command, *map(str, inputs), *_options(command, rng), "-q"]
    if rng.random() < 0.6:
        args += ["-o", str(output)]
    else:
        output = None
    return args, inputs, output


def _digest(paths: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


@pytest.mark.parametrize("block", range(6))
def test_fuzz_cli_contract(tmp_path, capfd, block):
    """CASES seeded cases in 6 blocks (so a failure names a smaller range); each case runs in its own folder."""
    codes = set()
    for index in range(block, CASES, 6):
        case_dir = tmp_path / f"case{index}"
        case_dir.mkdir()
        args, inputs, output = _case(index, case_dir)
        before = _digest(inputs)
        code = main(args)
        out, err = capfd.readouterr()
        where = f"case {index}: sigmaudit {' '.join(map(repr, args))} -> {code}\n{err[:2000]}"
        assert code in (0, 1, 2), where
        codes.add(code)
        if code == 1:
            assert args[0] in ("check", "plan"), where
            assert "error" not in err, where
        if code == 2:
            lines = err.splitlines()
            assert 1 <= len(lines) <= 3 and lines[-1].startswith("sigmaudit: error:"), where
            assert "Traceback" not in err and "internal error" not in err and "panicked" not in err, where
            if output is not None:
                assert not output.exists(), where
        assert "\x1b" not in err, where
        if code in (0, 1) and output is not None and args[0] in ("scan", "check", "plan", "trend") and \
                output.suffix == ".json" and "-f" in args and args[args.index("-f") + 1] == "json":
            json.loads(output.read_text())
        assert _digest(inputs) == before, where
        shutil.rmtree(case_dir, ignore_errors=True)
    assert 2 in codes and 0 in codes, f"block {block}: every case exited {sorted(codes)} (the error checks never ran)"


# ---- engines (issue 23): every engine agrees with Polars on every case it accepts, or refuses ----------

ENGINE_CASES = 150
"""The scan cases among the first ENGINE_CASES seeded cases run on DuckDB too (about a quarter of them)."""
SPARK_CASES = 3
"""Spark (slow to start, one shared session) runs only the first few of those and the typed-step logs."""


def _step_logs(folder: Path) -> list[Path]:
    """Long logs whose step column takes every type a log may give it, and prompt ids that trip csv
    readers (``#`` inside, a quoted newline, numbers with leading zeros): csv, jsonl and parquet."""
    import polars as pl

    steps = {"int": [0, 1, 2], "float": [0.0, 0.5, 1.5], "text": ["1", "01", "a"], "bool": [True, False, True],
             "nulls": [None, 1, 2], "big": [2**53 + 1, 2**53 + 2, 2**53 + 3]}
    prompts = ["q#1", "q\n2", "007", "3.10"]
    out = []
    for kind, values in steps.items():
        rows = [(values[s], p, int((s + j + i) % 3 == 0)) for s in range(3) for j, p in enumerate(prompts)
                for i in range(4)]
        frame = pl.DataFrame({"step": pl.Series([r[0] for r in rows]), "prompt_id": [r[1] for r in rows],
                              "reward": [r[2] for r in rows]})
        csv = folder / f"steps_{kind}.csv"
        frame.write_csv(csv)  # quotes the id holding a newline
        frame.write_parquet(folder / f"steps_{kind}.parquet")
        frame.write_ndjson(folder / f"steps_{kind}.jsonl")
        out += [csv, folder / f"steps_{kind}.parquet", folder / f"steps_{kind}.jsonl"]
    return out


def _as_json_scan(args: list[str]) -> list[str]:
    """A fuzz case's scan as ``-f json`` to stdout (no -o), for comparing engines."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-f", "-o"):
            skip = True
            continue
        out.append(a)
    return [*out, "-f", "json"]


def _agree_or_refuse(capfd, engine: str, args: list[str], where: str) -> int:
    want = main(args)
    want_out, _ = capfd.readouterr()
    got = main([*args, "--engine", engine])
    got_out, got_err = capfd.readouterr()
    where = f"{where} --engine {engine} -> {got} (polars {want})\n{got_err[:2000]}"
    assert got in (0, 2), where
    if got == 0:
        assert want == 0 and json.loads(got_out) == json.loads(want_out), where
    else:
        lines = got_err.splitlines()
        assert 1 <= len(lines) <= 3 and lines[-1].startswith("sigmaudit: error:"), where
        assert "Traceback" not in got_err and "internal error" not in got_err, where
    return got


def _engine_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    cases = []
    for index in range(ENGINE_CASES):
        if random.Random(SEED * 100_003 + index).choice(
                ["scan", "scan", "check", "check", "plan", "trend", "calc", "simulate"]) != "scan":
            continue
        case_dir = tmp_path / f"case{index}"
        case_dir.mkdir()
        args, _, _ = _case(index, case_dir)
        cases.append((_as_json_scan(args), f"case {index}"))
    return cases


def test_fuzz_duckdb_agrees_with_polars_or_refuses(tmp_path, capfd):
    pytest.importorskip("duckdb")
    cases = _engine_cases(tmp_path)
    cases += [(["scan", str(p), "-G", "4", "-q", "-f", "json"], p.name) for p in _step_logs(tmp_path)]
    codes = [_agree_or_refuse(capfd, "duckdb", args, where) for args, where in cases]
    assert len(codes) > 40 and 0 in codes and 2 in codes


def test_fuzz_spark_agrees_with_polars_or_refuses(tmp_path, capfd, spark_engine):
    cases = _engine_cases(tmp_path)[:SPARK_CASES]
    logs = _step_logs(tmp_path)
    cases += [(["scan", str(p), "-G", "4", "-q", "-f", "json"], p.name) for p in logs if p.suffix == ".csv"]
    codes = [_agree_or_refuse(capfd, "spark", args, where) for args, where in cases]
    assert 0 in codes
