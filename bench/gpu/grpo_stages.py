"""The CPU GRPO test's stages on one device (CUDA by default), one PASS/FAIL line per stage with its time.

    python bench/gpu/grpo_stages.py [--device cuda|cpu] [--steps 3]

For a machine with torch and transformers but no Ray, vLLM or SGLang: the stages that need verl import only its
algorithm module (verl.trainer.ppo.core_algos) and report FAIL with the import error when verl is missing. Stages:
a tiny randomly initialised Qwen2 model; KV-cached sampling with per-token log-probs (the rollout); one padded
forward pass giving the same log-probs (the trainer, < 1e-3); bootcamp_grpo advantages equal to verl's GRPO on the
trajectories that did not fail; verl's compute_policy_loss, backward and Adam steps lowering the surrogate loss.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import torch

VOCAB, PROMPT, RESPONSE, BATCH, GROUP = 512, 48, 64, 8, 4


def stage(name, results):
    def wrap(fn):
        start = time.perf_counter()
        try:
            detail = fn()
            results.append(True)
            print(f"PASS {name} {time.perf_counter() - start:.2f}s {detail or ''}".rstrip(), flush=True)
        except Exception as error:  # every stage reports, the next ones still run
            results.append(False)
            print(f"FAIL {name} {time.perf_counter() - start:.2f}s {type(error).__name__}: {error}", flush=True)
            traceback.print_exc(file=sys.stderr)
        return fn
    return wrap


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    results: list[bool] = []
    state: dict = {}
    print(f"device {device}: torch {torch.__version__}"
          + (f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""), flush=True)

    @stage("model", results)
    def _model():
        from transformers import Qwen2Config, Qwen2ForCausalLM

        torch.manual_seed(0)
        config = Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                             tie_word_embeddings=True, architectures=["Qwen2ForCausalLM"])
        state["model"] = Qwen2ForCausalLM(config).float().to(device).eval()
        return f"{sum(p.numel() for p in state['model'].parameters())} parameters"

    @stage("rollout (KV-cached sampling, log-probs)", results)
    def _rollout():
        model, generator = state["model"], torch.Generator(device="cpu").manual_seed(1)
        lengths = torch.randint(PROMPT // 2, PROMPT + 1, (BATCH,), generator=generator)
        prompts = [torch.randint(3, VOCAB, (int(n),), generator=generator).tolist() for n in lengths]
        responses, log_probs = [], []
        with torch.no_grad():
            for row, prompt in enumerate(prompts):
                out = model(input_ids=torch.tensor([prompt], device=device), use_cache=True)
                tokens, scores = [], []
                budget = RESPONSE - 8 * (row % 4)  # responses of different lengths
                for _ in range(budget):
                    step = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
                    token = int(torch.multinomial(step.exp().cpu(), 1, generator=generator))
                    tokens.append(token)
                    scores.append(float(step[token]))
                    out = model(input_ids=torch.tensor([[token]], device=device), past_key_values=out.past_key_values,
                                use_cache=True)
                responses.append(tokens)
                log_probs.append(scores)
        state.update(prompts=prompts, responses=responses, rollout_log_probs=log_probs)
        return f"{sum(map(len, responses))} tokens"

    def padded():
        """verl's layout: prompts left-padded, responses right-padded; attention mask and position ids."""
        rows = len(state["prompts"])
        input_ids = torch.zeros(rows, PROMPT + RESPONSE, dtype=torch.long)
        attention = torch.zeros_like(input_ids)
        mask = torch.zeros(rows, RESPONSE)
        old = torch.zeros(rows, RESPONSE)
        for row, (prompt, response) in enumerate(zip(state["prompts"], state["responses"], strict=True)):
            input_ids[row, PROMPT - len(prompt):PROMPT] = torch.tensor(prompt)
            input_ids[row, PROMPT:PROMPT + len(response)] = torch.tensor(response)
            attention[row, PROMPT - len(prompt):PROMPT + len(response)] = 1
            mask[row, :len(response)] = 1
            old[row, :len(response)] = torch.tensor(state["rollout_log_probs"][row])
        positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
        return input_ids.to(device), attention.to(device), positions.to(device), mask.to(device), old.to(device)

    def trainer_log_probs(input_ids, attention, positions):
        logits = state["model"](input_ids=input_ids, attention_mask=attention, position_ids=positions).logits
        log_probs = torch.log_softmax(logits[:, PROMPT - 1:-1].float(), dim=-1)
        return log_probs.gather(-1, input_ids[:, PROMPT:].unsqueeze(-1)).squeeze(-1)

    @stage("trainer log-probs (padded forward) == rollout's", results)
    def _trainer():
        input_ids, attention, positions, mask, old = padded()
        with torch.no_grad():
            new = trainer_log_probs(input_ids, attention, positions)
        gap = (new - old).abs()[mask == 1].max().item()
        assert gap < 1e-3, f"largest gap {gap:.2e}"
        state["batch"] = (input_ids, attention, positions, mask, old)
        return f"largest gap {gap:.2e}"

    @stage("advantages (bootcamp_grpo == verl GRPO without the failed)", results)
    def _advantages():
        import numpy as np
        from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

        from bootcamp_verl.advantage import compute_bootcamp_grpo_advantage

        *_, mask, _ = state["batch"]
        rewards = torch.zeros_like(mask)
        scores = torch.tensor([1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 1.0], device=device)[: len(mask)]
        last = mask.sum(dim=1).long() - 1
        rewards[torch.arange(len(mask)), last] = scores
        index = np.array([f"p{row // GROUP}" for row in range(len(mask))], dtype=object)
        failed_mask = mask.clone()
        failed_mask[1] = 0  # one infrastructure failure
        advantages, _ = compute_bootcamp_grpo_advantage(rewards * failed_mask, failed_mask, index)
        kept = [row for row in range(len(mask)) if row != 1]
        expected, _ = compute_grpo_outcome_advantage(rewards[kept], mask[kept], index[kept])
        assert torch.equal(advantages[kept], expected) and not advantages[1].any()
        state["advantages"] = compute_grpo_outcome_advantage(rewards, mask, index)[0]

    @stage("policy loss, backward, optimizer steps", results)
    def _step():
        from verl.trainer.ppo.core_algos import compute_policy_loss

        input_ids, attention, positions, mask, old = state["batch"]
        model = state["model"].train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(args.steps):
            loss, *_ = compute_policy_loss(old, trainer_log_probs(input_ids, attention, positions),
                                           state["advantages"], mask, cliprange=0.2)
            losses.append(loss.item())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        with torch.no_grad():
            final, *_ = compute_policy_loss(old, trainer_log_probs(input_ids, attention, positions),
                                            state["advantages"], mask, cliprange=0.2)
        assert final.item() < losses[0], f"loss {losses[0]:.4f} -> {final.item():.4f}"
        return f"loss {losses[0]:.4f} -> {final.item():.4f}"

    print(f"{'PASS' if all(results) else 'FAIL'} all {sum(results)}/{len(results)} stages", flush=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
