"""Time to result: how long after submission each point's result is expected, the
queue wait (queue.request_waits) plus the median full-length run time, a sum of
medians with its interval. The rules, and why: docs/report.md, "Time to result".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from scalestudy.analysis.cluster.queue import LOCAL, NOW, TYPICAL, UNKNOWN, request_waits, top_wait
from scalestudy.analysis.decisions.recommendation import meeting_deadline
from scalestudy.analysis.decisions.request import full_length_seconds
from scalestudy.analysis.stats.intervals import median_ci
from scalestudy.contract import Answer, EarliestResult, PointRequest, PointResult, ResultTimes
from scalestudy.records import jsonable
from scalestudy.slurm import ClusterFacts


def run_time(runs: pd.DataFrame) -> dict:
    """The point's full-length run time: median with its 95 % interval over the
    successful runs, how many, and whether any was scaled to full length."""
    ok = runs[(runs["status"] == "ok") & pd.to_numeric(runs["elapsed_s"], errors="coerce").notna()]
    full = [full_length_seconds(r) for _, r in ok.iterrows()]
    if not full:
        return {"run_s": None, "run_lo_s": None, "run_hi_s": None, "runs": 0, "run_scaled": False}
    median, lo, hi = median_ci([seconds for seconds, _ in full])
    return {
        "run_s": float(median),
        # one run gives no interval (NaN): the median stands for both ends
        "run_lo_s": float(lo) if np.isfinite(lo) else float(median),
        "run_hi_s": float(hi) if np.isfinite(hi) else float(median),
        "runs": len(full),
        "run_scaled": any(scaled for _, scaled in full),
    }


def chosen_wait(asked: dict, queue: str, min_jobs: int | None) -> dict:
    """The wait a point's time to result adds (wait_s, its top wait_hi_s) and its
    basis, from what Slurm said of it (queue.request_waits)."""
    if queue == LOCAL:
        return {"wait_s": 0.0, "wait_hi_s": 0.0, "basis": LOCAL}
    now = asked["wait_now_corrected_s"]
    now = asked["wait_now_s"] if now is None else now
    enough = min_jobs is not None and asked["history_jobs"] >= min_jobs
    typical = asked["history_wait_median_s"] if enough else None
    if typical is not None and (now is None or typical > now):
        wait, basis = typical, TYPICAL
    elif now is not None:
        wait, basis = now, NOW
    else:
        return {"wait_s": None, "wait_hi_s": None, "basis": UNKNOWN}
    return {
        "wait_s": wait,
        "wait_hi_s": top_wait(wait, asked["history_wait_bound_s"]),
        "basis": basis,
    }


def time_to_result(run: dict, wait: dict) -> dict:
    """Wait + run time with its interval (an unknown wait adds nothing: the run alone)."""
    if run["run_s"] is None:
        return dict.fromkeys(("result_s", "result_lo_s", "result_hi_s"))
    low, high = wait["wait_s"] or 0.0, wait["wait_hi_s"] or 0.0
    return {
        "result_s": low + run["run_s"],
        "result_lo_s": low + run["run_lo_s"],
        "result_hi_s": high + run["run_hi_s"],
    }


def earliest(points: list[dict], series: str) -> EarliestResult | None:
    """The series' point with the earliest expected result (a tie: the smaller N)."""
    timed = [p for p in points if p["series"] == series and p["result_s"] is not None]
    if not timed:
        return None
    best = min(timed, key=lambda p: (p["result_s"], p["n"]))
    return EarliestResult(series, best["point"], best["n"], best["result_s"])


def study_result_times(
    runs: pd.DataFrame, requests: list[PointRequest], cluster: ClusterFacts, min_jobs: int | None
) -> ResultTimes | None:
    """Every point's time to result, the earliest of each series, and what was asked
    (`cluster`: what Slurm said of the study, its waits read by queue.request_waits);
    None without requests (times measured elsewhere: no jobs to queue)."""
    if not requests:
        return None
    waits = request_waits(requests, cluster)
    points = []
    for r in requests:
        asked = waits["points"][r.point]
        run = run_time(runs[runs["point"] == r.point])
        wait = chosen_wait(asked, waits["queue"], min_jobs)
        # what Slurm said of the point (its every figure: PointResult names them)
        points.append(
            {"point": r.point, "series": r.series, "n": r.n}
            | run
            | wait
            | asked
            | time_to_result(run, wait)
        )
    series = list(dict.fromkeys(p["series"] for p in points))
    said = ["queue", "asked_at", "calls", "note", "history_note", "history_days", "run_to_limit"]
    return ResultTimes(
        **jsonable({k: waits[k] for k in said}),
        min_jobs=min_jobs,
        # whether any point's wait came from Slurm (now or typical)
        waits_known=any(p["basis"] in (NOW, TYPICAL) for p in points),
        points=[PointResult(**jsonable(p)) for p in points],
        earliest=[e for e in (earliest(points, s) for s in series) if e is not None],
    )


def deadline_by_result(
    answer: Answer, times: ResultTimes, summary: pd.DataFrame, deadline_s: float | None
) -> Answer:
    """The answer's cheapest point that meets the deadline, judged by time to result
    (wait + run time) where Slurm gave waits; the answer as it was otherwise."""
    if deadline_s is None or not times.waits_known:
        return answer
    mine = [p for p in times.points if p.series == answer.series]
    rows = summary[summary["series"].astype(object).fillna("") == answer.series].set_index("point")
    ns = [p.n for p in mine]
    results = [np.nan if p.result_s is None else p.result_s for p in mine]
    costs = [float(rows.loc[p.point, "su"]) for p in mine]
    best, note = meeting_deadline(
        np.asarray(ns, float),
        np.asarray(results, float),
        np.asarray(costs, float),
        deadline_s,
        "given costs",
        what="time to result",
    )
    return replace(answer, cheapest_meeting_deadline=jsonable(best), deadline_note=note)
