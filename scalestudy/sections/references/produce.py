"""The study's references (`expect:`) judged against its summary."""

from scalestudy.analysis.predictions import jsonable
from scalestudy.analysis.references import expectations
from scalestudy.contract import build
from scalestudy.sections.references.contract import DATA, Expectation


def produce(given) -> DATA:
    return [build(Expectation, e) for e in jsonable(expectations(given.study, given.summary))]
