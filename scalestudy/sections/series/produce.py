"""Each series' scaling models (scalestudy.analysis.stats.predictions): made
before the findings, whose answers are made from it (scalestudy.analysis.pipeline)."""

from scalestudy.sections.series.contract import DATA


def produce(given) -> DATA:
    return given.analysis.section("series")
