"""The agent loop: verl's ``ToolAgentLoop`` running a bootcamp episode as ``bootcamp eval`` runs it.

verl 0.9 removed interactions, so environment turns need an agent loop; verl builds one instance per sample with
``hydra.utils.instantiate`` from ``agent_loop_config.yaml`` (``bootcamp verl export`` writes it)::

    - name: bootcamp_agent
      _target_: bootcamp_verl.agent_loop.BootcampAgentLoop
      interaction_config: {}      # optional: {interaction id: constructor config}

For a row with ``extra_info.bootcamp`` (every exported row) the loop follows DESIGN.md:

- one instance id for the episode: every tool is opened with the identity before the first turn and released at the
  end (also on errors), the interaction started and finalized; the model sees exactly the record's tools;
- an answer without tool calls goes to the bootcamp's interaction; its feedback is a user turn whose tokens are
  masked (``response_mask`` 0) like tool output, and its score is appended to ``turn_scores``;
- the limits are ``bootcamp eval``'s: ``max_assistant_turns`` and ``max_user_turns`` (every tool message and every
  interaction reply is one user turn) are checked between turns, so the last turn's tool calls and the
  interaction's verdict on the last answer still happen; tool errors read as in ``bootcamp eval``; calls of one
  turn run concurrently only when every tool called is ``parallel_safe``;
- at the end every tool's ``calc_reward`` fills ``tool_scores``, and ``extra_fields`` (merged into the reward's
  ``extra_info`` by verl) carries what the reward sees: ``output`` (the last assistant message's text),
  ``messages`` (OpenAI format), ``tool_rewards``, ``tool_scores``, ``turn_scores``, plus ``finish_reason``,
  ``infrastructure_error`` and ``bootcamp_error``;
- an infrastructure failure (a tool server down, a failing ``create`` or interaction) is not trained on: the
  trajectory's ``response_mask`` is all 0, so it contributes no gradient, and ``extra_fields["bootcamp_error"]`` is 1
  (the reward scores it 0 with the metric ``bootcamp_error`` 1). When opening the episode fails no model turn runs;
  the response is one masked end-of-sequence token.

Rows without ``extra_info.bootcamp`` run as in ``ToolAgentLoop`` and get the same ``extra_fields`` keys (empty), so
batches mixing both keep one set of keys, as verl requires.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

import attrs
from omegaconf import DictConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall
from verl.tools.schemas import ToolResponse

import bootcamp_verl.advantage  # noqa: F401  (registers bootcamp_grpo where verl loads this loop)
from bootcamp_core import ConfigError, RolloutLimits, last_assistant_text, normalize_record, run_coroutine_off_loop
from bootcamp_verl.tool import FAILURE_ATTRIBUTE, INSTANCE_ATTRIBUTE, BootcampTool, identity_from

__all__ = ["EXTRA_FIELD_DEFAULTS", "BootcampAgentLoop"]

logger = logging.getLogger("bootcamp_verl")

#: The keys this loop adds to ``extra_fields`` (beside verl's ``tool_rewards`` and ``turn_scores``).
EXTRA_FIELD_DEFAULTS: dict[str, Any] = {
    "output": "", "messages": [], "tool_scores": {}, "finish_reason": "", "infrastructure_error": None,
    "bootcamp_error": 0,
}


@attrs.define
class _Episode:
    """The bootcamp side of one trajectory."""

    instance_id: str
    identity: dict
    tools: dict[str, BootcampTool]  # Tool.name -> adapter
    interaction: Any = None
    opened: list[BootcampTool] = attrs.field(factory=list)
    started_interaction: bool = False
    finish_reason: str = "answered"
    error: str | None = None

    def fail(self, error: BaseException | str) -> AgentState:
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.error = self.error or message
        self.finish_reason = "error"
        return AgentState.TERMINATED


def _plain(value: Any) -> Any:
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value


class BootcampAgentLoop(ToolAgentLoop):
    """``ToolAgentLoop`` plus the bootcamp's environment turns, eval's turn limits, ``calc_reward`` and cleanup."""

    def __init__(self, *args: Any, tools: Any = None, interaction_config: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        self.interaction_config = {str(key): dict(value or {}) for key, value in
                                   (_plain(interaction_config) or {}).items()}
        defaults = RolloutLimits()
        self.turn_limits = (self.max_assistant_turns or defaults.max_assistant_turns,
                            self.max_user_turns or defaults.max_user_turns)
        # chat-template tokens the parser leaves in an assistant message's text (<|im_end|> ...)
        self.special_tokens = sorted(set(getattr(self.tokenizer, "all_special_tokens", None) or []), key=len,
                                     reverse=True)
        self.episode: _Episode | None = None
        self._agent_data: AgentData | None = None
        self._sequential = asyncio.Lock()

    # --------------------------------------------------------------------------------------------- episode
    def _episode_of(self, kwargs: dict) -> _Episode | None:
        """The bootcamp episode a dataset row describes, or None for a row that is not a bootcamp's."""
        extra = kwargs.get("extra_info") or {}
        bootcamp = extra.get("bootcamp") if isinstance(extra, dict) else None
        if not isinstance(bootcamp, dict):
            return None
        record = normalize_record({"reward_model": dict(kwargs.get("reward_model") or {})})
        identity = record["reward_model"].get("ground_truth")
        if not isinstance(identity, dict):  # rows written by hand may carry it only with the tools
            tools_kwargs = kwargs.get("tools_kwargs") or {}
            identity = next((identity_from(value) for value in tools_kwargs.values() if identity_from(value)), {})
        served = {tool.tool_id: tool for tool in self.tools.values() if isinstance(tool, BootcampTool)}
        tools = {}
        for tool_id in list(bootcamp.get("tools") or []):
            tool = served.get(tool_id)
            if tool is None:
                raise ConfigError(
                    f"a {kwargs.get('data_source')} row uses tool {tool_id}, which multi_turn.tool_config_path does "
                    f"not serve (it serves {', '.join(sorted(served)) or 'no bootcamp tool'}). Export the datasets "
                    "together with `bootcamp verl export` and use its tool_config.yaml."
                )
            tools[tool.name] = tool
        interaction = None
        interaction_id = bootcamp.get("interaction")
        if interaction_id:
            from bootcamp_core import get_registry

            interaction = get_registry().component("interaction", interaction_id,
                                                   self.interaction_config.get(interaction_id))
        return _Episode(uuid.uuid4().hex, identity, tools, interaction)

    async def _open(self, episode: _Episode) -> None:
        try:
            for tool in episode.tools.values():
                episode.opened.append(tool)
                await tool.open_episode(episode.instance_id, episode.identity)
            if episode.interaction is not None:
                episode.started_interaction = True
                await episode.interaction.start_interaction(episode.instance_id, identity=episode.identity)
        except Exception as error:  # the episode fails and is not rewarded; the batch goes on
            logger.warning("opening episode %s failed: %s: %s", episode.instance_id, type(error).__name__, error)
            episode.fail(error)

    async def _close(self, episode: _Episode) -> None:
        for tool in episode.opened:
            try:
                await tool.close_episode(episode.instance_id)
            except Exception as error:
                logger.warning("releasing %s failed: %s: %s", tool.tool_id, type(error).__name__, error)
        if episode.started_interaction:
            try:
                await episode.interaction.finalize_interaction(episode.instance_id)
            except Exception as error:
                logger.warning("finalizing %s failed: %s: %s", type(episode.interaction).__name__,
                               type(error).__name__, error)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        episode = self._episode_of(kwargs)
        if episode is None:
            output = await super().run(sampling_params, **kwargs)
            for key, value in EXTRA_FIELD_DEFAULTS.items():
                output.extra_fields.setdefault(key, type(value)() if value is not None else None)
            return output
        if self.episode is not None:
            raise RuntimeError("a BootcampAgentLoop runs one sample; verl builds one per sample")
        self.episode = episode
        # The turn limits are checked between turns, as bootcamp eval does (see _next_turn), not by ToolAgentLoop.
        self.max_assistant_turns = self.max_user_turns = None
        tool_scores: dict[str, float] = {}
        try:
            await self._open(episode)
            output = await super().run(sampling_params, **kwargs)
            if episode.error is None:
                try:
                    for name, tool in episode.tools.items():
                        tool_scores[name] = await tool.episode_reward(episode.instance_id)
                except Exception as error:
                    episode.fail(error)
        finally:
            # shielded: a cancelled rollout still releases every tool and finalizes the interaction
            await asyncio.shield(self._close(episode))
        messages = self.openai_messages(self._agent_data.messages) if self._agent_data is not None else []
        if episode.error is not None:  # not the model's doing: the sample must contribute no gradient
            output.response_mask = [0] * len(output.response_mask)
        output.extra_fields.update({
            "output": last_assistant_text(messages),
            "messages": messages,
            # partial scores of an episode that failed would read as real ones
            "tool_scores": tool_scores if episode.error is None else {},
            "finish_reason": episode.finish_reason,
            "infrastructure_error": episode.error,
            "bootcamp_error": int(episode.error is not None),
        })
        return output

    # ------------------------------------------------------------------------------------- states of verl's loop
    async def _handle_pending_state(self, agent_data: AgentData, sampling_params: dict[str, Any]) -> AgentState:
        episode = self.episode
        if episode is not None:
            self._agent_data = agent_data
            setattr(agent_data, INSTANCE_ATTRIBUTE, episode.instance_id)
            # exactly the record's tools (verl offers every tool when a row's tool_selection is empty)
            agent_data._active_tools = dict(episode.tools)
            agent_data._active_tool_schemas = [
                tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for tool in episode.tools.values()
            ]
        state = await super()._handle_pending_state(agent_data, sampling_params)
        if episode is not None and episode.error is not None:
            # opening the episode failed: no model turn. One masked token keeps the response non-empty (verl's output
            # takes the response as the last len(response_mask) prompt ids).
            agent_data.prompt_ids = list(agent_data.prompt_ids) + [self._filler_token_id()]
            agent_data.response_mask = [0]
            if agent_data.response_logprobs:
                agent_data.response_logprobs = [0.0]
            return AgentState.TERMINATED
        return state

    def _filler_token_id(self) -> int:
        for name in ("eos_token_id", "pad_token_id"):
            token_id = getattr(self.tokenizer, name, None)
            if isinstance(token_id, list):
                token_id = token_id[0] if token_id else None
            if isinstance(token_id, int):
                return token_id
        return 0

    async def _handle_generating_state(self, agent_data: AgentData, sampling_params: dict[str, Any],
                                       ignore_termination: bool = False) -> AgentState:
        episode = self.episode
        if episode is None:
            return await super()._handle_generating_state(agent_data, sampling_params, ignore_termination)
        before = len(agent_data.messages)
        state = await super()._handle_generating_state(agent_data, sampling_params, ignore_termination)
        if len(agent_data.messages) == before:  # out of response length before the turn was parsed
            content, _calls = await self.tool_parser.extract_tool_calls(agent_data.response_ids, [])
            agent_data.messages.append({"role": "assistant", "content": content or ""})
            episode.finish_reason = "max_response_length"
            return AgentState.TERMINATED
        if episode.error is not None:
            return AgentState.TERMINATED
        if state == AgentState.PROCESSING_TOOLS:
            return state
        if episode.interaction is None:
            episode.finish_reason = "answered"
            return AgentState.TERMINATED
        return await self._interaction_turn(agent_data, episode)

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        episode = self.episode
        if episode is None:
            return await super()._handle_processing_tools_state(agent_data)
        calls = len(agent_data.tool_calls[: self.max_parallel_calls])
        before = agent_data.user_turns
        state = await super()._handle_processing_tools_state(agent_data)
        agent_data.user_turns = before + calls  # every tool message is a user turn, as in bootcamp eval
        failure = getattr(agent_data, FAILURE_ATTRIBUTE, None)
        if failure:
            return episode.fail(failure)
        if state == AgentState.TERMINATED:  # the tool output did not fit in the response
            episode.finish_reason = self._turn_limit_reached(agent_data) or "max_response_length"
            return state
        return self._next_turn(agent_data, episode)

    def _turn_limit_reached(self, agent_data: AgentData) -> str | None:
        """The finish reason of the turn limit that allows no further model turn, or None."""
        max_assistant_turns, max_user_turns = self.turn_limits
        if agent_data.assistant_turns >= max_assistant_turns:
            return "max_assistant_turns"
        if agent_data.user_turns >= max_user_turns:
            return "max_user_turns"
        return None

    def _next_turn(self, agent_data: AgentData, episode: _Episode) -> AgentState:
        limit = self._turn_limit_reached(agent_data)
        if limit is not None:
            episode.finish_reason = limit
            return AgentState.TERMINATED
        return AgentState.GENERATING

    async def _interaction_turn(self, agent_data: AgentData, episode: _Episode) -> AgentState:
        """The interaction judges the answer; its feedback becomes a masked user turn unless the episode ends."""
        messages = self.openai_messages(agent_data.messages)
        try:
            # off this event loop, as bootcamp eval runs it: sync work on the model's answer cannot hold up the other
            # trajectories of the worker; past the limit the answer scores 0, as a model-side reward_timeout
            terminate, feedback, score, _extra = await run_coroutine_off_loop(
                lambda: episode.interaction.generate_response(episode.instance_id, messages),
                timeout_s=RolloutLimits().reward_timeout_s,
            )
            score = float(score)
        except TimeoutError:
            agent_data.turn_scores.append(0.0)
            episode.finish_reason = "reward_timeout"
            return AgentState.TERMINATED
        except Exception as error:  # a plugin bug or a failure outside the model: the episode is not rewarded
            return episode.fail(error)
        agent_data.turn_scores.append(score)
        agent_data.user_turns += 1
        if terminate:
            episode.finish_reason = "terminated"
            return AgentState.TERMINATED
        previous = list(agent_data.messages)
        agent_data.messages.append({"role": "user", "content": feedback})
        schemas = getattr(agent_data, "_active_tool_schemas", self.tool_schemas)
        merged, response_mask, response_logprobs = await self.ct_merge_context_msg(
            previous, agent_data.messages, agent_data.prompt_ids, agent_data.response_mask,
            agent_data.response_logprobs or None, tools=schemas,
        )
        if len(response_mask) >= self.response_length:
            # the feedback does not fit; when a turn limit ends the episode here anyway, that is why it ended (the
            # verdict on the last answer comes before the limits, so this is where a last wrong answer lands)
            episode.finish_reason = self._turn_limit_reached(agent_data) or "max_response_length"
            return AgentState.TERMINATED
        agent_data.prompt_ids = merged.token_ids
        agent_data.response_mask = response_mask
        if agent_data.response_logprobs:
            agent_data.response_logprobs = response_logprobs or []
        return self._next_turn(agent_data, episode)

    # ------------------------------------------------------------------------------------------------ tool calls
    async def _call_tool(self, tool_call: FunctionCall, tools_kwargs: dict[str, Any],
                         agent_data: AgentData) -> tuple[ToolResponse, float, dict]:
        episode = self.episode
        if episode is None:
            return await super()._call_tool(tool_call, tools_kwargs, agent_data)
        mistake = self._mistake(tool_call, episode)
        if mistake is not None:  # told to the model in bootcamp eval's words
            return ToolResponse(text=f"Error: {mistake}"), 0.0, {}
        turn = agent_data.tool_calls[: self.max_parallel_calls]
        # unknown tools answer at once, so they never force one-at-a-time (as in bootcamp eval)
        if len(turn) > 1 and not all(getattr(episode.tools.get(call.name), "parallel_safe", True) for call in turn):
            async with self._sequential:  # waiters get the lock in call order
                return await super()._call_tool(tool_call, tools_kwargs, agent_data)
        return await super()._call_tool(tool_call, tools_kwargs, agent_data)

    @staticmethod
    def _mistake(tool_call: FunctionCall, episode: _Episode) -> str | None:
        name = tool_call.name
        if name not in episode.tools:
            return f"unknown tool {name!r}; available: {', '.join(sorted(episode.tools)) or 'none'}"
        if not (tool_call.arguments or "").strip():
            tool_call.arguments = "{}"
            return None
        try:
            parameters = json.loads(tool_call.arguments)
        except ValueError as error:
            return f"arguments of {name} are not valid JSON ({error})"
        if not isinstance(parameters, dict):
            return f"arguments of {name} must be a JSON object, got {type(parameters).__name__}"
        return None

    # -------------------------------------------------------------------------------------------------- messages
    def _clean(self, content: Any) -> Any:
        if not isinstance(content, str):
            return content
        for token in self.special_tokens:
            content = content.replace(token, "")
        return content.strip()

    def openai_messages(self, messages: list[dict]) -> list[dict]:
        """verl's messages as ``bootcamp eval`` records them: tool-call arguments as JSON text, ids on calls and tool
        messages, chat-template tokens out of assistant text."""
        result: list[dict] = []
        pending: list[tuple[str, str]] = []  # (call id, name) of the calls still to be answered
        assistant_turn = 0
        for message in messages:
            message = dict(message)
            role = message.get("role")
            if role == "assistant":
                calls = []
                for index, call in enumerate(message.get("tool_calls") or []):
                    function = dict(call.get("function") or {})
                    arguments = function.get("arguments")
                    calls.append({
                        "id": call.get("id") or f"call_{assistant_turn}_{index}",
                        "type": "function",
                        "function": {
                            "name": function.get("name"),
                            "arguments": arguments if isinstance(arguments, str)
                            else json.dumps(arguments if arguments is not None else {}, ensure_ascii=False),
                        },
                    })
                message = {"role": "assistant", "content": self._clean(message.get("content"))}
                if calls:
                    message["tool_calls"] = calls
                pending = [(call["id"], call["function"]["name"]) for call in calls]
                assistant_turn += 1
            elif role == "tool":
                call_id, name = pending.pop(0) if pending else (None, None)
                message = {"role": "tool", "tool_call_id": message.get("tool_call_id") or call_id, "name": name,
                           "content": message.get("content")}
            result.append(message)
        return result
