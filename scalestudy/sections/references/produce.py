"""The study's references (`expect:`) judged against its summary."""

from scalestudy.analysis.history.references import expectations
from scalestudy.sections.references.contract import DATA


def produce(given) -> DATA:
    return expectations(given.study, given.summary)
