"""Is the GPU worth it (scalestudy.analysis.stats.predictions.gpu_verdict_of)."""

from scalestudy.analysis.stats.predictions import gpu_verdict_of
from scalestudy.sections.gpu_verdict.contract import DATA


def produce(given) -> DATA:
    return gpu_verdict_of(given.summary, given.study)
