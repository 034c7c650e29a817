"""Shared fixtures: two small bootcamps beside bootcamp-example, their datasets and export, a byte-level tokenizer with
a ChatML/hermes chat template built here (no downloads), a scripted LLM server speaking verl's token-in/token-out
protocol, and verl's own ``main_ppo`` Hydra config."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from bootcamp_core import get_registry
from bootcamp_core.testing import generate_dataset, reset_registry, write_distribution

#: A second bootcamp: a counter whose steps parameter is an array (verl would drop its items), a tool score that
#: says whether the counter reached the target, and a reward that scores from that tool score. A step of 0 hangs; a
#: negative step fails as a lost tool server does; config ``delay_s`` makes each call wait between reading and
#: writing the count, so calls that overlap lose an update.
MINI_HOOKS = '''
import asyncio

from bootcamp_core import InfrastructureError, Reward, TaskGenerator, Tool, hookimpl

class CountGenerator(TaskGenerator):
    name = "count"
    tools = ("counter",)
    reward = "count"
    def case_generator(self, rng):
        return {"target": rng.randint(3, 9)}
    def prompt_func(self, identity, rng):
        return f"Use the counter until it shows {identity['target']}, then say done."

class CounterTool(Tool):
    name = "counter"
    description = "Adds the steps to the counter and shows it."
    parameters = {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": {"type": "integer"}, "description": "Amounts to add."}},
        "required": ["steps"],
    }
    async def create(self, instance_id=None, identity=None, **kwargs):
        instance_id = await super().create(instance_id, identity, **kwargs)
        self.state(instance_id)["count"] = 0
        return instance_id
    async def execute(self, instance_id, parameters, **kwargs):
        steps = parameters["steps"]
        if not isinstance(steps, list) or not all(isinstance(step, int) for step in steps):
            raise ValueError("steps must be a list of integers")
        if 0 in steps:  # a step of 0 hangs: a tool that never answers
            await asyncio.sleep(3600)
        if any(step < 0 for step in steps):
            raise InfrastructureError("the tool server went away")
        state = self.state(instance_id)
        count = state["count"]
        if self.config.get("delay_s"):
            await asyncio.sleep(self.config["delay_s"])
        state["count"] = count + sum(steps)
        return f"count={state['count']}", 0.0, {"count": state["count"]}
    async def calc_reward(self, instance_id, **kwargs):
        state = self.state(instance_id)
        return 1.0 if state["count"] == state["identity"]["target"] else 0.0

class CountReward(Reward):
    name = "count"
    def extract_output(self, output):
        return "done" if "done" in output.lower() else None
    def verify_correction(self, extracted, identity, **kwargs):
        return float(kwargs["tool_scores"].get("counter", 0.0))

@hookimpl
def bootcamp_register_task_generators(register):
    register(CountGenerator)

@hookimpl
def bootcamp_register_tools(register):
    register(CounterTool)

@hookimpl
def bootcamp_register_rewards(register):
    register(CountReward)
'''

#: A third bootcamp whose tool is also named "calculator", like bootcamp-example's.
CLASH_HOOKS = '''
from bootcamp_core import Reward, TaskGenerator, Tool, hookimpl

class EchoGenerator(TaskGenerator):
    name = "echo"
    tools = ("calculator",)
    reward = "echo"
    def case_generator(self, rng):
        return {"word": rng.choice(["a", "b"])}
    def prompt_func(self, identity, rng):
        return f"Say {identity['word']}."

class OtherCalculator(Tool):
    name = "calculator"
    description = "Not the example's calculator."
    parameters = {"type": "object", "properties": {"x": {"type": "number"}}}
    async def execute(self, instance_id, parameters, **kwargs):
        return str(parameters.get("x")), 0.0, {}

class EchoReward(Reward):
    name = "echo"
    def extract_output(self, output):
        return output.strip() or None
    def verify_correction(self, extracted, identity, **kwargs):
        return float(extracted == identity["word"])

@hookimpl
def bootcamp_register_task_generators(register):
    register(EchoGenerator)

@hookimpl
def bootcamp_register_tools(register):
    register(OtherCalculator)

@hookimpl
def bootcamp_register_rewards(register):
    register(EchoReward)
'''

#: Small expressions keep the byte-level prompts short.
EXAMPLE_CONFIG = """
instruction_generators:
  small:
    config: {min_value: 100, max_value: 999, min_operands: 2, max_operands: 3}
    generation_ratio: 1
global_config: {class_name: example/arithmetic, default_seed: 7, default_split_samples: "train:4,test:2",
                shuffle: false, gen_parquet: false}
"""
MINI_CONFIG = """
instruction_generators:
  count: {config: {}, generation_ratio: 1}
global_config: {class_name: mini/count, default_seed: 3, default_split_samples: "train:3,test:1", shuffle: false,
                gen_parquet: false}
"""
CLASH_CONFIG = """
instruction_generators:
  echo: {config: {}, generation_ratio: 1}
global_config: {class_name: clash/echo, default_seed: 1, default_split_samples: "train:2", shuffle: false,
                gen_parquet: false}
"""

#: ChatML with tools and hermes tool calls, the shape of Qwen2.5's template (arguments rendered from dicts, as verl
#: passes them).
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "# Tools\n<tools>{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}\n</tools><|im_end|>\n"
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
    "{% for message in messages %}"
    "{% if message.role == 'system' and loop.first %}"
    "{% elif message.role == 'assistant' %}<|im_start|>assistant\n{{ message.content or '' }}"
    "{% for call in message.tool_calls or [] %}<tool_call>\n"
    "{\"name\": \"{{ call.function.name }}\", \"arguments\": {{ call.function.arguments | tojson }}}\n</tool_call>"
    "{% endfor %}<|im_end|>\n"
    "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="session", autouse=True)
def test_bootcamps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The mini and clash bootcamps installed (on sys.path, and PYTHONPATH for subprocesses) for the whole run."""
    folder = tmp_path_factory.mktemp("site")
    write_distribution(
        folder, "bootcamp-verl-testkit",
        entry_points={"bootcamp": {"mini": "verl_mini_hooks", "clash": "verl_clash_hooks"}},
        modules={"verl_mini_hooks.py": MINI_HOOKS, "verl_clash_hooks.py": CLASH_HOOKS},
    )
    sys.path.insert(0, str(folder))
    reset_registry()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
        patch.setenv("BOOTCAMP_STRICT_PLUGINS", "1")
        # nothing is downloaded, and Hugging Face datasets caches what verl's RLHFDataset reads in the test folders
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            patch.setenv(name, "1")
        patch.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))
        yield folder
    sys.path.remove(str(folder))
    reset_registry()


@attrs.frozen
class Datasets:
    example_train: Path
    example_test: Path
    mini_train: Path
    clash_train: Path
    mixed_train: Path


@pytest.fixture(scope="session")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> Datasets:
    """JSONL datasets of bootcamp-example, mini and clash, and a mixed one (example and mini records)."""
    folder = tmp_path_factory.mktemp("datasets")
    for name, text in (("example", EXAMPLE_CONFIG), ("mini", MINI_CONFIG), ("clash", CLASH_CONFIG)):
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
        generate_dataset(name, folder, get_registry(), instruction_config=folder / f"{name}.yaml")
    mixed = folder / "mixed_train.jsonl"
    mixed.write_text((folder / "example_train.jsonl").read_text() + (folder / "mini_train.jsonl").read_text())
    return Datasets(folder / "example_train.jsonl", folder / "example_test.jsonl", folder / "mini_train.jsonl",
                    folder / "clash_train.jsonl", mixed)


@pytest.fixture(scope="session")
def exported(datasets: Datasets, tmp_path_factory: pytest.TempPathFactory):
    """The mixed dataset (example and mini) exported for verl, with the example's test split for validation."""
    from bootcamp_verl.export import export_datasets

    return export_datasets([datasets.mixed_train], tmp_path_factory.mktemp("exported"),
                           val_dataset_paths=[datasets.example_test])


@pytest.fixture(scope="session")
def tokenizer():
    """A byte-level tokenizer (every byte one token, so any text round-trips) with the chat template above."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={char: index for index, char in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=["<|im_start|>"])
    tokenizer.add_tokens(["<tool_call>", "</tool_call>"])  # as in Qwen: added, not special, so decode keeps them
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


@pytest.fixture(scope="session")
def model_dir(tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder verl can read a tokenizer and a config from (no weights: nothing here runs the model)."""
    folder = tmp_path_factory.mktemp("model")
    tokenizer.save_pretrained(folder)
    config = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": len(tokenizer),
              "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1,
              "num_key_value_heads": 1}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


Turn = str | Callable[[str], str]


class ScriptedServer:
    """verl's ``server_manager``: token ids in, token ids out. Each call answers with the next scripted turn (text, or
    a function of the decoded prompt) followed by the end-of-turn token, as a chat model would."""

    def __init__(self, tokenizer: Any, turns: list[Turn] | Callable[[str], str]) -> None:
        self.tokenizer = tokenizer
        self.turns = turns
        self.prompts: list[str] = []

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict, **kwargs: Any):
        from verl.workers.rollout.replica import TokenOutput

        prompt = self.tokenizer.decode(prompt_ids)
        self.prompts.append(prompt)
        turn = self.turns if callable(self.turns) else self.turns.pop(0)
        text = turn(prompt) if callable(turn) else turn
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids), stop_reason="completed", num_preempted=0)


@pytest.fixture(scope="session")
def scripted_server(tokenizer) -> Callable[[Any], ScriptedServer]:
    return lambda turns: ScriptedServer(tokenizer, turns)


def tool_call(name: str, arguments: dict) -> str:
    """A hermes tool call as the model writes it."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.fixture(scope="session")
def call() -> Callable[[str, dict], str]:
    return tool_call


@pytest.fixture(scope="session")
def main_ppo_config() -> Callable[..., Any]:
    """verl's main_ppo config (its own Hydra files) composed with the given overrides."""

    def compose_config(overrides: list[str], config_dir: str | os.PathLike | None = None, name: str = "ppo_trainer"):
        import verl
        from hydra import compose, initialize_config_dir

        folder = config_dir or Path(verl.__file__).parent / "trainer" / "config"
        with initialize_config_dir(config_dir=str(Path(folder).resolve()), version_base=None):
            return compose(config_name=name, overrides=list(overrides))

    return compose_config


@pytest.fixture(scope="session")
def trainer_config(exported, model_dir, main_ppo_config):
    """main_ppo's config as the exported script sets it (tiny micro batches, short lengths) for the test model."""
    from omegaconf import OmegaConf

    from bootcamp_verl.export import REWARD_MANAGER_OVERRIDES

    files = "[" + ",".join(f"'{path}'" for path in exported.parquet_files) + "]"
    config = main_ppo_config([
        f"data.train_files={files}",
        f"actor_rollout_ref.model.path={model_dir}",
        "actor_rollout_ref.rollout.name=sglang",
        "actor_rollout_ref.rollout.multi_turn.enable=True",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={exported.tool_config}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={exported.agent_loop_config}",
        "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=20",
        "actor_rollout_ref.rollout.multi_turn.max_tool_response_length=16384",
        "reward.custom_reward_function.path=pkg://bootcamp_verl.reward",
        *REWARD_MANAGER_OVERRIDES,
        "data.max_prompt_length=4096",
        "data.max_response_length=4096",
    ])
    OmegaConf.set_readonly(config, False)
    return config


@pytest.fixture(scope="session")
def dataset_rows(exported, tokenizer, trainer_config) -> list[dict]:
    """verl's RLHFDataset items of the exported mixed dataset (4 example rows, then 3 mini rows)."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    dataset = RLHFDataset([str(path) for path in exported.parquet_files], tokenizer, trainer_config.data)
    return [dataset[index] for index in range(len(dataset))]


@pytest.fixture
def make_loop(exported, tokenizer, trainer_config):
    """An agent loop built as verl's AgentLoopWorker builds one per sample: hydra.utils.instantiate with its kwargs."""
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    entries = {entry.name: entry for entry in OmegaConf.load(exported.agent_loop_config)}

    def build(name: str, server: ScriptedServer, tools: list, config=None):
        config = config or trainer_config
        entry = entries[name] if name in entries else _agent_loop_registry[name]
        return hydra.utils.instantiate(
            config=entry, trainer_config=DictConfigWrap(config=config), server_manager=server, tokenizer=tokenizer,
            processor=None, hf_model_type=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
            tools=ToolListWrap(tools),
        )

    return build


@pytest.fixture
def load_tools(exported):
    """The exported tools, loaded by verl's own loader: {name: adapter}."""
    from verl.tools.tool_registry import initialize_tools_from_config

    return lambda: {tool.name: tool for tool in initialize_tools_from_config(str(exported.tool_config))}


def run_kwargs(row: dict) -> dict:
    """What AgentLoopWorker passes an agent loop's run(): the row's fields but agent_name (and the dummy tensor)."""
    return {key: value for key, value in row.items() if key not in ("agent_name", "dummy_tensor")}


@pytest.fixture
def run_loop(make_loop):
    """Build an agent loop inside a running event loop (as verl does), run it on a row: (loop, AgentLoopOutput)."""
    import asyncio

    def run(name: str, server: ScriptedServer, tools: list, row: dict, config=None):
        async def episode():
            loop = make_loop(name, server, tools, config)
            return loop, await loop.run({"temperature": 1.0}, **run_kwargs(row))

        return asyncio.run(episode())

    return run


@pytest.fixture(scope="session")
def token_server():
    """The module of the tests' token-in/token-out model server (``token_server.py`` beside this file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bootcamp_verl_token_server", Path(__file__).with_name(
        "token_server.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def chat_template() -> str:
    return CHAT_TEMPLATE
