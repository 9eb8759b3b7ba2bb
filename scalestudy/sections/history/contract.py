"""The study's archives and its runs now (scalestudy.analysis.history.history): analysis.json's
"history"."""

from dataclasses import dataclass

from scalestudy.sections.baseline.contract import FingerprintDiff


@dataclass(frozen=True)
class HistoryPoint:
    series: str
    n: int
    time_s: float
    change: str  # against the entry before: slower | faster | none


@dataclass(frozen=True)
class HistoryEntry:
    """One archive of the study (`make archive`), or the runs now
    (scalestudy.analysis.history.history)."""

    name: str
    points: list[HistoryPoint]
    differences: list[FingerprintDiff]


# none: the study has no archives
DATA = list[HistoryEntry]
