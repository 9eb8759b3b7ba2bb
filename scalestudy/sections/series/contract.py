"""Each series' scaling models: what analysis.json holds under "series"
(scalestudy.analysis.stats.predictions), which the answers, the results table, the
speedup figure, the plan's model times and a baseline's model changes read too."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fit:
    """One scaling model fitted to a series (scalestudy.analysis.stats.predictions.fit_summary)."""

    name: str
    formula: str
    ok: bool
    note: str
    params: dict[str, Any]
    param_ci: dict[str, Any]
    r2: float | None
    aicc: float | None
    rmse: float | None
    k: int | None
    n_points: int | None
    weight: float | None


@dataclass(frozen=True)
class Curve:
    """The selected model's predicted speedup over N, with its 95 % prediction band."""

    n: list[float]
    speedup: list[float | None]
    band_lo: list[float | None]
    band_hi: list[float | None]
    measured_max_n: float
    base_time_s: float | None
    base_source: str


@dataclass(frozen=True)
class Peak:
    n: float
    speedup: float
    beyond_measured: bool
    base_source: str


@dataclass(frozen=True)
class SeriesFit:
    """One series' validity gates, fits, prediction and recommendation."""

    series: str | None
    base_n: int | None
    excluded: dict[str, str]  # point -> why it stays out of the fits
    mixed_provenance: dict[str, Any]
    fits: list[Fit]
    selected: str | None
    peak: Peak | None
    curve: Curve | None
    recommendation: dict[str, Any]  # the working the answer (Answer) was made from
    fit_note: str | None = None
    fit_basis: str | None = None
    prediction_base: dict[str, Any] | None = None
    bound: float | None = None  # Amdahl's bound on the speedup

    @property
    def one_point(self) -> bool:
        """Whether the series has one good point (no step between good points)."""
        return not self.recommendation.get("steps")

    @property
    def usable_points(self) -> int | None:
        """How many points a fit could use, where no model fitted (None: one did)."""
        if not self.fits or any(f.ok for f in self.fits):
            return None
        return max(f.n_points for f in self.fits)


DATA = list[SeriesFit]
