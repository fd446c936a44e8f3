"""Multi-turn and agent rollouts, each file written as its writer writes it.

NeMo-RL (NVIDIA-NeMo/RL 7ea279abfbeb698b092856d0dab61e7cf39bc909): ``grpo_train`` logs ``content``
(``batched_message_log_to_flat_message``'s message strings, no roles), ``rewards``, ``token_ids``,
``token_loss_mask`` (1 on the assistant's tokens) ... through ``Logger.log_batched_dict_as_jsonl``
(``make_microbatch_iterator(1)``: one-element lists, tensors padded to the batch's longest, plus ``idx``);
``run_multi_turn_rollout`` appends an environment message after every generation, often ``""`` at the
end. The prompt of a trajectory is its first turn; one line is one trajectory, its reward the total."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.loaders import LoadOptions, load_counts

PROMPTS, G, STEPS = 4, 5, 2
PAD = 0


def _tokens(text: str) -> list[int]:
    return [1 + (ord(c) % 97) for c in text]


def _nemo_multi_turn(folder: Path, seed: int = 11) -> dict[int, list[list[float]]]:
    """``train_data_step{N}.jsonl`` of a multi-turn run; the groups' rewards per step."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    truth: dict[int, list[list[float]]] = {}
    for step in range(1, STEPS + 1):
        batch = []
        truth[step] = []
        for q in range(PROMPTS):
            prompt = ["You are a careful agent.", f"Task {q}: find the key in room {q}."]
            rewards = []
            for _ in range(G):
                messages = [(m, 0) for m in prompt]
                for turn in range(rng.randint(1, 3)):
                    messages.append((f"open door {rng.randint(0, 3)}", 1))
                    messages.append(("" if turn == 2 else f"you see {rng.randint(0, 9)}", 0))
                reward = float(rng.random() < q / (PROMPTS - 1))
                rewards.append(reward)
                ids, mask = [], []
                for text, generated in messages:
                    tok = _tokens(text)
                    ids += tok
                    mask += [generated] * len(tok)
                batch.append(([m for m, _ in messages], ids, mask, reward))
            truth[step].append(rewards)
        width = max(len(b[1]) for b in batch)
        with open(folder / f"train_data_step{step}.jsonl", "w") as f:
            for i, (content, ids, mask, reward) in enumerate(batch):
                pad = width - len(ids)
                sample = {"content": [content], "rewards": [reward], "input_lengths": [len(ids)],
                          "token_ids": [ids + [PAD] * pad], "token_loss_mask": [mask + [0] * pad],
                          "sample_loss_mask": [1.0], "advantages": [[0.0] * width],
                          "generation_logprobs": [[0.0] * width], "prev_logprobs": [[0.0] * width]}
                f.write(json.dumps({**sample, "idx": i}, default=str) + "\n")
    return truth


def test_nemo_rl_multi_turn_prompt_is_the_first_turn(tmp_path):
    truth = _nemo_multi_turn(tmp_path)
    loaded = load_counts([tmp_path])
    pp = {p: (n, k) for p, n, k in loaded.per_prompt.select("prompt", "n", "k").iter_rows()}
    want = {f"You are a careful agent.\nTask {q}: find the key in room {q}.":
            (G * STEPS, int(sum(sum(truth[s][q]) for s in truth))) for q in range(PROMPTS)}
    assert pp == want
    silent = loaded.per_group.with_columns(((pl.col("k") == 0) | (pl.col("k") == pl.col("n"))).alias("s"))
    got = dict(silent.group_by("step").agg(pl.col("s").mean()).select("step", "s").iter_rows())
    assert got == pytest.approx({s: sum(len(set(g)) == 1 for g in gs) / PROMPTS for s, gs in truth.items()})
    assert any("multi-turn" in n and "first turn" in n for n in loaded.notes)


def test_nemo_rl_check_gates_the_true_silent_share(capsys, tmp_path):
    truth = _nemo_multi_turn(tmp_path)
    share = sum(len(set(g)) == 1 for gs in truth.values() for g in gs) / (PROMPTS * STEPS)
    code, out, err = run(capsys, "check", str(tmp_path), "--max-silent", "0.99", "-G", str(G), "-f", "json", "-q")
    assert code == 0, err
    d = json.loads(out)
    assert d["basis"] == "observed" and d["checks"][0]["value"] == pytest.approx(share)


def test_nemo_rl_prompt_and_group_options_are_read(tmp_path):
    _nemo_multi_turn(tmp_path)
    one = load_counts([tmp_path], LoadOptions(prompt_col="idx"))
    # idx numbers the lines of each file: line i of step 1 and of step 2 are one prompt
    assert sorted(one.per_prompt["n"].to_list()) == [STEPS] * (PROMPTS * G)


def test_a_key_option_a_reader_does_not_read_is_refused_in_one_line(capsys):
    root = Path(__file__).resolve().parents[1] / "sample_logs" / "areal"
    code, _, err = run(capsys, "scan", str(root), "--group-col", "x")
    assert code == 2 and err.count("\n") == 1 and "--group-col is not read for areal dumps" in err


# ------------------------------------------------------------------ Atropos scored groups
# NousResearch/atropos 296a0bc55760e43b9c0743c052f8d6c2732606d1: BaseEnv.handle_send_to_api writes each
# ScoredDataGroup with jsonlines (json.dumps, one line): tokens, masks (-100 on the context:
# tokenize_for_trainer masks chat[:-1]), scores, messages (include_messages), overrides, group_overrides;
# environments may add keys (environments/community/selcube writes "seed", one group per turn).


def _tokenized(chat: list[dict]) -> tuple[list[int], list[int]]:
    context = [t for m in chat[:-1] for t in _tokens(m["content"])]
    last = _tokens(chat[-1]["content"])
    return context + last, [-100] * len(context) + last


def _atropos_group(chats: list[list[dict]], scores: list[float], **extra) -> str:
    tokens, masks = zip(*(_tokenized(c) for c in chats), strict=True)
    group = {"tokens": list(tokens), "masks": list(masks), "scores": scores, "advantages": None,
             "ref_logprobs": None, "messages": chats, "generation_params": None, "inference_logprobs": None,
             "group_overrides": None, "overrides": None, "images": None, "distill_token_ids": None,
             "distill_logprobs": None, **extra}
    return json.dumps(group) + "\n"


def test_atropos_single_turn_groups_key_their_first_user_turn(tmp_path):
    rng = random.Random(3)
    f = tmp_path / "groups.jsonl"
    want: dict[str, list[int]] = {}
    with open(f, "w") as fh:
        for q in [0, 1, 2, 1, 3]:  # item 1 drawn twice: the same prompt
            ctx = [{"role": "system", "content": "Think step by step."}, {"role": "user", "content": f"What is {q}*7?"}]
            right = [rng.random() < (q + 1) / 5 for _ in range(G)]
            chats = [[*ctx, {"role": "assistant", "content": str(7 * q if r else 5 + i)}] for i, r in enumerate(right)]
            fh.write(_atropos_group(chats, [1.0 if r else -1.0 for r in right]))
            want.setdefault(f"What is {q}*7?", []).extend(right)
    loaded = load_counts([f])
    got = {json.loads(p)[1]["content"]: (n, k) for p, n, k in loaded.per_prompt.select("prompt", "n", "k").iter_rows()}
    assert got == {q: (len(r), sum(r)) for q, r in want.items()}
    assert loaded.layout == "atropos" and not any("later turns" in n for n in loaded.notes)


def _episodes(path: Path, seeds=(11, 12), turns: int = 3) -> list[list[float]]:
    """One group per turn of each seed's episode, as the selcube environment writes them; each group's
    G rollouts continue the same history (the turn's context)."""
    rng = random.Random(5)
    out = []
    with open(path, "w") as fh:
        for seed in seeds:
            history = [{"role": "system", "content": "Solve the cube."},
                       {"role": "environment", "content": f"cube {seed}"}]
            for turn in range(turns):
                scores = [round(rng.choice([0.64, -0.36]), 2) for _ in range(G)]
                chats = [[*history, {"role": "agent", "content": f"move {turn}.{i}"}] for i in range(G)]
                fh.write(_atropos_group(chats, scores, seed=seed))
                out.append(scores)
                history = [*history, {"role": "agent", "content": f"move {turn}.0"},
                           {"role": "environment", "content": f"cube {seed} after {turn}"}]
    return out


def test_atropos_turns_of_an_episode_are_kept_apart_and_seed_pooling_warns(tmp_path):
    f = tmp_path / "rubiks_process_results.jsonl"
    groups = _episodes(f)
    opts = LoadOptions(threshold=0.5)
    loaded = load_counts([f], opts)
    assert loaded.per_prompt.height == len(groups)  # one prompt per turn's context
    assert sorted(loaded.per_prompt["k"].to_list()) == sorted(sum(s >= 0.5 for s in g) for g in groups)
    assert any("4 of 6 groups are later turns of an episode" in n for n in loaded.notes)
    seeded = load_counts([f], LoadOptions(threshold=0.5, prompt_col="seed"))
    assert sorted(seeded.per_prompt["n"].to_list()) == [3 * G, 3 * G]
    assert any("--prompt-col seed pools groups drawn from different contexts" in n and "2 of its 2" in n
               for n in seeded.notes)


def test_atropos_refuses_a_group_col_it_does_not_read(capsys, tmp_path):
    f = tmp_path / "groups.jsonl"
    _episodes(f, seeds=(1,), turns=1)
    code, _, err = run(capsys, "scan", str(f), "--group-col", "seed", "--threshold", "0.5")
    assert code == 2 and err.count("\n") == 1 and "--group-col is not read for atropos dumps" in err


# ------------------------------------------------------------------ SkyRL step-wise evals
# NovaSky-AI/SkyRL a9564572eb8e91076be43c1bd5e4615e3de17265: evaluate_step_wise dumps concat_generator_outputs
# (every step: SkyRLGymGenerator.generate appends each trajectory's step_outputs in order, prompt_ids = the
# context so far) through dump_per_dataset_eval_results: one line per step with input_prompt =
# tokenizer.decode(prompt_token_ids), output_response, score, stop_reason, env_class, env_extras, data_source.


def _skyrl_step_wise(folder: Path, n: int = 3) -> dict[str, list[float]]:
    rng = random.Random(9)
    out = folder / "dumped_evals" / "global_step_10_evals"
    out.mkdir(parents=True)
    truth: dict[str, list[float]] = {}
    lines = []
    for q in range(4):
        prompt = f"<|im_start|>user\nFind the file {q}.<|im_end|>\n<|im_start|>assistant\n"
        for _ in range(n):
            context, steps = prompt, rng.randint(1, 3)
            solved = float(rng.random() < (q + 1) / 5)
            for t in range(steps):
                response = f"<tool>ls dir{rng.randint(0, 9)}</tool>"
                last = t == steps - 1
                lines.append({"input_prompt": context, "output_response": response,
                              "score": [0.0] * 3 + [solved if last else 0.0], "stop_reason": "stop",
                              "env_class": "search", "env_extras": {"q": q}, "data_source": "search_r1"})
                context = context + response + f"<|im_start|>user\nobservation {t}<|im_end|>\n<|im_start|>assistant\n"
            truth.setdefault(prompt, []).append(solved)
    with open(out / "search_r1.jsonl", "w") as f:
        for entry in lines:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    (out / "aggregated_results.jsonl").write_text(json.dumps({"eval/search_r1/avg_score": 0.4}) + "\n")
    return truth


def test_skyrl_step_wise_steps_fold_into_one_sample_per_trajectory(tmp_path):
    truth = _skyrl_step_wise(tmp_path)
    loaded = load_counts([tmp_path])
    got = {p: (n, k) for p, n, k in loaded.per_prompt.select("prompt", "n", "k").iter_rows()}
    assert got == {p: (len(r), int(sum(r))) for p, r in truth.items()}
    assert any("later steps of step-wise trajectories" in n and "12 trajectories" in n for n in loaded.notes)

