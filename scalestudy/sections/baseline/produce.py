"""The study against its baseline's folder (scalestudy.analysis.history.baseline)."""

from scalestudy.analysis.history.baseline import compare
from scalestudy.sections.baseline.contract import DATA


def produce(given) -> DATA:
    if given.baseline is None:
        return None
    return compare(given.study, given.runs, given.analysis, given.baseline)
