"""Issue 43, "Shards and step files": files that each hold part of every group are read as one log when the data
prove it (a group id in two files; parts that differ in size from group to group while their sums do not),
whatever their names, and refused naming ``--shards`` when the data cannot tell shards from whole logs (an even
4 + 4 split of every 8 reads exactly like two runs of G = 4); one file per step named ``step_1_rollouts.jsonl``,
``rollouts-step-1.jsonl``, ``rollouts_step_1.jsonl``, ``train_1.jsonl`` reads as steps. A fuzz writes folder layouts
(shards, steps in names, extra files) and checks every figure against a count of the rows written. Files are
written one JSON object a line, as a logging loop's ``json.dumps`` writes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import LoadOptions, load_counts

SHARD_NAMES = (("rollouts_0.jsonl", "rollouts_1.jsonl"), ("engine_0.jsonl", "engine_1.jsonl"),
               ("process_0.jsonl", "process_1.jsonl"), ("replica0.jsonl", "replica1.jsonl"),
               ("host-a.jsonl", "host-b.jsonl"), ("vllm0.jsonl", "vllm1.jsonl"), ("tp0.jsonl", "tp1.jsonl"))


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _log(rng: np.random.Generator, steps: int, prompts: int, G: int, gid: bool = False) -> list[list[dict]]:
    """Each (step, prompt) group's G rows, the prompt's pass rate drawn from a U-shaped Beta."""
    groups = []
    for step in range(1, steps + 1):
        for i in range(prompts):
            p = rng.beta(0.4, 0.4)
            groups.append([{"step": step, "prompt": f"q{i}", "reward": int(rng.random() < p),
                            **({"group_id": f"{step}-{i}"} if gid else {})} for _ in range(G)])
    return groups


def _truth(groups: list[list[dict]]) -> tuple[int, int, float]:
    """(groups, rollouts, observed silent share) counted from the rows written."""
    silent = [sum(r["reward"] for r in g) in (0, len(g)) for g in groups]
    return len(groups), sum(len(g) for g in groups), float(np.mean(silent))


def _observed(loaded) -> tuple[int, int, float]:
    g = loaded.per_group
    silent = ((g["k"] == 0) | (g["k"] == g["n"])).mean()
    return g.height, int(g["n"].sum()), float(silent)


@pytest.mark.parametrize("names", SHARD_NAMES, ids=[n[0] for n in SHARD_NAMES])
def test_even_shards_are_refused_naming_shards_and_read_with_it(tmp_path, names, capsys):
    """Each file holds 4 of every group of 8: refused as "each a whole log" unless named rank0, and the remedies
    offered audited groups of 4 (52.2 % silent against 32.2 % in the issue); now --shards reads groups of 8."""
    groups = _log(np.random.default_rng(1), 4, 24, 8)
    _write(tmp_path / names[0], [r for g in groups for r in g[:4]])
    _write(tmp_path / names[1], [r for g in groups for r in g[4:]])
    code, out, err = run(capsys, "scan", str(tmp_path), "-q")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "if each file holds part of every group (shards of one log), read them as one log with --shards" in err
    loaded = load_counts([tmp_path], LoadOptions(shards=True))
    assert _observed(loaded) == pytest.approx(_truth(groups), abs=1e-12)
    assert set(loaded.per_group["n"].to_list()) == {8}


def test_uneven_shards_and_shared_group_ids_read_as_one_log(tmp_path):
    """Parts that differ in size from group to group (an engine takes what it is dealt) summing to 8 every time,
    or a group id in both files: the data say shards, whatever the names; no flag."""
    rng = np.random.default_rng(2)
    for folder, gid in (("uneven", False), ("ids", True)):
        (tmp_path / folder).mkdir()
        groups = _log(rng, 3, 20, 8, gid=gid)
        cuts = rng.integers(1, 8, len(groups)) if not gid else [4] * len(groups)
        _write(tmp_path / folder / "host-a.jsonl", [r for g, c in zip(groups, cuts, strict=True) for r in g[:c]])
        _write(tmp_path / folder / "host-b.jsonl", [r for g, c in zip(groups, cuts, strict=True) for r in g[c:]])
        loaded = load_counts([tmp_path / folder])
        assert _observed(loaded) == pytest.approx(_truth(groups), abs=1e-12)
        assert any("split over the 2 files and summed" in n for n in loaded.notes)


def test_two_whole_runs_of_one_size_each_stay_apart(tmp_path):
    """Each file holds every group whole (8 of 8): two runs, never merged into groups of 16."""
    rng = np.random.default_rng(3)
    for name in ("runA.jsonl", "runB.jsonl"):
        _write(tmp_path / name, [r for g in _log(rng, 3, 20, 8) for r in g])
    with pytest.raises(SchemaError, match="each a whole log of its own"):
        load_counts([tmp_path])


STEP_PATTERNS = ("step_{}_rollouts.jsonl", "rollouts-step-{}.jsonl", "rollouts_step_{}.jsonl", "train_{}.jsonl",
                 "{}.jsonl", "global_step_{}.jsonl")


@pytest.mark.parametrize("pattern", STEP_PATTERNS)
def test_one_file_per_step_reads_as_steps(tmp_path, pattern):
    """They were refused as separate logs; neither remedy read them as steps."""
    rng = np.random.default_rng(4)
    groups = _log(rng, 3, 12, 6)
    for step in (1, 2, 3):  # no step field in the files; train_N's prompts differ from step to step
        rows = [{k: v for k, v in r.items() if k != "step"} for g in groups if g[0]["step"] == step for r in g]
        if pattern.startswith("train"):
            rows = [{**r, "prompt": f"{step}-{r['prompt']}"} for r in rows]
        _write(tmp_path / pattern.format(step), rows)
    loaded = load_counts([tmp_path])
    assert _observed(loaded) == pytest.approx(_truth(groups), abs=1e-12)
    assert sorted(loaded.per_group["step"].unique().to_list()) == [1, 2, 3]
    assert any(n.startswith(f"steps read from the file names ({pattern.format(1)} → step 1") for n in loaded.notes)


def test_numbered_files_whose_prompts_meet_are_not_read_as_steps_unless_the_name_says_step(tmp_path):
    """``train_1``/``train_2`` holding the same prompts could be steps or shards: not read as steps (refused as
    logs of their own); ``step_1``/``step_2`` are steps."""
    rng = np.random.default_rng(5)
    groups = _log(rng, 2, 12, 6)
    for step in (1, 2):
        rows = [{k: v for k, v in r.items() if k != "step"} for g in groups if g[0]["step"] == step for r in g]
        _write(tmp_path / f"train_{step}.jsonl", rows)
    with pytest.raises(SchemaError, match="each a whole log of its own") as exc:
        load_counts([tmp_path])
    assert exc.value.one_line().endswith("read them as one log with --shards; if each file is one step, rename them "
                                         "step_N.jsonl (the number is then read as the step)")
    for step in (1, 2):
        (tmp_path / f"train_{step}.jsonl").rename(tmp_path / f"step_{step}.jsonl")
    assert _observed(load_counts([tmp_path])) == pytest.approx(_truth(groups), abs=1e-12)


def _layout(seed: int, root: Path) -> tuple[list[list[dict]], LoadOptions]:
    """One random folder layout: a log split into uneven shards, shards with group ids, even shards (read with
    --shards), or one file per step under a random name pattern; with extra files a run folder holds."""
    rng = np.random.default_rng(seed)
    kind = ("uneven", "ids", "even", "steps")[seed % 4]
    groups = _log(rng, int(rng.integers(2, 5)), int(rng.integers(5, 30)), int(rng.choice([4, 6, 8])),
                  gid=kind == "ids")
    opts = LoadOptions(shards=kind == "even")
    if kind == "steps":
        pattern = STEP_PATTERNS[int(rng.integers(0, len(STEP_PATTERNS)))]
        for step in sorted({g[0]["step"] for g in groups}):
            rows = [{**{k: v for k, v in r.items() if k != "step"}, "prompt": f"{step}-{r['prompt']}"}
                    for g in groups if g[0]["step"] == step for r in g]
            _write(root / pattern.format(step), rows)
        groups = [[{**r, "prompt": f"{r['step']}-{r['prompt']}"} for r in g] for g in groups]
    else:
        shards = int(rng.integers(2, 4))
        first, second = SHARD_NAMES[int(rng.integers(0, len(SHARD_NAMES)))]
        names = (first, second, first.replace("0", "2") if "0" in first else first.replace("-a", "-c"))
        parts: list[list[dict]] = [[] for _ in range(shards)]
        for g in groups:
            owner = rng.integers(0, shards, len(g)) if kind == "uneven" else np.arange(len(g)) % shards
            for r, o in zip(g, owner, strict=True):
                parts[int(o)].append(r)
        for name, part in zip(names, parts, strict=False):
            _write(root / name, part)
    (root / "metadata.json").write_text(json.dumps({"model": "m", "lr": 1e-6, "seed": seed}))
    (root / "README.md").write_text("# run\n")
    return groups, opts


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_folder_layouts_give_the_counts_of_the_rows_written(tmp_path, seed):
    groups, opts = _layout(seed, tmp_path)
    loaded = load_counts([tmp_path], opts)
    assert _observed(loaded) == pytest.approx(_truth(groups), abs=1e-12)
    counts: dict = {}
    for g in groups:
        n, k = counts.get(g[0]["prompt"], (0, 0))
        counts[g[0]["prompt"]] = (n + len(g), k + sum(r["reward"] for r in g))
    want = pl.DataFrame({"prompt": list(counts), "n": [v[0] for v in counts.values()],
                         "k": [v[1] for v in counts.values()]}).sort("prompt")
    assert loaded.per_prompt.select("prompt", "n", "k").sort("prompt").equals(want)
    assert any("metadata.json" in n for n in loaded.notes)
