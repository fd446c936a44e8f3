"""The pooled-keys note reads each group's size straight from the reduced frame when the raw keys map one to one
onto (step, gid, prompt) (``reduce.keys_one_to_one``: an integer step, a text or integer group id, one text or
integer prompt column), instead of grouping 5M groups again (4-6 s CPU on the 82M-row benchmark log, issue 45).
Checked here on random logs against a brute-force count of the rows: where the shortcut is taken, every
(step, group, prompt) of the rows is one row of the frame with its own count, and the note is the one the
group-by gives; a prompt of two columns, whose joined text can meet ("a" + null and null + "a"), never takes it."""

from __future__ import annotations

import collections

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.errors import SigmauditError
from sigmaudit.loaders import LoadOptions, load_counts, reduce

TEXT = st.sampled_from(["a", "b", "a | b", "7", None])


@st.composite
def logs(draw):
    """Rows of (step, group, a, b, reward): steps of an integer or float column, ids of text or numbers, nulls."""
    n = draw(st.integers(1, 60))
    step_float = draw(st.booleans())
    group = draw(st.sampled_from(["none", "text", "int"]))
    a_int = draw(st.booleans())
    rows = []
    for _ in range(n):
        step = draw(st.integers(0, 3))
        rows.append({
            "step": float(step) if step_float else step,
            **({"group": draw(st.sampled_from(["g0", "g1", None]))} if group == "text" else {}),
            **({"group": draw(st.sampled_from([0, 1, None]))} if group == "int" else {}),
            "a": draw(st.sampled_from([1, 2, 7, None])) if a_int else draw(TEXT),
            "b": draw(TEXT),
            "reward": draw(st.sampled_from([0.0, 1.0, 1.0])),
        })
    return pl.DataFrame(rows, schema_overrides={"step": pl.Float64 if step_float else pl.Int64}, strict=False)


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[pl.DataFrame, bool, str | None, str | None]]:
    calls = []
    real = reduce.pooled_keys

    def spy(src, plan, frame, unique=False):
        note = real(src, plan, frame, unique)
        calls.append((frame, unique, note, real(src, plan, frame, False)))
        return note

    monkeypatch.setattr(reduce, "pooled_keys", spy)
    return calls


@settings(max_examples=60, deadline=None)
@given(df=logs(), two=st.booleans())
def test_sizes_without_the_group_by_are_the_brute_force_counts(tmp_path_factory, df, two):
    path = tmp_path_factory.mktemp("log") / "log.parquet"
    df.write_parquet(path)
    opts = LoadOptions(prompt_col="a,b" if two else "a", step_col="step", reward_col="reward",
                       group_col="group" if "group" in df.columns else None, keep_duplicates=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = _spied(monkeypatch)
        try:
            load_counts(path, opts)
        except SigmauditError:  # e.g. every prompt key null: refused after the note, the same either way
            pass
    if not calls:
        return
    (frame, unique, note, grouped_note), = calls
    assert note == grouped_note
    if two:
        assert not unique
    if not unique:
        return
    keys = [c for c in ("step", "group", "a") if c in df.columns]
    # a null prompt is dropped (counted as a null key), in a text or an integer column alike
    kept = df.filter(pl.col("a").is_not_null())
    brute = collections.Counter(tuple(r[c] for c in keys) for r in kept.iter_rows(named=True))
    got = collections.Counter()
    for r in frame.iter_rows(named=True):
        got[(r["step"], r["gid"], r["prompt"])] += 1
    assert all(v == 1 for v in got.values())  # each (step, gid, prompt) once: the sizes are the frame's n
    assert len(got) == len(brute)
    sizes = sorted(int(v) for v in frame["n"])
    assert sizes == sorted(brute.values())  # every reward is valid here: n is the rows of a key


def test_a_prompt_of_two_columns_whose_texts_meet_is_grouped_again():
    """("a", null) and (null, "a") are two raw keys but one prompt key "a": the frame holds it twice."""
    plan_types = {"step": pl.Int64(), "a": pl.Utf8(), "b": pl.Utf8()}

    class Plan:
        prompt = ("a", "b")
        step = "step"
        group = None
        has_groups = True

    assert not reduce.keys_one_to_one(Plan(), plan_types)  # type: ignore[arg-type]
    Plan.prompt = ("a",)
    assert reduce.keys_one_to_one(Plan(), plan_types)  # type: ignore[arg-type]
    assert not reduce.keys_one_to_one(Plan(), {**plan_types, "step": pl.Float64()})  # type: ignore[arg-type]
