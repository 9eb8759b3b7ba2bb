"""The study against an earlier run of it (`baseline:`): what analysis.json holds under
"baseline", and baseline.json (scalestudy.analysis.history.baseline)."""

from dataclasses import dataclass

# the change called where none is (a point's, an archive's step)
NO_CHANGE = "none"


@dataclass(frozen=True)
class PointChange:
    """One point now against the baseline: time ratio now / baseline with its 95 %
    interval, the change called (slower, faster or none) and the verdict
    (scalestudy.analysis.stats.verdicts)."""

    series: str
    n: int
    ratio: float | None
    lo: float | None
    hi: float | None
    p_value: float | None  # the one-sided t-test, the change's way, on the pooled variance
    alpha: float | None  # the p a change needs here (its Holm step, that way)
    change: str
    verdict: str  # slower, faster, same or undecided
    power: float | None  # of calling a slowdown of twice the tolerance (same, undecided)
    more_runs: int | None  # undecided: the runs now that would decide it
    text: str  # the verdict in words
    runs_now: int
    runs_baseline: int
    time_now_s: float
    time_baseline_s: float


@dataclass(frozen=True)
class CurveVerdict:
    """A series' whole curve now against the baseline (verdicts.verdicts): the mean
    time ratio over its points with its 95 % interval, the slope of the log ratio
    against log N, the joint test's p and the verdict."""

    series: str
    ratio: float | None
    lo: float | None
    hi: float | None
    slope: float | None
    p_value: float | None
    changed: bool  # the curve's test rejected "no change"
    verdict: str  # slower, faster, slower and faster, same or undecided
    power: float | None
    more_runs: int | None  # undecided: the runs now at every point that would decide it
    text: str


@dataclass(frozen=True)
class CurveStep:
    n: int
    ratio: float | None  # speedup now / speedup baseline
    lo: float | None
    hi: float | None
    p_value: float | None  # the t-test of the log speedup ratio
    differs: bool


@dataclass(frozen=True)
class CurveChange:
    """Do a series' speedup curves differ (scalestudy.analysis.history.baseline.curve_change)?"""

    series: str
    base_n: int
    differ: bool
    tested: bool
    level: float
    points: list[CurveStep]
    note: str
    times_p_value: float | None = None
    times_method: str = ""


@dataclass(frozen=True)
class SpeedupPoint:
    n: int
    speedup: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class SpeedupCurves:
    series: str
    now: list[SpeedupPoint]
    baseline: list[SpeedupPoint]


@dataclass(frozen=True)
class ModelChange:
    series: str | None
    model: str
    param: str
    now: float | None
    now_lo: float | None
    now_hi: float | None
    baseline: float | None
    baseline_lo: float | None
    baseline_hi: float | None
    differ: bool


@dataclass(frozen=True)
class AnswerChange:
    series: str | None
    was_n: int | None
    was_decided: bool | None
    now_n: int | None
    now_decided: bool | None
    unchanged: bool
    text: str


@dataclass(frozen=True)
class FingerprintDiff:
    key: str
    baseline: str
    now: str


@dataclass(frozen=True)
class Fingerprints:
    now: dict[str, str]
    baseline: dict[str, str] | None  # None: the baseline's environment is unknown
    differences: list[FingerprintDiff]
    note: str


@dataclass(frozen=True)
class BaselineComparison:
    """The study against an earlier run of it (baseline.json; `baseline:`)."""

    baseline: str
    tolerance: float
    slower_alarms: float  # the false alarms of calling slower, and of faster
    faster_alarms: float
    points: list[PointChange]
    verdicts: list[CurveVerdict]
    only_now: list[int]
    only_baseline: list[int]
    curves: list[CurveChange]
    speedups: list[SpeedupCurves]
    models: list[ModelChange]
    answers: list[AnswerChange]
    fingerprint: Fingerprints
    across: list[str]  # what differs on purpose (baseline_across): workload, params
    said: list[str]


# None: the study has no baseline
DATA = BaselineComparison | None
