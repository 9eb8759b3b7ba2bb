"""How often the 95 % intervals of scalestudy/analysis/intervals.py cover the truth, on
simulated runs with a known truth, beside the methods they replaced.

A point's runs are its true time times a noise factor; each noise is scaled so that its
median is 1, so the true time (the median run time) is 1 and so is the true speedup of
two points that share a noise (the noise is the machine's, whatever N). Noises, each at
a CV of 2, 5, 10 and 15 %:

* lognormal;
* right-skewed: a floor and an exponential delay (1 + cv (E - 1));
* outliers, 1 in 10: lognormal, and a run in ten slowed 1.5-3x (a noisy neighbour, as
  benchmarks/adaptive_simulator.py draws them, ten times as often).

Methods: the time of a point (median_ci: order statistics, today's, against a t
interval on log times) and the speedup (ratio_ci: the percentile bootstrap of a ratio
of medians, 2,000 resamples, today's, against a Welch interval on log times). The
efficiency is the speedup times N_base / N, a constant: its coverage is the speedup's.
Coverage is the share of simulated samples whose interval holds the truth; width the
mean of (hi - lo) relative to the truth. Nothing runs and nothing sleeps.

Run: .venv/bin/python -m benchmarks.coverage [--samples 2000 --seed 1]

Measured (2026-11-27, 2000 samples a cell, seed 1; 68 s on a loaded 2-core machine):
lowest coverage over the 3 noises x 4 CVs, and the range of the mean width at CV 10 %

  runs  time old  time now  speedup old  speedup now   speedup width old -> now
  2     47.9 %    93.3 %    64.0 %       97.2 %        0.19-0.54 -> 1.7-117 (!)
  3     73.7 %    92.9 %    88.9 %       96.1 %        0.28-0.79 -> 0.45-1.6
  4     86.2 %    93.5 %    92.1 %       95.3 %        0.27-0.79 -> 0.33-1.0
  5     93.0 %    93.3 %    96.5 %       95.2 %        0.31-0.93 -> 0.27-0.80
  8     94.2 %    94.2 %    95.8 %       95.0 %        0.21-0.48 -> 0.20-0.56

The time's t interval is exact under lognormal noise (94.8-95.2 % with 20,000 samples
a cell); right-skewed noise holds it at 93.1-93.6 % at 2-4 runs, 94.6 % at 5, which
intervals.TIME_CI_MEASURED states and the report says. The speedup's shortfall at 3-4
runs is gone; the price is width at 2-3 runs, most with an outlier (a t quantile of
12.7 at 1 degree of freedom): an interval that covers says how little 2 runs know.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scalestudy.analysis.stats import intervals

RUNS = (2, 3, 4, 5, 8)
CVS = (0.02, 0.05, 0.10, 0.15)
NOISES = ("lognormal", "right-skewed", "outliers 1 in 10")
OUTLIER_SHARE = 0.1
N_BOOT = 2000  # today's ratio_ci default
TRUTH_DRAWS = 2_000_000  # to find the median of the outlier mixture


def _raw(noise: str, cv: float, shape, rng: np.random.Generator) -> np.ndarray:
    sigma = np.sqrt(np.log(1 + cv**2))
    if noise == "lognormal":
        return rng.lognormal(0.0, sigma, shape)
    if noise == "right-skewed":
        return 1 + cv * (rng.exponential(1.0, shape) - 1)
    times = rng.lognormal(0.0, sigma, shape)
    slow = rng.random(shape) < OUTLIER_SHARE
    return np.where(slow, times * rng.uniform(1.5, 3.0, shape), times)


def noise_median(noise: str, cv: float) -> float:
    if noise == "lognormal":
        return 1.0
    if noise == "right-skewed":
        return 1 + cv * (np.log(2) - 1)
    return float(np.median(_raw(noise, cv, TRUTH_DRAWS, np.random.default_rng(12345))))


def draw(noise: str, cv: float, shape, rng: np.random.Generator) -> np.ndarray:
    """Run times whose distribution has median 1."""
    return _raw(noise, cv, shape, rng) / noise_median(noise, cv)


# ------------------------------------------------------------ the methods, vectorised
# rows of x are samples; each returns (lo, hi) arrays


def time_order_stats(x):
    """Today's median_ci: interpolated order statistics, (min, max) for n <= 5."""
    n = x.shape[1]
    d, lam, _ = intervals._order_stat_rule(n, intervals.LEVEL, True)
    x = np.sort(x, axis=1)
    lo = (1 - lam) * x[:, d - 1] + lam * x[:, min(d, n - 1)]
    hi = (1 - lam) * x[:, n - d] + lam * x[:, max(n - d - 1, 0)]
    return lo, hi


def time_t_log(x):
    """A t interval of the mean log time at every n (median_ci's below n = 6)."""
    return intervals._log_t(x, intervals.LEVEL)


def time_now(x):
    """intervals.median_ci: t on log times widened to hold the median where no order
    statistics reach the level (n <= 5), else those."""
    if intervals.median_ci_coverage(x.shape[1]) >= intervals.LEVEL:
        return time_order_stats(x)
    lo, hi = time_t_log(x)
    median = np.median(x, axis=1)
    return np.minimum(lo, median), np.maximum(hi, median)


def _boot_medians(x, rng):
    x = np.sort(x, axis=1)
    s, n = x.shape
    idx = np.sort(rng.integers(0, n, size=(s, N_BOOT, n), dtype=np.int8), axis=2).astype(np.intp)
    rows = np.arange(s)[:, None]
    return 0.5 * (x[rows, idx[:, :, (n - 1) // 2]] + x[rows, idx[:, :, n // 2]])


def ratio_bootstrap(a, b, rng):
    """Today's ratio_ci: percentile bootstrap of median(a) / median(b)."""
    boot = _boot_medians(a, rng) / _boot_medians(b, rng)
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=1)
    return lo, hi


def ratio_now(a, b):
    """intervals.ratio_ci: Welch on log times, widened to hold the ratio of medians."""
    lo, hi = intervals._welch_log(a, b, intervals.LEVEL)
    ratio = np.median(a, axis=1) / np.median(b, axis=1)
    return np.minimum(lo, ratio), np.maximum(hi, ratio)


# ------------------------------------------------------------------------ the table


def cell(lo, hi):
    return float(np.mean((lo <= 1) & (hi >= 1))), float(np.mean(hi - lo))


# column -> (what it measures, its interval)
METHODS = {
    "time old": ("order statistics, (min, max) for n <= 5", time_order_stats),
    "time t-log": ("t on log times at every n", time_t_log),
    "time now": ("intervals.median_ci", time_now),
    "speedup old": ("percentile bootstrap of the ratio of medians", ratio_bootstrap),
    "speedup now": ("intervals.ratio_ci: Welch on log times", ratio_now),
}


def table(samples: int, seed: int) -> list[tuple]:
    """(noise, cv, runs, {column: (coverage, mean width)}) per cell."""
    rows = []
    for k, noise in enumerate(NOISES):
        for j, cv in enumerate(CVS):
            for i, n in enumerate(RUNS):
                rng = np.random.default_rng([seed, i, j, k])
                x = draw(noise, cv, (samples, n), rng)
                base = draw(noise, cv, (samples, n), rng)
                cells = {}
                for name, (_, method) in METHODS.items():
                    if name.startswith("time"):
                        cells[name] = cell(*method(x))
                    elif name == "speedup old":
                        cells[name] = cell(*method(base, x, rng))
                    else:
                        cells[name] = cell(*method(base, x))
                rows.append((noise, cv, n, cells))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="simulated samples per cell")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = table(args.samples, args.seed)
    print(f"95 % intervals, {args.samples} samples a cell, seed {args.seed}: coverage / width")
    for name, (what, _) in METHODS.items():
        print(f"  {name}: {what}")
    print(f"{'noise':<16} {'CV':>4} {'runs':>4}" + "".join(f"  {m:>14}" for m in METHODS))
    for noise, cv, n, cells in rows:
        line = "".join(f"  {f'{100 * c:4.1f} % / {w:.3f}':>14}" for c, w in cells.values())
        print(f"{noise:<16} {100 * cv:3.0f}% {n:>4}{line}")
    for n in RUNS:
        low = {m: min(r[3][m][0] for r in rows if r[2] == n) for m in METHODS}
        print(f"lowest at {n} runs: " + ", ".join(f"{m} {100 * c:.1f} %" for m, c in low.items()))
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
