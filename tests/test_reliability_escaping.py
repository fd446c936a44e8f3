"""Log-controlled text in the markdown report / GitHub step summary and in ::error annotations is
escaped (issue 23 item 23): a --by value or a prompt id cannot inject HTML, a link, an image or an
@mention, nor end an annotation's property."""

from __future__ import annotations

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.render.markdown import inert

HOSTILE = ["<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "@octocat, title:x"]


@pytest.fixture
def hostile_log(tmp_path):
    """A long log whose --by column holds hostile text; every group silent (so every gate fails)."""
    rows = [{"prompt_id": f"p{i}", "reward": i % 2, "source": HOSTILE[i % 3]} for i in range(60) for _ in range(4)]
    path = tmp_path / "log.parquet"
    pl.DataFrame(rows).write_parquet(path)
    return path


@pytest.mark.parametrize(("text", "shown"), [
    ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)>"),
    ("</details><script>", "&lt;/details>&lt;script>"),
    ("[x](javascript:alert(1))", "[x\\](javascript:alert(1))"),
    ("![i](https://e.example/p.png)", "![i\\](https://e.example/p.png)"),
    ("ping @octocat", "ping @\u200boctocat"),
    ("a|b", "a\\|b"),
    ("<0.0001", "<0.0001"), ("p < 0.1", "p < 0.1"), ("[0.5512, 0.6547]", "[0.5512, 0.6547]"),
])
def test_markdown_text_from_a_log_is_inert(text, shown):
    assert inert(text) == shown


def test_step_summary_injection_by_value_is_escaped(capsys, monkeypatch, tmp_path, hostile_log):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, err = run(capsys, "check", str(hostile_log), "-q", "-G", "4", "--max-silent", "0.01",
                       "--bootstrap", "0", "--by", "source")
    assert code == 1
    text = summary.read_text()
    assert "&lt;img src=x" in text and "<img" not in text
    assert "[x\\](javascript:alert(1))" in text and "](javascript" not in text.replace("\\](", "")
    assert "@\u200boctocat" in text and "@octocat" not in text


def test_annotation_properties_are_escaped(capsys, monkeypatch, hostile_log):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, _, err = run(capsys, "check", str(hostile_log), "-q", "-G", "4", "--max-silent", "0.01",
                       "--bootstrap", "0", "--by", "source")
    assert code == 1
    titles = [line.split("::")[1].removeprefix("error ") for line in err.splitlines() if line.startswith("::error")]
    assert "title=sigmaudit check (source=@octocat%2C title%3Ax%2C silent_rate)" in titles
    for title in titles:  # one property: no raw ',' or ':' after 'title='
        assert "," not in title and ":" not in title.removeprefix("title="), title
