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


# --- Issue 44: a file's settings are printed, its paths stay in its folder, its values are read strictly ---------


def _gate_log(folder: Path) -> Path:
    """A log whose whole window fails --max-silent 0.1 (30 % of groups all wrong over steps 1-3) while its last
    step alone passes (no group silent): a file that narrows the window turns a failing gate into a pass."""
    rows = ["prompt,step,reward"]
    for step in (1, 2, 3, 4):
        for i in range(25):
            rewards = [0, 0, 0, 0] if step < 4 and i < 10 else [1, 1, 0, 0]
            rows += [f"q{i},{step},{r}" for r in rewards]
    log = folder / "log.csv"
    log.write_text("\n".join(rows) + "\n")
    return log


def test_every_value_a_file_set_is_printed_even_when_it_says_quiet(capsys, project):
    """A file's settings were silent (only --debug named the file): now one note on every run names the file and
    each key it set, as written, and quiet = true in the file does not hide it."""
    log = _gate_log(project)
    (project / "sigmaudit.toml").write_text('quiet = true\n[check]\nlast-steps = 1\nmax-silent = 0.1\n')
    code, _, err = run(capsys, "check", str(log), "--bootstrap", "0", "-f", "json")
    assert code == 0
    assert err.splitlines()[0] == (f"sigmaudit: settings from {project / 'sigmaudit.toml'}: quiet = true; "
                                   "[check] last-steps = 1, max-silent = 0.1")
    line = f"settings from {project / 'sigmaudit.toml'}: quiet = true; [check] last-steps = 1, max-silent = 0.1"
    code, out, _ = run(capsys, "check", str(log), "--bootstrap", "0", "-f", "json")
    assert json.loads(out)["config"] == {"file": str(project / "sigmaudit.toml"), "values": [
        {"table": "", "key": "quiet", "value": True}, {"table": "[check]", "key": "last-steps", "value": 1},
        {"table": "[check]", "key": "max-silent", "value": 0.1}]}
    for fmt in ("markdown", "html", "table"):  # the report itself says what the file set
        code, out, _ = run(capsys, "check", str(log), "--bootstrap", "0", "-f", fmt)
        shown = " ".join(w for w in out.replace("&quot;", '"').split() if w != "│")
        assert code == 0 and (line in shown if fmt != "table" else "quiet = true; [check] last-steps = 1," in shown)
    code, _, err = run(capsys, "check", str(log), "--bootstrap", "0", "-f", "json", "--last-steps", "4")
    assert code == 1  # the command line wins, and the note no longer lists last-steps
    assert err.splitlines()[0].endswith("quiet = true; [check] max-silent = 0.1")
    code, _, err = run(capsys, "--no-config", "check", str(log), "--bootstrap", "0", "-f", "json", "--max-silent",
                       "0.1", "-q")
    assert code == 1 and f"--no-config: {project / 'sigmaudit.toml'} not read" in err


@pytest.mark.parametrize("where", ["../outside.json", "/ABS/outside.json", "link/out.json", "out.json"])
def test_an_output_path_from_a_file_stays_in_that_files_folder(capsys, project, where):
    """output = "../outside.json" wrote outside the checkout; an absolute path outside the file's folder, or a
    symbolic link inside it pointing out, did too. Each is refused in one line, nothing written; inside is kept."""
    root = project / "a"  # the file's folder; the working folder is a/b
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    (root / "link").symlink_to(elsewhere)
    where = where.replace("/ABS", str(elsewhere))
    (root / "sigmaudit.toml").write_text(f'[calc]\noutput = "{where}"\n')
    code, out, err = run(capsys, "calc", "-p", "0.1", "-G", "8", "-f", "json")
    written = sorted(p.name for p in project.rglob("*.json"))
    if where == "out.json":
        assert code == 0 and written == ["out.json"] and (root / "out.json").is_file()  # the file's folder, not a/b
        return
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and written == []
    assert f"output = \"{where}\" is outside the config file's folder {root}" in err


def test_relative_paths_in_a_file_follow_the_files_folder(capsys, project, monkeypatch):
    """paths = ["log.csv"] read the working folder's log.csv: the same gate failed from repo/ and passed (or could
    not run) from repo/sub. Now it reads the file's folder from anywhere."""
    log = _gate_log(project)
    (project / "sigmaudit.toml").write_text('paths = ["log.csv"]\n[check]\nmax-silent = 0.1\nbootstrap = 0\n'
                                            'format = "json"\njunit = "gate.xml"\n')
    reports = []
    for here in (project, project / "a" / "b"):
        monkeypatch.chdir(here)
        code, out, _ = run(capsys, "check")
        assert code == 1 and (project / "gate.xml").is_file()
        assert here == project or not (here / "gate.xml").exists()
        reports.append(json.loads(out)["checks"][0]["value"])
    assert reports[0] == reports[1] == 0.3
    assert log.is_file()


@pytest.mark.parametrize(("text", "says"), [
    ("[check]\nmax-silent = true\n", "max-silent = true: a number is expected, not a boolean"),
    ("[calc]\ngroup-size = true\n", "group-size = true: a whole number is expected, not a boolean"),
    ("[check]\nlast-steps = true\n", "last-steps = true: a whole number is expected, not a boolean"),
    ("[calc]\ngroup-size = [8, true]\n", "group-size = true: a whole number is expected, not a boolean"),
    ("[calc]\ngroup-size = 8.0\n", "group-size = 8.0: a whole number is expected, not a decimal number"),
    ("[check]\nlast-steps = 1.5\n", "last-steps = 1.5: a whole number is expected, not a decimal number"),
    ("[check]\nmax-silent = \"0.5\"\n", "max-silent = \"0.5\": a number is expected, not a string"),
    ("quiet = 1\n", "quiet = 1: true or false is expected, not a whole number"),
    ("[calc]\neps = [0.1, 0.2]\n", "eps = [0.1, 0.2]: one value is expected, not a list"),
])
def test_a_value_of_the_wrong_type_is_refused_as_the_command_line_refuses_it(capsys, project, text, says):
    """max-silent = true became a limit of 1.0 (a gate that cannot fail), group-size = true G = 1, last-steps =
    true a one-step window, 8.0 a whole number: each is refused in one line naming the key and the file."""
    (project / "sigmaudit.toml").write_text(text)
    code, out, err = run(capsys, "calc", "-p", "0.1", "-G", "8")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert str(project / "sigmaudit.toml") in err and says in err, err


@pytest.mark.parametrize("table", ["[check]\n", "", "[tool.sigmaudit.check]\n"])
def test_two_spellings_of_one_option_in_one_table_are_refused(capsys, project, table):
    """max-silent and max_silent in one table: the later won silently."""
    name = "pyproject.toml" if table.startswith("[tool") else "sigmaudit.toml"
    (project / name).write_text(f"{table}max-silent = 0.1\nmax_silent = 0.9\n")
    code, _, err = run(capsys, "check", SAMPLE, "-q")
    assert code == 2 and len(err.splitlines()) == 1
    assert "'max-silent' and 'max_silent' both set --max-silent; keep one of them" in err


@pytest.mark.parametrize(("text", "says"), [
    ("[check]\nmax-silnt = 0.5\n", "did you mean 'max-silent'?"),
    ("max_silnt = 0.5\n", "did you mean 'max-silent'?"),
    ("[chek]\nmax-silent = 0.5\n", "did you mean 'check'?"),
    ("[calc]\ngroup_sise = 8\n", "did you mean 'group-size'?"),
])
def test_a_misspelled_key_gets_the_nearest_spelling(capsys, project, text, says):
    (project / "sigmaudit.toml").write_text(text)
    code, _, err = run(capsys, "calc", "-p", "0.1", "-G", "8")
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err


FOREIGN = {"tool is a number": b"tool = 5\n", "does not parse": b"[project\nname = 1\n",
           "tool.x does not parse": b"[tool.black]\nline-length = \n", "not UTF-8": b"[tool.x]\na = \"\xff\xfe\"\n",
           "tool is a list": b"tool = [1, 2]\n"}


def _complete(capsys, monkeypatch, words: str) -> tuple[int, str]:
    monkeypatch.setenv("_SIGMAUDIT_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - 1))
    code, out, _ = run(capsys)
    for var in ("_SIGMAUDIT_COMPLETE", "COMP_WORDS", "COMP_CWORD"):
        monkeypatch.delenv(var)
    return code, out


@pytest.mark.parametrize("text", FOREIGN.values(), ids=FOREIGN.keys())
def test_a_pyproject_that_is_not_sigmaudits_is_passed_over(capsys, project, monkeypatch, text):
    """tool = 5 gave 'internal error: TypeError' even for --version; a pyproject that does not parse broke
    --version, --help and Tab completion. Such a file above the working folder is not sigmaudit's: passed over."""
    (project / "pyproject.toml").write_bytes(text)
    code, out, err = run(capsys, "--version")
    assert (code, err) == (0, "") and out.startswith("sigmaudit ")
    code, out, err = run(capsys, "--help")
    assert code == 0 and err == "" and "Usage: sigmaudit" in out
    code, out, err = run(capsys, "check", "--help")
    assert code == 0 and err == "" and "--max-silent" in out
    assert _complete(capsys, monkeypatch, "sigmaudit ch") == (0, "check\n")
    code, res, err = _calc(capsys, "calc", "-p", "0.1", "-G", "8", "-f", "json")
    assert code == 0 and err == "" and res["G"] == 8
    code, _, err = run(capsys, "--debug", "calc", "-p", "0.1", "-G", "8")
    assert code == 0 and f"sigmaudit: debug: passed over {project / 'pyproject.toml'}" in err


@pytest.mark.parametrize("text", [b"[tool.sigmaudit.calc]\ngroup-size = \n", b"[tool.sigmaudit\n",
                                  b"tool.sigmaudit = 5\n", b"[tool]\nsigmaudit = [1]\n"])
def test_sigmaudits_table_in_a_broken_pyproject_stops_only_what_needs_it(capsys, project, monkeypatch, text):
    (project / "pyproject.toml").write_bytes(text)
    assert run(capsys, "--version")[0] == 0
    code, out, err = run(capsys, "calc", "--help")
    assert code == 0 and err == "" and "--group-size" in out
    assert _complete(capsys, monkeypatch, "sigmaudit ca") == (0, "calc\n")
    code, out, err = run(capsys, "calc", "-p", "0.1", "-G", "8")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert str(project / "pyproject.toml") in err and ("not valid TOML" in err or "is not a table" in err), err


def test_config_from_a_pipe_or_a_fifo_is_read_and_a_folder_is_refused(capsys, project):
    """--config <(…), a FIFO or a folder: 'no such config file'. A pipe and a FIFO are read (their relative paths
    follow the working folder: they have no folder of their own); a folder is refused saying so."""
    import os
    import threading

    read, write = os.pipe()
    os.write(write, b"[calc]\ngroup-size = 5\n")
    os.close(write)
    try:
        code, res, err = _calc(capsys, "--config", f"/dev/fd/{read}", "calc", "-p", "0.1", "-f", "json")
    finally:
        os.close(read)
    assert code == 0 and res["G"] == 5 and f"settings from /dev/fd/{read}: [calc] group-size = 5" in err
    fifo = project / "fifo.toml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('[calc]\ngroup-size = 7\noutput = "out.json"\n'))
    writer.start()
    code, _, err = run(capsys, "--config", str(fifo), "calc", "-p", "0.1")
    writer.join(timeout=10)
    assert code == 0 and json.loads((project / "a" / "b" / "out.json").read_text())["results"][0]["G"] == 7
    code, _, err = run(capsys, "--config", str(project), "calc", "-p", "0.1")
    assert code == 2 and f"{project}: is a folder, not a config file" in err and "sigmaudit.toml" in err


def test_sigmaudits_table_that_is_not_a_table_is_refused(capsys, project):
    (project / "pyproject.toml").write_text("[tool]\nsigmaudit = 5\n")
    code, _, err = run(capsys, "calc", "-p", "0.1", "-G", "8")
    assert code == 2 and "[tool.sigmaudit] is not a table" in err
    named = project / "other.toml"
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    code, _, err = run(capsys, "--config", str(project / "pyproject.toml"), "calc", "-p", "0.1", "-G", "8")
    assert code == 2 and "has no [tool.sigmaudit] table" in err
    assert not named.exists()


def _path_options() -> list[tuple[str, str, str]]:
    """(command, parameter, key) of every path option of every command."""
    import typer

    from sigmaudit.cli.app import _full_app
    from sigmaudit.cli.config_values import param_kind

    commands = typer.main.get_command(_full_app()).commands
    return [(name, p.name, next(o for o in p.opts if o.startswith("--"))[2:]) for name, cmd in commands.items()
            for p in cmd.params if param_kind(p) == "PATH"]


@pytest.mark.parametrize(("command", "name", "key"), _path_options())
def test_every_file_a_command_writes_is_kept_in_the_files_folder(capsys, project, command, name, key):
    """Not only -o and --junit: every path option but the ones a command reads (READ_PATHS) names a file it
    writes, so a new output option is kept inside the config file's folder without being listed anywhere."""
    from sigmaudit.cli.config_values import READ_PATHS

    (project / "a" / "sigmaudit.toml").write_text(f'[{command}]\n{key} = "../outside.out"\n')
    code, out, err = run(capsys, command)
    if name in READ_PATHS:
        assert "is outside the config file's folder" not in err
        return
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert f"{key} = \"../outside.out\" is outside the config file's folder {project / 'a'}" in err
    assert not (project / "outside.out").exists()


def test_urls_and_standard_output_in_a_file_are_kept_as_written(capsys, project):
    (project / "sigmaudit.toml").write_text('paths = ["s3://bucket/run.parquet", "logs/*.csv"]\noutput = "-"\n')
    code, _, err = run(capsys, "--debug", "calc", "-p", "0.1", "-G", "8")
    assert code == 0 and "output = PosixPath('-')" in err
    code, _, err = run(capsys, "--debug", "scan", "--help")
    assert code == 0
    from sigmaudit.cli import config

    assert config.current.defaults["scan"]["paths"] == ["s3://bucket/run.parquet", str(project / "logs/*.csv")]


def test_a_urls_secrets_in_a_file_never_reach_the_settings_line(capsys, project):
    """The settings line is written even under quiet: a URL's user:password@, query string and Spark Connect
    parameters in a value are hidden value by value (the line keeps its quotes and brackets), and the same
    values go into check's JSON and JUnit."""
    (project / "sigmaudit.toml").write_text(
        'paths = ["https://alice:hunter2@example.invalid/x.jsonl?X-Amz-Signature=dead"]\n[check]\nmax-silent = 0.5\n')
    code, _, err = run(capsys, "check", "-q")
    assert code == 2 and "hunter2" not in err and "dead" not in err
    assert 'paths = ["https://***@example.invalid/x.jsonl?***"]; [check] max-silent = 0.5\n' in err
    from sigmaudit.cli.config import _safe

    assert _safe(["sc://host:15002/;token=t0ps3cret", 3]) == ["sc://host:15002/;***", 3]


@pytest.mark.parametrize(("named", "says"), [("/dev/zero", "larger than 1 MiB: not a config file"),
                                              ("latin1.toml", "not UTF-8 text (line 2, column 18)")])
def test_a_file_that_is_no_config_is_refused_in_one_line(capsys, project, named, says):
    """--config /dev/zero read forever; a file in another encoding gave a UnicodeDecodeError."""
    (project / "latin1.toml").write_bytes(b'[check]\nprompt-col = "caf\xe9"\n')
    path = named if named.startswith("/") else str(project / named)
    code, out, err = run(capsys, "--config", path, "calc", "-p", "0.1", "-G", "8")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and f"{path}: {says}" in err, err
