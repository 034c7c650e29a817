from bootcamp_core.testing import BootcampConformance
from bootcamp_financial_prediction.answer import format_answer


class TestConformance(BootcampConformance):
    namespace = "financial_prediction"

    def solution(self, identity):
        return format_answer(identity["hidden"]["statements"])

    def tool_arguments(self, tool_name, identity):
        return {"statements": identity["statements"][-1]}
