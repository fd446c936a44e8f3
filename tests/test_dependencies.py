"""Issue 22 item 4: a plain ``pip install sigmaudit`` reads what the readers promise (inspect_ai's
default ``.eval`` output has zstd members): every third-party module the package imports is declared
in ``[project].dependencies``, except the optional engines' own modules, which their extras declare."""

from __future__ import annotations

import ast
import os
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "sigmaudit"

OPTIONAL = {"sigmaudit/loaders/engines/duckdb.py": "duckdb", "sigmaudit/loaders/engines/spark.py": "spark"}
"""Modules that run only with an extra installed (``--engine duckdb|spark``), and that extra."""
INSIDE_A_TRAINER = "sigmaudit/integrations/"
"""Callbacks that run inside a trainer's process: they import the trainer itself (verl, transformers)."""


def _modules(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return {node.module.split(".")[0]}
    return set()


def _guarded(tree: ast.AST) -> set[str]:
    """Modules imported inside ``try: ... except ImportError`` (the code runs without them)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in {"ImportError", "ModuleNotFoundError"}
                for h in node.handlers):
            for stmt in node.body:
                out |= set().union(*(_modules(n) for n in ast.walk(stmt)))
    return out


def _imported(path: Path, *, guarded: bool = False) -> set[str]:
    """Third-party modules a file imports: unguarded ones, or (``guarded``) only the optional ones."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    optional = _guarded(tree)
    out = optional if guarded else set().union(*(_modules(n) for n in ast.walk(tree))) - optional
    return {m for m in out if m not in sys.stdlib_module_names and m != "sigmaudit"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0].lower() for r in requirements}


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_every_module_the_package_imports_is_a_declared_dependency():
    declared = _names(PROJECT["dependencies"])
    missing = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(INSIDE_A_TRAINER):
            continue
        extra = OPTIONAL.get(rel)
        wanted = declared | (_names(PROJECT["optional-dependencies"][extra]) if extra else set())
        for module in _imported(path) - wanted:
            missing.setdefault(module, []).append(rel)
    assert missing == {}


def test_zstandard_is_a_regular_dependency():
    """inspect_ai writes .eval members zstd-compressed by default: reading them must not need an extra."""
    assert "zstandard" in _names(PROJECT["dependencies"])
    assert {"zstandard", "polars", "pyarrow"} <= {m for p in (PKG / "loaders").rglob("*.py")
                                                  if p.relative_to(ROOT).as_posix() not in OPTIONAL
                                                  for m in _imported(p)}


def test_an_optional_import_is_declared_by_an_extra():
    """An import guarded by ``except ImportError`` (duckdb and pyspark for the engines) still names its
    extra, so ``pip install sigmaudit[EXTRA]`` brings it."""
    extras = set().union(_names(PROJECT["dependencies"]),
                         *(_names(reqs) for reqs in PROJECT["optional-dependencies"].values()))
    guarded = {m: p.relative_to(ROOT).as_posix() for p in PKG.rglob("*.py")
               if not p.relative_to(ROOT).as_posix().startswith(INSIDE_A_TRAINER)
               for m in _imported(p, guarded=True)}
    assert {"duckdb", "pyspark"} <= set(guarded)
    assert {m: f for m, f in guarded.items() if m not in extras} == {}


def _readme_test_command() -> str:
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    return next(b for b in blocks if "pytest" in b)


def test_ci_runs_exactly_the_readme_test_command():
    """.ci/run is the README's test command, word for word (its last line)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == _readme_test_command()


def test_the_test_command_installs_the_cpu_torch_the_trainers_extra_pins():
    """Issue 42: on Python 3.12/3.13 the test command took PyPI's CUDA torch (6.9 GB). It installs torch
    first with PyTorch's CPU index beside PyPI, at the very version the ``trainers`` extra pins, so the extra is
    already met when pip resolves it."""
    command = _readme_test_command()
    first = command.split("&&")[0].split()
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["trainers"]
    pin = next(r for r in extra if r.startswith("torch"))
    assert first[:3] == ["pip", "install", pin.replace(" ", "")]
    assert first[3:] == ["--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    assert command.index("torch") < command.index(".[test,spark,trainers]")


def test_the_trainers_extra_leaves_verl_out_where_verl_cannot_install():
    """Issue 42: on 3.13 the test command failed ("No matching distribution found for verl==0.9.1"): verl 0.9.1
    declares Requires-Python <3.13. The extra carries that bound as a marker, and tests/trainer_extra.py skips
    the verl tests on exactly those Pythons (they run in CI on 3.11)."""
    import importlib.metadata

    import trainer_extra

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["trainers"]
    verl = next(r for r in extra if r.startswith("verl"))
    bound = trainer_extra.PYTHON_BELOW["verl"]
    assert verl == f"verl==0.9.1; python_version < '{bound[0]}.{bound[1]}'"
    try:
        declared = importlib.metadata.metadata("verl")["Requires-Python"]
    except importlib.metadata.PackageNotFoundError:
        assert sys.version_info[:2] >= bound or not os.environ.get("CI"), "CI installs verl where it can install"
        return
    assert f"<{bound[0]}.{bound[1]}" in declared.replace(" ", "").split(",")
