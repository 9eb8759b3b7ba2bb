"""Recommendations on hand-checked data and the published RTX 2080 Ti table; the Pareto
front."""

from __future__ import annotations

import numpy as np
import pytest

from scalestudy.analysis.intervals import ratio_ci
from scalestudy.analysis.recommendation import pareto_front, recommend

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
