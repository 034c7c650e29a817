"""The conformance kit: base test classes a bootcamp subclasses by setting a few attributes.

In a bootcamp's ``tests/test_conformance.py``::

    from bootcamp_core.testing import BootcampConformance

    class TestConformance(BootcampConformance):
        namespace = "my_task"

        def solution(self, identity):          # optional: a final answer that solves the task
            return f"The answer is {identity['answer']}"

Each test runs one of the plain checks of :mod:`bootcamp_core.cli.check`, which ``bootcamp check NAMESPACE`` runs
without pytest; here rewards also score hypothesis-drawn garbage.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from bootcamp_core.cli.check import Conformance


class BootcampConformance(Conformance):
    """Checks every component of one installed bootcamp against the plugin contract, one pytest test per check."""

    def test_plugin_loads_and_registers_a_generator(self):
        self.check_plugin_loads_and_registers_a_generator()

    def test_package_version_matches_distribution(self):
        self.check_package_version_matches_distribution()

    def test_loading_the_plugin_stays_light(self):
        self.check_loading_the_plugin_stays_light()

    def test_generators_draw_only_from_the_rng_passed_in(self):
        self.check_generators_draw_only_from_the_rng_passed_in()

    def test_generation_is_deterministic(self, tmp_path):
        self.check_generation_is_deterministic(tmp_path)

    def test_identity_survives_a_json_round_trip(self):
        self.check_identity_survives_a_json_round_trip()

    def test_hidden_fields_are_identity_keys(self):
        self.check_hidden_fields_are_identity_keys()

    def test_prompts_are_not_empty(self):
        self.check_prompts_are_not_empty()

    def test_tool_parameters_are_valid_json_schema(self):
        self.check_tool_parameters_are_valid_json_schema()

    def test_tool_lifecycle(self):
        self.check_tool_lifecycle()

    def test_rewards_stay_in_range_and_never_raise_on_garbage(self):
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        from bootcamp_core.cli.check import GARBAGE

        self.check_rewards_stay_in_range_and_never_raise_on_garbage()
        garbage = st.one_of(st.text(max_size=300), st.sampled_from(GARBAGE))

        def check_in_range(reward, identity):
            @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
            @given(output=garbage)
            def scores_in_range(output):
                self.assert_score_in_range(reward, identity, output)

            return scores_in_range

        for _, reward, identity in self.reward_cases():
            check_in_range(reward, identity)()

    def test_rewards_and_interactions_survive_hostile_outputs(self):
        self.check_rewards_and_interactions_survive_hostile_outputs()

    def test_solution_scores_one(self):
        self.check_solution_scores_one()

    def test_interactions_terminate(self):
        self.check_interactions_terminate()

    def test_reference_agents_play_registered_generators(self):
        self.check_reference_agents_play_registered_generators()


def check_bootcamp(namespace: str, pytest_args: list[str] | None = None) -> int:
    """Run :class:`BootcampConformance` under pytest against an installed bootcamp; returns pytest's exit code.

    ``bootcamp check`` runs the same checks without pytest (:func:`bootcamp_core.cli.check.run_checks`).
    """
    try:
        import pytest  # noqa: F401
    except ImportError:
        from bootcamp_core.plugin.errors import BootcampError

        raise BootcampError('check_bootcamp needs the testing extra: pip install "bootcamp-core[testing]"; '
                            "`bootcamp check` needs nothing more") from None
    from bootcamp_core.plugin.loader import get_registry

    get_registry().namespace_plugin(namespace)  # a clear error for an unknown or broken namespace
    with tempfile.TemporaryDirectory(prefix="bootcamp-check-") as folder:
        root = Path(folder)
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        test_file = root / f"test_{namespace}_conformance.py"
        test_file.write_text(
            "from bootcamp_core.testing import BootcampConformance\n\n\n"
            f"class TestConformance(BootcampConformance):\n    namespace = {namespace!r}\n",
            encoding="utf-8",
        )
        command = [sys.executable, "-m", "pytest", str(test_file), "-c", str(root / "pytest.ini"), "--rootdir", folder,
                   "-p", "no:cacheprovider", "-q", *(pytest_args or [])]
        return subprocess.run(command, check=False).returncode
