"""Issue 22 item 4: a plain ``pip install sigmaudit`` reads what the readers promise (inspect_ai's
default ``.eval`` output has zstd members): every third-party module the package imports is declared
in ``[project].dependencies``, except the optional engines' own modules, which their extras declare."""

from __future__ import annotations

import ast
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


def _imported(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
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
