"""The hand-written statistics against the SciPy routine that could replace each, side
by side in one run (alternated round by round): the same inputs, the same seeds.
For each pair it prints the milliseconds per call, SciPy's time over the hand-written
one, and the largest difference between the two results (0 or rounding: the same
numbers). What the package uses is marked *.

  median CI (exact)  intervals.median_ci(interpolate=False)* vs
                     scipy.stats.quantile_test(...).confidence_interval() (the default,
                     interpolated CI has no SciPy twin)
  speedup CI         intervals.ratio_ci* vs scipy.stats.ttest_ind (Welch, log times)
  study: CIs + fits  the speedup CIs of every point and models.fit_models, with either
                     speedup CI: what the choice costs a study in benchmarks/fit_speed.py
  fit replicates     the within-N redraw of fit_models by hand vs scipy.stats.bootstrap*
                     with one sample per N (its bootstrap distribution of the N means)
  permutation        comparison's null distribution* vs scipy.stats.permutation_test
                     (exact: 4 + 4 runs; random: 20 + 20 runs, 5000 splits)
  model fit          the vectorised Gauss-Newton/NNLS fit of the bootstrap replicates*
                     vs a scipy.optimize.least_squares call per replicate (started at the
                     fit of the medians, its default tolerances); fixed_work_overhead,
                     three parameters, on the study's USL curve

One study here is --points N x --repeats runs, as in benchmarks/fit_speed.py.
Run: .venv/bin/python -m benchmarks.stats_scipy [--points 10 --repeats 20 --rounds 5]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import optimize
from scipy import stats as sps

from benchmarks.common import alternate
from scalestudy.analysis.stats import comparison, intervals, models


def scipy_median_ci_exact(x, level=intervals.LEVEL):
    ci = sps.quantile_test(x, q=float(np.median(x))).confidence_interval(level)
    return float(np.median(x)), float(ci.low), float(ci.high)


def scipy_ratio_ci(base, times, level=intervals.LEVEL):
    """ratio_ci through scipy.stats.ttest_ind (Welch, on log times)."""
    ratio = float(np.median(base) / np.median(times))
    test = sps.ttest_ind(np.log(base), np.log(times), equal_var=False)
    ci = test.confidence_interval(level)
    return ratio, min(float(np.exp(ci.low)), ratio), max(float(np.exp(ci.high)), ratio)


def hand_within_n(runs, n_boot, seed):
    """What models._resample_within_n (now scipy.stats.bootstrap) did by hand: one index
    matrix, drawn N by N, and the group means of the resampled runs."""
    rng = np.random.default_rng(seed)
    idx = np.empty((n_boot, runs.inverse.size), dtype=np.intp)
    for g in range(runs.distinct.size):
        rows = np.flatnonzero(runs.inverse == g)
        idx[:, rows] = rows[rng.integers(0, rows.size, size=(n_boot, rows.size))]
    raw = runs.group_means(runs.log_t[idx])
    inflate = np.sqrt(runs.counts / (runs.counts - 1.0))
    return runs.mean_log + inflate * (raw - runs.mean_log)


def scipy_null(log_a, log_b, n_perm, seed):
    res = sps.permutation_test(
        (log_a, log_b),
        lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis),
        permutation_type="independent",
        vectorized=True,
        n_resamples=n_perm,
        random_state=np.random.default_rng(seed),
    )
    return float(res.statistic), res.null_distribution


def least_squares_loop(X, weight, mean_log, start):
    root_w = np.sqrt(weight)
    out = []
    for y in mean_log:
        fit = optimize.least_squares(
            lambda p, y=y: root_w * (y - np.log(X @ p)), start, bounds=(0, np.inf)
        )
        out.append(fit.x)
    return np.array(out)


def report(name, times, hand, other, difference):
    ratio = times[other] / times[hand]
    print(
        f"{name:18s} {times[hand] * 1e3:8.3f} ms hand-written  {times[other] * 1e3:8.3f} ms "
        f"{other:29s} {ratio:5.1f}x"
        + ("" if difference is None else f"  max |diff| {difference:.2g}")
    )


def pair(name, hand, scipy_name, other, rounds, calls, difference):
    """Times `calls` calls of each, alternated over `rounds` rounds; ms per call."""

    def repeat(fn):
        return lambda: [fn() for _ in range(calls)]

    t = alternate({"hand": repeat(hand), scipy_name: repeat(other)}, rounds)
    report(name, {k: v / calls for k, v in t.items()}, "hand", scipy_name, difference)


def largest_difference(pairs) -> float:
    return max(float(np.max(np.abs(np.subtract(a, b)))) for a, b in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--boot", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    ns = np.arange(1, args.points + 1, dtype=float)
    curve = 100 * (1 + 0.05 * (ns - 1) + 0.002 * ns * (ns - 1)) / ns
    times = curve[:, None] * rng.lognormal(0, 0.05, (ns.size, args.repeats))
    base, last, rounds = times[0], times[-1], args.rounds
    print(f"one study: {args.points} N x {args.repeats} repeats; {rounds} rounds")

    diff = largest_difference(
        (intervals.median_ci(x, interpolate=False), scipy_median_ci_exact(x)) for x in times
    )
    pair(
        "median CI (exact)",
        lambda: intervals.median_ci(base, interpolate=False),
        "scipy.stats.quantile_test",
        lambda: scipy_median_ci_exact(base),
        rounds,
        50,
        diff,
    )

    diff = largest_difference((intervals.ratio_ci(base, x), scipy_ratio_ci(base, x)) for x in times)
    pair(
        "speedup CI",
        lambda: intervals.ratio_ci(base, last),
        "scipy.stats.ttest_ind",
        lambda: scipy_ratio_ci(base, last),
        rounds,
        20,
        diff,
    )

    n_runs = np.repeat(ns, args.repeats)
    fit = {"ns": n_runs, "times": times.ravel(), "n_base": 1.0, "n_boot": args.boot}
    # what fit_speed.py does per study, less the cheap parts: every speedup CI and the fits
    pair(
        "study: CIs + fits",
        lambda: ([intervals.ratio_ci(base, x) for x in times],) + (models.fit_models(**fit),),
        "... with scipy speedup CIs",
        lambda: ([scipy_ratio_ci(base, x) for x in times],) + (models.fit_models(**fit),),
        rounds,
        3,
        None,
    )

    log_t = np.log(times.ravel())
    distinct, inverse, counts = np.unique(n_runs, return_inverse=True, return_counts=True)
    mean_log = np.bincount(inverse, log_t) / counts
    runs = models._Runs(distinct, counts, inverse, log_t, mean_log, 0.0)
    scipy_draws = models._resample_within_n(runs, args.boot, np.random.default_rng(0))
    pair(
        "fit replicates",
        lambda: hand_within_n(runs, args.boot, 0),
        "scipy.stats.bootstrap",
        lambda: models._resample_within_n(runs, args.boot, np.random.default_rng(0)),
        rounds,
        20,
        largest_difference([(hand_within_n(runs, args.boot, 0), scipy_draws)]),
    )

    for label, n_a in (("permutation 4+4", 4), ("permutation 20+20", 20)):
        log_a, log_b = np.log(times[1, :n_a]), np.log(times[2, :n_a])
        obs, null, exact = comparison._split_statistics(log_a, log_b, 5000, rng)
        s_obs, s_null = scipy_null(log_a, log_b, 5000, 0)
        # exact: the same distribution of every split; random: other random splits
        diff = largest_difference([(np.sort(null), np.sort(s_null))] if exact else [(obs, s_obs)])
        pair(
            label,
            lambda a=log_a, b=log_b: comparison._split_statistics(
                a, b, 5000, np.random.default_rng(0)
            ),
            "scipy.stats.permutation_test",
            lambda a=log_a, b=log_b: scipy_null(a, b, 5000, 0),
            rounds,
            5,
            diff,
        )

    # the times are a USL curve, which is a fixed_work_overhead curve (models' docstring)
    X = models._design("fixed_work_overhead", distinct)
    weight = counts.astype(float)
    start = models._fit_log_batch(X, weight, mean_log[None])[0][0]
    ours = models._fit_log_batch(X, weight, scipy_draws)[1]
    theirs = models._log_loss(
        X, weight, scipy_draws, least_squares_loop(X, weight, scipy_draws, start)
    )
    # difference in loss: least_squares stops at its default tolerances (a little higher)
    pair(
        f"model fit x {args.boot}",
        lambda: models._fit_log_batch(X, weight, scipy_draws),
        "least_squares loop",
        lambda: least_squares_loop(X, weight, scipy_draws, start),
        rounds,
        1,
        largest_difference([(ours, theirs)]),
    )


if __name__ == "__main__":
    main()
