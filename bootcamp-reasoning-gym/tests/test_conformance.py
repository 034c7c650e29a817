"""The conformance kit over every generator (configs/examples/all_tasks.yaml), two records of each."""

from pathlib import Path

import bootcamp_reasoning_gym

from bootcamp_core.testing import BootcampConformance

ALL_TASKS = Path(bootcamp_reasoning_gym.__file__).parent / "configs" / "examples" / "all_tasks.yaml"


class TestConformance(BootcampConformance):
    namespace = "reasoning_gym"
    seeds = (0, 1)
    samples = 2
    config_path = ALL_TASKS

    def solution(self, identity):
        return f"\\boxed{{{identity['entry']['answer']}}}"
