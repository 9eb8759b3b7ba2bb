"""A paired comparison's statistics: the ratio b/a of each point from its pairs (a's and
b's run of one repeat, next to each other in the same job), its interval, and the
verdict in the report's words.

Pairing removes what the two runs of a pair share (the allocation, the node, the hour)
from the comparison: the interval is Student's t on the pairs' log differences
log(b) - log(a), whose spread is what is left once that shared part cancels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from scalestudy.model import base_series

LEVEL = 0.95
# the most pairs an "undecided" verdict looks ahead for; beyond it the words say so
MOST_PAIRS = 1000


@dataclass(frozen=True)
class PairedRatio:
    """b/a at one point: exp of the mean log difference, with its interval (None with
    fewer than two pairs), and the verdict."""

    pairs: int
    ratio: float | None
    ci_lo: float | None
    ci_hi: float | None
    verdict: str  # slower | faster | same | undecided
    words: str  # the verdict as the report says it
    more_pairs: int | None  # an undecided verdict's pairs that would decide it


def pairs_of(runs: pd.DataFrame, time_column: str) -> pd.DataFrame:
    """One row per pair: N, the repeat, and a's and b's times (columns a, b), for the
    repeats at which both variants' runs succeeded with a time, one right after the
    other among the point's runs (a run run again alone, later, pairs with nothing);
    by N, then repeat."""
    runs = runs.assign(variant=runs["series"].map(base_series))
    # each run's place among its point's runs, in the order they started
    place = runs.groupby("n")["started_at"].rank(method="first")
    runs = runs.assign(place=place)
    places = runs.pivot_table(index=["n", "repeat"], columns="variant", values="place",
                              aggfunc="first").reindex(columns=["a", "b"])  # fmt: skip
    adjacent = places[(places["a"] - places["b"]).abs() == 1].index
    ok = runs[(runs["status"] == "ok") & runs[time_column].notna()]
    ok = ok[ok.set_index(["n", "repeat"]).index.isin(adjacent)]
    wide = ok.pivot_table(index=["n", "repeat"], columns="variant", values=time_column,
                          aggfunc="first")  # fmt: skip
    wide = wide.reindex(columns=["a", "b"]).dropna()
    return wide.reset_index()[["n", "repeat", "a", "b"]].sort_values(["n", "repeat"])


def paired_ratio(a: np.ndarray, b: np.ndarray, tolerance: float) -> PairedRatio:
    """b/a from paired times, its 95 % interval (t on the log differences) and the
    verdict against 1 +- tolerance."""
    diffs = np.log(np.asarray(b, dtype=float)) - np.log(np.asarray(a, dtype=float))
    n = len(diffs)
    if n == 0:
        return PairedRatio(0, None, None, None, "undecided", "undecided: no pairs", None)
    mean = float(diffs.mean())
    if n < 2:
        return PairedRatio(1, math.exp(mean), None, None, "undecided",
                           "undecided: one pair gives no interval", None)  # fmt: skip
    sd = float(diffs.std(ddof=1))
    half = half_width(sd, n)
    lo, hi = mean - half, mean + half
    verdict, more = decide(mean, sd, n, tolerance)
    ratio = PairedRatio(n, math.exp(mean), math.exp(lo), math.exp(hi), verdict, "", more)
    return replace(ratio, words=verdict_words(ratio, tolerance))


def half_width(sd: float, n: int) -> float:
    """The t interval's half-width of a mean of n log differences."""
    return float(stats.t.ppf(0.5 + LEVEL / 2, n - 1)) * sd / math.sqrt(n)


def decide(mean: float, sd: float, n: int, tolerance: float) -> tuple[str, int | None]:
    """slower / faster: the interval excludes 1 and the ratio lies beyond 1 +- tolerance;
    same: the whole interval lies within it; else undecided, with the further pairs that
    would decide it at the spread seen so far (None: more than MOST_PAIRS)."""
    bound = math.log1p(tolerance)
    verdict = call(mean, half_width(sd, n), bound)
    if verdict != "undecided":
        return verdict, None
    for total in range(n + 1, n + MOST_PAIRS + 1):
        if call(mean, half_width(sd, total), bound) != "undecided":
            return "undecided", total - n
    return "undecided", None


def call(mean: float, half: float, bound: float) -> str:
    if abs(mean) > half and abs(mean) > bound:
        return "slower" if mean > 0 else "faster"
    if abs(mean) + half < bound:
        return "same"
    return "undecided"


def percent(ratio: float) -> str:
    """A ratio's change, unsigned: 1.12 and 0.88 are both 12 %."""
    return f"{abs(ratio - 1) * 100:.0f} %"


def verdict_words(ratio: PairedRatio, tolerance: float) -> str:
    """The verdict in words: b is slower by 12 % [6 %, 18 %]; no change beyond 5 %;
    undecided: 3 more pairs would decide it."""
    if ratio.verdict in ("slower", "faster"):
        # faster: the interval's upper end is the smaller change
        lo, hi = sorted((ratio.ci_lo, ratio.ci_hi), key=lambda r: abs(r - 1))
        return f"b is {ratio.verdict} by {percent(ratio.ratio)} [{percent(lo)}, {percent(hi)}]"
    if ratio.verdict == "same":
        return f"no change beyond {tolerance * 100:g} %"
    if ratio.more_pairs is None:
        return f"undecided: more than {MOST_PAIRS} more pairs would be needed"
    pairs = "pair" if ratio.more_pairs == 1 else "pairs"
    return f"undecided: {ratio.more_pairs} more {pairs} would decide it"
