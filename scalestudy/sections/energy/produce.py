"""Energy to result from the runs' counters (scalestudy.analysis.energy.energy)."""

from scalestudy.analysis.energy.energy import energy_findings
from scalestudy.analysis.stats.predictions import jsonable
from scalestudy.contract import build
from scalestudy.sections.energy.contract import DATA, Energy


def produce(given) -> DATA:
    found = energy_findings(given.summary, given.runs, given.analysis.findings.answers, given.study)
    return found and build(Energy, jsonable(found))
