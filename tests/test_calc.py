"""`sigmaudit calc`: the library call and the command (exit code, stdout, stderr apart)."""

from __future__ import annotations

import json
import math

import pytest
from cli_runner import run
from scipy.stats import binom

from sigmaudit.audits.calc import calc

CONTRACT_KEYS = {
    "p", "G", "eps", "silent_rate", "all_correct_rate", "all_wrong_rate", "expected_sigma", "fidelity",
    "attenuation", "difficulty_weight", "group_size_closed_form", "group_size_exact", "dapo_groups_per_kept_group",
}


def test_done_when_figures(capsys):
    """The issue's acceptance figures: silent 0.6634, fidelity 0.5390, both group sizes."""
    code, out, err = run(capsys, "calc", "-p", "0.05", "-G", "8", "--format", "json")
    assert code == 0 and err == ""
    (d,) = json.loads(out)["results"]
    assert CONTRACT_KEYS <= d.keys()
    assert round(d["silent_rate"], 4) == 0.6634
    assert round(d["fidelity"], 4) == 0.5390
    assert d["group_size_closed_form"] == math.ceil(1 / (8 * 0.05 * 0.05 * 0.95))  # 53
    assert d["group_size_exact"] == 69
    assert d["all_wrong_rate"] == pytest.approx(0.95**8)
    assert d["all_correct_rate"] == pytest.approx(0.05**8)
    assert d["dapo_groups_per_kept_group"] == pytest.approx(1 / (1 - 0.95**8 - 0.05**8))


def test_table_output_mentions_values(capsys):
    code, out, err = run(capsys, "calc", "-p", "0.05", "-G", "8")
    assert code == 0 and err == ""
    for text in ("0.6634", "0.5390", "53", "69", "ε = 0.05"):
        assert text in out


def test_values_against_independent_sum():
    r = calc([0.3], [12], eps=0.02).rows[0]
    k = range(13)
    es = sum(binom.pmf(i, 12, 0.3) * math.sqrt(i * (12 - i)) / 12 for i in k)
    assert r.expected_sigma == pytest.approx(es, rel=1e-12)
    assert r.fidelity == pytest.approx(es / math.sqrt(0.21), rel=1e-12)
    assert r.attenuation == pytest.approx(1 - 1 / (8 * 12 * 0.21))
    assert r.difficulty_weight == pytest.approx(1 / math.sqrt(0.21))
    assert r.expected_sigma_squared == pytest.approx(0.21 * (1 - 1 / 12))


@pytest.mark.parametrize("p", ["0", "1"])
def test_unreachable_is_null_not_a_number(capsys, p):
    code, out, _ = run(capsys, "calc", "-p", p, "-G", "8", "-f", "json")
    (d,) = json.loads(out)["results"]
    assert code == 0
    assert d["group_size_exact"] is None and d["group_size_closed_form"] is None
    assert d["dapo_groups_per_kept_group"] is None
    assert d["silent_rate"] == 1.0


def test_several_p_and_G_give_a_list(capsys):
    code, out, _ = run(capsys, "calc", "-p", "0.05", "-p", "0.3", "-G", "8", "-G", "16", "-f", "json")
    d = json.loads(out)
    assert code == 0
    assert [(r["p"], r["G"]) for r in d["results"]] == [(0.05, 8), (0.05, 16), (0.3, 8), (0.3, 16)]
    assert all(CONTRACT_KEYS <= r.keys() for r in d["results"])


def test_csv_and_markdown(capsys):
    code, out, _ = run(capsys, "calc", "-p", "0.2", "-p", "0.5", "-G", "8", "-f", "csv")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].startswith("p,G,eps,silent_rate,")
    assert float(lines[2].split(",")[3]) == pytest.approx(2 * 0.5**8)
    _, one, _ = run(capsys, "calc", "-p", "0.2", "-G", "8", "-f", "csv")  # same columns for one (p, G)
    assert one.splitlines()[0] == lines[0] and len(one.splitlines()) == 2
    code, out, _ = run(capsys, "calc", "-p", "0.2", "-G", "8", "-f", "markdown")
    assert code == 0 and "| silent rate" in out


def test_output_file_written_and_stdout_empty(capsys, tmp_path):
    target = tmp_path / "calc.json"
    code, out, err = run(capsys, "calc", "-p", "0.5", "-G", "8", "-o", str(target))
    assert code == 0 and out == "" and err == ""
    assert round(json.loads(target.read_text())["results"][0]["fidelity"], 4) == 0.9278


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-p", "1.5", "-G", "8"], "[0, 1]"),
        (["-p", "-0.1", "-G", "8"], "[0, 1]"),
        (["-p", "0.5", "-G", "0"], "-G"),
        (["-p", "0.5", "-G", "2.5"], "-G"),
        (["-p", "0.5", "-G", "8", "--eps", "1"], "--eps"),
        (["-p", "0.5", "-G", "8", "--eps", "0"], "--eps"),
        (["-p", "0.5", "-G", "8", "--format", "xml"], "--format"),
        (["-G", "8"], "-p"),
        (["-p", "0.5", "-G", "99999999999999999999"], "-G/--group-size: must be at most 2**62"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, args, needle):
    code, out, err = run(capsys, "calc", *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("sigmaudit: error:")
    assert needle in err
    assert "Traceback" not in err


def test_unknown_command_exit_2(capsys):
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "frobnicate" in err


def test_bare_command_shows_help_on_stderr(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert "Usage: sigmaudit" in err and "scan" in err and "sigmaudit: error" not in err
