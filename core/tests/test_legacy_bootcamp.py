"""A bootcamp rendered by the `bootcamp new` of bootcamp-core 0.1 before the core was split into layers still loads
and plays: it imports old paths (``bootcamp_core.hookspecs.Register``, ``bootcamp_core.rollout.message_text``), which
warn but work until 0.2.

``data/legacy_bootcamp/`` holds that rendering (bootcamp-example of then, under the namespace ``legacy_arith``); the
script below uses old paths too, as that bootcamp's own tests did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bootcamp_core.testing import write_distribution

LEGACY = Path(__file__).parent / "data" / "legacy_bootcamp"

SCRIPT = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import anyio
    from bootcamp_core.plugins import Registry
    from bootcamp_core.generate import config_for_bootcamp, iter_records
    from bootcamp_core.policies import ReferencePolicy
    from bootcamp_core.rollout import run_episode

    registry = Registry.from_entry_points(strict=True)
    config = config_for_bootcamp("legacy_arith", registry, overrides={"split_samples": "test:5"})
    records = list(iter_records(config, "test", registry))
    policy = ReferencePolicy(registry)
    policy.check(records)

    async def play():
        return [await run_episode(record, policy, registry=registry) for record in records]

    results = anyio.run(play)
print(json.dumps({
    "ids": {kind: registry.ids(kind) for kind in ("generator", "tool", "interaction", "reward", "reference_agent")},
    "records": [record["extra_info"]["bootcamp"]["generator"] for record in records],
    "results": [[result.score, result.success, result.finish_reason, [call.name for call in result.tool_calls],
                 result.turn_scores] for result in results],
    "warnings": sorted({str(w.message).split(" moved")[0] for w in caught if w.category is DeprecationWarning}),
}))
"""


def installed(folder: Path) -> Path:
    """The rendered bootcamp written as an installed distribution into ``folder``."""
    modules = {str(path.relative_to(LEGACY)): path.read_text(encoding="utf-8")
               for path in sorted(LEGACY.rglob("*")) if path.is_file()}
    write_distribution(folder, "bootcamp-legacy-arith", "0.1.0",
                       entry_points={"bootcamp": {"legacy_arith": "bootcamp_legacy_arith.hooks"}}, modules=modules)
    return folder


def test_the_rendering_imports_old_paths():
    sources = "".join(path.read_text(encoding="utf-8") for path in LEGACY.rglob("*.py"))
    assert "from bootcamp_core.hookspecs import Register" in sources
    assert "from bootcamp_core.rollout import message_text" in sources


def test_a_bootcamp_of_the_old_template_generates_and_plays_with_deprecation_warnings_only(tmp_path):
    site = installed(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "BOOTCAMP_LOAD_PLUGINS": "legacy_arith", "BOOTCAMP_STRICT_PLUGINS": "1"}
    env.pop("BOOTCAMP_BLOCK_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ids"] == {"generator": ["legacy_arith/arithmetic"], "tool": ["legacy_arith/calculator"],
                             "interaction": ["legacy_arith/feedback"], "reward": ["legacy_arith/arithmetic"],
                             "reference_agent": ["legacy_arith/calculator_agent"]}
    assert report["records"] == ["legacy_arith/arithmetic"] * 5
    for score, success, finish_reason, calls, turn_scores in report["results"]:
        # the tool answered, the interaction judged the answer right and ended the episode, the reward scored it
        assert (score, success, finish_reason, calls, turn_scores) == (1.0, True, "terminated", ["calculator"], [1.0])
    for old in ("bootcamp_core.hookspecs.Register", "bootcamp_core.rollout.message_text",
                "bootcamp_core.plugins.Registry", "bootcamp_core.generate.iter_records"):
        assert old in report["warnings"]
