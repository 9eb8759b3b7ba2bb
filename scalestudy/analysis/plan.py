"""The price of a study before it runs: its jobs, their layout, and an estimate of
each job's whole-job time and SU.

A job's time is estimated, best first, from
1. the point's own earlier runs in this study (the median whole-job time of its
   successful runs, from results/STUDY/runs.csv);
2. the study's fitted scaling model (results/STUDY/analysis.json), for a point it has
   not measured: the measured base time over the predicted speedup. Only where the
   model was fitted to whole-job time of a strong-scaling study, and only within the
   range the model was drawn over (up to twice the largest measured N);
3. the study's time limit (`resources.runtime`): an upper bound, marked as one.
SU are priced by scalestudy.analysis.cost, on the study's (or the series') weights; a job's
partition is unknown before it runs, so partition weights are not applied.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd

from scalestudy.analysis.cost import SECONDS_PER_MINUTE, Cost
from scalestudy.model import Study
from scalestudy.studies import point_for

MEASURED, MODEL, LIMIT = "measured", "model", "limit"


def earlier_times(runs: pd.DataFrame | None) -> dict[str, list[float]]:
    """Point label -> whole-job seconds of its successful earlier runs."""
    if runs is None or runs.empty or "wall_s" not in runs:
        return {}
    ok = runs[(runs["status"] == "ok") & pd.to_numeric(runs["wall_s"], errors="coerce").notna()]
    return {str(p): list(g["wall_s"].astype(float)) for p, g in ok.groupby("point")}


def model_time(study: Study, analysis: dict | None, series: str, n: int) -> float | None:
    """Whole-job seconds at N the study's selected model predicts, or None where it
    cannot say (no fit, another time basis, weak scaling, N outside its curve)."""
    if not analysis or study.time != "wall" or study.scaling.kind != "strong":
        return None
    for fitted in analysis.get("series", []):
        curve = fitted.get("curve")
        if fitted.get("series") != series or not curve or not curve.get("base_time_s"):
            continue
        ns, speedups = np.asarray(curve["n"], float), np.asarray(curve["speedup"], float)
        if not ns.min() <= n <= ns.max():
            return None
        speedup = float(np.interp(math.log(n), np.log(ns), speedups))
        return curve["base_time_s"] / speedup if speedup > 0 else None
    return None


def study_plan(
    study: Study,
    runs: pd.DataFrame | None = None,
    analysis: dict | None = None,
    finished: set[tuple[str, int]] = frozenset(),
) -> dict:
    """Every job of the study, priced: one row per point, and totals. `runs` and
    `analysis` are the study's earlier results (None before its first run);
    `finished` the (point, repeat) whose good records exist (they will not run)."""
    times = earlier_times(runs)
    rows = []
    for series in study.series_names:
        own = study.for_series(series)
        cost = Cost.of(study, series)
        for n in sorted(own.scaling.ns()):
            point = point_for(study, n, series)
            if times.get(point.label):
                seconds, basis = statistics.median(times[point.label]), MEASURED
            elif (predicted := model_time(study, analysis, series, n)) is not None:
                seconds, basis = predicted, MODEL
            else:
                seconds, basis = own.resources.runtime * SECONDS_PER_MINUTE, LIMIT
            done = sum((point.label, k) in finished for k in range(1, study.repeats + 1))
            su = float(cost.su(point.cores, point.gpus, seconds))
            rows.append(
                point.as_dict()
                | {
                    "repeats": study.repeats,
                    "done": done,
                    "to_run": study.repeats - done,
                    "seconds": seconds,
                    "basis": basis,
                    "earlier_runs": len(times.get(point.label, [])),
                    "su_per_job": su,
                    "su": su * study.repeats,
                    "su_to_run": su * (study.repeats - done),
                    "seconds_to_run": seconds * (study.repeats - done),
                }
            )
    totals = {
        key: float(sum(r[key] for r in rows))
        for key in ("su", "su_to_run", "seconds_to_run", "to_run", "done")
    }
    totals["jobs"] = sum(r["repeats"] for r in rows)
    totals["upper_bound"] = any(r["basis"] == LIMIT and r["to_run"] for r in rows)
    budget = study.budget_su
    return {
        "study": study.name,
        "description": study.description,
        "rate": Cost.of(study).rate.text(),
        "rows": rows,
        "totals": totals,
        "budget_su": budget,
        "over_budget": budget is not None and totals["su"] > budget,
    }


def budget_problem(plan: dict) -> str | None:
    """The words refusing a plan over its study's budget (None when within it)."""
    if not plan["over_budget"]:
        return None
    totals = plan["totals"]
    bounds = sum(r["repeats"] for r in plan["rows"] if r["basis"] == LIMIT)
    how = (
        f"; {bounds} of its {totals['jobs']} jobs are priced at their time limit, an upper "
        "bound (run a few first, or lower resources.runtime, to price them from measurements)"
        if bounds
        else ""
    )
    return (
        f"studies.{plan['study']}.budget_su: the plan is estimated at {totals['su']:.3g} SU "
        f"({totals['jobs']} jobs), above the budget of {plan['budget_su']:g} SU{how}. "
        "Lower repeats or points, or raise budget_su; `snakemake results/plan.html` "
        "shows the price per point."
    )
