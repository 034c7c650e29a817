"""The core's conformance kit on this bootcamp: a solution is the hidden witness path, tools get valid calls."""

from bootcamp_bot_trajectory.answer import format_answer
from bootcamp_core.testing import BootcampConformance


class TestConformance(BootcampConformance):
    namespace = "bot_trajectory"
    samples = 8

    def solution(self, identity):
        return format_answer(identity["witness"])

    def tool_arguments(self, tool_name, identity):
        if tool_name == "forward_kinematics":
            return {"joint_angles": identity["start"]}
        return {"waypoints": identity["witness"]}
