"""Time to result, the queue wait beside the run time: what analysis.json holds under
"time_to_result" (scalestudy.analysis.cluster.result_time)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class PointResult:
    """One point's expected time from submission to result: wait + full-length run time."""

    point: str
    series: str
    n: int
    run_s: float | None  # median full-length run time, its 95 % interval
    run_lo_s: float | None
    run_hi_s: float | None
    runs: int
    run_scaled: bool
    wait_s: float | None  # the wait added, and the interval's top wait
    wait_hi_s: float | None
    basis: str  # local | now | typical | unknown wait
    wait_now_s: float | None  # what sbatch --test-only said
    history_wait_median_s: float | None
    history_wait_p90_s: float | None
    history_jobs: int
    queue_note: str | None
    result_s: float | None
    result_lo_s: float | None
    result_hi_s: float | None
    # the 95 % upper bound on the p90 of past waits (None: under 29 jobs), the
    # largest wait seen, the bound's backtest, --test-only's corrected wait
    history_wait_bound_s: float | None = None
    history_wait_max_s: float | None = None
    history_bound_covered: int = 0
    history_bound_tested: int = 0
    wait_now_corrected_s: float | None = None


@dataclass(frozen=True)
class EarliestResult:
    series: str
    point: str
    n: int
    result_s: float


@dataclass(frozen=True)
class ResultTimes:
    """Every point's time to result, and how the waits were asked."""

    queue: str  # slurm | local
    asked_at: str | None
    calls: int
    note: str | None  # Slurm could not be asked
    history_note: str | None
    history_days: int | None
    min_jobs: int | None
    waits_known: bool
    points: list[PointResult]
    earliest: list[EarliestResult]
    # --test-only's correction: median run time / time limit of ended past jobs, and
    # how many (None: uncorrected)
    run_to_limit: dict[str, float] | None = None


# None: times measured elsewhere (no jobs to queue)
DATA = ResultTimes | None
