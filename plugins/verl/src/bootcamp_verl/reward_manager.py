"""``BootcampRewardManager``: verl's ``naive`` reward manager, with each row's own ``extra_info``.

verl's ``naive``, ``rate_limited`` and ``remote`` reward managers merge the agent loop's ``extra_fields`` into the
row's ``extra_info`` in place (``extra_info.update(tool_extra_fields)``), then wait (decoding the response in an
executor) before ``compute_score`` reads it. The trainer repeats each prompt ``rollout.n`` times with numpy's
``repeat``, which copies references, so the rollouts of one prompt share one ``extra_info`` dict, and a chunk of
the batch sent to a reward worker keeps that sharing (pickle preserves identity). Rows scored concurrently then
overwrite each other's episode, and a rollout is scored on another rollout's messages and tool scores. This
manager gives each row a shallow copy of its ``extra_info`` first and is otherwise ``naive``.

``bootcamp verl export`` selects it (``reward.reward_manager.source=importlib``, ``module.path`` this module,
``name`` :data:`MANAGER_NAME`), which works in every process without a registry.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

__all__ = ["MANAGER_NAME", "MANAGER_PATH", "BootcampRewardManager", "with_own_extra_info"]

#: What the export gives ``reward.reward_manager.module.path`` and ``reward.reward_manager.name``.
MANAGER_PATH = "pkg://bootcamp_verl.reward_manager"
MANAGER_NAME = "BootcampRewardManager"


def with_own_extra_info(data: DataProto) -> DataProto:
    """``data`` with a shallow copy of each row's ``extra_info`` dict, so what a manager writes into one row's stays
    there; every other column is shared, unchanged."""
    infos = data.non_tensor_batch.get("extra_info")
    if infos is None:
        return data
    own = np.empty(len(infos), dtype=object)
    for row, info in enumerate(infos):
        own[row] = dict(info) if isinstance(info, dict) else info
    return DataProto(batch=data.batch, non_tensor_batch={**data.non_tensor_batch, "extra_info": own},
                     meta_info=data.meta_info)


class BootcampRewardManager(NaiveRewardManager):
    """``naive`` on a copy of the row's ``extra_info`` (see the module docstring)."""

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        return await super().run_single(with_own_extra_info(data))
