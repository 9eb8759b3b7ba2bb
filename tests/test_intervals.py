"""Intervals of one point: median and ratio CIs cover at least 94 % for a stated 95 %
(a quick benchmarks/coverage.py), instability flags on hand-checked data, Karp-Flatt."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import quantile_test, ttest_ind

from benchmarks.coverage import draw
from scalestudy.analysis.stats.intervals import (
    instability,
    karp_flatt,
    median_ci,
    median_ci_coverage,
    ratio_ci,
)

# ---------------------------------------------------------------- medians and ratios


def test_median_ci_small_samples():
    assert all(np.isnan(median_ci([])))
    assert median_ci([5.0])[0] == 5.0 and np.isnan(median_ci([5.0])[1])
    # n <= 5: no order statistics reach 95 %, a t interval on log times does, except
    # under right-skewed noise: the coverage it has is said
    med, lo, hi = median_ci([3.0, 1.0, 2.0, 5.0, 4.0])
    assert med == 3.0 and lo < 3.0 < hi and (lo, hi) != (1.0, 5.0)
    assert median_ci_coverage(3) == 0.93 and median_ci_coverage(5) == 0.94
    assert median_ci_coverage(6) == pytest.approx(0.95)
    assert np.isnan(median_ci([0.0, 1.0, 2.0])[1])  # no log of 0: no interval
    # exact order statistics for n = 10 at 95 %: X_(2) and X_(9), 97.85 % coverage
    assert median_ci(np.arange(1.0, 11.0), interpolate=False) == (5.5, 2.0, 9.0)
    assert median_ci_coverage(10, interpolate=False) == pytest.approx(1 - 2 * 11 / 1024)
    med, lo, hi = median_ci(np.arange(1.0, 11.0))
    # interpolated: between the 97.85 % interval (X_(2), X_(9)) and the 89.1 % one
    assert 2.0 < lo < 3.0 and 8.0 < hi < 9.0


def test_ci_coverage_near_nominal():
    """300 simulated studies, 10 runs per sample, lognormal noise. This seed gives
    93.3 % (interpolated median CI), 97.3 % (exact median CI); with 3000 simulations
    they were 95.1 % and 98.1 % (theory: 97.85 %)."""
    rng = np.random.default_rng(11)
    true_median = 100.0
    hits = {"median": 0, "median_exact": 0}
    sims = 300
    for _ in range(sims):
        base = true_median * np.exp(rng.normal(0, 0.2, 10))
        _, lo, hi = median_ci(base)
        hits["median"] += lo <= true_median <= hi
        _, lo, hi = median_ci(base, interpolate=False)
        hits["median_exact"] += lo <= true_median <= hi
    coverage = {k: v / sims for k, v in hits.items()}
    # one binomial standard error at 300 simulations is 1.3 points
    assert 0.91 <= coverage["median"] <= 0.99, coverage
    assert 0.94 <= coverage["median_exact"] <= 1.0, coverage


@pytest.mark.parametrize("noise", ["lognormal", "outliers 1 in 10"])
def test_three_run_intervals_reach_their_level(noise):
    """A quick benchmarks/coverage.py: 1000 seeded samples of 3 runs (CV 10 %), the
    true time and speedup 1. The percentile bootstrap of the ratio of medians covered
    90 % here, (min, max) of the time 74-75 %."""
    rng = np.random.default_rng(36)
    a, b = draw(noise, 0.10, (1000, 3), rng), draw(noise, 0.10, (1000, 3), rng)
    speedup = np.array([ratio_ci(x, y)[1:] for x, y in zip(a, b, strict=True)])
    time = np.array([median_ci(x)[1:] for x in a])
    for name, (lo, hi) in {"speedup": speedup.T, "time": time.T}.items():
        coverage = np.mean((lo <= 1) & (hi >= 1))
        assert coverage >= 0.94, (name, coverage)


def test_ratio_ci_point_estimate_and_small_samples():
    base, times = [10.0, 11.0, 12.0], [4.0, 5.0, 9.0]
    ratio, lo, hi = ratio_ci(base, times)
    assert ratio == 11.0 / 5.0  # ratio of medians, not the mean of ratios
    assert lo < ratio < hi
    assert np.isnan(ratio_ci([10.0], times)[1])
    assert np.isnan(ratio_ci([], times)[0])
    assert np.isnan(ratio_ci([0.0, 1.0], times)[1])  # no log of 0: no interval
    # an outlier pulls the mean log time off the median: the interval still holds it
    ratio, lo, hi = ratio_ci([1.0, 1.001, 1.002, 1.003, 1.004, 1.005, 9.0] * 3, [1.0] * 5 + [1.01])
    assert lo <= ratio <= hi


def test_exact_median_ci_is_scipys_quantile_test_interval():
    rng = np.random.default_rng(5)
    for n in range(6, 41):
        x = rng.lognormal(0, 0.2, n)
        for level in (0.9, 0.95, 0.99):
            if n < 8 and level == 0.99:
                continue  # no order statistics reach 99 % below n = 8: scipy says nan
            ci = quantile_test(x, q=float(np.median(x))).confidence_interval(level)
            assert median_ci(x, level, interpolate=False)[1:] == (ci.low, ci.high), (n, level)


def test_ratio_ci_is_scipys_welch_interval_on_log_times():
    rng = np.random.default_rng(6)
    for n_a, n_b in ((3, 3), (10, 7), (20, 20)):
        a, b = rng.lognormal(4, 0.1, n_a), rng.lognormal(3, 0.1, n_b)
        ci = ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
        ratio, lo, hi = ratio_ci(a, b)
        assert (lo, hi) == pytest.approx(
            (min(np.exp(ci.low), ratio), max(np.exp(ci.high), ratio)), rel=1e-12
        )


# ---------------------------------------------------------------- instability


def test_instability_finds_planted_outlier():
    times = [100.0, 101.0, 99.5, 100.4, 99.8, 130.0, 100.2]
    flag = instability(times)
    assert flag["outliers"] == [5]
    assert flag["unstable"] and "outlier" in flag["reason"]


def test_instability_modified_z_by_hand():
    times = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 103.0]
    # median 100.1, MAD 0.5: z(103) = 0.6745 * 2.9 / 0.5 = 3.91, z(99) = -1.48
    assert instability(times, min_deviation=0)["outliers"] == [7]
    assert instability(times, z_limit=4.0, min_deviation=0)["outliers"] == []
    # but 103 lies only 2.9 % from the median: no outlier by default (5 %)
    assert instability(times)["outliers"] == []
    assert instability(times, min_deviation=0.02)["outliers"] == [7]


def test_runs_that_agree_closely_are_not_outliers_however_tiny_their_mad():
    # three runs of one point, 0.5 % apart (a new user's): MAD 0.0005 s, so rep2's
    # |modified z| is 20, and the base case was flagged unstable and left out of fits
    flag = instability([3.0274, 3.0425, 3.0269])
    assert not flag["unstable"] and flag["outliers"] == [], flag
    assert instability([3.0274, 3.2425, 3.0269])["outliers"] == [1]  # 7 % off: one


def test_instability_flags_high_cv_and_passes_stable_data():
    noisy = instability([100.0, 80.0, 125.0, 95.0, 110.0])
    assert noisy["cv"] > 0.10 and noisy["unstable"] and "CV" in noisy["reason"]
    stable = instability(100 * np.exp(np.random.default_rng(0).normal(0, 0.02, 10)))
    assert not stable["unstable"] and stable["reason"] == "" and stable["outliers"] == []
    same = instability([5.0, 5.0, 5.0, 5.0])  # MAD = 0: no outliers by z
    assert same["outliers"] == [] and not same["unstable"]
    assert instability([np.nan, 1.0, 1.0, 1.0, 9.0, 1.0])["outliers"] == []  # MAD 0


def test_instability_indices_skip_failed_runs():
    flag = instability([np.nan, 100.0, 100.5, 99.5, 100.2, 99.9, 150.0])
    assert flag["outliers"] == [6]


# ---------------------------------------------------------------- Karp-Flatt


def test_karp_flatt_returns_amdahl_serial_fraction():
    serial = 0.07
    p = np.array([2.0, 4.0, 8.0, 16.0, 64.0])
    speedup = 1 / (serial + (1 - serial) / p)
    np.testing.assert_allclose(karp_flatt(speedup, p), serial)
    assert karp_flatt(float(speedup[2]), 16, n_base=2) == pytest.approx(serial)
    assert math.isnan(karp_flatt(1.0, 4, n_base=4))
