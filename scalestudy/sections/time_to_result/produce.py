"""Time to result (scalestudy.analysis.cluster.result_time): made before the findings,
whose answers judge the deadline by it."""

from scalestudy.sections.time_to_result.contract import DATA


def produce(given) -> DATA:
    return given.time_to_result
