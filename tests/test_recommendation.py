"""Recommendations on hand-checked data and the published RTX 2080 Ti table; the Pareto
front."""

from __future__ import annotations

import numpy as np
import pytest

from scalestudy.analysis.decisions.recommendation import pareto_front, recommend
from scalestudy.analysis.stats.intervals import ratio_ci

# Lightning DDP autoencoder, batch 1, one epoch, RTX 2080 Ti: GPUs and seconds
GPUS = np.arange(1, 11)
RTX_TIMES = np.array([1760, 1113, 815, 660, 587, 535, 525, 504, 504, 504], dtype=float)
RTX_SPEEDUPS = [1.00, 1.58, 2.16, 2.67, 3.00, 3.29, 3.35, 3.49, 3.49, 3.49]


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


# --- is the answer decided? -------------------------------------------------------------
from benchmarks.adaptive_simulator import acceptable_answers  # noqa: E402
from scalestudy.analysis.decisions.recommendation import (  # noqa: E402
    decision,
    step_decided,
    step_intervals,
    within_zone,
)


def decide(times: dict[int, list[float]], threshold=0.1, su_per_run=None, indifference=0.0):
    """The walk and its decision on runs of made times (N = units, base the smallest)."""
    ns = sorted(times)
    base = ns[0]
    medians = {n: float(np.median(t)) for n, t in times.items()}
    speedups = [medians[base] / medians[n] for n in ns]
    rec = recommend(ns, speedups, ns, threshold=threshold, indifference=indifference)
    intervals = step_intervals(times, {n: float(n) for n in ns}, base, rec["steps"])
    su = su_per_run or {n: n * medians[n] / 3600 for n in ns}
    return rec, decision(rec, intervals, {n: len(t) for n, t in times.items()}, su)


def noisy(rng, centre: float, cv: float, k: int) -> list[float]:
    return list(centre * np.exp(rng.normal(0, cv, k)))


def test_a_clear_knee_is_decided():
    rng = np.random.default_rng(1)
    # speedup 1, 1.9, 2.0: the step 1->2 pays 0.9 per unit, 2->4 only 0.05
    times = {1: noisy(rng, 100, 0.01, 5), 2: noisy(rng, 52.6, 0.01, 5), 4: noisy(rng, 50, 0.01, 5)}
    rec, found = decide(times)
    assert rec["worth_n"] == 2 and rec["stopped_at"][:2] == (2, 4)
    assert found["decided"] and found["next_measurements"] is None
    (a, b, gain, lo, hi), (c, d, gain2, lo2, hi2) = found["step_intervals"]
    assert lo > 0.1 and hi2 < 0.1 and lo <= gain <= hi and lo2 <= gain2 <= hi2


def test_a_step_near_the_threshold_is_not_decided_and_says_what_would_decide_it():
    rng = np.random.default_rng(2)
    # 2->4 gains about 0.1 per unit (1.82 -> 2.02), with 15 % noise: its interval spans
    # the threshold
    times = {1: noisy(rng, 100, 0.15, 3), 2: noisy(rng, 55, 0.15, 3), 4: noisy(rng, 49.5, 0.15, 3),
             8: noisy(rng, 49, 0.15, 3)}  # fmt: skip
    rec, found = decide(times)
    assert not found["decided"]
    assert found["undecided_steps"]
    advice = found["next_measurements"]
    ends = {n for step in found["undecided_steps"] for n in step}
    assert {r["n"] for r in advice["repeats"]} == ends
    assert all(r["more"] >= 1 for r in advice["repeats"])
    su = {n: n * float(np.median(t)) / 3600 for n, t in times.items()}
    assert advice["su"] == pytest.approx(sum(r["more"] * su[r["n"]] for r in advice["repeats"]))


def test_more_noise_asks_for_more_repeats():
    def extra(cv):
        rng = np.random.default_rng(3)
        times = {1: noisy(rng, 100, cv, 3), 2: noisy(rng, 55, cv, 3), 4: noisy(rng, 49.5, cv, 3),
                 8: noisy(rng, 49, cv, 3)}  # fmt: skip
        _, found = decide(times)
        advice = found["next_measurements"]
        return 0 if advice is None else sum(r["more"] for r in advice["repeats"])

    assert extra(0.02) <= extra(0.10) <= extra(0.30)
    assert extra(0.30) > extra(0.02)


def test_when_every_step_pays_nothing_is_decided_yet():
    times = {1: [100, 101], 2: [50, 51], 4: [25, 26]}
    _, found = decide(times)
    assert not found["decided"] and found["next_measurements"] is None
    assert found["undecided_steps"] == []


def test_one_run_per_point_has_no_interval_and_asks_for_a_second():
    times = {1: [171.0], 2: [108.0], 3: [79.0], 4: [64.0]}
    rec, found = decide(times, threshold=0.55)  # the walk stops at 3 -> 4 (0.51)
    assert [s[3] for s in found["step_intervals"]] == [None, None, None]
    assert not found["decided"]
    assert all(r["more"] == 1 for r in found["next_measurements"]["repeats"])


# --- the indifference zone ---------------------------------------------------------------


def test_a_step_is_decided_once_its_interval_clears_the_far_edge_of_the_zone():
    # threshold 0.1, zone +-0.05: a step the walk takes needs its lower end at 0.05 or
    # more, a step it stops at its upper end below 0.15
    assert step_decided(0.12, (0.06, 0.18), 0.1, 0.05)
    assert not step_decided(0.12, (0.06, 0.18), 0.1, 0.0)  # without a zone: not
    assert step_decided(0.08, (0.02, 0.14), 0.1, 0.05)
    assert not step_decided(0.08, (0.02, 0.14), 0.1, 0.0)
    assert not step_decided(0.12, (0.04, 0.20), 0.1, 0.05)  # wider than the zone
    assert not step_decided(0.08, (0.02, 0.16), 0.1, 0.05)
    assert not step_decided(0.12, None, 0.1, 0.05)  # no interval: never
    assert not step_decided(0.12, (None, None), 0.1, 0.05)
    # both ends right, said so: the interval falls short of the threshold on the walk's
    # side (a step taken reaches below it, a step stopped at reaches it), in a zone
    assert within_zone(0.12, (0.06, 0.18), 0.1, 0.05)
    assert within_zone(0.12, (0.06, 0.09), 0.1, 0.05)  # a lopsided bootstrap interval
    assert not within_zone(0.12, (0.11, 0.18), 0.1, 0.05)
    assert within_zone(0.08, (0.02, 0.14), 0.1, 0.05)
    assert not within_zone(0.08, (0.02, 0.09), 0.1, 0.05)
    assert not within_zone(0.12, (0.06, 0.18), 0.1, 0.0)


def test_either_end_of_a_step_inside_the_zone_is_a_right_answer():
    # gains 0.9, 0.2, 0.05 per unit: the walk at 0.1 stops at 4; with a zone of 0.05
    # the step 4 -> 8 (0.05) is inside it, so 8 is right too; 2 is not (its step out
    # gains 0.2, above 0.15)
    ns, speedups = [1, 2, 4, 8], [1.0, 1.9, 2.3, 2.5]
    assert acceptable_answers(ns, speedups, ns, 0.1, 0.0) == [4]
    assert acceptable_answers(ns, speedups, ns, 0.1, 0.05) == [4, 8]
    assert acceptable_answers(ns, speedups, ns, 0.1, 0.1) == [2, 4, 8]
    assert recommend(ns, speedups, ns, threshold=0.1, indifference=0.5)["zone"] == 0.05


def test_a_step_near_the_threshold_is_decided_inside_the_zone():
    rng = np.random.default_rng(4)
    # 2->4 gains about 0.1 per unit (1.82 -> 2.02) on 1 % noise: its interval is narrow
    # but reaches across the threshold, so without a zone the answer is never decided;
    # with one of +-0.05 it is, and both 2 and 4 are right
    times = {1: noisy(rng, 100, 0.01, 5), 2: noisy(rng, 55, 0.01, 5),
             4: noisy(rng, 49.5, 0.01, 5), 8: noisy(rng, 49, 0.01, 5)}  # fmt: skip
    rec, found = decide(times)
    assert not found["decided"] and found["undecided_steps"]
    rec, found = decide(times, indifference=0.5)
    assert found["decided"] and found["next_measurements"] is None, found
    step = next(s for s in found["step_intervals"] if s[:2] == [2, 4])
    assert within_zone(step[2], step[3:], rec["threshold"], rec["zone"]), step
