"""The study against its baseline's folder (scalestudy.analysis.history.baseline)."""

from scalestudy.analysis.history.baseline import compare
from scalestudy.contract import build
from scalestudy.records import jsonable
from scalestudy.sections.baseline.contract import DATA, BaselineComparison


def produce(given) -> DATA:
    if given.baseline is None:
        return None
    compared = compare(given.study, given.runs, given.analysis, given.baseline)
    return build(BaselineComparison, jsonable(compared))
