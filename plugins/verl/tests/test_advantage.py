"""``bootcamp_grpo``: verl's GRPO with the failed trajectories (all-zero response mask) out of the group statistics."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

#: rewards per trajectory and their GRPO groups: prompts a (4 rollouts), b (3) and c (2)
SCORES = [1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 1.0, 0.0]
GROUPS = ["a", "a", "a", "a", "b", "b", "b", "c", "c"]
LENGTH = 6


def batch(scores, groups, lengths=None):
    """(token_level_rewards, response_mask, index) as verl's trainer builds them: the score on the last response
    token; responses of different lengths."""
    count = len(scores)
    lengths = lengths or [2 + position % (LENGTH - 2) for position in range(count)]
    mask = torch.zeros(count, LENGTH)
    rewards = torch.zeros(count, LENGTH)
    for row, (score, length) in enumerate(zip(scores, lengths, strict=True)):
        mask[row, :length] = 1
        if length:
            rewards[row, length - 1] = score
    return rewards, mask, np.array(groups, dtype=object)


def with_failures(failed: list[int]):
    """The batch with the trajectories at ``failed`` failed: response mask all 0, reward 0 (as the agent loop and
    compute_score leave an infrastructure failure)."""
    lengths = [0 if row in failed else 2 + row % (LENGTH - 2) for row in range(len(SCORES))]
    scores = [0.0 if row in failed else score for row, score in enumerate(SCORES)]
    return batch(scores, GROUPS, lengths)


def without(rows: list[int]):
    kept = [row for row in range(len(SCORES)) if row not in rows]
    return kept, batch([SCORES[row] for row in kept], [GROUPS[row] for row in kept],
                       [2 + row % (LENGTH - 2) for row in kept])


def test_verl_finds_it_by_name_once_the_reward_is_loaded():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    import bootcamp_verl.reward  # noqa: F401  (what verl's reward workers load)
    from bootcamp_verl.advantage import ESTIMATOR, compute_bootcamp_grpo_advantage
    from bootcamp_verl.export import TRAINING_DEFAULTS

    assert get_adv_estimator_fn(ESTIMATOR) is compute_bootcamp_grpo_advantage
    assert f"algorithm.adv_estimator={ESTIMATOR}" in TRAINING_DEFAULTS


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("failed", [[1], [4, 6], [3]])
def test_a_failed_trajectory_leaves_the_others_advantages_exactly_as_without_it(failed, norm):
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    from bootcamp_verl.advantage import compute_bootcamp_grpo_advantage

    rewards, mask, index = with_failures(failed)
    advantages, returns = compute_bootcamp_grpo_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=norm)
    kept, (kept_rewards, kept_mask, kept_index) = without(failed)
    expected, _ = compute_grpo_outcome_advantage(kept_rewards, kept_mask, kept_index, norm_adv_by_std_in_grpo=norm)
    assert torch.equal(advantages[kept], expected)  # bit for bit
    assert torch.equal(returns, advantages)
    assert not advantages[failed].any()
    # verl's own GRPO lets the failure's 0 shift its group: the comparison above can fail
    plain, _ = compute_grpo_outcome_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=norm)
    group = [row for row in kept if GROUPS[row] == GROUPS[failed[0]]]
    assert not torch.equal(plain[group], advantages[group])


def test_without_failures_it_is_verls_grpo():
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    from bootcamp_verl.advantage import compute_bootcamp_grpo_advantage

    rewards, mask, index = batch(SCORES, GROUPS)
    assert torch.equal(compute_bootcamp_grpo_advantage(rewards, mask, index)[0],
                       compute_grpo_outcome_advantage(rewards, mask, index)[0])


def test_verls_trainer_step_uses_it_with_the_algorithm_config():
    """verl's compute_advantage (the trainer's call) with the exported name and verl's AlgoConfig."""
    from verl.protocol import DataProto
    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from bootcamp_verl.advantage import ESTIMATOR

    rewards, mask, index = with_failures([0, 8])
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": index})
    config = AlgoConfig(adv_estimator=ESTIMATOR, norm_adv_by_std_in_grpo=False)
    advantages = compute_advantage(data, adv_estimator=config.adv_estimator, config=config).batch["advantages"]
    kept, (kept_rewards, kept_mask, kept_index) = without([0, 8])
    expected, _ = compute_grpo_outcome_advantage(kept_rewards, kept_mask, kept_index, norm_adv_by_std_in_grpo=False)
    assert torch.equal(advantages[kept], expected) and not advantages[[0, 8]].any()
    # a group left with one trajectory gets verl's single-sample rule (mean 0, std 1); all failed: all zero
    rewards, mask, index = batch([0.0, 0.0], ["x", "x"], [0, 0])
    data = DataProto.from_dict(tensors={"token_level_rewards": rewards, "response_mask": mask},
                               non_tensors={"uid": index})
    assert not compute_advantage(data, adv_estimator=ESTIMATOR, config=config).batch["advantages"].any()


def test_import_verl_registers_it_in_a_fresh_process():
    """verl loads its ``verl.plugins`` entry points on ``import verl``, so the trainer's process knows the name
    without importing anything of ours."""
    code = ("import verl\nfrom verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
            "print(get_adv_estimator_fn('bootcamp_grpo').__module__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "bootcamp_verl.advantage"
