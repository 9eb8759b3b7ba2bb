"""Energy to result from the runs' counters (scalestudy.analysis.energy.energy)."""

from scalestudy.analysis.energy.energy import energy_findings
from scalestudy.sections.energy.contract import DATA


def produce(given) -> DATA:
    return energy_findings(given.summary, given.runs, given.analysis.findings.answers, given.study)
