"""Time to result (analysis.cluster.result_time), made first: the answers are made from it."""


def produce(given):
    return given.analysis.section("time_to_result")
