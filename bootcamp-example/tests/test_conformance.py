from bootcamp_core.testing import BootcampConformance


class TestConformance(BootcampConformance):
    namespace = "example"

    def solution(self, identity):
        return f'```json\n{{"result": {identity["expected_result"]!r}}}\n```'

    def tool_arguments(self, tool_name, identity):
        return {"expression": identity["expression"]}
