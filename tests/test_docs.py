"""The README stays true: a section per hook with a runnable snippet, and the quick start's main job works."""

from __future__ import annotations

import inspect
import json
import random
import re
import subprocess
import sys
import types
from pathlib import Path

import anyio

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from bootcamp_core.plugin import hookspecs
from bootcamp_core.plugin.loader import KINDS, Registry

README = Path(__file__).resolve().parents[1] / "README.md"


def hook_names() -> list[str]:
    return [name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("bootcamp_")]


def guide() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Writing a bootcamp", 1)[1].split("\n## ", 1)[0]


def test_every_hook_has_a_section_headed_by_its_signature():
    headings = re.findall(r"^### `(.+)`$", guide(), flags=re.MULTILINE)
    assert sorted(hook_names()) == sorted({kind[0] for kind in KINDS.values()})
    for name in hook_names():
        assert f"{name}(register)" in headings, f"README has no section for the hook {name}"


def load_guide_plugin() -> types.ModuleType:
    module = types.ModuleType("readme_bootcamp")
    for snippet in re.findall(r"```python\n(.*?)```", guide(), flags=re.DOTALL):
        exec(compile(snippet, str(README), "exec"), module.__dict__)
    return module


def test_the_guide_snippets_form_a_working_bootcamp():
    registry = Registry(strict=True)
    info = registry.add_plugin(load_guide_plugin(), "readme")
    assert info.error is None
    for kind in KINDS:
        assert info.components[kind], f"the README's snippets register no {kind}"
    generator = registry.component("generator", "readme/sum")
    rng = random.Random(0)
    identity = generator.case_generator(rng)
    prompt = generator.prompt_func(identity, rng)
    reward = registry.component("reward", "readme/sum")
    tool = registry.component("tool", "readme/adder")
    interaction = registry.component("interaction", "readme/nudge")
    agent = registry.component("reference_agent", "readme/adding_agent")

    async def episode() -> float:
        messages = [{"role": "user", "content": prompt}]
        await tool.create("episode", identity=identity)
        await interaction.start_interaction("episode", identity=identity)
        call = await agent.act(messages, [tool.openai_schema()], identity, random.Random(1))
        arguments = json.loads(call["tool_calls"][0]["function"]["arguments"])
        output, _, _ = await tool.execute("episode", arguments)
        messages += [call, {"role": "tool", "tool_call_id": "call_0", "content": output}]
        answer = await agent.act(messages, [tool.openai_schema()], identity, random.Random(1))
        messages.append(answer)
        terminate, _, _, _ = await interaction.generate_response("episode", messages)
        assert terminate
        await tool.release("episode")
        await interaction.finalize_interaction("episode")
        return reward.verify_score(answer["content"], identity, messages=messages, tool_rewards=[], tool_scores={},
                                   turn_scores=[])

    assert anyio.run(episode) == 1.0


def test_quick_start_main_job_is_the_offline_demo(tmp_path: Path):
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quick, flags=re.DOTALL)
    assert len(commands) == 2
    main_job = commands[0].split("&&", 1)[1].strip().split()
    assert main_job == ["bootcamp", "demo"]
    result = subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", *main_job[1:], "-q"], capture_output=True,
                            text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = json.loads(subprocess.run([sys.executable, "-m", "bootcamp_core.cli.main", "plugins", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    played = [item["namespace"] for item in listed if item["components"].get("reference_agent")]
    assert played
    results = [json.loads(line) for line in (tmp_path / "demo" / "eval" / "results.jsonl").read_text().splitlines()]
    assert {line["data_source"] for line in results} == {f"bootcamp/{namespace}" for namespace in played}
    assert (tmp_path / "demo" / "eval" / "report.html").is_file()
    assert "hatch run test:all" in commands[1]
    assert "hatch run test:all" in (README.parent / ".ci" / "run").read_text()


def core_commands() -> set[str]:
    """Core's commands: the `bootcamp.commands` entry points core/pyproject.toml declares, and its parser's."""
    pyproject = tomllib.loads((README.parent / "core" / "pyproject.toml").read_text(encoding="utf-8"))
    declared = pyproject["project"].get("entry-points", {}).get("bootcamp.commands", {})
    from bootcamp_core.cli.main import build_parser

    return set(declared) | set(build_parser().get_default("builtin_commands") or ())


def test_every_builtin_command_is_documented():
    text = README.read_text(encoding="utf-8")
    assert {"check", "generate", "plugins"} <= core_commands()
    for command in sorted(core_commands()):
        assert f"`bootcamp {command}" in text, f"README does not document `bootcamp {command}`"


def python_api_snippet() -> str:
    section = README.read_text(encoding="utf-8").split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(snippets) == 1, "the Python API section shows one runnable snippet"
    return snippets[0]


def test_the_python_api_snippet_generates_evaluates_and_reads_results(tmp_path: Path):
    result = subprocess.run([sys.executable, "-c", python_api_snippet()], capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in (tmp_path / "runs" / "reference" / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(line["score"] == 1.0 for line in lines)
    assert (tmp_path / "data" / "example_test.jsonl").is_file()
    assert (tmp_path / "runs" / "reference" / "report.html").is_file()
    printed = result.stdout.splitlines()
    assert printed[0] == "mean score 1.00, pass@1 1.00"
    assert len(printed) == 5 and all(line.startswith("example/arithmetic 1.0 ") for line in printed[1:])
