"""What the command line does before a command runs, made cheaper without changing it: option values
converted without Pydantic (sigmaudit/cli/coerce.py) are Typer's own, value for value and error for error;
a command run alone in its app (``app._app_for``) has the same help; and a scan or a gate's check of a parquet
log imports none of the libraries (and modules) it does not use."""

from __future__ import annotations

import json
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._coercion import build_runtime_param

from sigmaudit.cli import coerce
from sigmaudit.cli.app import _app_for, app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "sample_logs/rollouts.parquet"

INTS = ["8", "0", "1", "-3", "1000000", "10000001", "4611686018427387904", "99999999999999999999", "08", "1_000",
        " 8", "+8", "8.0", "1e3", "abc", "", 8, 0, -1, 2**62, 1.5, True]
FLOATS = ["0.05", "0", "1", "-0.0", "1e-3", "1E5", "2.5e-12", "0.0100000000000000002", "1.7976931348623157e308",
          ".5", "5.", "inf", "-inf", "nan", "1e400", "1_0.5", " 0.5", "+0.5", "0x10", "abc", "", 0.5, 1, 0, -2,
          2**60, float("nan"), True]
STRS = ["abc", "", "run-1", "a b", "ünïcode", "a\udcffb", "x\x00y", 3]
BOOLS = [True, False, "true", "0", "", 1]
PATHS = [SAMPLE, "sample_logs", "no/such/file.parquet", "a/./b/", "-", "", "x\x00y", "a\udcffb", Path(SAMPLE), 3]


def _samples(annotation: Any) -> list[Any]:
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        values = [m.value for m in annotation]
        return [*values, *(str(v).upper() for v in values), list(annotation)[0], "no-such-choice", ""]
    return {int: INTS, float: FLOATS, str: STRS, bool: BOOLS, Path: PATHS}[annotation]


def _outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, str]:
    try:
        got = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return f"error {type(exc).__name__}", text
    return type(got).__name__, repr(got)


def _parameters() -> list[tuple[str, Any, Any]]:
    group = typer.main.get_command(app)
    ctx = group.context_class(group, info_name="sigmaudit")
    out = [("sigmaudit", p, ctx) for p in group.params]
    for name, command in group.commands.items():
        sub = command.context_class(command, info_name=name, parent=ctx)
        out += [(name, p, sub) for p in [*command.params, command.get_help_option(sub)]]
    return out


def test_every_parameter_is_converted_as_typer_converts_it():
    """Every parameter of every command, ~40 raw values of its type (plain numbers, numbers written other
    ways, out of bounds, non-finite, bad choices, undecodable text, paths that exist or not): the plain
    conversion returns what Typer's Pydantic adapter returns (same type, same repr), or raises the same
    error with the same message."""
    checked = plain = 0
    for name, param, ctx in _parameters():
        ours = coerce.PlainCoercion(param)
        theirs = build_runtime_param(param.type_descriptor)
        annotation = param.type_descriptor.annotation
        many = get_origin(annotation) is list
        leaf = get_args(annotation)[0] if many else annotation
        values: list[Any] = [None, *_samples(leaf)]
        if many:
            values = [None, (), *((v,) for v in _samples(leaf)), tuple(_samples(leaf)[:3]), "abc"]
        for value in values:
            expected = _outcome(theirs, value, param, ctx)
            assert _outcome(ours, value, param, ctx) == expected, (name, param.name, value)
            plain += ours._typer is None and not expected[0].startswith("error")
            checked += 1
    assert checked > 3000
    assert plain > 1000  # most values took the plain way (else the module saves nothing)


def test_every_cli_parameter_gets_the_plain_conversion():
    group = typer.main.get_command(app)
    coerce.install(group)
    params = [p for c in [group, *group.commands.values()] for p in c.params]
    assert len(params) > 200
    assert all(isinstance(p._runtime_param, coerce.PlainCoercion) for p in params)


def _help(group: Any, name: str) -> str:
    parent = group.context_class(group, info_name="sigmaudit")
    command = group.commands[name]
    return command.get_help(command.context_class(command, info_name=name, parent=parent))


def test_a_command_alone_in_its_app_is_the_same_command():
    """``sigmaudit NAME ...`` builds only NAME's parameters; its help (usage, options, ranges) is unchanged."""
    group = typer.main.get_command(app)
    assert len(group.commands) == 12  # curate added (issue 41)
    for name in group.commands:
        for argv in ([name, "x.parquet"], ["--debug", name, "--help"]):
            alone = typer.main.get_command(_app_for(argv))
            assert list(alone.commands) == [name]
            assert _help(alone, name) == _help(group, name)
    for argv in ([], ["--help"], ["--version"], ["scna"], ["--debug"], ["-h", "scan"]):
        assert _app_for(argv) is app


@settings(max_examples=300, deadline=None)
@given(st.from_regex(coerce._FLOAT, fullmatch=True), st.from_regex(coerce._INT, fullmatch=True))
def test_plain_numbers_read_as_pydantic_reads_them(text, whole):
    from pydantic import TypeAdapter

    assert repr(float(text)) == repr(TypeAdapter(float).validate_python(text))
    assert int(whole) == TypeAdapter(int).validate_python(whole)


HEAVY = ("pydantic", "matplotlib", "duckdb", "scipy", "pyarrow", "pandas", "fsspec", "pyspark")


def _imported(argv: list[str], watched: tuple[str, ...]) -> tuple[str, str]:
    """``main(argv)`` in a fresh interpreter: (its exit code and which of the ``watched`` modules, or packages
    when a name has no dot, it imported, as one line; its standard output)."""
    code = ("import sys\nfrom sigmaudit.cli.app import main\n"
            f"code = main({argv!r})\n"
            f"print(code, sorted(m for m in sys.modules if m in {watched!r} or m.split('.')[0] in {watched!r}), "
            "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"},
                         timeout=120)
    return out.stderr.strip().splitlines()[-1], out.stdout


@pytest.mark.parametrize(("argv", "unused", "says"), [
    (["scan", SAMPLE, "-f", "json"], HEAVY, '"observed_silent"'),
    (["calc", "-p", "0.05", "-G", "8"], (*HEAVY, "polars"), "0.6634"),
])
def test_a_command_imports_only_what_it_uses(argv, unused, says):
    """``sigmaudit scan`` of a parquet log: not Pydantic (Typer's option conversion), nor the libraries of other
    commands, formats and engines; ``calc`` (closed forms, no log) not Polars either."""
    line, stdout = _imported(argv, unused)
    assert line == "0 []"
    assert says in stdout


GATE_UNUSED = ("numpy.ma", "numpy.polynomial", "sigmaudit.audits.scan", "sigmaudit.audits.dapo",
               "sigmaudit.audits.plan", "sigmaudit.views.scan", "rich._emoji_codes")
"""Modules a gate's ``check`` on a parquet log once imported without using them (issue 45 item 3): numpy.ma
(np.quantile and np.unique import it), numpy.polynomial (the Gauss-Legendre nodes of a Beta fit), the scan's
results (the post-filter test lives in audits/observed.py), DAPO's loop (no DAPO flag given) and Rich's emoji
table (the terminal prints text as written, markup and emoji codes off)."""


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_the_gate_imports_only_what_it_uses(fmt):
    """``sigmaudit check`` of the sample log, as a CI gate runs it: none of :data:`GATE_UNUSED`, nor the
    libraries of other commands, formats and engines."""
    line, stdout = _imported(["check", SAMPLE, "--max-silent", "0.9", "-f", fmt], (*HEAVY, *GATE_UNUSED))
    assert line == "0 []"
    assert ("PASSED" if fmt == "table" else '"passed": true') in stdout


def test_the_collector_is_tuned_for_start_up_only():
    """The ``sigmaudit`` process (``cli.run``) collects rarely during start-up, then runs the command with
    start-up's objects frozen and Python's own thresholds; ``main()`` called in-process changes nothing."""
    code = """
import gc, sys
base = gc.get_freeze_count()  # 0 on 3.11 and 3.13; 3.12 freezes its own start-up objects (375 on 3.12.1)
import sigmaudit.audits.calc as audit
usual, seen = gc.get_threshold(), []
real = audit.calc
def spy(*args, **kwargs):
    seen.append((gc.get_threshold() == usual, gc.get_freeze_count() - base))
    return real(*args, **kwargs)
audit.calc = spy
if sys.argv[1] == "main":
    from sigmaudit.cli.app import main
    main(["calc", "-p", "0.05", "-G", "8"])
    print(*seen, gc.get_threshold() == usual, gc.get_freeze_count() - base, file=sys.stderr)
else:
    import atexit
    atexit.register(lambda: print(*seen, gc.get_threshold() == usual, gc.get_freeze_count() > base, file=sys.stderr))
    sys.argv = ["sigmaudit", "calc", "-p", "0.05", "-G", "8"]
    from sigmaudit.cli import run
    run()
"""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
    out = {how: subprocess.run([sys.executable, "-P", "-c", code, how], capture_output=True, text=True, cwd=ROOT,
                               env=env, timeout=120) for how in ("run", "main")}
    ran = out["run"].stderr.strip().splitlines()[-1]  # (usual thresholds?, objects frozen) as calc ran; at exit
    seen, usual_at_exit, frozen_at_exit = ran.rsplit(" ", 2)
    assert seen.startswith("(True, ") and int(seen[7:-1]) > 20_000, ran
    assert (usual_at_exit, frozen_at_exit) == ("True", "True"), ran
    assert out["main"].stderr.strip().splitlines()[-1] == "(True, 0) True 0"
    assert out["run"].stdout == out["main"].stdout and "0.6634" in out["run"].stdout


@pytest.mark.parametrize(("name", "then"), [("main", "callable(main)"), ("app", "app.__name__")])
def test_the_lazy_names_of_the_cli_package_import(name, then):
    """``from sigmaudit.cli import main`` (or ``app``, the module) first thing in an interpreter: the package's lazy
    names load ``sigmaudit.cli.app`` (they recursed until the interpreter's limit)."""
    code = f"from sigmaudit.cli import {name}\nprint({then})"
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    expected = {"main": "True\n", "app": "sigmaudit.cli.app\n"}[name]
    assert (out.returncode, out.stdout) == (0, expected), out.stderr[-500:]


EXIT_SPY = """
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran", file=sys.stderr))
if sys.argv[1] == "thread":  # a non-daemon thread still running when the command ends: the usual exit waits for it
    def late():
        time.sleep(0.5)
        print("thread done", file=sys.stderr)
    threading.Thread(target=late).start()
sys.argv = ["sigmaudit", *sys.argv[2:]]
from sigmaudit.cli import run
run()
"""


@pytest.mark.parametrize(("how", "argv", "code"), [
    ("plain", ["scan", SAMPLE, "-f", "json"], 0),
    ("plain", ["check", SAMPLE, "--max-silent", "0.1", "-f", "json"], 1),
    ("plain", ["scan", "no/such/file.parquet"], 2),
    ("thread", ["scan", SAMPLE, "-f", "json"], 0),
])
def test_the_exit_without_teardown_keeps_what_the_usual_exit_does(how, argv, code):
    """``cli._exit_without_teardown``: the exit code, the whole report on the pipe, the atexit functions run, and a
    non-daemon thread still running is waited for (the usual exit then)."""
    out = subprocess.run([sys.executable, "-P", "-c", EXIT_SPY, how, *argv], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == code, out.stderr[-500:]
    assert "atexit ran" in out.stderr
    assert ("thread done" in out.stderr) == (how == "thread")
    if code != 2:
        report = json.loads(out.stdout)  # the whole document, to its last byte
        assert report["schema_version"] and out.stdout.endswith("\n")
