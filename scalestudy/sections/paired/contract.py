"""A paired comparison (studies.<name>.compare): analysis.json's "paired"."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PairedPoint:
    """b/a at one point from its pairs (its produce.py), with its 95 % interval (None
    where no variance could be estimated) and verdict."""

    point: str  # the point's label without its variant (t2, not a-t2)
    n: int
    pairs: int
    ratio: float | None
    ci_lo: float | None
    ci_hi: float | None
    verdict: str  # slower | faster | same | undecided
    words: str
    more_pairs: int | None


@dataclass(frozen=True)
class Paired:
    a: dict[str, Any]  # each variant's overrides, as configured
    b: dict[str, Any]
    seed: int
    tolerance: float
    slower_alarms: float  # the false alarms of calling slower, and of faster
    faster_alarms: float
    time: str  # the time compared (the study's `time`)
    points: list[PairedPoint]


# None: the study compares nothing
DATA = Paired | None
