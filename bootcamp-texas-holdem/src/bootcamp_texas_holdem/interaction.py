"""The interaction: ends the episode once the tool output says the match is over, and otherwise reminds the model
to keep playing. It reads only the messages (DESIGN.md), never the tools' state.

It is no ``AnswerFeedback``: nothing the model writes is judged (the reward scores the tools' state), so there is no
answer to extract, no attempt to count and no reward to check with; the table's last line is the result.
"""

from __future__ import annotations

from typing import Any, ClassVar

from bootcamp_core import Interaction, config_whole_number, message_text
from bootcamp_texas_holdem.game import MATCH_OVER, match_score

__all__ = ["TableFeedback", "match_status"]

#: Reminders given before the episode ends with the match unfinished (the hands left then count as folded).
MAX_REMINDERS = 3

_RESULT_START = f"{MATCH_OVER}: all "
_RESULT_MIDDLE = " hands have been played. You "
_HAND_START = "Hand "


def _digits(line: str, start: int) -> int:
    """Where the run of ASCII digits at ``start`` ends (``start`` when there is none)."""
    end = start
    while end < len(line) and "0" <= line[end] <= "9":
        end += 1
    return end


def _match_result(line: str) -> int | None:
    """The chips won (negative when lost) in Match.final_line's exact words, else ``None``."""
    if not line.startswith(_RESULT_START):
        return None
    hands_end = _digits(line, len(_RESULT_START))
    if hands_end == len(_RESULT_START) or not line.startswith(_RESULT_MIDDLE, hands_end):
        return None
    rest = line[hands_end + len(_RESULT_MIDDLE):]
    outcome, _, rest = rest.partition(" ")
    chips_end = _digits(rest, 0)
    if outcome not in ("won", "lost") or chips_end == 0 or not rest.startswith(" chips in total", chips_end):
        return None
    chips = int(rest[:chips_end])
    return chips if outcome == "won" else -chips


def _hand_of(line: str) -> str | None:
    """``"hand k of n"`` from a line that starts ``Hand k of n`` (then a non-word character or the end)."""
    if not line.startswith(_HAND_START):
        return None
    number_end = _digits(line, len(_HAND_START))
    of_end = number_end + len(" of ")
    total_end = _digits(line, of_end)
    if (number_end == len(_HAND_START) or not line.startswith(" of ", number_end) or total_end == of_end
            or (total_end < len(line) and (line[total_end].isalnum() or line[total_end] == "_"))):
        return None
    return f"hand {line[len(_HAND_START):number_end]} of {line[of_end:total_end]}"


def match_status(messages: list[dict]) -> tuple[bool, int | None, str | None]:
    """From the tool outputs in ``messages``: (match over, chips won if over, the latest ``"hand k of n"``)."""
    hand = None
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "tool":
            continue
        # line by line with str methods, no pattern: tool output echoes what the model sent
        lines = message_text(message.get("content")).split("\n")
        for line in lines:
            chips = _match_result(line)
            if chips is not None:
                return True, chips, None
        for line in lines:
            hand = _hand_of(line) or hand
    return False, None, hand


class TableFeedback(Interaction):
    """Ends the episode when the match is over; until then reminds the model to act, at most ``max_reminders`` times."""

    name: ClassVar[str] = "table_feedback"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.max_reminders = config_whole_number(self, config, "max_reminders", MAX_REMINDERS, low=0)

    async def start_interaction(
        self, instance_id: str | None = None, identity: dict | None = None, **kwargs: Any
    ) -> str:
        """Start an episode with no reminders given."""
        instance_id = await super().start_interaction(instance_id, identity, **kwargs)
        self.state(instance_id).update(reminders=0, score=0.0)
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict], **kwargs: Any
    ) -> tuple[bool, str, float, dict]:
        """(terminate, feedback, turn score, ``{"match_over", "reminders"}``) for a turn without tool calls."""
        state = self.state(instance_id)
        over, chips, hand = match_status(messages)
        if over:
            scale = (state["identity"] or {}).get("score_scale")
            try:
                state["score"] = match_score(float(chips), float(scale))
            except (TypeError, ValueError, ZeroDivisionError):
                state["score"] = 0.0
            return True, "The match is over. Thank you for playing.", state["score"], {
                "match_over": True, "reminders": state["reminders"],
            }
        state["reminders"] += 1
        extra = {"match_over": False, "reminders": state["reminders"]}
        if state["reminders"] > self.max_reminders:
            return True, "The episode ends here with the match unfinished: the hands left count as folded.", 0.0, extra
        where = f"{hand} is waiting for your action" if hand else "you have not looked at the table yet"
        feedback = (
            f"The match is not over yet: {where}. Keep playing: call `act` with your decision (`table` shows the "
            "table). Play until the tool output says the match is over; hands left unplayed count as folded."
        )
        return False, feedback, 0.0, extra

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """The match score read from the final tool output, 0 until the match is over."""
        return float(self.state(instance_id)["score"])
