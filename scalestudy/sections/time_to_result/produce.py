"""Time to result (scalestudy.analysis.cluster.result_time): made
before the findings, whose answers are made from it (scalestudy.analysis.pipeline)."""

from scalestudy.sections.time_to_result.contract import DATA


def produce(given) -> DATA:
    return given.analysis.section("time_to_result")
