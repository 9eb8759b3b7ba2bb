"""A paired comparison's statistics: the ratio b/a of each point from its pairs, its
interval and verdict (docs/report.md, "Paired comparison"). The verdicts are the
regression check's (stats/verdicts.py) on each pair's log difference, whose variance is
pooled over the points, the other side's runs infinite (a pair's difference carries
both runs' noise already).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalestudy.analysis.stats.verdicts import pooled_log_variance, verdicts
from scalestudy.model import base_series


@dataclass(frozen=True)
class PairedRatio:
    """b/a at one point: exp of the mean log difference, with its 95 % interval (None
    where no variance could be estimated), and the verdict."""

    pairs: int
    ratio: float | None
    ci_lo: float | None
    ci_hi: float | None
    verdict: str  # slower | faster | same | undecided
    words: str  # the verdict as the report says it
    more_pairs: int | None  # an undecided verdict's pairs that would decide it


NO_PAIRS = PairedRatio(0, None, None, None, "undecided", "undecided: no pairs", None)


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
    places = runs.pivot_table(index=["n", "repeat"], columns="variant", values="place",
                              aggfunc="first").reindex(columns=["a", "b"])  # fmt: skip
    adjacent = places[(places["a"] - places["b"]).abs() == 1].index
    ok = runs[runs["status"] == "ok"] if usable is None else runs.loc[usable.index]
    ok = ok[ok[time_column].notna()]
    ok = ok[ok.set_index(["n", "repeat"]).index.isin(adjacent)]
    wide = ok.pivot_table(index=["n", "repeat"], columns="variant", values=time_column,
                          aggfunc="first")  # fmt: skip
    wide = wide.reindex(columns=["a", "b"]).dropna()
    return wide.reset_index()[["n", "repeat", "a", "b"]].sort_values(["n", "repeat"])


def paired_ratios(points, ns, tolerance: float) -> list[PairedRatio]:
    """b/a at each point (points: its pairs' a and b times, one tuple a point; ns: the
    points' N) with its interval and verdict against 1 +- tolerance (verdicts.py)."""
    ratios = [np.asarray(b, dtype=float) / np.asarray(a, dtype=float) for a, b in points]
    # log(b / a) is a pair's log difference: its pooled variance is the differences'
    variance, df = pooled_log_variance(ratios)
    judged = [i for i, r in enumerate(ratios) if r.size]
    means = [float(np.log(ratios[i]).mean()) for i in judged]
    found = verdicts(means, [ratios[i].size for i in judged], [math.inf] * len(judged), variance,
                     df, np.log([ns[i] for i in judged]), tolerance,
                     unit="pair")["points"] if judged else []  # fmt: skip
    result = [NO_PAIRS] * len(points)
    for i, v in zip(judged, found, strict=True):
        lo, hi = (v["lo"], v["hi"]) if math.isfinite(v["lo"]) else (None, None)
        result[i] = PairedRatio(ratios[i].size, v["ratio"], lo, hi, v["verdict"], v["text"],
                                v["more_runs"])  # fmt: skip
    return result
