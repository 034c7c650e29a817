"""The plugin's hook implementations: the entry-point target of the ``bootcamp`` group."""

from __future__ import annotations

from bootcamp_core import Register, hookimpl
from bootcamp_reasoning_gym import datasets
from bootcamp_reasoning_gym.agent import EntryAnswerAgent
from bootcamp_reasoning_gym.generator import generator_class
from bootcamp_reasoning_gym.interaction import FeedbackInteraction
from bootcamp_reasoning_gym.reward import ReasoningGymReward


@hookimpl
def bootcamp_register_task_generators(register: Register) -> None:
    # from reasoning-gym's own registry: a new release's datasets need no change here
    for name in datasets.dataset_names():
        register(generator_class(name))


@hookimpl
def bootcamp_register_interactions(register: Register) -> None:
    register(FeedbackInteraction)


@hookimpl
def bootcamp_register_rewards(register: Register) -> None:
    register(ReasoningGymReward)


@hookimpl
def bootcamp_register_reference_agents(register: Register) -> None:
    agent = type("EntryAnswerAgent", (EntryAnswerAgent,),
                 {"generators": tuple(datasets.dataset_names()), "__module__": EntryAnswerAgent.__module__})
    register(agent)
