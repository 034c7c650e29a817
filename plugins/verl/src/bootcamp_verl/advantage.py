"""``bootcamp_grpo``: verl's GRPO advantage with the trajectories that failed for infrastructure reasons left out.

A trajectory whose episode failed outside the model's doing (a tool server down, a crashing tool or interaction)
has an all-zero ``response_mask`` (the agent loop masks it) and reward 0. Under verl's ``grpo`` that 0 still enters
its group's mean and standard deviation, so one lost tool server shifts the advantages of every other trajectory of
the prompt. This estimator computes each group's statistics over the trajectories that did not fail, exactly as
verl's ``compute_grpo_outcome_advantage`` does on them (it calls that function), and gives the failed ones
advantage 0. The all-zero mask is the only signal an estimator receives (``compute_advantage`` passes the rewards,
the mask, the group ids and the algorithm config).

Importing this module registers the estimator in verl's registry (``register_adv_est``); ``bootcamp verl export``
selects it with ``algorithm.adv_estimator=bootcamp_grpo``. It is imported wherever verl may need it: by the
``verl.plugins`` entry point (verl loads those on ``import verl``, in every process, the trainer's too), and by the
reward and agent-loop modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, compute_grpo_outcome_advantage, register_adv_est

__all__ = ["ESTIMATOR", "compute_bootcamp_grpo_advantage", "failed_trajectories"]

#: The name to give ``algorithm.adv_estimator``.
ESTIMATOR = "bootcamp_grpo"


def failed_trajectories(response_mask: torch.Tensor) -> torch.Tensor:
    """A boolean per trajectory: True where the whole response is masked (an infrastructure failure)."""
    return response_mask.sum(dim=-1) == 0


def compute_bootcamp_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                                    index: np.ndarray | None = None, epsilon: float = 1e-6,
                                    norm_adv_by_std_in_grpo: bool | None = None, config: Any = None,
                                    **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns) as verl's GRPO gives them on the trajectories that did not fail; zeros for the failed.

    ``norm_adv_by_std_in_grpo`` is taken from ``config`` (verl's ``AlgoConfig``, which is what the trainer passes to
    a registered estimator) unless given.
    """
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(config.get("norm_adv_by_std_in_grpo", True)) if config is not None else True
    if index is None:  # verl passes the group ids as ``index`` (its ``uid`` column); without them: one group
        index = np.zeros(token_level_rewards.shape[0], dtype=object)
    kept = ~failed_trajectories(response_mask)
    advantages = torch.zeros_like(token_level_rewards)
    if bool(kept.any()):
        rows = kept.nonzero(as_tuple=True)[0]
        kept_advantages, _ = compute_grpo_outcome_advantage(
            token_level_rewards=token_level_rewards[rows],
            response_mask=response_mask[rows],
            index=np.asarray(index, dtype=object)[rows.cpu().numpy()],
            epsilon=epsilon,
            norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
        )
        advantages[rows] = kept_advantages.to(advantages.dtype)
    return advantages, advantages


if ADV_ESTIMATOR_REGISTRY.get(ESTIMATOR) is not compute_bootcamp_grpo_advantage:
    register_adv_est(ESTIMATOR)(compute_bootcamp_grpo_advantage)
