"""verl's own pipeline on CPU: RLHFDataset reads the exported parquet, AgentLoopWorker runs our agent loop and tools
from the exported configs, and its streaming reward goes through RewardLoopWorker to compute_score."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml


def test_rlhf_dataset_reads_a_mixed_export(dataset_rows, exported):
    assert [row["data_source"] for row in dataset_rows] == ["bootcamp/example"] * 4 + ["bootcamp/mini"] * 3
    for row in dataset_rows:
        assert row["agent_name"] == "bootcamp_agent"
        # verl looks up a called tool's kwargs by name: every name is there, never None
        assert set(row["tools_kwargs"]) == {"calculator", "counter"}
        assert all(isinstance(kwargs["create_kwargs"]["identity"], str) for kwargs in row["tools_kwargs"].values())
        assert row["extra_info"]["tool_selection"] in (["calculator"], ["counter"])
        assert row["raw_prompt"] == row["prompt"]


def test_rlhf_dataset_measures_prompts_with_the_exported_tool_schemas(exported, tokenizer, trainer_config):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    dataset = RLHFDataset([str(path) for path in exported.parquet_files], tokenizer, trainer_config.data)
    written = [entry["tool_schema"] for entry in yaml.safe_load(exported.tool_config.read_text())["tools"]]
    assert dataset.tool_schemas == written


def scripted_policy(prompt: str) -> str:
    """Solves either bootcamp from the prompt it is shown: one tool call, then the answer from the tool's output."""
    tool_outputs = re.findall(r"<\|im_start\|>tool\n(.*?)<\|im_end\|>", prompt, re.DOTALL)
    if "Use the counter until it shows" in prompt:
        if tool_outputs:
            return "done"
        target = int(re.search(r"until it shows (\d+)", prompt).group(1))
        return "<tool_call>\n" + json.dumps({"name": "counter", "arguments": {"steps": f"[{target}]"}}) + "\n</tool_call>"
    if tool_outputs:
        return f'Answer:\n```json\n{{"result": {tool_outputs[-1]}}}\n```'
    expression = re.search(r"left to right\):\n\n(.*?)\n\n", prompt).group(1)
    return "<tool_call>\n" + json.dumps({"name": "calculator", "arguments": {"expression": expression}}) + "\n</tool_call>"


def test_agent_loop_worker_runs_a_mixed_batch_and_streams_rewards(exported, tokenizer, trainer_config,
                                                                  scripted_server):
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    dataset = RLHFDataset([str(path) for path in exported.parquet_files], tokenizer, trainer_config.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[index] for index in range(len(dataset))]))

    async def rollout():
        reward_worker = RewardLoopWorker(trainer_config)
        # what AgentLoopWorker calls on a Ray actor handle: handle.compute_score.remote(data)
        handle = SimpleNamespace(compute_score=SimpleNamespace(remote=reward_worker.compute_score))
        worker = AgentLoopWorker(trainer_config, scripted_server(scripted_policy), reward_loop_worker_handles=[handle])
        return worker, await worker.generate_sequences(batch)

    worker, output = asyncio.run(rollout())

    assert [type(tool).__name__ for tool in worker.tools] == ["BootcampTool", "BootcampTool"]
    assert output.batch["rm_scores"].sum(dim=1).tolist() == [1.0] * 7
    info = output.non_tensor_batch
    assert info["bootcamp_error"].tolist() == [0.0] * 7 and info["bootcamp_tool_calls"].tolist() == [1.0] * 7
    assert [scores for scores in info["tool_scores"]] == [{"calculator": 1.0}] * 4 + [{"counter": 1.0}] * 3
    assert info["finish_reason"].tolist() == ["terminated"] * 4 + ["answered"] * 3
    assert info["turn_scores"].tolist() == [[1.0]] * 4 + [[]] * 3
    # the tool's answer is the environment's, not trained on
    responses, masks = output.batch["responses"], output.batch["response_mask"]
    for response, mask in zip(responses, masks, strict=True):
        environment = tokenizer.decode(response[(mask == 0) & (response != tokenizer.pad_token_id)])
        assert "<|im_start|>tool\n" in environment
        assert "<tool_call>" in tokenizer.decode(response[mask == 1])
    assert all(not tool.open_instances for tool in worker.tools)


LOAD_TOOLS = (
    "import json, sys\n"
    "from verl.tools.tool_registry import initialize_tools_from_config\n"
    "tools = initialize_tools_from_config(sys.argv[1])\n"
    "print(json.dumps([[type(t).__module__ + '.' + type(t).__name__, t.name, t.config['tool_id'],\n"
    "                   t.tool_schema.model_dump(exclude_unset=True, exclude_none=True)] for t in tools]))\n"
)


@pytest.mark.slow
def test_verls_tool_loader_reads_the_tool_config_in_a_fresh_process(exported):
    result = subprocess.run([sys.executable, "-c", LOAD_TOOLS, str(exported.tool_config)], check=False,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    # nothing but our line on stdout: the adapter does not print every schema as BaseTool does
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(result.stdout.strip().splitlines()) == 1
    written = yaml.safe_load(exported.tool_config.read_text())["tools"]
    assert loaded == [["bootcamp_verl.tool.BootcampTool", entry["tool_schema"]["function"]["name"],
                       entry["config"]["tool_id"], entry["tool_schema"]] for entry in written]
