from bootcamp_core.testing import BootcampConformance


class TestConformance(BootcampConformance):
    namespace = "texas_holdem"

    def tool_arguments(self, tool_name, identity):
        # The hero is on the button in hand 1 and faces the big blind, so calling is always legal at first.
        return {"action": "call"} if tool_name == "act" else {}
