"""The study against its baseline's folder (scalestudy.analysis.baseline)."""

from scalestudy.analysis.baseline import compare
from scalestudy.analysis.predictions import jsonable
from scalestudy.contract import build
from scalestudy.sections.baseline.contract import DATA, BaselineComparison


def produce(given) -> DATA:
    if given.baseline is None:
        return None
    compared = compare(given.study, given.runs, given.analysis, given.baseline)
    return build(BaselineComparison, jsonable(compared))
