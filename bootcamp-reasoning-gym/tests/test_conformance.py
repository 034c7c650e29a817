from bootcamp_core.testing import BootcampConformance


class TestConformance(BootcampConformance):
    namespace = "reasoning_gym"
    seeds = (0, 1)
    samples = 4

    def solution(self, identity):
        return f"\\boxed{{{identity['entry']['answer']}}}"
