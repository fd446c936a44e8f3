"""One definition per label: a figure that two commands print under the same name is the same number.

Issue 24 item 4: "DAPO groups per kept group" at G = 8 was 4.73 in scan (a mean over in-between
prompts of 1/(1 − silent(p))) and 2.49 in plan (1/(1 − corpus silent rate)). DAPO fills its batch with
fresh prompts, so the expected draws per kept group is plan's; scan now prints the same figure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
LOGS = [ROOT / "sample_logs" / "rollouts.parquet",
        ROOT / "tests" / "data" / "real" / "pika_aime_1983_2024_pass_rates.csv"]


def _json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, *args, "-f", "json", "-q")
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("G", [8, 16])
def test_same_label_same_number_in_scan_plan_and_check(capsys, path, G):
    scan = _json(capsys, "scan", str(path), "-G", str(G), "--g-main", str(G))
    plan = _json(capsys, "plan", str(path), "-G", str(G), "--bootstrap", "0")
    check = _json(capsys, "check", str(path), "-G", str(G), "--max-silent", "1", "--min-fidelity", "0",
                  "--bootstrap", "0", "--basis", "model")
    (row,) = [r for r in plan["sweep"] if r["G"] == G]
    silent = {c["name"]: c["value"] for c in check["checks"]}
    scan_row = next(r for r in scan["silent"] if r["G"] == G)
    # the corpus silent rate at G: scan's estimate, plan's sweep, check's gate
    assert scan_row["estimate"] == pytest.approx(row["silent"], abs=1e-12)
    assert silent["silent_rate"] == pytest.approx(row["silent"], abs=1e-12)
    assert silent["fidelity"] == pytest.approx(row["fidelity"], abs=1e-12)
    # what happened: check's default basis at the logged G is scan's observed share of the logged groups
    if scan["observed_silent"] is not None and scan["observed_silent"]["G"] == G:
        observed = _json(capsys, "check", str(path), "-G", str(G), "--max-silent", "1", "--bootstrap", "0")
        assert observed["checks"][0]["value"] == scan["observed_silent"]["fraction"]
    # DAPO's expected groups drawn per kept group
    dapo = scan["group_size"]["dapo_groups_per_kept_group"]
    assert dapo == pytest.approx(row["dapo_groups_per_kept_group"], abs=1e-12)
    assert dapo == pytest.approx(1.0 / (1.0 - row["silent"]), abs=1e-12)
