"""Intervals of one point: the CI of a median, of a speedup or efficiency (ratios of
medians), instability flags and the Karp-Flatt serial fraction. Pure functions on
numpy arrays; every random draw comes from ``np.random.default_rng(seed)``.

Statistical choices, and why:

* Medians, not means: run times are right-skewed and now and then hit by one slow run
  (a noisy neighbour, a cold cache). The CI of a median comes from order statistics:
  the number of runs below the true median is Binomial(n, 1/2) whatever the
  distribution, so [X_(d), X_(n-d+1)] covers it with a known probability. Those
  probabilities jump with d (97.9 % is the nearest to 95 % for n = 10), so by default
  we interpolate between neighbouring order statistics (Hettmansperger & Sheather 1986),
  which brings the coverage close to the nominal level. For n <= 5 no pair of order
  statistics reaches 95 %: (min, max) is returned and `median_ci_coverage` tells its
  real coverage (93.75 % for n = 5).
* Speedup and efficiency are ratios of medians; their CIs come from bootstrapping each
  sample on its own (percentile interval). Ratios of single runs are never averaged.
* A point is unstable when its repeats disagree: coefficient of variation above 10 %,
  or an outlier by the modified z-score (median and MAD, which the outlier itself
  cannot drag along) that also lies more than 5 % from the median.

Both CIs are hand-written; benchmarks/stats_scipy.py measures them against SciPy:

* ``scipy.stats.quantile_test(x).confidence_interval()`` gives the exact interval
  [X_(d), X_(n-d+1)], the same numbers as ``median_ci(interpolate=False)`` for n >= 6
  (tests/test_intervals.py checks it), but not the interpolated one used by default,
  nan rather than (min, max) for n <= 5, and about 60x slower.
* ``scipy.stats.bootstrap`` draws the same resamples from the same seed and gives the
  same speedup interval (tested too), but takes 2x as long, which made the statistics
  of a study 1.3-1.4x slower.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from scalestudy.thresholds import CV_LIMIT, MIN_DEVIATION, Z_LIMIT

LEVEL = 0.95


def _finite(values) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    return x[np.isfinite(x)]


def _tails(level: float) -> tuple[float, float]:
    return (1.0 - level) / 2.0, (1.0 + level) / 2.0


# ---------------------------------------------------------------- medians


@lru_cache(maxsize=1024)
def _order_stat_rule(n: int, level: float, interpolate: bool) -> tuple[int, float, float]:
    """(d, lam, coverage): the CI of the median of n sorted values runs from
    (1-lam)*X_(d) + lam*X_(d+1) to (1-lam)*X_(n-d+1) + lam*X_(n-d) (1-based ranks)."""
    # imported here, not at the top: the workflow's parse imports this module, and
    # scipy.stats costs ~1 s of every Snakemake start (each packed member's too)
    from scipy.stats import binom

    # hand-written: SciPy has no interpolated interval; its exact one (quantile_test) is
    # the interpolate=False case here, ~60x slower (benchmarks/stats_scipy.py)
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


def median_ci_coverage(n: int, level: float = LEVEL, interpolate: bool = True) -> float:
    """Coverage that `median_ci` achieves for n values: the exact binomial coverage of
    the order statistics used, or `level` when interpolation hits it (approximately);
    below `level` when n is too small for it (n <= 5 at 95 %), nan for n < 2."""
    if n < 2:
        return math.nan
    return _order_stat_rule(int(n), float(level), bool(interpolate))[2]


def median_ci(times, level: float = LEVEL, interpolate: bool = True) -> tuple[float, float, float]:
    """(median, lo, hi) with a distribution-free CI from order statistics.

    Non-finite values (failed runs) are dropped. n = 0: all nan; n = 1: (x, nan, nan).
    When n is too small for `level` (n <= 5 at 95 %), (min, max) is returned: the widest
    interval there is; `median_ci_coverage(n, level)` says how much it really covers.
    interpolate=False gives the exact, conservative order-statistic interval (the one
    of scipy.stats.quantile_test)."""
    x = np.sort(_finite(times))
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    med = float(np.median(x))
    if n < 2:
        return med, math.nan, math.nan
    d, lam, _ = _order_stat_rule(n, float(level), bool(interpolate))
    lo = (1 - lam) * x[d - 1] + lam * x[min(d, n - 1)]
    hi = (1 - lam) * x[n - d] + lam * x[max(n - d - 1, 0)]
    return med, float(lo), float(hi)


# ---------------------------------------------------------------- ratios


def _boot_medians(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot resamples of x. With x sorted, sorting the drawn indices sorts
    the resample; small integers sort about 3x faster than np.median partitions."""
    x = np.sort(x)
    n = x.size
    idx = np.sort(rng.integers(0, n, size=(n_boot, n)), axis=1)
    return 0.5 * (x[idx[:, (n - 1) // 2]] + x[idx[:, n // 2]])


def ratio_ci(
    base_times, times, level: float = LEVEL, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Speedup median(base)/median(times) with a percentile-bootstrap CI, each sample
    resampled on its own. Non-finite values are dropped; CI is nan when either sample
    has fewer than 2 values (the ratio too when one is empty)."""
    a, b = _finite(base_times), _finite(times)
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(a) / np.median(b))
    if a.size < 2 or b.size < 2 or n_boot < 1:
        return ratio, math.nan, math.nan
    # hand-written: 2x faster than scipy.stats.bootstrap, which gives the same interval
    # from the same seed; with it a study's statistics took 1.3-1.4x as long
    # (benchmarks/stats_scipy.py)
    rng = np.random.default_rng(seed)
    boot = _boot_medians(a, n_boot, rng) / _boot_medians(b, n_boot, rng)
    lo, hi = np.quantile(boot, _tails(level))
    return ratio, float(lo), float(hi)


def efficiency_ci(
    base_times,
    times,
    n_base: float,
    n: float,
    level: float = LEVEL,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Parallel efficiency speedup * n_base / n with the CI of `ratio_ci`, scaled."""
    factor = float(n_base) / float(n)
    ratio, lo, hi = ratio_ci(base_times, times, level, n_boot, seed)
    return ratio * factor, lo * factor, hi * factor


# ---------------------------------------------------------------- stability


def instability(
    times, cv_limit=CV_LIMIT, z_limit=Z_LIMIT, names=None, min_deviation=MIN_DEVIATION
) -> dict:
    """Flags a point whose repeats disagree: coefficient of variation above `cv_limit`,
    or outliers with |modified z| = |0.6745 (x - median) / MAD| > `z_limit`
    (Iglewicz & Hoaglin) that lie more than `min_deviation` (a share of the median)
    from the median: of few or very tight runs the MAD is tiny, and three runs 0.5 %
    apart gave a |z| of 20. MAD = 0 finds no outliers by z. Outlier indices refer to
    `times` as given (non-finite values are skipped); the reason names them by `names`
    (one per time, e.g. the runs' files: rep3), else by those indices. Fewer than 2
    values: not judged."""
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
