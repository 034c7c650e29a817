"""The conformance kit over every generator (configs/examples/all_tasks.yaml), two records of each."""

from pathlib import Path

import bootcamp_reasoning_gym

from bootcamp_core.testing import BootcampConformance

ALL_TASKS = Path(bootcamp_reasoning_gym.__file__).parent / "configs" / "examples" / "all_tasks.yaml"


class TestConformance(BootcampConformance):
    namespace = "reasoning_gym"
    seeds = (0, 1)
    samples = 2

    def instruction_config(self, registry):
        import yaml

        from bootcamp_core.data.config import parse_instruction_config

        return parse_instruction_config(
            yaml.safe_load(ALL_TASKS.read_text()), path=ALL_TASKS, name=self.namespace, namespace=self.namespace,
            overrides={"split_samples": {"train": self.samples, "test": 2}, "gen_parquet": False, "shuffle": False},
        )

    def solution(self, identity):
        return f"\\boxed{{{identity['entry']['answer']}}}"
