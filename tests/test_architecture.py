"""The package's import graph: no cycles, and every import points down the data flow; and no
function longer than a newcomer can read at once (issue 9: none over 60 lines without a recorded
``# long:`` reason).

files -> loaders -> core -> audits -> views -> render -> cli (see README "Architecture"). A
module may import its own layer and the layers before it, and the shared base (errors,
exitcodes, fmt, writers); core imports nothing of sigmaudit outside core. Every import counts:
module level, inside functions, and under ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "sigmaudit"

BASE = {"errors", "exitcodes", "fmt"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(), "exitcodes": set(), "fmt": set(),
    "writers": {"errors", "fmt"},
    "core": {"core"},
    "loaders": {"loaders"} | BASE,
    "audits": {"audits", "core", "loaders"} | BASE,
    "views": {"views", "audits", "core"} | BASE,
    "render": {"render", "views"} | BASE,
    "cli": {"cli", "render", "views", "audits", "core", "loaders", "writers"} | BASE,
    "integrations": {"integrations", "audits", "core", "loaders"} | BASE,
}
"""Layer -> the layers it may import."""


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the sigmaudit modules ``path`` imports (resolving relative imports)."""
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("sigmaudit")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("sigmaudit"):
                target = node.module
            else:
                continue
            out.add(target)
            # ``from . import x`` / ``from .core import corpus``: x may be a module
            out |= {f"{target}.{a.name}" for a in node.names if _exists(f"{target}.{a.name}")}
    return {m for m in out if _exists(m)}


def _exists(mod: str) -> bool:
    p = PKG.parent.joinpath(*mod.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "api"


GRAPH = {_module(p): _imports(p) for p in PKG.rglob("*.py")}


def test_graph_is_not_empty():
    assert len(GRAPH) > 40 and GRAPH["sigmaudit.audits.scan"]


@pytest.mark.parametrize("mod", sorted(m for m in GRAPH if _layer(m) in ALLOWED))
def test_imports_point_down_the_data_flow(mod):
    layer = _layer(mod)
    upward = sorted(t for t in GRAPH[mod] if _layer(t) not in ALLOWED[layer] | {layer} and t != "sigmaudit")
    assert not upward, f"{mod} ({layer}) imports {upward}"
    assert "sigmaudit" not in GRAPH[mod] or layer == "cli", f"{mod} imports the package root"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), as sorted lists."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _without_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's ``__init__`` re-exporting its own modules is not a cycle of ideas: drop the
    edges from a module to its own package's ``__init__`` (``from . import X``)."""
    out = {}
    for mod, targets in graph.items():
        out[mod] = {t for t in targets if not (mod.startswith(t + ".") and t in graph)}
    return out


def test_no_import_cycles():
    assert _cycles(_without_package_inits(GRAPH)) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# --------------------------------------------------------------------------- function length

MAX_FUNCTION_LINES = 60
"""Longest function allowed without a recorded reason, from its ``def`` line to its last line
(signature and docstring included, decorators not); nested functions and methods are measured on
their own too."""

LONG_REASON = re.compile(r"^\s*# long: \S")
"""The recorded reason of a longer function: a comment ``# long: <why it stays whole>`` on the line
just above its ``def`` (above its decorators, when it has some)."""


def _functions(source: str) -> dict[str, tuple[int, int]]:
    """(lines, first line incl. decorators) of each function or method in ``source``, by dotted name
    (``Class.method``, ``f.inner``)."""
    out: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    top = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    out[name] = ((child.end_lineno or child.lineno) - child.lineno + 1, top)
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def _function_lengths(source: str) -> dict[str, int]:
    """Lines of each function or method in ``source``, by dotted name."""
    return {name: lines for name, (lines, _) in _functions(source).items()}


def _length_findings(source: str, where: str) -> tuple[list[str], list[str]]:
    """(functions over the limit without a ``# long:`` reason, reasons recorded on functions within it)."""
    text = source.splitlines()
    unexplained, stale = [], []
    for name, (lines, top) in _functions(source).items():
        reason = top >= 2 and bool(LONG_REASON.match(text[top - 2]))
        if lines > MAX_FUNCTION_LINES and not reason:
            unexplained.append(f"{where}:{name} has {lines} lines")
        elif reason and lines <= MAX_FUNCTION_LINES:
            stale.append(f"{where}:{name} has {lines} lines")
    return unexplained, stale


def _package_length_findings() -> tuple[list[str], list[str]]:
    unexplained: list[str] = []
    stale: list[str] = []
    for path in sorted(PKG.rglob("*.py")):
        u, s = _length_findings(path.read_text(encoding="utf-8"), path.relative_to(PKG.parent).as_posix())
        unexplained += u
        stale += s
    return unexplained, stale


def test_no_function_over_the_limit_without_a_reason():
    unexplained, _ = _package_length_findings()
    assert unexplained == [], (f"split these into named steps (limit {MAX_FUNCTION_LINES} lines), or say why one "
                               "stays whole in a '# long: <reason>' comment above its def")


def test_no_reason_on_a_function_within_the_limit():
    """A ``# long:`` reason goes when its function is split (it would excuse the next growth)."""
    assert _package_length_findings()[1] == []


def test_function_lengths_are_measured():
    body = "".join(f"        x{i} = {i}\n" for i in range(58))
    source = (
        "class A:\n"
        "    @property\n"
        "    def m(self):\n"
        '        """Doc."""\n'
        f"{body}"
        "\n"
        "def f(\n"
        "    a,\n"
        "):\n"
        "    def inner():\n"
        "        pass\n"
        "    return a\n"
    )
    assert _function_lengths(source) == {"A.m": 60, "f": 6, "f.inner": 2}
    longer = source.replace("x0 = 0\n", "x0 = 0\n        y = 1\n")
    assert _function_lengths(longer)["A.m"] == 61
    assert _length_findings(source, "m.py") == ([], [])
    assert _length_findings(longer, "m.py") == (["m.py:A.m has 61 lines"], [])
    explained = longer.replace("    @property\n", "    # long: one table of cases\n    @property\n")
    assert _length_findings(explained, "m.py") == ([], [])
    assert _length_findings(explained.replace("# long: one", "# one"), "m.py")[0] == ["m.py:A.m has 61 lines"]
    assert _length_findings(source.replace("def f(", "# long: no reason left\ndef f("), "m.py") == (
        [], ["m.py:f has 6 lines"])


# --------------------------------------------------------------------------- options declared once

CLI = PKG / "cli"
FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")


def _flag_declarations(source: str, where: str) -> dict[str, list[str]]:
    """Each command-line flag (``-G``, ``--max-silent``) declared in ``source``: a positional argument of a
    ``typer.Option`` or ``typer.Argument`` call, with where; a flag in two calls is declared twice. Flags
    passed to other calls (``table_suffix(path, "--alloc-out")``, ``location="--by"``) are uses."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        func = getattr(node, "func", None)
        name = getattr(func, "attr", None) or getattr(func, "id", None)
        if isinstance(node, ast.Call) and name in ("Option", "Argument"):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and FLAG.match(arg.value):
                    found.setdefault(arg.value, []).append(f"{where}:{node.lineno}")
    return found


def _all_flag_declarations() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(CLI.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        for flag, places in _flag_declarations(path.read_text(encoding="utf-8"), rel).items():
            out.setdefault(flag, []).extend(places)
    return out


def test_each_option_flag_is_declared_once():
    twice = {flag: places for flag, places in _all_flag_declarations().items() if len(places) > 1}
    assert twice == {}, "declare each flag once in sigmaudit/cli/options.py (a factory takes a command's help)"


def test_every_flag_of_the_cli_is_found_by_the_declaration_scan():
    """The scan above sees every flag the CLI has (none built some other way, out of its sight)."""
    import typer

    from sigmaudit.cli.app import app

    declared = set(_all_flag_declarations())
    group = typer.main.get_command(app)
    flags = {opt for cmd in group.commands.values() for p in cmd.params for opt in [*p.opts, *p.secondary_opts]
             if opt.startswith("-")}
    assert flags and flags - {"--help", "-h", "--no-keep-duplicates", "--no-post-filter"} <= declared | {
        "--no-" + f[2:] for f in declared}, sorted(flags - declared)


def test_declaration_scan_finds_a_flag_declared_twice():
    source = ('a = typer.Option("-G", "--group-size", min=1)\n'
              'b = Option("--max-x", help="help")\n'
              'c = typer.Option("--group-size", help="again")\n'
              'raise ConfigError("x", location="--by")\n'
              'table_suffix(path, "--alloc-out")\n')
    assert _flag_declarations(source, "m.py") == {"-G": ["m.py:1"], "--group-size": ["m.py:1", "m.py:3"],
                                                  "--max-x": ["m.py:2"]}


def test_each_load_option_has_one_flag_with_the_same_default():
    """The layout overrides: LoadOptions holds the fields, cli/inputs.py the one flag of each (no third copy)."""
    import dataclasses

    from sigmaudit.cli import inputs
    from sigmaudit.loaders import LoadOptions

    fields = {f.name: f.default for f in dataclasses.fields(LoadOptions) if f.name not in inputs.INTERNAL_LOAD_FIELDS}
    assert set(inputs.LAYOUT_OPTIONS) == set(fields)
    assert inputs._LAYOUT_DEFAULTS == fields


# --------------------------------------------------------------------------- renderers only render

def _title_branches(source: str) -> list[int]:
    """Lines of ``source`` that compare a ``.title`` with text (``part.title == "sigmaudit trend"``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "title" for s in sides) and any(
                    isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides):
                found.append(node.lineno)
    return found


def test_renderers_never_branch_on_titles():
    """Which sections a page shows, and under which heading, is the view's choice (views/report.py)."""
    found = {p.name: lines for p in sorted((PKG / "render").glob("*.py"))
             if (lines := _title_branches(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_title_branch_finder_finds_one():
    assert _title_branches('if part.title == "sigmaudit trend":\n    pass\nx = view.title\n') == [1]


def _reads(source: str, attr: str) -> list[int]:
    """Lines of ``source`` that read an attribute named ``attr`` (``view.source``)."""
    return [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and n.attr == attr]


def _any_uses(source: str) -> list[int]:
    """Lines of ``source`` that name ``typing.Any`` (imported, annotated, or as ``typing.Any``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "typing" and any(a.name == "Any" for a in node.names):
            found.append(node.lineno)
        elif isinstance(node, ast.Name | ast.Attribute) and getattr(node, "id", getattr(node, "attr", "")) == "Any":
            found.append(node.lineno)
    return found


def _render_sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((PKG / "render").glob("*.py"))}


def test_renderers_read_no_result_through_the_view():
    """A view carries what a renderer shows; it no longer carries the result it came from (``View.source``
    let render/html.py read ~45 audit-result fields)."""
    import dataclasses

    from sigmaudit.views import View

    assert "source" not in {f.name for f in dataclasses.fields(View)}
    assert {name: lines for name, src in _render_sources().items() if (lines := _reads(src, "source"))} == {}


def test_renderers_are_typed_without_any():
    assert {name: lines for name, src in _render_sources().items() if (lines := _any_uses(src))} == {}


def test_attribute_and_any_finders_find_them():
    assert _reads("d = view.source\nx = source\n", "source") == [1]
    assert _any_uses("from typing import Any\nx: Any = 1\ny: typing.Any\nz: Anything\n") == [1, 2, 3]


def test_render_imports_no_audit():
    assert not [m for p in (PKG / "render").glob("*.py") for m in _imports(p) if _layer(m) == "audits"]


def test_views_do_not_compute_group_sizes():
    """Views lay out what the audit computed (views/scan.py called group_size_exact)."""
    assert not [p.name for p in (PKG / "views").glob("*.py") if "sigmaudit.core.group_size" in _imports(p)]


# --------------------------------------------------------------------------- audits return numbers

TEXT_HELPERS = {"pct", "format_value", "format_count", "display_pair"}
"""sigmaudit.fmt's helpers that turn numbers into text for a reader: views use them, audits do not."""

def _text_helper_imports(source: str) -> list[str]:
    """The text helpers of sigmaudit.fmt (and any views/ module) that ``source`` imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module.rsplit(".", 1)[-1]
            if module == "fmt":
                found += sorted(a.name for a in node.names if a.name in TEXT_HELPERS)
            elif module in ("views", "labels") or ".views" in f".{node.module}":
                found += [f"{node.module}.{a.name}" for a in node.names]
    return found


PERCENT_TEMPLATE = re.compile(r"\{[^{}]*:[^{}]*%\}")
"""A ``str.format`` template field formatted as a percentage (``"{:.1%}"``, ``"{0:.0%}"``)."""


def _percent_specs(source: str) -> int:
    """Places in ``source`` that format a number as a percentage: f-string fields (``{x:.1%}``, also
    ``{x:.{d}%}``), ``format(x, ".1%")`` and ``str.format`` templates (``"{:.1%}".format(x)``)."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
            spec = "".join(str(v.value) for v in node.format_spec.values if isinstance(v, ast.Constant))
            count += spec.endswith("%")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "format"
              and len(node.args) == 2 and isinstance(node.args[1], ast.Constant)):
            count += str(node.args[1].value).endswith("%")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            count += len(PERCENT_TEMPLATE.findall(node.value))
    return count


def test_audits_do_not_format_numbers_for_readers():
    """audits/plan.py, check.py, objective.py, drift.py and simulate.py formatted percentages into
    reasons, sentences, the drift WARNING and the initial difficulty: audits return numbers, and views/
    (plan.reason, check.sentence, drift.message, simulate.initial_difficulty) write the words."""
    audits = sorted((PKG / "audits").glob("*.py"))
    assert {p.name: f for p in audits if (f := _text_helper_imports(p.read_text(encoding="utf-8")))} == {}
    assert {p.name: n for p in audits if (n := _percent_specs(p.read_text(encoding="utf-8")))} == {}


def test_text_helper_and_percent_finders_find_them():
    source = ("from ..fmt import none_if_nan, pct as _pct\nfrom ..views.labels import filtered_line\n"
              "x = f'{a:.1%} {b:.4f} {c:,} {d:.{n}%}'\n"
              "y = format(a, '.0%') + format(b, ',') + '{:.1%} of {0:,} {1:.2%}'.format(a, b)\n")
    assert _text_helper_imports(source) == ["pct", "views.labels.filtered_line"]
    assert _percent_specs(source) == 5
    # the drift WARNING as audits/drift.py wrote it before views/drift.py did
    assert _percent_specs("m = (f'WARNING: {obs:.1%} of its {count:,} logged groups, predicts {pred:.1%} '\n"
                          "     f'(z = {z:.1f})')\n") == 2
