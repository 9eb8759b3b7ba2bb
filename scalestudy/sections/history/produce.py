"""The study's archives, oldest first, and its runs now (scalestudy.analysis.history.history)."""

from scalestudy.analysis.history.baseline import times_by_point
from scalestudy.analysis.history.history import history_section
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.sections.history.contract import DATA


def produce(given) -> DATA:
    if not given.archives:
        return []
    now = times_by_point(given.runs, TIME_COLUMNS[given.study.time])
    fingerprint = given.analysis.findings.fingerprint
    return history_section(given.archives, now, fingerprint, given.study.baseline_tolerance)
