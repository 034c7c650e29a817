"""RL on CPU through verl 0.9.1's own classes: AgentLoopWorker runs BootcampAgentLoop (bootcamp-example's calculator
and its feedback turns) against a tiny randomly initialised Qwen2 model behind verl's token-in/token-out
``generate()`` (KV-cached, real log-probs), RewardLoopWorker scores with compute_score, and a GRPO step follows:
verl's compute_grpo_outcome_advantage and compute_policy_loss, backward, an optimizer step.

The tokenizer is a byte-level BPE trained here with ``tokenizers`` (no download), so turn boundaries meet real
merges; the prompt length is the export's, measured with it."""

from __future__ import annotations

import asyncio
import json
import re
from types import SimpleNamespace

import pytest

RESPONSE_LENGTH = 256
GROUP = 4  # rollouts per prompt: two right, one wrong twice (feedback turns), one sampled from the model


def bpe_tokenizer(corpus: list[str], chat_template: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=["<|im_start|>"])
    tokenizer.add_tokens(["<tool_call>", "</tool_call>"])
    tokenizer.chat_template = chat_template
    return tokenizer


def tool_call(expression: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "calculator", "arguments": {"expression": expression}}) + "\n</tool_call>"


def policy(prompt: str, ordinal: int, sample: object) -> list:
    """What the model writes: rollouts 0 and 1 solve the task with the calculator, 2 answers wrong (and gets
    feedback), 3 is sampled from the model. Reads the prompt the test built, never model output."""
    tool_outputs = re.findall(r"<\|im_start\|>tool\n(.*?)<\|im_end\|>", prompt, re.DOTALL)
    if ordinal == 3:
        return [sample]
    if ordinal == 2:
        return ['Answer:\n```json\n{"result": -1}\n```']
    if tool_outputs:
        return [f'Answer:\n```json\n{{"result": {tool_outputs[-1]}}}\n```']
    expression = re.search(r"left to right\):\n\n(.*?)\n\n", prompt).group(1)
    return [tool_call(expression)]


@pytest.fixture(scope="module")
def setup(datasets, tmp_path_factory, main_ppo_config, chat_template):
    """The example's training records exported with a BPE tokenizer on disk, the tiny model, and main_ppo's config
    as the exported script sets it (plus the test's small sizes)."""
    import torch
    from omegaconf import OmegaConf
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from bootcamp_core import read_records
    from bootcamp_verl.export import TRAINING_DEFAULTS, ExportOptions, export_datasets, integration_overrides

    records = list(read_records(datasets.example_train))
    corpus = [message["content"] for record in records for message in record["prompt"]]
    corpus += [tool_call("123 + 456 * 7"), 'Answer:\n```json\n{"result": 4321}\n```'] * 20
    corpus.append(json.dumps({"name": "calculator", "description": "", "parameters": {}}))
    tokenizer = bpe_tokenizer(corpus, chat_template)
    model_dir = tmp_path_factory.mktemp("bpe-model")
    tokenizer.save_pretrained(model_dir)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, architectures=["Qwen2ForCausalLM"])
    config.save_pretrained(model_dir)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).float().eval()

    out = tmp_path_factory.mktemp("bpe-export")
    result = export_datasets([datasets.example_train], out,
                             options=ExportOptions(model_path=str(model_dir), max_assistant_turns=2,
                                                   max_response_length=RESPONSE_LENGTH))
    assert result.measured_with == "tokenizer"
    files = [str(path) for path in result.parquet_files]
    overrides = integration_overrides(files, files, str(result.tool_config), str(result.agent_loop_config),
                                      ExportOptions(max_assistant_turns=2), model_path=str(model_dir))
    overrides += [*TRAINING_DEFAULTS, *(f"{key}={value}" for key, value in result.sizes.items())]
    overrides += ["actor_rollout_ref.rollout.calculate_log_probs=True", f"actor_rollout_ref.rollout.n={GROUP}"]
    trainer_config = main_ppo_config(overrides)
    OmegaConf.set_readonly(trainer_config, False)
    return SimpleNamespace(tokenizer=tokenizer, model=model, export=result, config=trainer_config)


def test_a_grpo_step_on_agent_loop_trajectories_lowers_the_surrogate_loss(setup, token_server):
    import numpy as np
    import torch
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.protocol import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, compute_policy_loss
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.torch_functional import logprobs_from_logits

    config, tokenizer, model = setup.config, setup.tokenizer, setup.model
    prompt_length = config.data.max_prompt_length
    dataset = RLHFDataset([str(path) for path in setup.export.parquet_files], tokenizer, config.data)
    assert len(dataset) == 4  # verl's filter (on) dropped nothing: the measured length fits
    batch = DataProto.from_single_dict(collate_fn([dataset[0], dataset[1]]))
    batch.non_tensor_batch["uid"] = np.array(["p0", "p1"], dtype=object)
    batch = batch.repeat(repeat_times=GROUP, interleave=True)
    server = token_server.ModelServer(model, tokenizer, lambda prompt, ordinal: policy(prompt, ordinal,
                                                                                     token_server.SAMPLE),
                                      prompt_length=prompt_length, response_length=RESPONSE_LENGTH)

    async def rollout():
        reward_worker = RewardLoopWorker(config)
        handle = SimpleNamespace(compute_score=SimpleNamespace(remote=reward_worker.compute_score))
        worker = AgentLoopWorker(config, server, reward_loop_worker_handles=[handle])
        return worker, await worker.generate_sequences(batch)

    worker, output = asyncio.run(rollout())
    data = output.batch
    responses, mask = data["responses"], data["response_mask"]
    ordinals = [server.ordinals[request] for request in server.outputs]
    assert sorted(ordinals) == [0, 0, 1, 1, 2, 2, 3, 3]

    # model tokens have mask 1: exactly the tokens the server returned, in order (a response verl cut at the
    # response length keeps their start); tool output and feedback 0
    # (each row's ordinal, the policy's choice of what it says, comes from the request whose tokens it holds)
    returned = {request: [token for call in calls for token in call] for request, calls in server.outputs.items()}
    ordinal_of_row = []
    for row in range(len(responses)):
        said = responses[row][mask[row] == 1].tolist()
        full = int(data["attention_mask"][row, prompt_length:].sum()) == RESPONSE_LENGTH
        request = next(request for request, tokens in returned.items()
                       if tokens == said or (full and tokens[:len(said)] == said))
        ordinal_of_row.append(server.ordinals[request])
        del returned[request]
    finish = output.non_tensor_batch["finish_reason"].tolist()
    for row in range(len(responses)):
        environment = tokenizer.decode(responses[row][(mask[row] == 0) & (data["attention_mask"][row, prompt_length:]
                                                                          == 1)])
        said = tokenizer.decode(responses[row][mask[row] == 1])
        assert "<|im_start|>tool" not in said and "<|im_start|>user" not in said
        if '<tool_call>\n{"name": "calculator"' in said:  # a call the scripted rollouts made (not a sampled token)
            assert "<|im_start|>tool\n" in environment
        if '"result": -1' in said:  # the wrong answer got the interaction's feedback as a masked user turn
            assert "<|im_start|>user\n" in environment
    # the right answers end the episode at the interaction's verdict, the wrong one at the turn limit (the feedback
    # on its last answer need not fit); no episode failed
    assert [finish[row] for row, ordinal in enumerate(ordinal_of_row) if ordinal < 3] == [
        "terminated" if ordinal < 2 else "max_assistant_turns" for ordinal in ordinal_of_row if ordinal < 3]
    assert "error" not in finish
    # the max-tokens rule: the sampled turn runs until the response budget, cut without the end token
    sampled = [calls[0] for request, calls in server.outputs.items() if server.ordinals[request] == 3]
    assert all(len(tokens) == RESPONSE_LENGTH and tokens[-1] != tokenizer.eos_token_id for tokens in sampled
               if tokenizer.eos_token_id not in tokens)

    # the trainer's log-probs on the padded batch (one forward pass) equal the rollout's (KV-cached, per token)
    def trainer_log_probs():
        logits = model(input_ids=data["input_ids"], attention_mask=data["attention_mask"],
                       position_ids=data["position_ids"]).logits
        return logprobs_from_logits(logits[:, prompt_length - 1:-1].float(), responses)

    with torch.no_grad():
        old = trainer_log_probs()
    rollout_log_probs = data["rollout_log_probs"]
    assert (old - rollout_log_probs).abs()[mask == 1].max().item() < 1e-3

    # rewards from compute_score through RewardLoopWorker (the export's reward manager), each on its own row: 1 for
    # the rollouts that solved the task with one calculator call, 0 for the wrong and the sampled ones
    scores = data["rm_scores"].sum(dim=1)
    assert scores.tolist() == [1.0 if ordinal < 2 else 0.0 for ordinal in ordinal_of_row]
    calls = output.non_tensor_batch["bootcamp_tool_calls"].tolist()
    assert [calls[row] for row, ordinal in enumerate(ordinal_of_row) if ordinal < 3] == [
        1.0 if ordinal < 2 else 0.0 for ordinal in ordinal_of_row if ordinal < 3]
    assert not output.non_tensor_batch["bootcamp_error"].any()
    advantages, _ = compute_grpo_outcome_advantage(data["rm_scores"], mask, batch.non_tensor_batch["uid"])
    assert advantages[mask == 1].abs().sum() > 0

    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss, _, _, _ = compute_policy_loss(old, trainer_log_probs(), advantages, mask, cliprange=0.2)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    with torch.no_grad():
        after, _, _, _ = compute_policy_loss(old, trainer_log_probs(), advantages, mask, cliprange=0.2)
    model.eval()
    assert after.item() < loss.item()
    # every tool instance was released
    assert all(not tool.open_instances for tool in worker.tools)
