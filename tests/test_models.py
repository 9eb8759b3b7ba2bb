"""Scaling-model fits: they recover known parameters, reach the log-space least-squares
optimum, select the right model by AICc, and give peaks and bands that behave."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import least_squares

from scalestudy.models import (
    MODEL_NAMES,
    FitResult,
    _design,
    aicc_weights,
    fit_models,
    predicted_peak,
    select_model,
)

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
