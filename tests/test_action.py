"""The GitHub Action (action.yml) and the pre-commit hook (.pre-commit-hooks.yaml), run locally.

Each ``run:`` script of the composite action runs under bash as GitHub runs it (``bash --noprofile
--norc -eo pipefail``), its ``env:`` expressions filled from the inputs given (else the inputs'
defaults). The install step's ``pip install`` is not run here (it would modify this environment);
its ``install: false`` branch and its refusal of a bad value are.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")
EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def _bin(tmp_path: Path) -> Path:
    """A ``sigmaudit`` on PATH that runs this checkout (the one under test, not an installed copy)."""
    exe = tmp_path / "bin" / "sigmaudit"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m sigmaudit "$@"\n')
    exe.chmod(0o755)
    return exe.parent


def _run_step(step: dict, inputs: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    defaults = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(inputs) - set(defaults)
    assert not unknown, f"not inputs of the action: {unknown}"
    values = {**defaults, **inputs}
    context = {f"inputs.{k}": v for k, v in values.items()} | {"github.action_path": str(ROOT)}
    env = {name: EXPR.sub(lambda m: context[m.group(1)], str(value)) for name, value in step.get("env", {}).items()}
    env |= {"PATH": f"{_bin(tmp_path)}:/usr/bin:/bin", "GITHUB_OUTPUT": str(tmp_path / "github_output"),
            "HOME": str(tmp_path)}
    assert step["shell"] == "bash"
    assert not EXPR.search(step["run"]), "inputs reach the script through env, never pasted into it"
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


def _step(name: str) -> dict:
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == name or s["name"] == name]
    return step


def test_action_is_a_composite_whose_inputs_all_reach_a_step():
    assert ACTION["runs"]["using"] == "composite"
    used = set(re.findall(r"inputs\.([\w-]+)", (ROOT / "action.yml").read_text(encoding="utf-8").split("runs:")[1]))
    assert used == set(ACTION["inputs"])


def test_check_step_fails_the_job_on_a_failed_threshold(tmp_path):
    junit = tmp_path / "sigmaudit.xml"
    inputs = {"paths": SAMPLE, "group-size": "8", "max-silent": "0.5", "min-fidelity": "0.1", "junit": str(junit),
              "args": "--quiet --bootstrap 0"}
    done = _run_step(_step("check"), inputs, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "silent_rate 0.6025 > limit 0.5000 at G = 8" in done.stderr
    assert (tmp_path / "github_output").read_text() == "exit-code=1\n"
    cases = ET.parse(junit).getroot().iter("testcase")
    assert {c.get("name"): c.find("failure") is not None for c in cases} == {"silent_rate": True, "fidelity": False}


def test_check_step_passes_and_writes_the_report(tmp_path):
    out = tmp_path / "report.json"
    done = _run_step(_step("check"), {"paths": f"{SAMPLE}\n", "max-silent": "0.9", "output": str(out),
                                      "args": "-G 8 --quiet --bootstrap 0"}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "github_output").read_text() == "exit-code=0\n"
    import json

    assert json.loads(out.read_text())["G"] == 8


def test_check_step_exits_2_when_the_logs_cannot_be_read(tmp_path):
    inputs = {"paths": str(tmp_path / "missing.jsonl"), "max-silent": "0.5", "args": "--bootstrap 0"}
    done = _run_step(_step("check"), inputs, tmp_path)
    assert done.returncode == 2
    assert (tmp_path / "github_output").read_text() == "exit-code=2\n"


def test_install_step_without_install_uses_the_sigmaudit_on_path(tmp_path):
    done = _run_step(_step("Install sigmaudit"), {"paths": SAMPLE, "install": "false"}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sigmaudit ")
    bad = _run_step(_step("Install sigmaudit"), {"paths": SAMPLE, "install": "maybe"}, tmp_path)
    assert bad.returncode == 2 and "install must be true or false" in bad.stdout


def test_pre_commit_hook_runs_check(tmp_path):
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "sigmaudit-check" and hook["pass_filenames"] is False
    assert re.search(hook["files"], "rollouts/3.jsonl.zst") and not re.search(hook["files"], "README.md")
    argv = shlex.split(hook["entry"])
    assert argv[0] == "sigmaudit"
    cmd = [sys.executable, "-m", "sigmaudit", *argv[1:], SAMPLE, "-G", "8", "--bootstrap", "0", "--max-silent", "0.5"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    failed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1, failed.stderr
    assert failed.stderr.startswith("sigmaudit: check FAILED (1 of 1): silent_rate 0.6025 > limit 0.5000")


def test_check_step_never_echoes_url_secrets(tmp_path):
    """Issue 36 item 27: the step echoed its command line, so a paths URL's user:password@ and a presigned
    URL's signature reached the CI log in clear text (sigmaudit itself prints them as ***)."""
    urls = ["https://alice:hunter2@example.invalid/logs/run.jsonl",
            "https://example.invalid/run.parquet?X-Amz-Signature=deadbeef42&X-Amz-Credential=AKIAXYZ",
            "s3://AKIAKEY:s3cr3t@bucket/run.parquet"]
    inputs = {"paths": " ".join(urls), "max-silent": "0.5",
              "args": "--bootstrap 0 --engine spark --spark-remote sc://host:15002/;token=t0ps3cret"}
    done = _run_step(_step("check"), inputs, tmp_path)
    log = done.stdout + done.stderr
    assert done.returncode == 2 and log.startswith("+ sigmaudit --no-config check ")
    for secret in ("hunter2", "alice", "deadbeef42", "AKIAXYZ", "AKIAKEY", "s3cr3t", "t0ps3cret"):
        assert secret not in log, (secret, log)
    first = done.stdout.splitlines()[0]
    assert "https://***@example.invalid/logs/run.jsonl" in first and "run.parquet?***" in first
    assert "s3://***@bucket/run.parquet" in first and "sc://host:15002/;***" in first


def test_check_step_splits_args_like_a_shell(tmp_path):
    """Issue 36 item 28: `--prompt-col "task id"` kept its quotes as characters ('error: id": no such file or
    directory'). args are split as a POSIX shell splits words (shlex: quotes and backslashes honoured, nothing
    expanded or run): the check reads the column `task id`."""
    import polars as pl

    log = tmp_path / "log.parquet"
    pl.DataFrame([{"task id": f"t{i}", "step": 1, "reward": int(j < 2)} for i in range(30) for j in range(4)]
                 ).write_parquet(log)
    marker = tmp_path / "ran"
    inputs = {"paths": str(log), "max-silent": "0.5",
              "args": f"--prompt-col \"task id\" --bootstrap 0 --quiet --junit '{tmp_path}/j $(touch ran).xml' -f json"}
    done = _run_step(_step("check"), inputs, tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    report = json.loads(done.stdout.split("\n", 1)[1])
    assert report["prompts"] == 30 and report["checks"][0]["value"] == 0.0  # every group 2 of 4: none silent
    assert not marker.exists()  # a command substitution in args is text, never run
    assert (tmp_path / "j $(touch ran).xml").is_file()  # the step runs in tmp_path
    assert "--prompt-col 'task id'" in done.stdout.splitlines()[0]
    bad = _run_step(_step("check"), {"paths": str(log), "max-silent": "0.5", "args": "--prompt-col \"unclosed"},
                    tmp_path)
    assert bad.returncode == 2 and "unbalanced quotes" in bad.stdout
    assert (tmp_path / "github_output").read_text().endswith("exit-code=2\n")


def _gate_log(folder: Path) -> Path:
    """A log that fails --max-silent 0.1 over its 4 steps (30 % of groups all wrong in steps 1-3) and passes on
    its last step alone."""
    rows = ["prompt,step,reward"] + [f"q{i},{step},{r}" for step in (1, 2, 3, 4) for i in range(25)
                                     for r in ([0, 0, 0, 0] if step < 4 and i < 10 else [1, 1, 0, 0])]
    log = folder / "log.csv"
    log.write_text("\n".join(rows) + "\n")
    return log


def test_a_config_file_in_the_checkout_cannot_change_the_gate(tmp_path):
    """Issue 44: a pull request adding [check] last-steps = 1, quiet = true, output = "../outside.json" turned a
    failing gate (exit 1) into exit 0 and wrote outside the checkout, and nothing in the log named the file. The
    step runs `sigmaudit --no-config check`: the gate is the inputs' (exit 1), nothing is written outside, and
    the log says the file was not read."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    log = _gate_log(checkout)
    (checkout / "sigmaudit.toml").write_text('[check]\nlast-steps = 1\nquiet = true\noutput = "../outside.json"\n')
    (checkout / "pyproject.toml").write_text('[tool.sigmaudit.check]\nmax-silent = 0.9\n')
    done = _run_step(_step("check"), {"paths": str(log), "max-silent": "0.1", "args": "--bootstrap 0"}, checkout)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("+ sigmaudit --no-config check ")
    assert "sigmaudit: --no-config: ./sigmaudit.toml not read" in done.stderr
    assert "silent_rate 0.3000 > limit 0.1000" in done.stderr
    assert not (tmp_path / "outside.json").exists()


@pytest.mark.slow
def test_a_config_file_the_workflow_names_is_read_and_each_value_printed(tmp_path):
    """The `config` input reads a file the workflow owner names (outside the checkout here): each value it sets is
    printed in the log and written in the JUnit report's properties; the step's inputs win over it."""
    checkout, owner = tmp_path / "checkout", tmp_path / "owner"
    checkout.mkdir()
    owner.mkdir()
    log = _gate_log(checkout)
    gate = owner / "gate.toml"
    gate.write_text('[check]\nmax-silent = 0.1\nlast-steps = 1\nquiet = true\n')
    junit = checkout / "junit.xml"
    inputs = {"paths": str(log), "config": str(gate), "junit": str(junit), "args": "--bootstrap 0"}
    done = _run_step(_step("check"), inputs, checkout)
    note = f"sigmaudit: settings from {gate}: [check] max-silent = 0.1, last-steps = 1, quiet = true"
    assert done.returncode == 0 and note in done.stderr.splitlines(), done.stderr
    assert done.stdout.startswith(f"+ sigmaudit --config {gate} check ")
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["config"] == note.removeprefix("sigmaudit: ")
    done = _run_step(_step("check"), {**inputs, "args": "--bootstrap 0 --last-steps 4"}, checkout)
    assert done.returncode == 1  # the workflow's args win over its file
    assert f"sigmaudit: settings from {gate}: [check] max-silent = 0.1, quiet = true" in done.stderr
