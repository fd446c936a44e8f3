"""No output option ever writes over an input log (``-o``, ``--per-prompt``, ``--junit``, ``--log-out``),
also through a symlink, a hard link or standard input redirected from the file: exit 2, one line,
the input byte for byte unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "sample_logs" / "long.csv"


@pytest.fixture
def log(tmp_path):
    target = tmp_path / "in.csv"
    shutil.copyfile(LOG, target)
    return target


def _same_as_sample(path: Path) -> bool:
    return path.read_bytes() == LOG.read_bytes()


@pytest.mark.parametrize("args", [
    ("scan", "{log}", "-o", "{log}"),
    ("scan", "{log}", "-f", "csv", "-o", "{link}"),
    ("scan", "{log}", "-o", "{hard}"),
    ("scan", "{log}", "--per-prompt", "{log}"),
    ("plan", "{log}", "-o", "{log}"),
    ("check", "{log}", "-G", "8", "--max-silent", "0.99", "--junit", "{log}"),
    ("trend", "{log}", "--step-col", "sample_idx", "-f", "csv", "-o", "{log}"),
    ("simulate", "--init-from", "{log}", "--num-steps", "2", "--log-out", "{log}"),
    ("scan", "{dir}", "-f", "csv", "-o", "{log}"),
])
def test_an_input_is_never_written_over(capsys, tmp_path, log, args):
    link, hard = tmp_path / "link.csv", tmp_path / "hard.csv"
    os.symlink(log, link)
    os.link(log, hard)
    argv = [a.format(log=log, link=link, hard=hard, dir=tmp_path) for a in args]
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    line = [x for x in err.splitlines() if "error:" in x]
    assert len(line) == 1 and "is one of the input logs" in line[0], err
    assert _same_as_sample(log) and link.is_symlink()


def test_other_outputs_still_written(capsys, tmp_path, log):
    out = tmp_path / "report.json"
    code, _, err = run(capsys, "scan", str(log), "-o", str(out))
    assert code == 0, err
    assert out.read_text().lstrip().startswith("{")
    # the guard is per command: the same path read before may be written by a later command
    code, _, err = run(capsys, "calc", "-p", "0.3", "-G", "8", "-o", str(log))
    assert code == 0, err
    assert not _same_as_sample(log)


def test_stdin_redirected_from_the_output_file(tmp_path, log):
    with open(log, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "sigmaudit", "scan", "-", "-o", str(log)], stdin=stdin,
                              capture_output=True, text=True, cwd=ROOT, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert "is one of the input logs" in proc.stderr
    assert _same_as_sample(log)
