"""What to ask for, per point (scalestudy.analysis.decisions.request): made before the
findings, with the time to result the answers are judged by."""

from scalestudy.sections.requests.contract import DATA


def produce(given) -> DATA:
    return given.requests
