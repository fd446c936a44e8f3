"""`sigmaudit curate --dataset … --curated-out …` round-trips (issue 41 item 4): a verl-format parquet (chat
messages; the log holds the chat-templated prompt as verl's dump decodes it), TRL-format datasets (prompt
strings; conversations) and a plain text column. The curated file has the input's schema and exactly the kept
rows; prompts matching no row and prompts matching two rows are listed, never guessed, and their rows kept."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import run

SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
HARD, MIXED = range(0, 10), range(10, 30)
"""Rows 0-9 never solved in 64 samples (dropped); rows 10-29 solved about half the time (kept)."""
DUP = (30, 31)
"""Two rows with the same user message (the logged prompt matches both)."""
UNSEEN = range(32, 40)
"""Rows the log never shows (kept, counted)."""
STRAY = "Problem 999: a prompt the training set does not hold."


def question(i: int) -> str:
    return f"Problem {30 if i in DUP else i}: find the remainder when {7 + (30 if i in DUP else i)}^3 is divided by 13."


def qwen_dump(messages: list[dict[str, str]]) -> str:
    """A Qwen-style chat template applied with add_generation_prompt, then decoded with skip_special_tokens=True
    as verl's RayPPOTrainer dumps ``input`` (verl b178a3cd, ray_trainer.py): the special tokens are gone."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    text += "<|im_start|>assistant\n"
    return text.replace("<|im_start|>", "").replace("<|im_end|>", "")


def llama_text(messages: list[dict[str, str]]) -> str:
    """A Llama-3-style template (contents trimmed, as its template does), special tokens kept."""
    body = "".join(f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content'].strip()}<|eot_id|>"
                   for m in messages)
    return f"<|begin_of_text|>{body}<|start_header_id|>assistant<|end_header_id|>\n\n"


def rewards(i: int, rng: np.random.Generator, samples: int) -> np.ndarray:
    if i in HARD or i in DUP or i == -1:
        return np.zeros(samples)
    return (rng.random(samples) < 0.5).astype(float)


def logged_rows(texts: dict[int, str], steps: int = 8, G: int = 8) -> list[dict[str, object]]:
    """Every logged prompt (row index -> its logged text; -1: the stray prompt) at each step, G answers each."""
    rng = np.random.default_rng(5)
    out = []
    for i, text in texts.items():
        r = rewards(i, rng, steps * G)
        out += [{"step": s + 1, "prompt": text, "reward": float(r[s * G + j])} for s in range(steps) for j in range(G)]
    return out


def write_verl_dump(folder, texts):
    folder.mkdir()
    rows = logged_rows(texts)
    for step in sorted({r["step"] for r in rows}):
        with open(folder / f"{step}.jsonl", "w", encoding="utf-8") as fh:
            for r in rows:
                if r["step"] == step:
                    fh.write(json.dumps({"input": r["prompt"], "output": "...", "gts": "1", "score": r["reward"],
                                         "step": step}) + "\n")
    return str(folder)


def write_trl_log(folder, texts):
    folder.mkdir()
    frame = pl.DataFrame(logged_rows(texts)).rename({"reward": "accuracy_reward"})
    for step in frame["step"].unique().sort().to_list():
        part = frame.filter(pl.col("step") == step).with_columns(completion=pl.lit("..."), advantage=pl.lit(0.0))
        part.select("step", "prompt", "completion", "accuracy_reward", "advantage").write_parquet(
            folder / f"completions_{step:05d}.parquet")
    return str(folder)


def verl_table() -> pa.Table:
    messages = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question(i)}] for i in range(40)]
    table = pa.table({
        "data_source": ["synthetic/mod"] * 40,
        "prompt": messages,
        "ability": ["math"] * 40,
        "reward_model": [{"style": "rule", "ground_truth": str(i)} for i in range(40)],
        "extra_info": [{"split": "train", "index": i} for i in range(40)],
    })
    return table.replace_schema_metadata({b"made_by": b"test"})


def logged_indices() -> list[int]:
    return [*HARD, *MIXED, DUP[0]]


def kept_expected() -> list[int]:
    return [i for i in range(40) if i not in HARD]


def test_verl_parquet_round_trip(tmp_path, capsys):
    data = tmp_path / "train.parquet"
    pq.write_table(verl_table(), data)
    texts = {i: qwen_dump([{"role": "system", "content": SYSTEM}, {"role": "user", "content": question(i)}])
             for i in logged_indices()}
    texts[-1] = qwen_dump([{"role": "user", "content": STRAY}])
    log = write_verl_dump(tmp_path / "rollout_data", texts)
    out_path, drops = tmp_path / "curated.parquet", tmp_path / "drop.csv"
    code, out, err = run(capsys, "curate", log, "--dataset", str(data), "--curated-out", str(out_path),
                         "--drop-out", str(drops), "-f", "json")
    assert code == 0, err
    curated = pq.read_table(out_path)
    assert curated.schema == verl_table().schema and curated.schema.metadata == verl_table().schema.metadata
    assert [x["index"] for x in curated.column("extra_info").to_pylist()] == kept_expected()
    assert curated.column("prompt").to_pylist() == verl_table().take(kept_expected()).column("prompt").to_pylist()
    join = json.loads(out)["dataset"]
    assert (join["rows"], join["prompts_matched"], join["prompts_unmatched"], join["prompts_several"]) == (40, 30, 1, 1)
    assert (join["rows_dropped"], join["rows_kept"], join["rows_unseen"], join["rows_ambiguous"]) == (10, 30, 8, 2)
    table = pl.read_csv(drops)
    stray = table.filter(pl.col("prompt") == texts[-1])
    assert stray["match"].to_list() == ["none"] and stray["dataset_row"].to_list() == [None]
    dup = table.filter(pl.col("prompt") == texts[DUP[0]])
    assert dup["match"].to_list() == ["several"] and dup["candidate_rows"].to_list() == ["30 31"]
    hard = table.filter(pl.col("dataset_row") == 3).row(0, named=True)
    assert hard["decision"] == "drop" and hard["text"] == question(3)
    assert hard["text_sha256"] == hashlib.sha256(question(3).encode()).hexdigest()
    assert set(table.filter(pl.col("dataset_row").is_in(list(MIXED)))["decision"].to_list()) == {"keep"}


def test_trl_prompt_strings_round_trip_byte_for_byte(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    lines = [json.dumps({"prompt": question(i), "answer": str(i), "note": "é" if i % 2 else "\u00e9"},
                        ensure_ascii=bool(i % 3)) + "\n" for i in range(40)]
    data.write_bytes("".join(lines).encode("utf-8"))
    texts = {i: question(i) for i in logged_indices()} | {-1: STRAY}
    log = write_trl_log(tmp_path / "completions", texts)
    out_path = tmp_path / "curated.jsonl"
    code, _, err = run(capsys, "curate", log, "--dataset", str(data), "--curated-out", str(out_path), "-q")
    assert code == 0, err
    assert out_path.read_bytes() == "".join(lines[i] for i in kept_expected()).encode("utf-8")


def test_trl_conversations_through_a_template_that_trims(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    rows = [{"prompt": [{"role": "user", "content": f"  {question(i)}\n"}], "id": i} for i in range(40)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    texts = {i: llama_text([{"role": "user", "content": question(i)}]) for i in logged_indices()}
    log = write_trl_log(tmp_path / "completions", texts)
    out_path = tmp_path / "curated.jsonl"
    code, out, err = run(capsys, "curate", log, "--dataset", str(data), "--curated-out", str(out_path), "-f", "json")
    assert code == 0, err
    assert [json.loads(x)["id"] for x in out_path.read_text().splitlines()] == kept_expected()
    assert json.loads(out)["dataset"]["prompts_several"] == 1


def test_plain_text_column_and_a_folder_of_files(tmp_path, capsys):
    folder = tmp_path / "train"
    folder.mkdir()
    for part, rows in (("a", range(0, 20)), ("b", range(20, 40))):
        pl.DataFrame({"question": [question(i) for i in rows], "row": list(rows)}).write_parquet(
            folder / f"{part}.parquet")
    log = write_trl_log(tmp_path / "completions", {i: question(i) for i in logged_indices()})
    out_dir = tmp_path / "curated"
    out_dir.mkdir()
    code, _, err = run(capsys, "curate", log, "--dataset", str(folder), "--dataset-col", "question",
                       "--curated-out", str(out_dir), "-q")
    assert code == 0, err
    got = [pl.read_parquet(out_dir / f"{part}.parquet") for part in ("a", "b")]
    assert all(g.schema == pl.read_parquet(folder / "a.parquet").schema for g in got)
    assert [*got[0]["row"].to_list(), *got[1]["row"].to_list()] == kept_expected()


def test_a_prompt_inside_another_goes_to_the_row_the_template_fits(tmp_path, capsys):
    """Row 1's text is row 0's plus more: a prompt templated from row 1 holds both; the skeleton (the template
    around the contents) of the unique matches picks row 1; row 0's own prompt matches row 0 alone."""
    data = tmp_path / "train.parquet"
    base = [question(i) for i in range(12)]
    base[1] = base[0] + " Show your work."
    pl.DataFrame({"prompt": [[{"role": "user", "content": q}] for q in base]}).write_parquet(data)
    from sigmaudit.loaders.dataset import match_prompts, read_dataset

    ts = read_dataset(data)
    texts = [qwen_dump([{"role": "user", "content": q}]) for q in base]
    matches = match_prompts(texts, ts)
    assert [m.row for m in matches] == list(range(12))


@pytest.mark.parametrize("case", ["same", "no-dataset", "suffix", "token-ids", "missing-column"])
def test_refusals_leave_no_file(tmp_path, capsys, case):
    data = tmp_path / "train.parquet"
    pq.write_table(verl_table(), data)
    before = data.read_bytes()
    log = write_trl_log(tmp_path / "completions", {i: question(i) for i in logged_indices()})
    out_path = tmp_path / "curated.parquet"
    args = {"same": ["--dataset", str(data), "--curated-out", str(data)],
            "no-dataset": ["--curated-out", str(out_path)],
            "suffix": ["--dataset", str(data), "--curated-out", str(tmp_path / "curated.jsonl")],
            "token-ids": ["--dataset", str(data), "--curated-out", str(out_path)],
            "missing-column": ["--dataset", str(data), "--dataset-col", "question", "--curated-out", str(out_path)]}
    if case == "token-ids":
        log = "sample_logs/open-instruct"
    code, out, err = run(capsys, "curate", log, *args[case], "-q")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert data.read_bytes() == before and not out_path.exists() and not (tmp_path / "curated.jsonl").exists()
    words = {"same": "never writes over", "no-dataset": "--dataset", "suffix": ".parquet", "token-ids": "tokenizer",
             "missing-column": "--dataset-col"}
    assert words[case] in err


def test_rows_sharing_an_instruction_are_found_by_what_sets_them_apart(tmp_path, monkeypatch):
    """DAPO-Math-style rows: the same instruction before and after every problem. Each row is looked up by its
    rarest window, so a prompt checks about one candidate in full, not every row (counted, not timed)."""
    from sigmaudit.loaders import dataset as ds

    head = "Solve the following math problem step by step. The last line of your response should be of the form " \
           "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
    tail = '\n\nRemember to put your answer on its own line after "Answer:".'
    rows = [head + f"Find the remainder when {1000 + 7 * i}^{i % 9 + 2} is divided by {i % 97 + 3}." + tail
            for i in range(2000)]
    data = tmp_path / "train.parquet"
    pl.DataFrame({"prompt": [[{"role": "user", "content": r}] for r in rows]}).write_parquet(data)
    checks = []
    real = ds._in_order
    monkeypatch.setattr(ds, "_in_order", lambda text, parts: checks.append(1) or real(text, parts))
    logged = [qwen_dump([{"role": "user", "content": rows[i]}]) for i in range(0, 2000, 7)]
    matches = ds.match_prompts(logged, ds.read_dataset(data))
    assert [m.row for m in matches] == list(range(0, 2000, 7))
    assert len(checks) <= 2 * len(logged)
