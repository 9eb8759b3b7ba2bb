"""Intervals of one point: the CI of a median time, of a speedup or efficiency (ratios
of medians), instability flags and the Karp-Flatt serial fraction. Pure functions on
numpy arrays; nothing is random. Which interval, its coverage (benchmarks/coverage.py
measures them) and why: docs/report.md, "The intervals, and why".
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from scalestudy.thresholds import CV_LIMIT, MIN_DEVIATION, Z_LIMIT

LEVEL = 0.95
MAX_MORE_RUNS = 50  # the most runs a point is searched for to decide it


def _finite(values) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    return x[np.isfinite(x)]


def _tails(level: float) -> tuple[float, float]:
    return (1.0 - level) / 2.0, (1.0 + level) / 2.0


@lru_cache(maxsize=1024)
def _order_stat_rule(n: int, level: float, interpolate: bool) -> tuple[int, float, float]:
    """(d, lam, coverage): the CI of the median of n sorted values runs from
    (1-lam)*X_(d) + lam*X_(d+1) to (1-lam)*X_(n-d+1) + lam*X_(n-d) (1-based ranks)."""
    # imported here, not at the top: the workflow's parse imports this module, and
    # scipy.stats costs ~1 s of every Snakemake start (each packed member's too)
    from scipy.stats import binom

    ds = np.arange(1, (n + 1) // 2 + 1)
    coverage = 1.0 - 2.0 * binom.cdf(ds - 1, n, 0.5)  # P(X_(d) <= median <= X_(n-d+1))
    reach = np.flatnonzero(coverage >= level - 1e-12)
    if reach.size == 0:  # small n: even (min, max) falls short of the level
        return 1, 0.0, float(coverage[0])
    i = int(reach[-1])
    d, cov_d = int(ds[i]), float(coverage[i])
    if not interpolate or i + 1 >= ds.size or cov_d <= level:
        return d, 0.0, cov_d
    frac = (cov_d - level) / (cov_d - coverage[i + 1])
    lam = (n - d) * frac / (d + (n - 2 * d) * frac)
    return d, float(lam), float(level)


# Runs -> the lowest coverage of median_ci's 95 % t interval on log times, over
# lognormal, right-skewed and one-outlier-in-ten noise at CV 2-15 %
# (benchmarks/coverage.py; 20,000 samples a cell: 93.5, 93.1, 93.6 and 94.6 % at 2-5
# runs), rounded down: right-skewed noise pulls the mean log time above the median
TIME_CI_MEASURED = {2: 0.93, 3: 0.93, 4: 0.93, 5: 0.94}


def median_ci_coverage(n: int, level: float = LEVEL, interpolate: bool = True) -> float:
    """Coverage that `median_ci` achieves for n values: that of its order statistics
    (exact, or `level` where interpolation hits it, approximately); where none reach
    `level` (n <= 5 at 95 %), the lowest measured of its t interval on log times
    (TIME_CI_MEASURED; measured at 95 % only: nan at other levels); nan for n < 2."""
    if n < 2:
        return math.nan
    reached = _order_stat_rule(int(n), float(level), bool(interpolate))[2]
    if reached >= level - 1e-12:
        return reached
    return TIME_CI_MEASURED.get(int(n), math.nan) if level == LEVEL else math.nan


def short_of_level(reached: float, level: float = LEVEL) -> float:
    """`reached` where it is below the stated `level`, else NaN (nothing to say)."""
    return reached if reached < level - 1e-12 else math.nan


def median_ci(times, level: float = LEVEL, interpolate: bool = True) -> tuple[float, float, float]:
    """(median, lo, hi) with a CI of the true median time (which interval: module
    docstring; interpolate=False gives the exact, conservative order-statistic one).
    Non-finite values (failed runs) are dropped. n = 0: all nan; n = 1: (x, nan, nan).
    The t interval on log times (n <= 5 at 95 %) is widened to hold the median."""
    x = np.sort(_finite(times))
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    med = float(np.median(x))
    if n < 2:
        return med, math.nan, math.nan
    d, lam, reached = _order_stat_rule(n, float(level), bool(interpolate))
    if reached < level - 1e-12:
        if x[0] <= 0:  # no log: no interval
            return med, math.nan, math.nan
        if x[0] == x[-1]:  # equal runs: exactly no width (exp(log x) may round)
            return med, med, med
        lo, hi = _log_t(x, level)
        return med, min(float(lo), med), max(float(hi), med)
    lo = (1 - lam) * x[d - 1] + lam * x[min(d, n - 1)]
    hi = (1 - lam) * x[n - d] + lam * x[max(n - d - 1, 0)]
    return med, float(lo), float(hi)


def _boot_medians(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot resamples of x (baseline.py's speedup-curve comparison). With x
    sorted, sorting the drawn indices sorts the resample; small integers sort about 3x
    faster than np.median partitions."""
    x = np.sort(x)
    n = x.size
    idx = np.sort(rng.integers(0, n, size=(n_boot, n)), axis=1)
    return 0.5 * (x[idx[:, (n - 1) // 2]] + x[idx[:, n // 2]])


def _t_quantile(level: float, df):
    from scipy.stats import t  # here, not at the top: see _order_stat_rule

    return t.ppf((1.0 + level) / 2.0, df)


def _log_t(x: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of exp(t interval of the mean log time) along the last axis of x (n >= 2
    finite positive values): the true time's CI when the noise is multiplicative."""
    logs = np.log(x)
    n = logs.shape[-1]
    half = _t_quantile(level, n - 1) * np.sqrt(logs.var(axis=-1, ddof=1) / n)
    centre = logs.mean(axis=-1)
    return np.exp(centre - half), np.exp(centre + half)


def _welch_log(a: np.ndarray, b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of exp(Welch interval of mean log a - mean log b) along the last axis."""
    la, lb = np.log(a), np.log(b)
    va = la.var(axis=-1, ddof=1) / la.shape[-1]
    vb = lb.var(axis=-1, ddof=1) / lb.shape[-1]
    var = va + vb
    with np.errstate(divide="ignore", invalid="ignore"):  # two samples of equal runs
        df = var**2 / (va**2 / (la.shape[-1] - 1) + vb**2 / (lb.shape[-1] - 1))
    df = np.where(var > 0, df, la.shape[-1] + lb.shape[-1] - 2)
    half = _t_quantile(level, df) * np.sqrt(var)
    centre = la.mean(axis=-1) - lb.mean(axis=-1)
    return np.exp(centre - half), np.exp(centre + half)


def ratio_ci(base_times, times, level: float = LEVEL) -> tuple[float, float, float]:
    """Speedup median(base)/median(times) with a Welch CI on log times, widened to hold
    the ratio of medians. Non-finite values are dropped; CI is nan when either sample
    has fewer than 2 values or a value <= 0 (the ratio too when one is empty)."""
    a, b = _finite(base_times), _finite(times)
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(a) / np.median(b))
    if a.size < 2 or b.size < 2 or a.min() <= 0 or b.min() <= 0:
        return ratio, math.nan, math.nan
    if a.min() == a.max() and b.min() == b.max():  # equal runs: exactly no width
        return ratio, ratio, ratio
    lo, hi = _welch_log(a, b, level)
    return ratio, min(float(lo), ratio), max(float(hi), ratio)


def instability(
    times, cv_limit=CV_LIMIT, z_limit=Z_LIMIT, names=None, min_deviation=MIN_DEVIATION
) -> dict:
    """Flags a point whose repeats disagree: CV above `cv_limit`, or outliers with
    |modified z| = |0.6745 (x - median) / MAD| > `z_limit` (Iglewicz & Hoaglin; MAD = 0
    finds none) more than `min_deviation` of the median away: of few or very tight runs
    the MAD is tiny (three runs 0.5 % apart gave a |z| of 20). Outlier indices refer to
    `times` as given; the reason names them by `names` (one per time, e.g. rep3), else
    by those indices. Fewer than 2 finite values: not judged."""
    x = np.asarray(times, dtype=float).ravel()
    where = np.flatnonzero(np.isfinite(x))
    v = x[where]
    if v.size < 2:
        return {"cv": math.nan, "outliers": [], "unstable": False, "reason": ""}
    mean = v.mean()
    cv = float(v.std(ddof=1) / mean) if mean != 0 else math.inf
    med = np.median(v)
    mad = np.median(np.abs(v - med))
    outliers: list[int] = []
    if mad > 0:
        z = 0.6745 * (v - med) / mad
        far = np.abs(v - med) > min_deviation * abs(med)
        outliers = [int(i) for i in where[(np.abs(z) > z_limit) & far]]
    reasons = []
    if cv > cv_limit:
        reasons.append(f"CV {cv:.1%} > {cv_limit:.0%}")
    if outliers:
        which = ", ".join(str(names[i]) for i in outliers) if names is not None else outliers
        reasons.append(
            f"outlier runs {which} (|modified z| > {z_limit:g}, over "
            f"{100 * min_deviation:g} % from the median)"
        )
    return {"cv": cv, "outliers": outliers, "unstable": bool(reasons), "reason": "; ".join(reasons)}


def karp_flatt(speedup, n, n_base: float = 1):
    """Experimentally determined serial fraction e = (1/s - 1/p) / (1 - 1/p), p = n/n_base.
    nan where p == 1. Scalars give a float, arrays an array."""
    s = np.asarray(speedup, dtype=float)
    p = np.asarray(n, dtype=float) / float(n_base)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(p == 1, np.nan, (1 / s - 1 / p) / (1 - 1 / p))
    return float(e) if e.ndim == 0 else e


def side_of_one(lo, hi, zone: float) -> str | None:
    """Where a ratio's interval lies: "above" 1, "below" it, "within" 1 +- zone (an
    indifference zone: either answer is right), or None (no interval, or across 1)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    if lo > 1 or hi < 1:
        return "above" if lo > 1 else "below"
    return "within" if lo >= 1 / (1 + zone) and hi <= 1 + zone else None


def runs_to_decide(x: np.ndarray, y: np.ndarray, zone: float) -> tuple[int | None, bool]:
    """The runs to add to each of two samples after which the interval of their ratio
    (Welch on log values, df taken as for equal noise) would likely clear 1 or lie in
    1 +- zone, the estimate as now (None: none within MAX_MORE_RUNS); and whether that
    count only gives an interval at all (a sample of fewer than 2 runs)."""
    if min(x.size, y.size) < 2:
        return 2 - min(x.size, y.size), True
    lx, ly = np.log(x), np.log(y)
    centre = abs(lx.mean() - ly.mean())
    k = np.arange(1, MAX_MORE_RUNS + 1)
    var = lx.var(ddof=1) / (x.size + k) + ly.var(ddof=1) / (y.size + k)
    half = _t_quantile(LEVEL, x.size + y.size + 2 * k - 2) * np.sqrt(var)
    decides = (half < centre) | (centre + half <= math.log1p(zone))
    return (int(k[decides][0]) if decides.any() else None), False
