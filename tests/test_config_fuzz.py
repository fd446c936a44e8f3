"""A fuzz of config files (issue 44): types, key spellings, tables, paths, where the file is, and foreign
``pyproject.toml`` files on the way up. Every case is exit 2 with exactly one line on stderr (never a traceback
or an "internal error"), or the right answer: the same output as the command line given the file's values with
``--no-config`` (and the same file written). A case the generator knows is bad (a wrong type, a misspelled key or
table, two spellings of one option, an output outside the file's folder) must be exit 2 naming the file; a
case it knows is good must give what the command line gives.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def toml_text(value: Any) -> str:
    """A value written as TOML (the test's own writer: the oracle does not borrow the code under test)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    return repr(value)

OPTIONS = {  # calc's options a file may set: (the flag, good values, values of a wrong type)
    "group-size": ("-G", st.one_of(st.integers(1, 64), st.integers(-2, 70)),
                   st.sampled_from([True, 8.0, "8", {"x": 1}])),
    "pass-rate": ("-p", st.one_of(st.floats(0, 1), st.floats(-0.1, 1.1, allow_nan=False)),
                  st.sampled_from([True, "0.1", [[0.1]]])),
    "eps": ("--eps", st.one_of(st.floats(0.001, 0.999), st.floats(-0.5, 1.5, allow_nan=False), st.integers(0, 2)),
            st.sampled_from([True, "0.05", [0.05]])),
    "format": ("-f", st.sampled_from(["json", "csv", "markdown", "table", "html", "xml"]),
               st.sampled_from([5, True, ["json"]])),
    "quiet": ("-q", st.booleans(), st.sampled_from([1, "true", [True]])),
    "output": ("-o", st.sampled_from(["out.json", "sub/out.json", "out.csv", "out.txt", "out.what", "-",
                                      "sub/../out.json"]), st.sampled_from([5, False, ["out.json"]])),
}
"""Options several commands share: a list is good for a repeatable option of calc only in calc's own table."""
NOISE = {  # keys of other commands: checked for every command, applied to none of calc's
    "max-silent": (st.floats(0, 1, allow_nan=False), st.sampled_from([True, "0.5"])),
    "prompt-col": (st.sampled_from(["task", "id"]), st.sampled_from([3, False])),
    "last-steps": (st.integers(1, 9), st.sampled_from([True, 1.5])),
}
OUTSIDE = ["../out.json", "/OUTSIDE/out.json", "link/out.json"]
FOREIGN = [b"tool = 5\n", b"[project\n", b"[tool.black]\nx = \n", b"\xff\xfe[tool]\n", b"[tool]\nruff = 1\n"]


@dataclass
class Case:
    """One generated config, and what the generator knows about it."""

    top: list[tuple[str, Any]] = field(default_factory=list)
    calc: list[tuple[str, Any]] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    """Why the file must be refused (empty: a file the command line can say as well)."""


DEFECTS = ("wrong type", "misspelled", "two spellings", "outside", "unknown key")


@st.composite
def cases(draw: Any) -> Case:
    """Half the cases are files the command line can say as well (either spelling of each key, shared or calc's
    table); the others carry one defect of :data:`DEFECTS`."""
    case = Case()
    keys = draw(st.lists(st.sampled_from(sorted(OPTIONS)), unique=True, max_size=4))
    keys += [k for k in ("pass-rate", "group-size") if k not in keys and draw(st.integers(0, 7))]  # runnable often
    defect = draw(st.sampled_from(DEFECTS)) if draw(st.booleans()) else None
    hit = draw(st.integers(0, len(keys)))  # the key the defect hits (len(keys): a noise key or an unknown one)
    for i, key in enumerate(keys):
        in_calc = draw(st.booleans())
        _, good, wrong = OPTIONS[key]
        here = defect if i == hit else None
        if here == "wrong type":
            value = draw(wrong)
        elif here == "outside" and key == "output":
            value = draw(st.sampled_from(OUTSIDE))
        elif key in ("group-size", "pass-rate") and (in_calc or key == "pass-rate") and draw(st.booleans()):
            value = draw(st.lists(good, min_size=1, max_size=3))
        else:
            value = draw(good)
        written = key.replace("-", "_") if draw(st.booleans()) else key
        if here == "misspelled":
            cut = draw(st.integers(1, len(key) - 1))
            written = key[:cut] + key[cut + 1:]
        table = case.calc if in_calc else case.top
        table.append((written, value))
        if here == "two spellings":
            table.append((key.replace("-", "_") if written == key else key, value))
        if here in ("wrong type", "misspelled", "two spellings") or (here == "outside" and key == "output"):
            case.bad.append(here)
    for key in draw(st.lists(st.sampled_from(sorted(NOISE)), unique=True, max_size=2)):
        good, wrong = NOISE[key]
        bad = defect == "wrong type" and hit == len(keys)
        case.top.append((key, draw(wrong) if bad else draw(good)))
        case.bad += ["wrong type"] if bad else []
    if defect == "unknown key":
        case.calc.append((draw(st.sampled_from(["chek", "group_sise", "max-silnt", "ouptut"])), 1))
        case.bad.append("unknown key")
    return case


def _text(case: Case, table: str) -> str:
    def line(key: str, value: Any) -> str:
        if isinstance(value, dict):
            return f"{key} = {{ x = 1 }}"
        if isinstance(value, list) and value and isinstance(value[0], list):
            return f"{key} = [{', '.join(toml_text(v) for v in value)}]"
        return f"{key} = {toml_text(value)}"

    top = [line(k, v) for k, v in case.top]
    calc = [line(k, v) for k, v in case.calc]
    head = f"[{table}]\n" if table else ""
    sub = f"[{table + '.' if table else ''}calc]\n"
    return head + "\n".join(top) + "\n" + (sub + "\n".join(calc) + "\n" if calc else "")


def _argv(case: Case, folder: Path) -> list[str]:
    """The command line that says what the file says (calc's table over the shared keys)."""
    values = {**{k.replace("_", "-"): v for k, v in case.top if k.replace("_", "-") in OPTIONS},
              **{k.replace("_", "-"): v for k, v in case.calc}}
    argv: list[str] = []
    for key, value in values.items():
        flag = OPTIONS[key][0]
        if key == "quiet":
            argv += [flag] if value else []
        elif key == "output":
            argv += [flag, value if value == "-" else str(folder / value)]
        else:
            for v in value if isinstance(value, list) else [value]:
                argv += [flag, repr(v) if isinstance(v, float) else str(v)]
    return argv


def _one_line_error(code: int, out: str, err: str) -> None:
    """Exit 2, nothing on stdout, one error line; before it at most the line naming the file's settings (an
    error the command itself finds, after the file was read: ``-o out.csv`` with ``--format json``, both from
    the file, names no file, and that line says where they came from). A file the command cannot use is
    refused before anything is printed."""
    lines = err.splitlines()
    assert code == 2 and out == "", (code, out, err)
    if len(lines) == 2:
        assert lines[0].startswith("sigmaudit: settings from "), err
        lines = lines[1:]
    assert len(lines) == 1 and lines[0].startswith("sigmaudit: error: "), err
    assert "internal error" not in err and "Traceback" not in err, err


def _written(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("out.*")) if p.is_file()}


def _clear(folder: Path) -> None:
    for p in folder.rglob("out.*"):
        p.unlink()


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(), where=st.sampled_from(["sigmaudit.toml", "pyproject.toml", "--config", "SIGMAUDIT_CONFIG"]),
       foreign=st.one_of(st.none(), st.sampled_from(FOREIGN)))
def test_a_config_file_gives_one_line_exit_2_or_the_command_lines_answer(capsys, monkeypatch, case, where, foreign):
    for var in [v for v in os.environ if v.startswith("SIGMAUDIT_")]:
        monkeypatch.delenv(var)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        (root / "a" / "b").mkdir(parents=True)
        (root / "sub").mkdir()
        (Path(tmp) / "elsewhere").mkdir()
        (root / "link").symlink_to(Path(tmp) / "elsewhere")
        text = _text(case, "tool.sigmaudit" if where == "pyproject.toml" else "")
        text = text.replace("/OUTSIDE", str(Path(tmp) / "elsewhere"))
        name = "pyproject.toml" if where == "pyproject.toml" else "sigmaudit.toml"
        (root / name).write_text(text)
        if foreign is not None:
            (root / "a" / "pyproject.toml").write_bytes(foreign)  # between the working folder and the file
        monkeypatch.chdir(root / "a" / "b")
        head = ["--config", str(root / name)] if where == "--config" else []
        if where == "SIGMAUDIT_CONFIG":
            monkeypatch.setenv("SIGMAUDIT_CONFIG", str(root / name))
        code, out, err = run(capsys, *head, "calc")
        monkeypatch.delenv("SIGMAUDIT_CONFIG", raising=False)
        got = _written(Path(tmp))
        event(f"exit {code}, {'bad: ' + case.bad[0] if case.bad else 'good'}")
        if code == 2:
            _one_line_error(code, out, err)
        assert code in (0, 2) and "internal error" not in err and "Traceback" not in err, err
        if case.bad:
            assert code == 2 and len(err.splitlines()) == 1 and str(root / name) in err, (case, err)
            assert got == {}
            return
        _clear(Path(tmp))
        expect_code, expect_out, expect_err = run(capsys, "--no-config", "calc", *_argv(case, root))
        assert code == expect_code, (text, err, expect_err)
        if code == 0:
            assert out == expect_out and got == _written(Path(tmp)), text
            assert err.startswith(f"sigmaudit: settings from {root / name}: ")


def test_the_fuzz_catches_a_file_read_as_the_old_code_read_it(capsys, monkeypatch, tmp_path):
    """The oracle is not vacuous: the case issue 44 names (group-size = true read as G = 1) differs from the
    command line's answer, and a misspelling is a case the fuzz requires to be refused."""
    case = Case(calc=[("group-size", True), ("pass-rate", 0.3)], bad=["wrong type"])
    assert _argv(case, tmp_path) == ["-G", "True", "-p", "0.3"]
    assert run(capsys, "--no-config", "calc", *_argv(case, tmp_path))[0] == 2  # the CLI refuses it too
    (tmp_path / "sigmaudit.toml").write_text(_text(case, ""))
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "calc")
    _one_line_error(code, "", err)
    assert "group-size = true: a whole number is expected, not a boolean" in err


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(paths=st.lists(st.sampled_from(["log.csv", "./log.csv", "sub/../log.csv", "data/*.csv", "ABS", "data",
                                       "missing.csv"]), min_size=1, max_size=2, unique=True),
       here=st.sampled_from([".", "a/b", "OUTSIDE"]),
       junit=st.sampled_from([None, "gate.xml", "sub/gate.xml", "../gate.xml", "link/gate.xml"]),
       table=st.sampled_from(["", "check"]))
def test_paths_in_a_file_read_the_same_log_from_any_working_folder(capsys, monkeypatch, paths, here, junit, table):
    """The gate a file describes reads the file's own log from any working folder: its silent share is the log's
    (0.3, from the file's folder), or the run is exit 2 in one line (a path that names nothing, an output outside
    the file's folder); never another folder's log."""
    for var in [v for v in os.environ if v.startswith("SIGMAUDIT_")]:
        monkeypatch.delenv(var)
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = Path(tmp) / "project", Path(tmp) / "elsewhere"
        for folder in (root / "a" / "b", root / "sub", root / "data", outside):
            folder.mkdir(parents=True)
        (root / "link").symlink_to(outside)
        rows = ["prompt,step,reward"] + [f"q{i},1,{r}" for i in range(10) for r in ([0] * 4 if i < 3 else [1, 0, 1, 0])]
        for log in (root / "log.csv", root / "data" / "log.csv"):
            log.write_text("\n".join(rows) + "\n")
        decoy = "\n".join(["prompt,step,reward"] + [f"q{i},1,0" for i in range(10) for _ in range(4)]) + "\n"
        for folder in (root / "a" / "b", outside):  # a log of the same name where the working folder is
            (folder / "log.csv").write_text(decoy)
        values = [str(root / "log.csv") if p == "ABS" else p for p in paths]
        lines = [f"paths = {toml_text(values)}", f"[{table}]" if table else "", "max-silent = 0.5",
                 "format = \"json\"", "bootstrap = 0"] + ([f"junit = {toml_text(junit)}"] if junit else [])
        (root / "sigmaudit.toml").write_text("\n".join(lines) + "\n")
        monkeypatch.chdir(outside if here == "OUTSIDE" else root / here)
        head = ["--config", str(root / "sigmaudit.toml")] if here == "OUTSIDE" else []
        code, out, err = run(capsys, *head, "check")
        bad = "missing.csv" in paths or junit in ("../gate.xml", "link/gate.xml")
        if code == 2:
            _one_line_error(code, out, err)
            assert bad, err
            assert not (Path(tmp) / "gate.xml").exists() and not (outside / "gate.xml").exists()
            return
        assert not bad and code == 0, err
        report = json.loads(out)
        assert report["checks"][0]["value"] == 0.3  # the file's folder's log(s), never the decoy (1.0)
        if junit:
            assert (root / junit).is_file()
