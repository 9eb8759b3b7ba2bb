"""The study against an earlier run of it (`baseline:`): what analysis.json holds under
"baseline", and baseline.json (its produce.py). Its verdicts are the regression check's
(scalestudy.contract.PointChange, CurveVerdict: the history and the adaptive plan read
them too)."""

from dataclasses import dataclass

from scalestudy.contract import CurveVerdict, FingerprintDiff, PointChange


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
    """Do a series' speedup curves differ (produce.curve_change)?"""

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
