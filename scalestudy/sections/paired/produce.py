"""A paired comparison: the ratio b/a of each point from its pairs, its interval and
verdict (docs/report.md, "Paired comparison"). The verdicts are the regression check's
(stats/verdicts.py) on each pair's log difference, whose variance is pooled over the
points, the other side's runs infinite (a pair's difference carries both runs' noise).
"""

import math

import numpy as np
import pandas as pd

from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.stats.verdicts import (
    FASTER_ALARMS,
    SLOWER_ALARMS,
    pooled_log_variance,
    verdicts,
)
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.model import base_series
from scalestudy.sections.paired.contract import DATA, Paired, PairedPoint
from scalestudy.study.points import point_for


def produce(given) -> DATA:
    study = given.study
    compare = study.compare
    if compare is None:
        return None
    # adjacency among all the point's runs; only usable ones (not disturbed) measure
    pairs = pairs_of(given.runs, TIME_COLUMNS[study.time], usable_runs(given.runs, study))
    ns = sorted(study.scaling.ns())
    at = [pairs[pairs["n"] == n] for n in ns]
    at = [(p["a"].to_numpy(), p["b"].to_numpy()) for p in at]
    found = paired_ratios(at, ns, compare.tolerance, [point_for(study, n).label for n in ns])
    return Paired(
        compare.a,
        compare.b,
        compare.order_seed,
        compare.tolerance,
        SLOWER_ALARMS,
        FASTER_ALARMS,
        study.time,
        found,
    )


def pairs_of(
    runs: pd.DataFrame, time_column: str, usable: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per pair: N, the repeat, and a's and b's times (columns a, b), for the
    repeats at which both variants' runs are usable (`usable`, a subset of `runs`, as
    predictions.usable_runs gives it; default: those that succeeded) with a time, one
    right after the other among the point's runs (a run run again alone, later, pairs
    with nothing); by N, then repeat."""
    runs = runs.assign(variant=runs["series"].map(base_series))
    # each run's place among its point's runs, in the order they started
    runs = runs.assign(place=runs.groupby("n")["started_at"].rank(method="first"))
    places = runs.pivot_table(
        index=["n", "repeat"], columns="variant", values="place", aggfunc="first"
    ).reindex(columns=["a", "b"])
    adjacent = places[(places["a"] - places["b"]).abs() == 1].index
    ok = runs[runs["status"] == "ok"] if usable is None else runs.loc[usable.index]
    ok = ok[ok[time_column].notna()]
    ok = ok[ok.set_index(["n", "repeat"]).index.isin(adjacent)]
    wide = ok.pivot_table(
        index=["n", "repeat"], columns="variant", values=time_column, aggfunc="first"
    )
    wide = wide.reindex(columns=["a", "b"]).dropna()
    return wide.reset_index()[["n", "repeat", "a", "b"]].sort_values(["n", "repeat"])


def paired_ratios(points, ns, tolerance: float, labels=None) -> list[PairedPoint]:
    """b/a at each point (points: its pairs' a and b times, one tuple a point; ns: the
    points' N; labels: their labels) with its interval (None where no variance could be
    estimated) and verdict against 1 +- tolerance (verdicts.py)."""
    ratios = [np.asarray(b, dtype=float) / np.asarray(a, dtype=float) for a, b in points]
    # log(b / a) is a pair's log difference: its pooled variance is the differences'
    variance, df = pooled_log_variance(ratios)
    judged = [i for i, r in enumerate(ratios) if r.size]
    means = [float(np.log(ratios[i]).mean()) for i in judged]
    found = (
        verdicts(
            means,
            [ratios[i].size for i in judged],
            [math.inf] * len(judged),
            variance,
            df,
            np.log([ns[i] for i in judged]),
            tolerance,
            unit="pair",
        )["points"]
        if judged
        else []
    )
    labels = labels or [""] * len(ns)
    result = [
        PairedPoint(label, n, 0, None, None, None, "undecided", "undecided: no pairs", None)
        for label, n in zip(labels, ns, strict=True)
    ]
    for i, v in zip(judged, found, strict=True):
        lo, hi = (v["lo"], v["hi"]) if math.isfinite(v["lo"]) else (None, None)
        result[i] = PairedPoint(
            labels[i],
            ns[i],
            ratios[i].size,
            v["ratio"],
            lo,
            hi,
            v["verdict"],
            v["text"],
            v["more_runs"],
        )
    return result
