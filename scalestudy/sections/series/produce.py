"""The scaling models (analysis.stats.predictions), made first: the answers are made from it."""


def produce(given):
    return given.analysis.section("series")
