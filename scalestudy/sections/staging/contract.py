"""Staging with several copies at once: analysis.json's "staging"."""

from dataclasses import dataclass


@dataclass(frozen=True)
class StagingRow:
    k: int
    runs: int
    slowest_s: float
    typical_s: float
    mb_per_s: float | None
    growth: float | None


@dataclass(frozen=True)
class Staging:
    rows: list[StagingRow]


# None: the study's runs do not differ in the copies made at once
DATA = Staging | None
