"""Statistics of scaling studies: fits recover known parameters, CIs cover at about the
nominal rate, flags and recommendations on hand-checked data, the published
RTX 2080 Ti table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import least_squares

from scalestudy.stats import (
    MODEL_NAMES,
    FitResult,
    _design,
    aicc_weights,
    compare_series,
    efficiency_ci,
    fit_models,
    instability,
    karp_flatt,
    median_ci,
    median_ci_coverage,
    pareto_front,
    predicted_peak,
    ratio_ci,
    recommend,
    select_model,
)

# Lightning DDP autoencoder, batch 1, one epoch, RTX 2080 Ti: GPUs and seconds
GPUS = np.arange(1, 11)
RTX_TIMES = np.array([1760, 1113, 815, 660, 587, 535, 525, 504, 504, 504], dtype=float)
RTX_SPEEDUPS = [1.00, 1.58, 2.16, 2.67, 3.00, 3.29, 3.35, 3.49, 3.49, 3.49]

# Model -> (true parameters, the same as coefficients of t = X(N) @ theta)
TRUTH = {
    "amdahl": ({"T": 100.0, "s": 0.05}, [5.0, 95.0]),
    "fixed_work_overhead": ({"F": 5.0, "W": 100.0, "c": 0.05}, [5.0, 100.0, 0.05]),
    "usl": ({"T": 100.0, "sigma": 0.02, "kappa": 0.002}, [2.0, 98.0, 0.2]),
}


def synthetic(name, theta, ns, repeats=5, noise=0.03, seed=0):
    """Runs of a model with lognormal noise: (N of each run, time of each run)."""
    rng = np.random.default_rng(seed)
    n_runs = np.repeat(np.asarray(ns, dtype=float), repeats)
    clean = _design(name, n_runs) @ np.asarray(theta, dtype=float)
    return n_runs, clean * np.exp(rng.normal(0.0, noise, n_runs.size))


def by_name(fits):
    return {f.name: f for f in fits}


# ---------------------------------------------------------------- fits


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_fit_recovers_known_parameters(name):
    truth, theta = TRUTH[name]
    ns, times = synthetic(name, theta, np.arange(1, 33), seed=1)
    fit = by_name(fit_models(ns, times, n_base=1, seed=1))[name]
    assert fit.ok, fit.note
    assert (fit.n_points, fit.n_obs, fit.k) == (32, 160, len(theta))
    assert "runs within each N" in fit.note
    for param, true in truth.items():
        lo, hi = fit.param_ci[param]
        assert lo <= fit.params[param] <= hi, (param, fit.params[param], lo, hi)
        assert lo <= true <= hi, (param, true, lo, hi)
        assert hi - lo < 0.5 * true, (param, lo, hi)  # informative, not just wide
    assert 0.02 < fit.rmse < 0.04  # the 3 % noise, read back in log space
    assert fit.r2 > 0.99


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_fit_is_the_log_space_least_squares_optimum(name):
    _, theta = TRUTH[name]
    ns, times = synthetic(name, theta, [1, 2, 3, 4, 6, 8, 12, 16], repeats=3, noise=0.1, seed=7)
    fit = by_name(fit_models(ns, times, n_base=1, n_boot=0))[name]
    X = _design(name, ns)
    ref = least_squares(
        lambda p: np.log(times) - np.log(X @ p),
        np.asarray(theta) * 1.3 + 0.01,
        bounds=(0, np.inf),
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
    )
    assert fit.rss == pytest.approx(2 * ref.cost, rel=1e-9)
    assert fit.rss <= 2 * ref.cost * (1 + 1e-12)


def test_residual_bootstrap_with_one_run_per_n():
    truth, theta = TRUTH["amdahl"]
    ns, times = synthetic("amdahl", theta, np.arange(1, 33), repeats=1, seed=2)
    fit = by_name(fit_models(ns, times, n_base=1, seed=2))["amdahl"]
    assert "residuals" in fit.note
    lo, hi = fit.param_ci["s"]
    assert lo <= truth["s"] <= hi


def test_fits_are_deterministic_given_the_seed():
    ns, times = synthetic("usl", TRUTH["usl"][1], np.arange(1, 11), seed=3)
    first, again = fit_models(ns, times, 1, seed=5), fit_models(ns, times, 1, seed=5)
    other = fit_models(ns, times, 1, seed=6)
    assert [f.param_ci for f in first] == [f.param_ci for f in again]
    assert [f.param_ci for f in first] != [f.param_ci for f in other]


def test_underdetermined_fits_say_so():
    ns, times = synthetic("amdahl", [5.0, 95.0], [1, 2, 4], repeats=4)
    fits = by_name(fit_models(ns, times, n_base=1))
    assert fits["amdahl"].ok
    for name in ("fixed_work_overhead", "usl"):
        assert not fits[name].ok
        assert "underdetermined" in fits[name].note
        assert np.isnan(fits[name].predict_time(2.0))
    assert select_model(list(fits.values())).name == "amdahl"
    assert select_model([fits["usl"]]) is None


def test_nan_and_failed_runs_are_dropped():
    ns, times = synthetic("amdahl", [5.0, 95.0], np.arange(1, 9), repeats=3)
    times[[2, 5]] = np.nan
    times[7] = 0.0
    fit = fit_models(ns, times, n_base=1)[0]
    assert fit.ok and fit.n_obs == ns.size - 3


# ---------------------------------------------------------------- model selection


def test_selection_picks_amdahl_for_amdahl_data():
    ns, times = synthetic("amdahl", [5.0, 95.0], np.arange(1, 33), seed=4)
    assert select_model(fit_models(ns, times, 1)).name == "amdahl"


def test_selection_picks_usl_for_strong_contention():
    # kappa > sigma: no fixed_work_overhead curve fits (it would need F < 0)
    ns, times = synthetic("usl", [1.0, 99.0, 3.0], np.arange(1, 17), seed=4)
    fits = by_name(fit_models(ns, times, 1))
    assert select_model(list(fits.values())).name == "usl"
    assert fits["usl"].aicc < fits["amdahl"].aicc - 10
    assert fits["usl"].aicc < fits["fixed_work_overhead"].aicc - 4


def test_selection_of_fixed_work_overhead_and_its_usl_twin():
    # with F > 0 the USL spans the same curve: equal AICc, the tie goes to the earlier model
    ns, times = synthetic("fixed_work_overhead", [5.0, 100.0, 0.05], np.arange(1, 33), seed=4)
    fits = by_name(fit_models(ns, times, 1))
    assert fits["usl"].aicc == pytest.approx(fits["fixed_work_overhead"].aicc, abs=1e-6)
    assert fits["fixed_work_overhead"].aicc < fits["amdahl"].aicc - 10
    assert select_model(list(fits.values())).name == "fixed_work_overhead"


def test_select_model_criterion_by_hand():
    def fake(name, k, aicc, ok=True):
        return FitResult(name, "", {}, {}, 10, 50, k, 1.0, 0.9, aicc, 0.1, ok, "")

    fits = [fake("amdahl", 2, -100.0), fake("fixed_work_overhead", 3, -102.5)]
    assert select_model(fits).name == "fixed_work_overhead"  # lower AICc, not fewer k
    tied = [fake("usl", 3, -102.5), fake("amdahl", 2, -102.5 + 1e-9)]
    assert select_model(tied).name == "amdahl"  # a tie goes to fewer parameters
    assert select_model([fake("usl", 3, -200.0, ok=False), *fits]).name == "fixed_work_overhead"
    assert select_model([fake("amdahl", 2, math.inf)]) is None
    weights = aicc_weights(fits)
    assert weights["fixed_work_overhead"] == pytest.approx(1 / (1 + math.exp(-1.25)))


# ---------------------------------------------------------------- peak and bands


def test_usl_peak_beyond_the_measured_range_and_band_widening():
    # T = 100, sigma = 0.05, kappa = 0.001: the speedup peaks at N* = sqrt(0.95/0.001) = 30.8
    ns, times = synthetic("usl", [5.0, 95.0, 0.1], np.arange(1, 17), seed=5)
    usl = by_name(fit_models(ns, times, n_base=1, seed=5))["usl"]
    peak = predicted_peak(usl)
    assert peak is not None
    n_star, speedup = peak
    assert 16 < n_star < 50
    assert speedup == pytest.approx(float(usl.predict_speedup(n_star)))
    assert np.all(usl.predict_speedup([n_star * 0.8, n_star * 1.2]) < speedup)
    assert predicted_peak(usl, n_max_search=16) is None

    n = np.array([4.0, 8.0, 16.0, 64.0, 128.0])
    lo, hi = usl.band(n)
    assert np.all(lo < usl.predict_speedup(n)) and np.all(usl.predict_speedup(n) < hi)
    width = np.log(hi / lo)
    assert width[3] > 1.5 * width[1] and width[4] > width[3]  # wider outside 1..16
    conf_lo, conf_hi = usl.band(n, prediction=False)
    conf_width = np.log(conf_hi / conf_lo)
    assert np.all(conf_width < width)
    # inside the range the run noise (3 %, about 0.12 wide at 95 %) dominates
    assert np.all(width[:3] > conf_width[:3] + 0.05)
    assert np.all(width[:3] > 3 * usl.rmse)


def test_amdahl_has_no_peak():
    ns, times = synthetic("amdahl", [5.0, 95.0], np.arange(1, 17))
    assert predicted_peak(fit_models(ns, times, 1)[0]) is None


# ---------------------------------------------------------------- medians and ratios


def test_median_ci_small_samples():
    assert all(np.isnan(median_ci([])))
    assert median_ci([5.0])[0] == 5.0 and np.isnan(median_ci([5.0])[1])
    # n <= 5 cannot reach 95 %: (min, max), and the coverage it really has
    assert median_ci([3.0, 1.0, 2.0, 5.0, 4.0]) == (3.0, 1.0, 5.0)
    assert median_ci_coverage(5) == pytest.approx(1 - 2 / 2**5)
    assert median_ci_coverage(6) == pytest.approx(0.95)
    # exact order statistics for n = 10 at 95 %: X_(2) and X_(9), 97.85 % coverage
    assert median_ci(np.arange(1.0, 11.0), interpolate=False) == (5.5, 2.0, 9.0)
    assert median_ci_coverage(10, interpolate=False) == pytest.approx(1 - 2 * 11 / 1024)
    med, lo, hi = median_ci(np.arange(1.0, 11.0))
    # interpolated: between the 97.85 % interval (X_(2), X_(9)) and the 89.1 % one
    assert 2.0 < lo < 3.0 and 8.0 < hi < 9.0


def test_ci_coverage_near_nominal():
    """300 simulated studies, 10 runs per sample, lognormal noise. This seed gives
    93.3 % (interpolated median CI), 97.3 % (exact median CI), 94.7 % (ratio CI); with
    3000 simulations they were 95.1 %, 98.1 % (theory: 97.85 %) and 96.5 %."""
    rng = np.random.default_rng(11)
    true_median, true_ratio = 100.0, 2.0
    hits = {"median": 0, "median_exact": 0, "ratio": 0, "efficiency": 0}
    sims = 300
    for i in range(sims):
        base = true_median * np.exp(rng.normal(0, 0.2, 10))
        times = true_median / true_ratio * np.exp(rng.normal(0, 0.2, 10))
        _, lo, hi = median_ci(base)
        hits["median"] += lo <= true_median <= hi
        _, lo, hi = median_ci(base, interpolate=False)
        hits["median_exact"] += lo <= true_median <= hi
        _, lo, hi = ratio_ci(base, times, n_boot=1000, seed=i)
        hits["ratio"] += lo <= true_ratio <= hi
        _, lo, hi = efficiency_ci(base, times, 1, 4, n_boot=1000, seed=i)
        hits["efficiency"] += lo <= true_ratio / 4 <= hi
    coverage = {k: v / sims for k, v in hits.items()}
    # one binomial standard error at 300 simulations is 1.3 points
    assert 0.91 <= coverage["median"] <= 0.99, coverage
    assert 0.94 <= coverage["median_exact"] <= 1.0, coverage
    assert 0.91 <= coverage["ratio"] <= 0.995, coverage
    assert coverage["efficiency"] == coverage["ratio"]


def test_ratio_ci_point_estimate_and_small_samples():
    base, times = [10.0, 11.0, 12.0], [4.0, 5.0, 9.0]
    ratio, lo, hi = ratio_ci(base, times)
    assert ratio == 11.0 / 5.0  # ratio of medians, not the mean of ratios
    assert lo < ratio < hi
    assert np.isnan(ratio_ci([10.0], times)[1])
    assert np.isnan(ratio_ci([], times)[0])
    assert ratio_ci(base, times, seed=3) == ratio_ci(base, times, seed=3)
    eff = efficiency_ci(base, times, n_base=1, n=4)
    assert eff[0] == pytest.approx(ratio / 4)


# ---------------------------------------------------------------- instability


def test_instability_finds_planted_outlier():
    times = [100.0, 101.0, 99.5, 100.4, 99.8, 130.0, 100.2]
    flag = instability(times)
    assert flag["outliers"] == [5]
    assert flag["unstable"] and "outlier" in flag["reason"]


def test_instability_modified_z_by_hand():
    times = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 103.0]
    # median 100.1, MAD 0.5: z(103) = 0.6745 * 2.9 / 0.5 = 3.91, z(99) = -1.48
    assert instability(times)["outliers"] == [7]
    assert instability(times, z_limit=4.0)["outliers"] == []


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


# ---------------------------------------------------------------- recommendations


def test_published_rtx_2080_ti_table():
    speedups = [ratio_ci(RTX_TIMES[:1], [t])[0] for t in RTX_TIMES]
    assert np.round(speedups, 2).tolist() == RTX_SPEEDUPS
    advice = recommend(GPUS, speedups, units=GPUS)
    assert advice["worth_n"] == 6
    assert advice["stopped_at"][:2] == (6, 7)
    assert advice["stopped_at"][2] == pytest.approx(3.352 - 3.290, abs=0.01)
    assert [s[:2] for s in advice["steps"]][:3] == [(1, 2), (2, 3), (3, 4)]
    # a stricter threshold stops earlier, a looser one later
    assert recommend(GPUS, speedups, GPUS, threshold=0.4)["worth_n"] == 4
    assert recommend(GPUS, speedups, GPUS, threshold=0.05)["worth_n"] == 8


def test_recommend_skips_failed_points():
    speedups = np.array(RTX_SPEEDUPS)
    speedups[[3, 5]] = np.nan  # N = 4 and 6 failed
    advice = recommend(GPUS, speedups, GPUS)
    assert advice["skipped_n"] == [4, 6]
    assert (3, 5) in [s[:2] for s in advice["steps"]]
    # 3 -> 5 gains 0.42 per GPU, 5 -> 7 0.175, 7 -> 8 0.14, 8 -> 9 nothing
    assert advice["worth_n"] == 8
    assert advice["stopped_at"][:2] == (8, 9)


def test_recommend_deadline_and_budget():
    advice = recommend(GPUS, RTX_SPEEDUPS, GPUS, times=RTX_TIMES, deadline_s=700, budget=3000)
    # GPU-seconds: N=4 costs 2640 and finishes in 660 s; N=5 costs 2935 and takes 587 s
    assert advice["cheapest_meeting_deadline"] == 4
    assert advice["fastest_within_budget"] == 5
    none = recommend(GPUS, RTX_SPEEDUPS, GPUS, times=RTX_TIMES, deadline_s=400, budget=100)
    assert none["cheapest_meeting_deadline"] is None and "fastest: 504 s" in none["deadline_note"]
    assert none["fastest_within_budget"] is None and "cheapest: 1760" in none["budget_note"]
    costs = np.full(10, 5.0)
    costs[7] = 1.0
    given = recommend(GPUS, RTX_SPEEDUPS, GPUS, times=RTX_TIMES, costs=costs, deadline_s=600)
    assert given["cheapest_meeting_deadline"] == 8
    plain = recommend(GPUS, RTX_SPEEDUPS, GPUS)
    assert plain["cheapest_meeting_deadline"] is None and plain["deadline_note"]


def test_pareto_front_hand_example():
    times = [10.0, 8.0, 8.0, 5.0, 12.0, 5.0, np.nan]
    costs = [1.0, 2.0, 3.0, 4.0, 1.0, 4.0, 0.5]
    # 0 cheapest; 1 faster for little more; 2 same time as 1 but dearer; 3 and 5 fastest
    # (equal, neither dominates); 4 as cheap as 0 but slower; 6 has no time
    front = pareto_front(times, costs)
    assert front.tolist() == [True, True, False, True, False, True, False]


# ---------------------------------------------------------------- two series


def series(scale, seed, repeats=8, ns=(1, 2, 4, 8)):
    rng = np.random.default_rng(seed)
    return {n: scale * 100 / n**0.8 * np.exp(rng.normal(0, 0.05, repeats)) for n in ns}


def test_compare_series_finds_a_20_percent_difference():
    result = compare_series(series(1.0, 1), series(1.2, 2), n_perm=2000)
    assert result["significant"] and result["p_value"] < 0.01
    assert result["common_n"] == [1, 2, 4, 8]
    for entry in result["per_n"]:
        assert entry["p_value"] < 0.05
        assert entry["lo"] < 1.2 < entry["hi"] or abs(entry["ratio"] - 1.2) < 0.06
        assert entry["lo"] > 1.0


def test_compare_series_same_distribution_mostly_not_significant():
    significant = [
        compare_series(series(1.0, 2 * s), series(1.0, 2 * s + 1), n_perm=1000, seed=s)[
            "significant"
        ]
        for s in range(20)
    ]
    assert sum(significant) <= 3  # about 1 in 20 expected at the 5 % level


def test_compare_series_too_few_runs_is_honest():
    few = compare_series(series(1.0, 1, repeats=2, ns=(1,)), series(1.5, 2, repeats=2, ns=(1,)))
    entry = few["per_n"][0]
    assert "cannot be below" in entry["note"]  # 6 splits: p >= 1/3
    assert not few["significant"]
    single = compare_series({1: [10.0], 2: [6.0]}, {1: [12.0], 2: [7.0]})
    assert all(np.isnan(e["p_value"]) for e in single["per_n"])
    assert "cannot be below" in single["note"]
    none = compare_series({1: [1.0, 2.0]}, {2: [1.0, 2.0]})
    assert math.isnan(none["p_value"]) and none["common_n"] == [] and none["note"]
