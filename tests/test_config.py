"""Per-project defaults (``sigmaudit.toml``, ``[tool.sigmaudit]`` in pyproject.toml): found from the current folder
upwards, ``--config FILE`` / ``SIGMAUDIT_CONFIG`` / ``--no-config``; precedence command line > environment >
file > built-in; unknown keys refused in one line naming the key and the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")


@pytest.fixture
def project(tmp_path, monkeypatch):
    for var in ("SIGMAUDIT_CONFIG", "SIGMAUDIT_CALC_GROUP_SIZE", "SIGMAUDIT_CALC_EPS", "SIGMAUDIT_CHECK_MAX_SILENT"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    return tmp_path


def _calc(capsys, *args: str) -> tuple[int, dict, str]:
    code, out, err = run(capsys, *args)
    return code, (json.loads(out)["results"][0] if code == 0 else {}), err


def test_a_file_upwards_sets_defaults_and_the_command_line_wins(capsys, project):
    (project / "sigmaudit.toml").write_text('eps = 0.1\n[calc]\ngroup-size = 16\n')
    code, res, _ = _calc(capsys, "calc", "-p", "0.1", "-f", "json")
    assert code == 0 and (res["G"], res["eps"]) == (16, 0.1)
    code, res, _ = _calc(capsys, "calc", "-p", "0.1", "-f", "json", "-G", "4")
    assert code == 0 and res["G"] == 4


def test_the_environment_sits_between_the_command_line_and_the_file(capsys, project, monkeypatch):
    (project / "sigmaudit.toml").write_text('[calc]\ngroup_size = 16\n')
    monkeypatch.setenv("SIGMAUDIT_CALC_GROUP_SIZE", "32")
    assert _calc(capsys, "calc", "-p", "0.1", "-f", "json")[1]["G"] == 32
    assert _calc(capsys, "calc", "-p", "0.1", "-f", "json", "-G", "2")[1]["G"] == 2


def test_pyproject_tool_table_and_which_file_wins(capsys, project):
    (project / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.sigmaudit]: passed over
    (project / "pyproject.toml").write_text('[tool.sigmaudit.calc]\ngroup-size = 12\n')
    assert _calc(capsys, "calc", "-p", "0.1", "-f", "json")[1]["G"] == 12
    (project / "sigmaudit.toml").write_text('[calc]\ngroup-size = 6\n')  # same folder: sigmaudit.toml first
    assert _calc(capsys, "calc", "-p", "0.1", "-f", "json")[1]["G"] == 6
    (project / "a" / "sigmaudit.toml").write_text('[calc]\ngroup-size = 5\n')  # nearer folder first
    assert _calc(capsys, "calc", "-p", "0.1", "-f", "json")[1]["G"] == 5


def test_config_flag_environment_and_no_config(capsys, project, monkeypatch):
    (project / "sigmaudit.toml").write_text('[calc]\ngroup-size = 16\n')
    other = project / "other.toml"
    other.write_text('[calc]\ngroup-size = 3\n')
    assert _calc(capsys, "--config", str(other), "calc", "-p", "0.1", "-f", "json")[1]["G"] == 3
    assert _calc(capsys, f"--config={other}", "calc", "-p", "0.1", "-f", "json")[1]["G"] == 3
    code, _, err = _calc(capsys, "--no-config", "calc", "-p", "0.1", "-f", "json")  # calc needs -G of its own
    assert code == 2 and "Missing option '-G' / '--group-size'. (see" in err
    monkeypatch.setenv("SIGMAUDIT_CONFIG", str(other))
    assert _calc(capsys, "calc", "-p", "0.1", "-f", "json")[1]["G"] == 3


def test_a_gate_takes_its_threshold_from_the_file(capsys, project):
    (project / "sigmaudit.toml").write_text('quiet = true\n[check]\nmax-silent = 0.5\n')
    code, _, err = run(capsys, "check", SAMPLE)
    assert code == 1 and "detected" not in err  # the shared quiet = true applies to check too
    code, _, _ = run(capsys, "check", SAMPLE, "--max-silent", "0.9")
    assert code == 0


@pytest.mark.parametrize(("text", "says"), [
    ("max-silnt = 0.5\n", "(top level): 'max-silnt' is not an option of any command"),
    ("[check]\nmax-silnt = 0.5\n", "[check]: 'max-silnt' is not an option of check"),
    ("[calc]\nmax-silent = 0.5\n", "[calc]: 'max-silent' is not an option of calc"),
    ("[chek]\nmax-silent = 0.5\n", "[chek]: 'chek' is not a command"),
    ("[calc\n", "not valid TOML"),
])
def test_unknown_keys_and_bad_toml_are_refused_in_one_line(capsys, project, text, says):
    path = project / "sigmaudit.toml"
    path.write_text(text)
    code, out, err = run(capsys, "calc", "-p", "0.1")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert str(path) in err and says in err, err


def test_pyproject_keys_are_named_with_their_table(capsys, project):
    (project / "pyproject.toml").write_text('[tool.sigmaudit.check]\nmax-silnt = 0.5\n')
    code, _, err = run(capsys, "calc", "-p", "0.1")
    assert code == 2 and "[tool.sigmaudit.check]: 'max-silnt' is not an option of check" in err


def test_a_bad_value_names_where_it_came_from(capsys, project, monkeypatch):
    (project / "sigmaudit.toml").write_text('[check]\nmax-silent = 7\n')
    code, _, err = run(capsys, "check", SAMPLE, "-q")
    assert code == 2 and f"from {project / 'sigmaudit.toml'} [check]" in err
    monkeypatch.setenv("SIGMAUDIT_CHECK_MAX_SILENT", "9")
    code, _, err = run(capsys, "check", SAMPLE, "-q")
    assert code == 2 and "from SIGMAUDIT_CHECK_MAX_SILENT" in err


def test_debug_shows_where_each_value_came_from(capsys, project, monkeypatch):
    (project / "sigmaudit.toml").write_text('eps = 0.1\n[calc]\ngroup-size = 16\n')
    monkeypatch.setenv("SIGMAUDIT_CALC_GROUP_SIZE", "32")
    code, _, err = run(capsys, "--debug", "calc", "-p", "0.1")
    assert code == 0
    assert f"config: {project / 'sigmaudit.toml'}" in err
    assert "G = [32] from the environment (SIGMAUDIT_CALC_GROUP_SIZE)" in err
    assert f"eps = 0.1 from {project / 'sigmaudit.toml'} (top level)" in err
    assert "p = " not in err  # given on the command line: not listed
    (project / "sigmaudit.toml").unlink()
    code, _, err = run(capsys, "--debug", "calc", "-p", "0.1")
    assert code == 0 and "config:" not in err and "G = [32] from the environment" in err


def test_missing_config_file_is_refused(capsys, project):
    code, _, err = run(capsys, "--config", "nope.toml", "calc", "-p", "0.1")
    assert code == 2 and "nope.toml: no such config file" in err
