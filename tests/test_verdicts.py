"""The regression check (scalestudy/analysis/stats/verdicts.py, through
analysis/stats/verdicts.py): seeded pairs of one 5-point curve measured twice, 3
runs a side, log-normal noise."""

from __future__ import annotations

import math
import re
from dataclasses import asdict

import numpy as np

from scalestudy.analysis.stats.verdicts import pooled_log_variance, regression_check, verdicts

POINTS = (1, 2, 4, 8, 16)


def curve(change, cv: float, runs: int, rng) -> dict:
    """(series, N) -> runs of a curve 100 s / N, each N scaled by change[i]."""
    sigma = math.sqrt(math.log1p(cv**2))
    return {
        ("", n): 100 / n * change[i] * rng.lognormal(-(sigma**2) / 2, sigma, runs)
        for i, n in enumerate(POINTS)
    }


def check(change, cv=0.05, runs=3, seed=0, runs_then=None) -> dict:
    """The curve's verdict and the points', as baseline.json holds them."""
    rng = np.random.default_rng(seed)
    was = curve([1] * 5, cv, runs_then or runs, rng)
    ((verdict, points),) = regression_check(curve(change, cv, runs, rng), was, 0.05)
    return {"curve": asdict(verdict), "points": [asdict(p) for p in points]}


def test_a_uniform_10_percent_slowdown_is_called_at_3_runs():
    # Welch per point with Bonferroni called it in about a third of such pairs
    found = [check([1.1] * 5, seed=s) for s in range(60)]
    called = np.mean([f["curve"]["verdict"] == "slower" for f in found])
    assert called >= 0.9
    text = found[0]["curve"]["text"]
    assert text.startswith("slower by ") and text.endswith("on average over the points")


def test_nothing_changed_calls_few_studies():
    # the rule's false alarms are 5 % by design: 1000 studies put the share called
    # within 0.7 % of it (200 studies left a chance 6.5 %)
    found = [check([1] * 5, cv=0.10, seed=s) for s in range(1000)]
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
    # a speedup is called at 1 % of false alarms where a slowdown has 4 %: less often
    words = re.fullmatch(
        r"no change beyond 5% \(a 10% slowdown would have been called with probability "
        r"(0\.\d\d), a 10% speedup (0\.\d\d)\)",
        point["text"],
    )
    assert words and float(words[1]) == round(point["power"], 2) > float(words[2]) > 0.5
    assert found["curve"]["verdict"] == "same"
    assert "a 10% slowdown at every point would have been called" in found["curve"]["text"]


def delivered(way: str, runs: int, cv: float, points: int, sims: int) -> tuple[float, float]:
    """The mean power a "same" or "undecided" at point 2 (of `points`, `runs` a side)
    states to call a 10 % change `way` (a speedup's: said by a "same"), and how often
    that change, at that point alone, is called: seeded, one-sided tests."""
    rng = np.random.default_rng(5)
    sigma = math.sqrt(math.log1p(cv**2))
    log_n, at = np.log(POINTS[:points]), min(2, points - 1)
    stated, called = [], []
    for _ in range(sims):
        was, now = rng.normal(0, sigma, (2, points, runs))
        variance, df = pooled_log_variance(np.exp(np.concatenate([was, now])))
        d = now.mean(axis=1) - was.mean(axis=1)
        null = verdicts(d, [runs] * points, [runs] * points, variance, df, log_n, 0.05)
        point = null["points"][at]
        if way == "slower":
            stated.append(point["power"])
        elif point["verdict"] == "same":
            stated.append(float(point["text"].rsplit(" ", 1)[1].rstrip(")")))
        d[at] += math.log(1.1 if way == "slower" else 0.9)
        found = verdicts(d, [runs] * points, [runs] * points, variance, df, log_n, 0.05)
        called.append(found["points"][at]["verdict"] == way)
    return float(np.nanmean(stated)), float(np.mean(called))


def test_the_stated_power_is_the_power_delivered():
    # one point, 6 runs a side, CV 5 %: the stated chance of calling a 10 % slowdown
    # against how often one is called; a speedup's at CV 4 %, where nearly all are
    # "same" (the power a "same" states, of those)
    for way, cv in (("slower", 0.05), ("faster", 0.04)):
        stated, called = delivered(way, 6, cv, points=1, sims=400)
        assert abs(stated - called) < 0.05, way


def test_a_point_of_a_curve_states_the_power_of_a_change_there_alone():
    # 5 points: a 10 % slowdown at one point alone is called only where the curve's
    # test rejects too and the point passes Holm's first step. The power of the
    # point's own Holm step overstated it (stated 0.81, called 0.66 at 6 runs)
    stated, called = delivered("slower", 6, 0.05, points=5, sims=300)
    assert abs(stated - called) < 0.05


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


def test_a_ramp_and_one_point_are_called_as_often_as_the_goals_ask():
    # 600 seeded studies of each at CV 5 %, 3 runs a side: a ramp from 0 at N = 1 to
    # +10 % at N = 16 called slower (goal 75 %), one point +10 % called there (goal
    # 35 %, benchmarks/baseline_calls.py). The rule's one-sided tests call about 78 %
    # and 37 % (here 451 and 219); the two-sided tests they replaced 67 % and 30 %
    # (385 and 171): each bound 2-3.5 standard errors below the rule's rate
    rng = np.random.default_rng(2)
    log_n = np.log(POINTS)
    grows = (log_n - log_n.min()) / np.ptp(log_n)
    sigma = math.sqrt(math.log1p(0.05**2))
    ramp, one = np.log1p(0.1 * grows), np.log1p([0, 0, 0.1, 0, 0])
    called = {"curve": 0, 2: 0}
    for _ in range(600):
        for shift, what in ((ramp, "curve"), (one, 2)):
            was = rng.normal(0, sigma, (5, 3))
            now = rng.normal(shift[:, None], sigma, (5, 3))
            variance, df = pooled_log_variance(np.exp(np.concatenate([was, now])))
            d = now.mean(axis=1) - was.mean(axis=1)
            found = verdicts(d, [3] * 5, [3] * 5, variance, df, log_n, 0.05)
            judged = found["curve"] if what == "curve" else found["points"][what]
            called[what] += judged["verdict"] == "slower"
    assert called["curve"] >= 0.72 * 600
    assert called[2] >= 0.33 * 600
