"""Bad inputs (one parametrised test over tests/fixtures/bad), real data, and properties."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sigmaudit.errors import InputError, SchemaError
from sigmaudit.loaders import LoadOptions, load_counts

BAD = Path(__file__).resolve().parent / "fixtures" / "bad"
DATA = Path(__file__).parent / "data"
REAL = DATA / "real"

# fixture file -> (exception, text the one-line message must contain besides the file name)
EXPECTED = {
    # issue 15 (a fuzz and attack run): each defect now a one-line error naming the file
    "all_prompt_keys_null.csv": (SchemaError, "every row has a null prompt key (prompt_id)"),
    "corrupt_data_page.parquet": (InputError, "corrupt parquet file: the reader failed on its data"),
    "corrupt_gzip.jsonl.gz": (InputError, "corrupt or truncated gz data"),
    "cr_only_line_endings.csv": (InputError, "lines end in CR only"),
    "duplicated_header.csv": (SchemaError, "duplicated_header.csv:1: the header names column 'reward' twice"),
    "gzip_bomb.jsonl.gz": (InputError, "decompresses to more than 250x its size"),
    "json_nested_too_deep.jsonl": (InputError, "json_nested_too_deep.jsonl:2: malformed JSON on line 2: "
                                               "nested too deeply"),
    "not_zstd.jsonl.zst": (InputError, "not valid zstd data"),
    "series_non_integer_step.csv": (SchemaError, "step column 'step' or a share column is not numeric"),
    # earlier fixtures
    "counts_k_above_n.csv": (SchemaError, "counts_k_above_n.csv:3: invalid counts: k > n"),
    "counts_negative_k.csv": (SchemaError, "counts_negative_k.csv:3: invalid counts: negative k"),
    "empty.csv": (InputError, "empty file"),
    "header_only.csv": (InputError, "no data rows"),
    "malformed_line_3.jsonl": (InputError, "malformed_line_3.jsonl:3: malformed JSON on line 3"),
    "no_layout_columns.csv": (SchemaError, "columns: alpha, beta, gamma; pass --prompt-col"),
    "nonbinary_reward.csv": (SchemaError, "values such as 0.25, 0.75, 1.5); pass --threshold"),
    "rate_not_whole_count.csv": (SchemaError, ":3: invalid counts: pass_rate x n is not a whole"),
    "rate_without_samples.csv": (SchemaError, "pass --samples"),
    "text_renamed.parquet": (InputError, "not a parquet file"),
    "text_reward.csv": (SchemaError, "--reward-col"),
    "trl_two_reward_columns.parquet": (SchemaError,
                                       "(accuracy_reward, format_reward); which one means "
                                       "correct?; pass --reward-col"),
    "truncated.parquet": (InputError, "not a parquet file"),
    "unsupported_extension.txt": (InputError, "unsupported file type"),
}


def test_every_bad_fixture_is_covered():
    assert sorted(p.name for p in BAD.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_input(name):
    exc, text = EXPECTED[name]
    path = BAD / name
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(exc) as err:
        load_counts([path], LoadOptions())
    line = err.value.one_line()
    assert str(path) in line and text in line
    assert "\n" not in line and len(line) < 400
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # input untouched


def test_unsupported_file_inside_a_directory_is_skipped(tmp_path):
    (tmp_path / "notes.txt").write_text("prompt_id,reward\na,1\n")
    pl.DataFrame({"prompt_id": ["a"], "reward": [1]}).write_csv(tmp_path / "ok.csv")
    assert load_counts([tmp_path]).files == (str(tmp_path / "ok.csv"),)




def summary(name: str) -> tuple[int, float, float, float]:
    pp = load_counts([REAL / name]).per_prompt
    k, n = pp["k"].to_numpy(), pp["n"].to_numpy()
    return (pp.height, round(float((k / n).mean()), 4), round(float((k == 0).mean()), 4),
            round(float((k == n).mean()), 4))


@pytest.mark.parametrize(("name", "expected"), [
    # (prompts, mean pass rate, never solved, always solved) from each file's .source.md
    ("cruxeval_codellama7b_t0.2_input_n10.csv", (800, 0.3595, 0.5250, 0.2625)),
    ("cruxeval_codellama7b_t0.2_output_n10.csv", (800, 0.3421, 0.5813, 0.2737)),
    ("evalperf_per_task_pass_rates.csv", (4012, 0.7757, 0.0349, 0.4140)),
    ("pika_aime_1983_2024_pass_rates.csv", (2799, 0.4456, 0.3744, 0.2669)),
])
def test_real_files_match_their_source_notes(name, expected):
    assert summary(name) == expected


def test_real_cruxeval_is_long_with_ten_samples_each():
    lc = load_counts([REAL / "cruxeval_codellama7b_t0.2_input_n10.csv"])
    assert (lc.layout, lc.n_rows, lc.reward_source, lc.per_group) == ("long", 8000, "correct",
                                                                      None)
    assert set(lc.per_prompt["n"].to_list()) == {10}


def test_commented_csv_header_is_skipped():
    loaded = load_counts([DATA / "dapo_fig3b_allcorrect.csv"])  # a per-step series
    assert loaded.layout == "series" and loaded.series.columns == ["step", "observed_all_correct"]
    assert loaded.series.height == 60 and loaded.series["step"][0] == 71


logs = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 6),
              st.one_of(st.sampled_from([0.0, 1.0, -1.0]), st.none())),
    min_size=1, max_size=60,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=logs, fmt=st.sampled_from(["csv", "parquet", "jsonl"]))
def test_random_long_logs_conserve_samples(tmp_path, rows, fmt):
    df = pl.DataFrame(rows, schema={"step": pl.Int64, "prompt_id": pl.Int64,
                                    "reward": pl.Float64}, orient="row")
    path = tmp_path / f"log.{fmt}"
    {"csv": df.write_csv, "parquet": df.write_parquet, "jsonl": df.write_ndjson}[fmt](path)
    missing = sum(r is None for _, _, r in rows)
    keep = LoadOptions(keep_duplicates=True)  # random rows may repeat a block by chance
    if missing == len(rows):
        with pytest.raises(SchemaError):
            load_counts([path], keep)
        return
    lc = load_counts([path], keep)
    assert lc.n_rows == len(rows) and lc.missing_rewards == missing
    for frame in (lc.per_prompt, lc.per_group):
        n, k = frame["n"].to_numpy(), frame["k"].to_numpy()
        assert n.sum() == len(rows) - missing
        assert np.all((k >= 0) & (k <= n) & (n >= 1))
    assert lc.per_prompt["k"].sum() == sum(r == 1.0 for _, _, r in rows)


@pytest.mark.parametrize("sample", ["verl/rollout_data", "open-instruct"])
def test_a_cut_off_last_line_is_named_with_its_remedy(capsys, tmp_path, sample):
    """A crashed run leaves a jsonl dump whose last line stops mid-object: the error names the line
    and says how to recover; a bad line that is not the last gets no such remedy."""
    import shutil

    from cli_runner import run

    src = Path(__file__).resolve().parents[1] / "sample_logs" / sample
    folder = tmp_path / "dump"
    shutil.copytree(src, folder)
    last = sorted(folder.rglob("*.jsonl"))[-1]
    data = last.read_bytes().rstrip(b"\n")
    last.write_bytes(data[: len(data) - 40])
    lines = last.read_bytes().count(b"\n") + 1
    code, out, err = run(capsys, "scan", str(folder), "-q")
    assert code == 2 and out == ""
    assert err.startswith(f"sigmaudit: error: {last}:{lines}: ") and err.rstrip().endswith(
        "the file's last line is cut off (a writer stopped mid-line?); delete that line, or re-export the file"), err
    last.write_bytes(data[: len(data) - 40] + b"\n" + data.splitlines()[0] + b"\n")
    code, out, err = run(capsys, "scan", str(folder), "-q")
    assert code == 2 and f"{last}:{lines}: " in err and "cut off" not in err


@pytest.mark.parametrize("path", ["", "  "])
def test_an_empty_path_is_refused_not_read_as_the_current_folder(capsys, path):
    from cli_runner import run

    code, out, err = run(capsys, "scan", path)
    assert code == 2 and out == ""
    assert err.startswith("sigmaudit: error: '") and err.endswith(
        "': an input path is empty; name a file or directory ('.' for the current one)\n") and err.count("\n") == 1


def _nested_line_file(tmp_path, depth: int, opener: str = "[") -> Path:
    """A two-line jsonl log whose second line is nested ``depth`` levels deep (its object included)."""
    closer = {"[": "]", "{": "}"}[opener]
    inner = "1" if opener == "[" else '{"k":1}'
    levels = depth - 1 if opener == "[" else depth - 2
    body = opener * levels + inner + closer * levels if opener == "[" else '{"k":' * levels + inner + "}" * levels
    path = tmp_path / f"deep_{opener}{depth}.jsonl"
    path.write_text('{"prompt_id":"a","reward":1}\n{"prompt_id":"b","reward":0,"x":' + body + "}\n")
    return path


@pytest.mark.parametrize("opener", ["[", "{"])
def test_nesting_bound_is_ours_on_every_polars_version(tmp_path, monkeypatch, opener):
    """A line 1,025 levels deep is refused and one 1,024 deep read, identically whether the installed
    Polars bounds the depth itself (2.1 and later) or sigmaudit does (older versions read such lines,
    1.35-2.0 as measured; ``polars_bounds_depth`` switched off here to run that path on this Polars)."""
    from sigmaudit.loaders import jsonl
    from sigmaudit.loaders.jsonl import MAX_DEPTH, too_deep

    ok, deep = _nested_line_file(tmp_path, MAX_DEPTH, opener), _nested_line_file(tmp_path, MAX_DEPTH + 1, opener)
    assert (too_deep(ok), too_deep(deep)) == (None, 2)
    answers = []
    for ours in (False, True):
        if ours:
            monkeypatch.setattr(jsonl, "polars_bounds_depth", lambda: False)
        assert load_counts([ok], LoadOptions()).per_prompt["n"].to_list() == [1, 1]
        with pytest.raises(InputError) as info:
            load_counts([deep], LoadOptions())
        answers.append(info.value.one_line())
    assert answers[0] == answers[1]
    assert answers[0].endswith(f"{deep.name}:2: malformed JSON on line 2: nested too deeply")


def test_depth_counts_brackets_outside_strings_only(tmp_path):
    from sigmaudit.loaders.jsonl import too_deep

    path = tmp_path / "braces_in_text.jsonl"
    text = '{"prompt_id":"a","reward":1,"text":"' + "{[" * 2000 + '\\" ]"}\n'
    path.write_text('{"prompt_id":"b","reward":0}\n' * 3 + text + '{"prompt_id":"c","reward":1}')
    assert too_deep(path) is None
    assert too_deep(path, limit=0) == 1


@pytest.mark.parametrize("limit", [1000, 5000])
def test_nesting_refusal_does_not_depend_on_the_recursion_limit(tmp_path, limit):
    """The line found for a too-deep jsonl line came from json.loads' RecursionError, so a raised recursion
    limit (hypothesis raises it in a test run; so may a trainer's process) gave Polars' bare
    "DepthLimitExceeded at character 1055" instead of the line; the message is now the same at any limit."""
    import sys

    deep = _nested_line_file(tmp_path, 1025)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        with pytest.raises(InputError) as info:
            load_counts([deep], LoadOptions())
    finally:
        sys.setrecursionlimit(old)
    assert info.value.one_line().endswith(":2: malformed JSON on line 2: nested too deeply")
