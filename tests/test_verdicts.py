"""The regression check (scalestudy/analysis/stats/verdicts.py, through
analysis/history/baseline.py): seeded pairs of one 5-point curve measured twice, 3
runs a side, log-normal noise."""

from __future__ import annotations

import math

import numpy as np

from scalestudy.analysis.history.baseline import regression_check
from scalestudy.analysis.stats.verdicts import pooled_log_variance, verdicts

POINTS = (1, 2, 4, 8, 16)


def curve(change, cv: float, runs: int, rng) -> dict:
    """(series, N) -> runs of a curve 100 s / N, each N scaled by change[i]."""
    sigma = math.sqrt(math.log1p(cv**2))
    return {
        ("", n): 100 / n * change[i] * rng.lognormal(-(sigma**2) / 2, sigma, runs)
        for i, n in enumerate(POINTS)
    }


def check(change, cv=0.05, runs=3, seed=0, runs_then=None) -> dict:
    rng = np.random.default_rng(seed)
    was = curve([1] * 5, cv, runs_then or runs, rng)
    (found,) = regression_check(curve(change, cv, runs, rng), was, 0.05)
    return found


def test_a_uniform_10_percent_slowdown_is_called_at_3_runs():
    # Welch per point with Bonferroni called it in about a third of such pairs
    found = [check([1.1] * 5, seed=s) for s in range(60)]
    called = np.mean([f["curve"]["verdict"] == "slower" for f in found])
    assert called >= 0.9
    text = found[0]["curve"]["text"]
    assert text.startswith("slower by ") and text.endswith("on average over the points")


def test_nothing_changed_calls_few_studies():
    found = [check([1] * 5, cv=0.10, seed=s) for s in range(200)]
    called = [
        f["curve"]["verdict"] != "undecided"
        and f["curve"]["verdict"] != "same"
        or any(p["change"] != "none" for p in f["points"])
        for f in found
    ]
    assert np.mean(called) <= 0.06


def test_a_same_verdict_states_its_power():
    found = check([1] * 5, cv=0.05, runs=6, seed=1)
    point = found["points"][2]
    assert point["verdict"] == "same" and 0.8 <= point["power"] < 0.99
    assert point["text"] == (
        f"no change beyond 5% (a 10% change would have been called with probability "
        f"{point['power']:.2f})"
    )
    assert found["curve"]["verdict"] == "same"
    assert "a 10% change at every point would have been called" in found["curve"]["text"]


def test_the_stated_power_is_the_power_delivered():
    # one point, 6 runs a side, CV 5 %: the stated chance of calling a 10 % change
    # against how often a 10 % change is called
    rng = np.random.default_rng(5)
    sigma = math.sqrt(math.log1p(0.05**2))
    stated, called = [], []
    for _ in range(400):
        a, b = rng.lognormal(0, sigma, (2, 6))
        variance, df = pooled_log_variance([a, b])
        null = verdicts([np.log(b).mean() - np.log(a).mean()], [6], [6], variance, df, [0], 0.05)
        stated.append(null["points"][0]["power"])
        shifted = np.log(b).mean() + math.log(1.1) - np.log(a).mean()
        found = verdicts([shifted], [6], [6], variance, df, [0], 0.05)
        called.append(found["points"][0]["verdict"] == "slower")
    assert abs(np.nanmean(stated) - np.mean(called)) < 0.05


def test_an_undecided_point_names_the_runs_that_would_decide_it():
    found = check([1] * 5, cv=0.05, runs=3, seed=1, runs_then=6)
    undecided = [p for p in found["points"] if p["verdict"] == "undecided"]
    assert undecided
    for p in undecided:
        more = p["more_runs"]
        assert more and p["text"] == f"undecided: {more} more run{'s' * (more > 1)} would decide it"
    # the other side's runs alone keep it short: said, no runs asked for
    few = check([1] * 5, cv=0.08, runs=3, seed=1)
    stuck = [p for p in few["points"] if p["more_runs"] is None and p["verdict"] == "undecided"]
    assert stuck and stuck[0]["text"] == "undecided: more runs now cannot decide it alone"


def test_a_ramp_and_one_point_are_called_more_often():
    # 300 seeded studies of each at CV 5 %, 3 runs a side: a ramp from 0 at N = 1 to
    # +10 % at N = 16 called slower, and one point +10 % called there. The curve's
    # shapes (a shift, a change growing or fading with log N) call 285 of the 600;
    # the F test of intercept and slope they replaced called 273
    rng = np.random.default_rng(2)
    log_n = np.log(POINTS)
    grows = (log_n - log_n.min()) / np.ptp(log_n)
    sigma = math.sqrt(math.log1p(0.05**2))
    ramp, one = np.log1p(0.1 * grows), np.log1p([0, 0, 0.1, 0, 0])
    called = 0
    for _ in range(300):
        for shift, what in ((ramp, "curve"), (one, 2)):
            was = rng.normal(0, sigma, (5, 3))
            now = rng.normal(shift[:, None], sigma, (5, 3))
            variance, df = pooled_log_variance(np.exp(np.concatenate([was, now])))
            d = now.mean(axis=1) - was.mean(axis=1)
            found = verdicts(d, [3] * 5, [3] * 5, variance, df, log_n, 0.05)
            judged = found["curve"] if what == "curve" else found["points"][what]
            called += judged["verdict"] == "slower"
    assert called >= 280
