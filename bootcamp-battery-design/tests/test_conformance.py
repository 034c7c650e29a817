from bootcamp_battery_design.answer import format_answer
from bootcamp_core.testing import BootcampConformance


class TestConformance(BootcampConformance):
    namespace = "battery_design"
    # every record simulates its oracle: fewer records keep the determinism checks (three processes) quick
    samples = 6

    def solution(self, identity):
        oracle = identity["oracle"]
        return format_answer(oracle["pos_thickness_m"], oracle["pos_porosity"])

    def tool_arguments(self, tool_name, identity):
        oracle = identity["oracle"]
        return {"pos_thickness": oracle["pos_thickness_m"], "pos_porosity": oracle["pos_porosity"]}
