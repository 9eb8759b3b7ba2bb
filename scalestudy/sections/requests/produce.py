"""What to ask for, per point (scalestudy.analysis.decisions.request): made
before the findings, whose answers are made from it (scalestudy.analysis.pipeline)."""

from scalestudy.sections.requests.contract import DATA


def produce(given) -> DATA:
    return given.analysis.section("requests")
