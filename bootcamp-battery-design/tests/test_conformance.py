from bootcamp_battery_design.answer import format_answer
from bootcamp_battery_design.cell import DESIGN_VARIABLES
from bootcamp_core.testing import BootcampConformance


class TestConformance(BootcampConformance):
    namespace = "battery_design"
    # every record simulates its oracle: fewer records keep the determinism checks (three processes) quick
    samples = 6

    def solution(self, identity):
        oracle = identity["oracle"]
        return format_answer(*(oracle[variable.key] for variable in DESIGN_VARIABLES))

    def tool_arguments(self, tool_name, identity):
        oracle = identity["oracle"]
        return {variable.argument: oracle[variable.key] for variable in DESIGN_VARIABLES}
