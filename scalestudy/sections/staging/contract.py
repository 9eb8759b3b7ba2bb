"""Staging with several copies at once: analysis.json's "staging"."""

from dataclasses import dataclass


@dataclass(frozen=True)
class StagingRow:
    k: int
    runs: int
    slowest_s: float
    typical_s: float
    mb_per_s: float | None
    growth: float | None  # the slowest copy's median time over the fewest copies'
    growth_lo: float | None = None  # its 95 % interval (ratio_ci)
    growth_hi: float | None = None


@dataclass(frozen=True)
class Staging:
    rows: list[StagingRow]
    # the most copies against the fewest: "above" 1 (staging grows), "within" the flat
    # zone (STAGING_FLAT), "below", or None: not decided, and the runs at each end that
    # would likely decide it
    grows: str | None = None
    more_runs: int | None = None


# None: the study's runs do not differ in the copies made at once
DATA = Staging | None
