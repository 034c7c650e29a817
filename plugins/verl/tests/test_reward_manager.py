"""Each rollout is scored on its own episode. The trainer repeats a prompt ``rollout.n`` times (``DataProto.repeat``),
which shares the row's ``extra_info`` dict between the rollouts, and verl's ``naive`` reward manager writes each
rollout's ``extra_fields`` into that dict in place before it scores: the exported ``BootcampRewardManager`` scores
each rollout on a copy. Both run through verl's ``RewardLoopWorker.compute_score_batch``, the path a colocated reward
takes (``RewardLoopManager.compute_rm_score``)."""

from __future__ import annotations

import asyncio
import json

import pytest

#: Rollouts of one prompt, right and wrong in turn (the last is wrong, so a shared episode scores every row 0).
ANSWERS = ("right", "wrong", "right", "wrong")


def answer_text(identity: dict, kind: str) -> str:
    value = identity["expected_result"] if kind == "right" else identity["expected_result"] + 1
    return f'Answer:\n```json\n{{"result": {value}}}\n```'


def repeated_rollouts(row: dict, tokenizer) -> tuple:
    """One example row repeated as the trainer repeats it, each rollout with its own response and extra_fields."""
    import numpy as np
    import torch
    from verl.protocol import DataProto

    from bootcamp_verl.agent_loop import EXTRA_FIELD_DEFAULTS

    identity = json.loads(row["reward_model"]["ground_truth"])
    texts = [answer_text(identity, kind) for kind in ANSWERS]
    width = max(len(tokenizer.encode(text, add_special_tokens=False)) for text in texts)
    prompt = DataProto.from_dict(
        tensors={"responses": torch.zeros(1, width, dtype=torch.long),
                 "attention_mask": torch.zeros(1, width, dtype=torch.long)},
        non_tensors={key: np.array([row[key]], dtype=object) for key in ("data_source", "reward_model", "extra_info")},
    )
    batch = prompt.repeat(repeat_times=len(ANSWERS), interleave=True)
    fields = []
    for index, text in enumerate(texts):
        ids = tokenizer.encode(text, add_special_tokens=False)
        batch.batch["responses"][index, : len(ids)] = torch.tensor(ids)
        batch.batch["attention_mask"][index, : len(ids)] = 1
        messages = [*row["raw_prompt"], {"role": "assistant", "content": text}]
        fields.append({**EXTRA_FIELD_DEFAULTS, "output": text, "messages": messages, "tool_rewards": [],
                       "turn_scores": [], "finish_reason": "answered"})
    batch.non_tensor_batch["tool_extra_fields"] = np.array(fields, dtype=object)
    return batch


def scores(config, batch) -> list[float]:
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    async def score():
        worker = RewardLoopWorker(config)  # inside the running loop, as a Ray actor builds it
        return await worker.compute_score_batch(batch)

    return [result["reward_score"] for result in asyncio.run(score())]


@pytest.fixture
def reward_config(model_dir, main_ppo_config):
    def compose(*manager: str):
        from bootcamp_verl.export import REWARD_PATH

        return main_ppo_config([f"actor_rollout_ref.model.path={model_dir}",
                                f"reward.custom_reward_function.path={REWARD_PATH}", *manager])

    return compose


def test_the_rollouts_of_a_prompt_share_one_extra_info_dict(dataset_rows, tokenizer):
    batch = repeated_rollouts(dataset_rows[0], tokenizer)
    assert len({id(info) for info in batch.non_tensor_batch["extra_info"]}) == 1


def test_each_rollout_of_a_prompt_is_scored_on_its_own_episode(dataset_rows, tokenizer, reward_config):
    from bootcamp_verl.export import REWARD_MANAGER_OVERRIDES

    batch = repeated_rollouts(dataset_rows[0], tokenizer)
    config = reward_config(*REWARD_MANAGER_OVERRIDES)
    assert config.reward.reward_manager.name == "BootcampRewardManager"
    assert scores(config, batch) == [1.0, 0.0, 1.0, 0.0]
    # nothing was written into the dataset's extra_info
    assert "messages" not in batch.non_tensor_batch["extra_info"][0]


def test_verls_naive_manager_scores_every_rollout_on_the_last_ones_episode(dataset_rows, tokenizer, reward_config):
    # why the export selects BootcampRewardManager: naive's in-place update leaves the shared dict with the last
    # rollout's episode (a wrong answer) before any of them is scored
    batch = repeated_rollouts(dataset_rows[0], tokenizer)
    config = reward_config()
    assert config.reward.reward_manager.name == "naive"
    assert scores(config, batch) == [0.0, 0.0, 0.0, 0.0]
    assert batch.non_tensor_batch["extra_info"][0]["output"] == answer_text(
        json.loads(dataset_rows[0]["reward_model"]["ground_truth"]), ANSWERS[-1])
