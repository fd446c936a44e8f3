"""README and docs are tested, not trusted (the sqlite-utils way): their example outputs are what the
current code prints, every command, option and JSON key they name exists, and the site builds strictly."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shlex
from pathlib import Path

import pytest
import typer

from sigmaudit.cli.app import app, main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}
EVERYTHING = "\n".join([README, *DOCS.values()])
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")

_spec = importlib.util.spec_from_file_location("readme_examples", ROOT / "scripts" / "readme_examples.py")
assert _spec and _spec.loader
examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(examples)


def _in_process(command: str) -> tuple[int, str]:
    """What ``scripts/readme_examples.py`` gets from a subprocess, computed in this process."""
    argv = shlex.split(command)
    assert argv[0] == "sigmaudit", command
    both = io.StringIO()  # one stream: stderr lines where a terminal shows them (check's verdict after its table)
    with contextlib.redirect_stdout(both), contextlib.redirect_stderr(both):
        code = main(argv[1:])
    return code, both.getvalue()


@pytest.mark.parametrize("page", ["README.md", *DOCS])
def test_examples_are_what_the_code_prints(monkeypatch, page):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setattr(examples, "_run", _in_process)
    text = README if page == "README.md" else DOCS[page]
    for block in examples.FENCE.findall(text):
        assert examples.render_block(block) == block, (
            f"{page}: example is stale; run: python scripts/readme_examples.py\n{block[:200]}")


def test_the_readme_and_the_tour_show_real_output():
    assert len(examples.FENCE.findall(README)) >= 3
    assert len(examples.FENCE.findall(DOCS["commands.md"])) >= 6


def test_readme_is_short():
    assert README.count("\n") <= 250


def test_nothing_points_outside_the_repository():
    for name, text in {"README.md": README, **DOCS}.items():
        assert "../shared" not in text, name


def _repository() -> str:
    """The repository's URL as pyproject.toml's [project.urls] declares it (Source)."""
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    return urls["Source"].rstrip("/")


def _link_problems(text: str, repository: str, root: Path) -> list[str]:
    """What breaks when ``text`` is shown away from the checkout (the README is the package's long
    description on PyPI): a link with no scheme (relative, or a bare ``#anchor``), and a link into
    ``repository`` that names no file or folder of ``root`` at ``main``."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    targets = re.findall(r"(?<!\\)\[[^\]\n]*\]\(\s*<?([^)\s>]*)", prose)  # inline links [text](target)
    targets += re.findall(r"^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", prose, flags=re.M)  # [ref]: target
    targets += re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", prose)  # inline HTML
    problems = [f"relative link {t!r}" for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]
    for url in re.findall(re.escape(repository) + r"""(/[^\s)>"'\]]*)""", text):
        path = url.split("#", 1)[0].rstrip("/")
        route = re.match(r"^/(blob|tree)/main/(.+)$", path)
        if route is None:
            problems.append(f"{repository}{url}: not blob/main/<file> or tree/main/<folder>")
        elif not (root / route[2]).is_file() and not (route[1] == "tree" and (root / route[2]).is_dir()):
            problems.append(f"{repository}{url}: no {route[2]} in the checkout")
    return problems


def test_readme_links_are_absolute_and_name_files_of_the_repository():
    """PyPI shows README.md as the package's description, where a relative link goes nowhere."""
    assert _link_problems(README, _repository(), ROOT) == []


def test_the_link_check_finds_relative_links_and_missing_files():
    repo = "https://github.com/o/r"
    text = ("[a](docs/commands.md) [b](#usage) [c](https://github.com/o/r/blob/main/docs/gone.md)\n"
            "[d](https://github.com/o/r/blob/main/docs/commands.md#tour) [e](https://example.org/x)\n"
            "[f](https://github.com/o/r/tree/main/docs) [g](https://github.com/o/r/blob/main/docs)\n"
            "`[h](not/a/link.md)` <img src=\"logo.png\">\n\n[ref]: ../x.md\n")
    assert _link_problems(text, repo, ROOT) == [
        "relative link 'docs/commands.md'", "relative link '#usage'", "relative link '../x.md'",
        "relative link 'logo.png'",
        "https://github.com/o/r/blob/main/docs/gone.md: no docs/gone.md in the checkout",
        "https://github.com/o/r/blob/main/docs: no docs in the checkout"]


def test_docs_site_builds_strictly(tmp_path):
    mkdocs = pytest.importorskip("mkdocs.commands.build")
    import logging

    from mkdocs.config import load_config

    class Keep(logging.Handler):
        def __init__(self):
            super().__init__(logging.INFO)
            self.records: list[str] = []

        def emit(self, record):
            self.records.append(record.getMessage())

    keep, logger = Keep(), logging.getLogger("mkdocs")
    level = logger.level
    logger.addHandler(keep)
    logger.setLevel(logging.INFO)
    try:
        config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True)
        mkdocs.build(config)
    finally:
        logger.removeHandler(keep)
        logger.setLevel(level)
    assert (tmp_path / "site" / "index.html").is_file()
    # strict mode fails on WARNING only; mkdocs reports some unresolved links (e.g. "E[σ](p, G)" read as a
    # link to "p, G") at INFO: none is allowed either.
    unresolved = [m for m in keep.records if "link" in m and ("not found" in m or "unrecognized" in m)]
    assert not unresolved, unresolved
    site = tmp_path / "site"
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # its links are absolute from the server's root
            continue
        html = page.read_text(encoding="utf-8")
        for href in re.findall(r'<a [^>]*href="([^"]*)"', html):
            if re.match(r"^(https?:|mailto:|#|data:)", href) or not href:
                continue
            target = (page.parent / href.split("#", 1)[0]).resolve()
            assert target.exists() or (target / "index.html").exists(), \
                f"{page.relative_to(site)}: broken link {href!r}"
            if "#" in href:  # an anchor names a heading or an id of the page it points to (issue 42)
                html_of = target / "index.html" if target.is_dir() else target
                fragment = href.split("#", 1)[1]
                assert f'id="{fragment}"' in html_of.read_text(encoding="utf-8"), \
                    f"{page.relative_to(site)}: broken anchor {href!r}"


def test_no_formula_is_read_as_a_link():
    """``E[σ](p, G)`` in running Markdown text is a link to ``p, G``; formulas escape the bracket."""
    for name, text in {"README.md": README, **DOCS}.items():
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        prose = re.sub(r"`[^`\n]*`", "", prose)
        prose = re.sub(r"^(    |\t).*$", "", prose, flags=re.M)  # indented code blocks
        not_a_link = r"(?![a-z]+:|#|[\w./-]+\.md\b|[\w./-]+/\)|[\w./-]+\.(?:png|svg|html)\b)"
        bad = re.findall(r"(?<!\\)\[[^\]\n]*\]\(" + not_a_link + r"[^)\n]*\)", prose)
        assert not bad, f"{name}: read as links: {bad}"


def _commands() -> dict[str, set[str]]:
    """Each registered command and the option names it accepts."""
    click_app = typer.main.get_command(app)
    out = {}
    for name, cmd in click_app.commands.items():  # type: ignore[attr-defined]
        out[name] = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    return out


COMMANDS = _commands()


def test_every_command_the_readme_names_exists():
    named = set(re.findall(r"(?:\$ |`|^[ \t]+|entry: )sigmaudit ([a-z]+)\b", EVERYTHING, flags=re.M))
    assert {"scan", "plan", "check", "calc", "trend", "simulate", "report"} <= named
    missing = sorted(n for n in named if n not in COMMANDS)
    assert not missing, f"README or docs name commands that do not exist: {missing}"


def test_every_option_the_readme_names_exists():
    root = {o for p in typer.main.get_command(app).params for o in p.opts}  # --version, --debug
    every = set().union(*COMMANDS.values()) | root | {"--help"}
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", EVERYTHING))
    missing = sorted(named - every - NOT_SIGMAUDIT_OPTIONS)
    assert not missing, f"README or docs name options that no command has: {missing}"


# options of other tools the docs show (pip, pytest, mkdocs)
NOT_SIGMAUDIT_OPTIONS = {"--strict", "--durations", "--no-deps", "--resolution", "--extra-index-url"}


def _keys(obj: object) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | set().union(*(_keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys(v) for v in obj)) if obj else set()
    return {obj} if isinstance(obj, str) else set()


CONTRACT_RUNS = {
    "calc": ["calc", "-p", "0.3", "-G", "8"],
    "scan": ["scan", SAMPLE, "-q"],
    "plan": [["plan", SAMPLE, "-q", "-G", "8", "--budget", "4000", "--train-batch", "512", "--gen-batch", "1536",
              "--max-gen-batches", "6"],  # the objective's keys and DAPO's
             ["plan", SAMPLE, "-q", "-G", "8", "--max-silent", "0.1"],  # a target under the floor: `floor`
             ["plan", SAMPLE, "-q", "--objective", "informative"]],  # a view chose G: `objective_detail`
    "check": [["check", SAMPLE, "-q", "-G", "8", "--max-silent", "0.9", "--max-all-wrong", "0.9",
               "--max-all-correct", "0.9", "--max-extreme-share", "0.9", "--min-fidelity", "0.1",
               "--max-never-solved", "0.9", "--train-batch", "512", "--gen-batch", "1536", "--max-gen-batches", "6",
               "--max-p-raises", "0.5"],
              ["--config", str(ROOT / "tests" / "fixtures" / "config" / "gate.toml"), "check", SAMPLE, "-q", "-G", "8",
               "--bootstrap", "0"]],  # a config file's values: `config`
    "trend": ["trend", SAMPLE, "-q", "-G", "16"],
    "simulate": ["simulate", "--prompts", "200", "--num-steps", "5"],
}


def _contract_sections() -> dict[str, str]:
    body = DOCS["json.md"].split("## JSON contracts", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### `([a-z]+)`\n", body, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("command", sorted(CONTRACT_RUNS))
def test_every_json_key_the_readme_names_exists(capsys, command):
    section = _contract_sections()[command]
    runs = CONTRACT_RUNS[command]
    present: set[str] = set()
    for args in runs if isinstance(runs[0], list) else [runs]:
        code = main([*args, "-f", "json"])
        out, _ = capsys.readouterr()
        assert code in (0, 1)
        present |= _keys(json.loads(out))
    named: set[str] = set()
    for token in re.findall(r"`([^`]+)`", section) + re.findall(r'"([a-z_]+)"', section):
        if re.fullmatch(r"[a-z][a-z_0-9]*[\[\]{}a-z_0-9, …:.\"]*", token):  # a key or key{sub, keys}
            named |= set(re.findall(r"\b([a-z][a-z_0-9]*[a-z0-9])\b", token))
    ignore = {"null", "true", "false", "bool", "rule", "p", "n", "k", "groups", "series", "rate", "sqrt", "or",
              "ceil", "e", "g", "i", "bins", "extreme", "middle", "unbiased", "bayes", "plugin", "max", "min"}
    missing = sorted(k for k in named - ignore - present if not k.isdigit())
    assert not missing, f"docs/json.md's {command} contract names keys the JSON lacks: {missing}"


def test_the_docs_test_fails_on_a_renamed_key(capsys):
    section = _contract_sections()["calc"].replace("`silent_rate`", "`silent_share`")
    code = main([*CONTRACT_RUNS["calc"], "-f", "json"])
    present = _keys(json.loads(capsys.readouterr()[0]))
    assert code == 0 and "silent_share" in re.findall(r"`([^`]+)`", section) and "silent_share" not in present


def test_no_page_installs_an_unpublished_package_or_keeps_a_changelog():
    """Issue 42 item 6: docs/index.md said ``pip install sigmaudit``, which no index serves (the install is from a
    checkout, as the README says); a "Before this change" sentence belongs in CHANGELOG.md, not in a guide."""
    for name, text in {"README.md": README, **DOCS}.items():
        assert not re.search(r"^\s*pip install sigmaudit\s*$", text, re.M), name
        assert "before this change" not in text.lower(), name
    assert "pip install -e ." in DOCS["index.md"]


def test_the_readme_shows_checks_verdict_where_a_terminal_does():
    """Issue 42 item 6: the README showed check's FAILED line (stderr) above the table (stdout), a terminal below:
    examples are one stream in write order now."""
    block = next(b for b in examples.FENCE.findall(README) if b.startswith("$ sigmaudit check"))
    lines = block.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("sigmaudit: check FAILED"))
    table_end = max(i for i, line in enumerate(lines) if line.startswith("╰"))
    assert verdict == table_end + 1
