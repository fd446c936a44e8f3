"""The one output contract of every command: --format and -o agree, CSV headers are JSON keys,
a shape never depends on how many rows there are."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from cli_runner import run

LOG = str(Path(__file__).resolve().parents[1] / "sample_logs" / "rollouts.parquet")

COMMANDS = {
    "scan": (["scan", LOG, "-q"], "silent"),
    "plan": (["plan", LOG, "-q", "-G", "4", "-G", "8"], "sweep"),
    "check": (["check", LOG, "-q", "-G", "8", "--max-silent", "0.9"], "checks"),
    "calc": (["calc", "-p", "0.2", "-p", "0.5", "-G", "8"], "results"),
    "trend": (["trend", LOG, "-q"], "steps"),
    "forecast": (["forecast", LOG, "-q", "-G", "8"], "per_prompt"),
    "backtest": (["backtest", LOG, "-q"], "calibration"),
}


def _flat(row: dict, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for k, v in row.items():
        keys += _flat(v, f"{prefix}{k}_") if isinstance(v, dict) else [f"{prefix}{k}"]
    return keys


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_csv_header_is_the_json_keys(capsys, name):
    args, key = COMMANDS[name]
    code, out, _ = run(capsys, *args, "-f", "json")
    assert code == 0
    data = json.loads(out)
    records = data[key]
    code, out, _ = run(capsys, *args, "-f", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    # then the context every other format prints beside the table (docs/commands.md): scan's observed share
    # at the logged G, and the drift warning of a result with a window
    context = ["observed", "observed_groups"] if name == "scan" else []
    context += ["drift_warning"] if "drift" in data else []
    assert code == 0 and rows[0] == _flat(records[0]) + context
    assert len(rows) == len(records) + 1


def test_calc_shape_does_not_depend_on_how_many_rows(capsys):
    _, one, _ = run(capsys, "calc", "-p", "0.2", "-G", "8", "-f", "json")
    _, four, _ = run(capsys, "calc", "-p", "0.2", "-p", "0.4", "-G", "8", "-G", "16", "-f", "json")
    a, b = json.loads(one), json.loads(four)
    assert a.keys() == b.keys() == {"schema_version", "results"}
    assert len(a["results"]) == 1 and len(b["results"]) == 4 and a["results"][0].keys() == b["results"][0].keys()


@pytest.mark.parametrize(("name", "suffix", "starts"), [
    ("scan", ".json", "{"), ("plan", ".md", "#"), ("check", ".csv", "name,"), ("calc", ".html", "<!DOCTYPE html>"),
    ("trend", ".json", "{"), ("scan", ".html", "<!DOCTYPE html>"),
])
def test_suffix_picks_the_format(capsys, tmp_path, name, suffix, starts):
    args, _ = COMMANDS[name]
    target = tmp_path / f"out{suffix}"
    code, out, _ = run(capsys, *args, "-o", str(target))
    assert code == 0 and out == ""
    assert target.read_text(encoding="utf-8").startswith(starts)


@pytest.mark.parametrize(("args", "says"), [
    (["scan", LOG, "-q", "-f", "csv", "-o", "r.json"],
     "-o r.json: the file's suffix '.json' says json but --format says csv"),
    (["scan", LOG, "-q", "-o", "r.out"], "-o r.out: cannot tell the format from the suffix '.out'"),
    (["report", LOG, "-q", "-f", "csv"], "--format: this command does not write csv"),
    (["report", LOG, "-q", "-o", "r.md"], "--format: this command does not write markdown"),
    (["calc", "-p", "0.2", "-G", "8", "-o", "r.json", "-f", "html"], "says json but --format says html"),
])
def test_contradictions_exit_2_with_one_line_and_write_nothing(capsys, tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err, err
    assert list(tmp_path.iterdir()) == []


def test_report_writes_json_with_format_json(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "report", LOG, "-f", "json")
    assert code == 0 and "sigmaudit-report.json" in err
    data = json.loads((tmp_path / "sigmaudit-report.json").read_text())
    assert {"scan", "plan", "trend", "fidelity_curves"} <= data.keys()


def test_dash_is_stdout(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "calc", "-p", "0.2", "-G", "8", "-f", "json", "-o", "-")
    assert code == 0 and json.loads(out)["results"][0]["G"] == 8 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_scan_per_prompt_table(capsys, tmp_path, suffix):
    import math

    import polars as pl

    target = tmp_path / f"pp{suffix}"
    code, out, _ = run(capsys, "scan", LOG, "-q", "-f", "json", "--per-prompt", str(target), "--g-main", "8")
    assert code == 0
    scan = json.loads(out)
    table = {".csv": pl.read_csv, ".parquet": pl.read_parquet, ".jsonl": pl.read_ndjson}[suffix](target)
    assert table.columns == ["prompt", "n", "k", "p_hat", "p_posterior_mean", "G", "silent_rate", "estimator"]
    assert table.height == scan["prompts"] and int(table["n"].sum()) == scan["rollouts"]
    # n >= G everywhere here: the unbiased estimate, [C(k, G) + C(n-k, G)] / C(n, G), per prompt
    for row in table.head(20).iter_rows(named=True):
        n, k = row["n"], row["k"]
        exact = (math.comb(k, 8) + math.comb(n - k, 8)) / math.comb(n, 8)
        assert row["estimator"] == "unbiased" and row["silent_rate"] == pytest.approx(exact, rel=1e-9)
        assert row["p_hat"] == pytest.approx(k / n) and 0.0 <= row["p_posterior_mean"] <= 1.0
    # the corpus rate is the mean of the per-prompt rates
    main = next(r for r in scan["silent"] if r["G"] == 8)
    assert table["silent_rate"].mean() == pytest.approx(main["unbiased"], rel=1e-9)
