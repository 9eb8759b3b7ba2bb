"""The requests (analysis.decisions.request), made first: the answers are made from it."""


def produce(given):
    return given.analysis.section("requests")
