"""A token-in/token-out LLM server for the tests, behind verl's ``server_manager.generate()`` interface, running a real
(tiny, randomly initialised) causal LM with a KV cache.

It follows what verl 0.9.1's vLLM server does with a request (``vllm_async_server.py``, ``generate``):

- ``max_tokens`` comes from ``sampling_params`` (``max_tokens``, else SGLang's ``max_new_tokens``), else
  ``min(response_length, prompt_length + response_length - len(prompt_ids))``, clamped to ``[1, max_model_len -
  len(prompt_ids)]``; a turn cut by it ends without the end-of-sequence token (vLLM's ``length``, reported as
  ``completed``);
- generation stops after a token of ``stop_token_ids`` or the end-of-sequence token (kept in the output), unless
  ``ignore_eos``;
- ``log_probs`` are the log-probabilities of the returned tokens under the model (temperature 1), computed
  incrementally from the KV cache, only when ``sampling_params["logprobs"]`` is true.

What the model says is chosen by a policy: for each call it gets the decoded prompt and the trajectory's ordinal
within its prompt's group, and answers a list of segments, each text (its tokens are fed to the model and scored, as
a model that wrote them) or ``SAMPLE`` (tokens sampled from the model until a stop).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

#: A segment of a turn: sample from the model until a stop, max_tokens or the end of the turn's budget.
SAMPLE = object()

Policy = Callable[[str, int], list[Any]]


class ModelServer:
    """verl's ``server_manager`` for a Hugging Face causal LM on CPU (one request at a time)."""

    def __init__(self, model: Any, tokenizer: Any, policy: Policy, *, prompt_length: int, response_length: int,
                 max_model_len: int | None = None, seed: int = 0) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.policy = policy
        self.prompt_length = prompt_length
        self.response_length = response_length
        self.max_model_len = max_model_len or prompt_length + response_length
        self.generator = torch.Generator().manual_seed(seed)
        #: request id -> [token ids of every call], in order
        self.outputs: dict[str, list[list[int]]] = {}
        #: request id -> ordinal of its trajectory among those with the same first prompt
        self.ordinals: dict[str, int] = {}
        self._groups: dict[tuple[int, ...], int] = {}

    def max_tokens(self, prompt_ids: list[int], sampling_params: dict) -> int:
        headroom = self.max_model_len - len(prompt_ids)
        if headroom < 1:
            raise ValueError(f"prompt of {len(prompt_ids)} tokens leaves no room within {self.max_model_len}")
        if "max_tokens" in sampling_params:
            wanted = sampling_params["max_tokens"]
        elif "max_new_tokens" in sampling_params:
            wanted = sampling_params["max_new_tokens"]
        else:
            wanted = min(self.response_length, self.prompt_length + self.response_length - len(prompt_ids))
        return max(1, min(wanted, headroom))

    @torch.no_grad()
    def _step(self, token_ids: list[int], past: Any) -> tuple[torch.Tensor, Any]:
        out = self.model(input_ids=torch.tensor([token_ids]), past_key_values=past, use_cache=True)
        return torch.log_softmax(out.logits[0, -1].float(), dim=-1), out.past_key_values

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict, **kwargs: Any):
        from verl.workers.rollout.replica import TokenOutput

        prompt_ids = list(prompt_ids)
        if request_id not in self.ordinals:
            key = tuple(prompt_ids)
            self.ordinals[request_id] = self._groups.get(key, 0)
            self._groups[key] = self.ordinals[request_id] + 1
        limit = self.max_tokens(prompt_ids, sampling_params)
        eos = self.tokenizer.eos_token_id
        stops = set(sampling_params.get("stop_token_ids") or [])
        if not sampling_params.get("ignore_eos", False):
            stops.add(eos)
        segments = self.policy(self.tokenizer.decode(prompt_ids), self.ordinals[request_id])
        wanted: list[Any] = []
        for segment in segments:
            wanted.extend([SAMPLE] if segment is SAMPLE else self.tokenizer.encode(segment, add_special_tokens=False))
        if not wanted or wanted[-1] is not SAMPLE:
            wanted.append(eos)  # a scripted turn ends as a chat model ends it
        log_probs, past = self._step(prompt_ids, None)
        tokens: list[int] = []
        scores: list[float] = []
        position = 0
        while len(tokens) < limit and position < len(wanted):
            if wanted[position] is SAMPLE:
                token = int(torch.multinomial(log_probs.exp(), 1, generator=self.generator))
            else:
                token = wanted[position]
                position += 1
            tokens.append(token)
            scores.append(float(log_probs[token]))
            if token in stops:
                break
            log_probs, past = self._step([token], past)
        self.outputs.setdefault(request_id, []).append(tokens)
        return TokenOutput(token_ids=tokens, log_probs=scores if sampling_params.get("logprobs") else None,
                           stop_reason="completed", num_preempted=0)
