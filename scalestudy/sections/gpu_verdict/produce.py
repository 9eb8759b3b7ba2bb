"""Is the GPU worth it (scalestudy.analysis.decisions.verdict)."""

from scalestudy.analysis.decisions.verdict import gpu_verdict_of
from scalestudy.sections.gpu_verdict.contract import DATA


def produce(given) -> DATA:
    return gpu_verdict_of(given.summary, given.study)
