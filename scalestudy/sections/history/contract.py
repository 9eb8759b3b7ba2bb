"""The study's archives and its runs now (its produce.py): analysis.json's
"history"."""

from dataclasses import dataclass

from scalestudy.contract import FingerprintDiff


@dataclass(frozen=True)
class HistoryPoint:
    series: str
    n: int
    time_s: float
    change: str  # against the entry before: slower | faster | none


@dataclass(frozen=True)
class HistoryEntry:
    """One archive of the study (`make archive`), or the runs now
    (its produce.py)."""

    name: str
    points: list[HistoryPoint]
    differences: list[FingerprintDiff]


# none: the study has no archives
DATA = list[HistoryEntry]
