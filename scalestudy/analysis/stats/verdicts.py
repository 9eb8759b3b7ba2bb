"""Has a curve of times changed? From per-point log ratios (now / then) and one pooled
log-scale variance: a verdict per point and for the whole curve, each slower, faster,
same (with its power stated) or undecided (with the runs that would decide it). Pure
functions; the one simulation (_union_level) draws from a fixed seed. The regression
check (regression_check: the baseline section, the history, the adaptive plan) uses it;
any comparison of two sets of runs per point can (a paired one: `runs_other` infinite,
the variance that of the paired differences).

Its statistical choices, and why (benchmarks/baseline_calls.py measures them):
docs/baselines.md, "How the check decides, and why".
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from scalestudy.analysis.stats.intervals import MAX_MORE_RUNS
from scalestudy.contract import NO_CHANGE, CurveVerdict, PointChange
from scalestudy.records import finite

ALPHA = 0.05
SLOWER_SHARE = 0.8  # of alpha to calling "slower" (4 %), the rest to "faster" (1 %)
# each way's false alarms, as the report states them
SLOWER_ALARMS, FASTER_ALARMS = ALPHA * SLOWER_SHARE, ALPHA * (1 - SLOWER_SHARE)
JOINT_SHARE = 0.5  # of a direction's alpha to the shapes, the rest to the points
POWER = 0.8  # a "same" needs this power ...
CHANGE_SEEN = 2.0  # ... against a slowdown of this many tolerances
UNION_DRAWS = 20_000  # null draws that size the curve's test (its size within 0.15 %)

SLOWER, FASTER, SAME, UNDECIDED = "slower", "faster", "same", "undecided"
MIXED = "slower and faster"  # the curve: slower at some points, faster at others
NO_VARIANCE = "undecided: no variance to judge by (one {unit} a point, or identical times)"
SIGNS = {SLOWER: 1, FASTER: -1}  # the sign of a change's log ratio


def pooled_log_variance(samples) -> tuple[float, int]:
    """The variance of log times pooled over samples (each a sample's times), with its
    degrees of freedom (runs less one per sample; samples of one run add none)."""
    squares, df = 0.0, 0
    for x in samples:
        logs = np.log(np.asarray(x, dtype=float))
        if logs.size > 1:
            squares += float(np.sum((logs - logs.mean()) ** 2))
            df += logs.size - 1
    return (squares / df if df else math.nan), df


def _change_text(ratio: float, lo: float, hi: float) -> str:
    if ratio >= 1:
        return f"slower by {ratio - 1:.0%} [{lo - 1:.0%}, {hi - 1:.0%}]"
    return f"faster by {1 - ratio:.0%} [{1 - hi:.0%}, {1 - lo:.0%}]"


def _power(se, df, threshold_p: float, tolerance: float, sign: int) -> np.ndarray:
    """Probability that a change of CHANGE_SEEN x tolerance the way of sign is called:
    its one-sided t beyond threshold_p's critical value and the estimate beyond the
    tolerance (se, df: arrays alike)."""
    from scipy.stats import nct, t  # here: scipy.stats costs ~1 s of an import

    beyond = sign * math.log1p(sign * tolerance)
    critical = np.maximum(t.isf(threshold_p, df), beyond / se)
    return nct.sf(critical, df, sign * math.log1p(sign * CHANGE_SEEN * tolerance) / se)


def _shapes(log_n: np.ndarray) -> np.ndarray:
    """The curve's shapes of change, one row each: a shift at every point, one growing
    linearly in log N from none at the smallest N, one fading to none at the largest
    (a single N: the shift alone)."""
    span = np.ptp(log_n)
    if span == 0:
        return np.ones((1, log_n.size))
    grows = (log_n - log_n.min()) / span
    return np.stack([np.ones(log_n.size), grows, 1 - grows])


def _shapes_p(d: np.ndarray, weights: np.ndarray, shapes: np.ndarray, variance, df, sign):
    """The shapes' joint one-sided p (the way of sign), Bonferroni over them: each shape
    v's t is v'Wd over sqrt(variance v'Wv) (W: the points' weights). d: one row of log
    ratios per study, variance: one per study."""
    from scipy.stats import t

    spread = np.sqrt(np.asarray(variance)[..., None] * ((shapes * weights) * shapes).sum(axis=1))
    p = t.sf(sign * ((d * weights) @ shapes.T) / spread, df)
    return np.minimum(1.0, shapes.shape[0] * p.min(axis=-1))


@lru_cache(maxsize=512)
def _union_level(weights: tuple, log_n: tuple, df: int, level: float) -> float:
    """The factor g by which both the shapes' and the points' shares of a direction's
    level are raised so that "p_joint <= g x its share, or the smallest point p <= g x
    the points' share / k" has size `level` under no change (g = 1, Bonferroni, has
    less): the level-quantile of each null draw's smallest g that rejects it (the
    slower way; the faster is its mirror image)."""
    from scipy.stats import t

    rng = np.random.default_rng(0)
    w, k = np.asarray(weights), len(weights)
    z = rng.standard_normal((UNION_DRAWS, k)) / np.sqrt(w)  # log ratios, sigma 1
    s2 = rng.chisquare(df, UNION_DRAWS) / df
    p_joint = _shapes_p(z, w, _shapes(np.asarray(log_n)), s2, df, 1)
    p_min = t.sf(np.max(z * np.sqrt(w), axis=1) / np.sqrt(s2), df)
    g = np.minimum(p_joint / (JOINT_SHARE * level), p_min * k / ((1 - JOINT_SHARE) * level))
    return float(np.quantile(g, level))


def _one_way(sign: int, level: float, d, se, weights, log_n, variance, df) -> dict:
    """The tests that call changes the way of sign at `level`: each point's one-sided
    p; the curve's (its shapes' p, and whether the union rejects); each point's Holm
    step and whether it rejects; and the p that a change at one point alone, or one
    at every point (the shift), passes for certain."""
    from scipy.stats import t

    k = d.size
    p = t.sf(sign * d / se, df)
    if k == 1:
        p_joint, changed, alone, shift = math.nan, bool(p[0] <= level), level, level
    else:
        p_joint = float(_shapes_p(d, weights, _shapes(log_n), variance, df, sign))
        g = _union_level(tuple(weights), tuple(log_n), df, level)
        smallest = min(p_joint / JOINT_SHARE, p.min() * k / (1 - JOINT_SHARE)) / level
        changed = bool(smallest <= g)
        alone = (1 - JOINT_SHARE) * level * g / k
        shift = JOINT_SHARE * level * g / _shapes(log_n).shape[0]
    # where: Holm's step-down below the curve's test (closed testing)
    order = np.argsort(p)
    steps = np.empty(k)
    steps[order] = [level / max(k - 1, 1)] + [level / (k - j) for j in range(1, k)]
    rejected = np.zeros(k, dtype=bool)
    rejected[order] = changed & np.cumprod(p[order] <= steps[order]).astype(bool)
    return dict(
        p=p,
        p_joint=p_joint,
        changed=changed,
        steps=steps,
        rejected=rejected,
        alone=alone,
        shift=shift,
    )


def _not_called(slower, faster: float, within: bool, tolerance, unit: str, curve: bool):
    """Same (within the tolerance, and the power to call a slowdown of CHANGE_SEEN x
    tolerance at least POWER) or undecided, with the fewest more runs whose power
    reaches POWER (None: none within MAX_MORE_RUNS): the verdict, its power, those runs
    and its words. slower[j]: that power with j more runs; faster: a speedup's now."""
    power, seen = float(slower[0]), f"{CHANGE_SEEN * tolerance:.0%}"
    where = (" over the curve", " at every point") if curve else ("", "")
    if power >= POWER and within:
        chance = ["above 0.99" if p > 0.99 else f"{p:.2f}" for p in (power, faster)]
        text = (
            f"no change beyond {tolerance:.0%}{where[0]} (a {seen} slowdown{where[1]} would"
            f" have been called with probability {chance[0]}, a {seen} speedup {chance[1]})"
        )
        return SAME, power, None, text
    reached = np.flatnonzero(np.asarray(slower[1:]) >= POWER)
    if not reached.size:
        return UNDECIDED, power, None, f"undecided: more {unit}s now cannot decide it alone"
    more = int(reached[0]) + 1
    words = f"{more} more {unit}{'s' if more > 1 else ''}{where[1]} would decide it"
    return UNDECIDED, power, more, f"undecided: {words}"


def verdicts(
    log_ratios,
    runs_now,
    runs_other,
    variance: float,
    df: int,
    log_n,
    tolerance: float,
    alpha: float = ALPHA,
    unit: str = "run",
) -> dict:
    """Verdicts per point and for the curve (module docstring). Per point i: the log
    ratio now / then, the runs on each side (the variance of the log ratio is
    variance x (1 / runs_now + 1 / runs_other)), log N. `variance`, `df`: the pooled
    log-scale variance (pooled_log_variance). Returns {"points": [...], "curve": {...}}:
    ratio, interval (95 %), p (one-sided, the way of the estimate), its threshold (a
    point's Holm step), verdict, power (of calling a slowdown of CHANGE_SEEN x
    tolerance), more_runs (the runs to add now at the point, or at every point for the
    curve, that would decide it; None: none would) and the verdict said in words
    (`unit`: what one of the runs is called, "pair" for a paired comparison)."""
    from scipy.stats import t

    given = (log_ratios, runs_now, runs_other, log_n)
    d, n_now, n_other, x = (np.asarray(v, dtype=float) for v in given)
    k = d.size
    known = df > 0 and math.isfinite(variance) and variance > 0
    scale = 1 / n_now + 1 / n_other
    se = np.sqrt(variance * scale) if known else np.full(k, math.nan)
    half = t.isf(ALPHA / 2, df) if known else math.nan  # 95 % intervals
    # the curve's estimate: weighted least squares of d on (1, log N - its weighted mean)
    weights = 1 / scale
    design = np.column_stack([np.ones(k), x - np.average(x, weights=weights)])[:, : min(2, k)]
    beta = np.linalg.solve(design.T @ (design * weights[:, None]), design.T @ (weights * d))
    fitted = design @ beta
    beyond = {SLOWER: math.log1p(tolerance), FASTER: math.log1p(-tolerance)}
    levels = {SLOWER: alpha * SLOWER_SHARE, FASTER: alpha * (1 - SLOWER_SHARE)}
    ways = {
        way: _one_way(sign, levels[way], d, se, weights, x, variance, df)
        for way, sign in SIGNS.items()
        if known
    }
    more_runs = np.arange(MAX_MORE_RUNS + 1)
    if known:
        # a change at one point alone, called each way: now, and slower with more runs
        se_more = np.sqrt(variance * (1 / (n_now[:, None] + more_runs) + 1 / n_other[:, None]))
        slower = _power(se_more, df + more_runs, ways[SLOWER]["alone"], tolerance, 1)
        faster = _power(se_more[:, 0], df, ways[FASTER]["alone"], tolerance, -1)
    points = []
    for i in range(k):
        ratio = math.exp(d[i])
        lo, hi = math.exp(d[i] - half * se[i]), math.exp(d[i] + half * se[i])
        power, more = math.nan, None
        called = [
            way
            for way, test in ways.items()
            if test["rejected"][i] and SIGNS[way] * d[i] > SIGNS[way] * beyond[way]
        ]
        if called:
            verdict, text = called[0], _change_text(ratio, lo, hi)
        elif not known:
            verdict, text = UNDECIDED, NO_VARIANCE.format(unit=unit)
        else:
            within = beyond[FASTER] <= d[i] <= beyond[SLOWER]
            verdict, power, more, text = _not_called(
                slower[i], faster[i], within, tolerance, unit, False
            )
        test = ways.get(SLOWER if d[i] >= 0 else FASTER)  # none: no variance
        p_value, threshold = (test["p"][i], test["steps"][i]) if test else (math.nan, math.nan)
        points.append(
            dict(
                ratio=ratio,
                lo=lo,
                hi=hi,
                p_value=float(p_value),
                text=text,
                threshold=float(threshold),
                verdict=verdict,
                power=power,
                more_runs=more,
            )
        )
    # the curve's verdict: its mean ratio over the points (the intercept), and slope
    mean_se = math.sqrt(variance / weights.sum()) if known else math.nan
    ratio = math.exp(beta[0])
    lo, hi = math.exp(beta[0] - half * mean_se), math.exp(beta[0] + half * mean_se)
    # a way called: its test rejects, and a point called or the fitted curve beyond
    beyond_fit = {way for way in SIGNS if np.any(SIGNS[way] * (fitted - beyond[way]) > 0)}
    signs = {way for way, test in ways.items() if test["changed"]}
    signs &= {v["verdict"] for v in points} | beyond_fit
    power, more = math.nan, None
    if signs:
        verdict = MIXED if len(signs) > 1 else signs.pop()
        text = f"{_change_text(ratio, lo, hi)} on average over the points"
        if verdict == MIXED:
            text = "slower at some points, faster at others"
    elif not known:
        verdict, text = UNDECIDED, NO_VARIANCE.format(unit=unit)
    else:
        # a shift at every point, called each way by its own shape at its share
        weight = (1 / (1 / (n_now + more_runs[:, None]) + 1 / n_other)).sum(axis=1)
        se_more = np.sqrt(variance / weight)
        slower = _power(se_more, df + k * more_runs, ways[SLOWER]["shift"], tolerance, 1)
        faster = _power(se_more[0], df, ways[FASTER]["shift"], tolerance, -1)
        within = bool(np.all((fitted >= beyond[FASTER]) & (fitted <= beyond[SLOWER])))
        verdict, power, more, text = _not_called(slower, faster, within, tolerance, unit, True)
    p_joint = ways[SLOWER if beta[0] >= 0 else FASTER]["p_joint"] if known else math.nan
    changed = any(test["changed"] for test in ways.values())
    slope = float(beta[1]) if k > 1 else 0.0
    curve = dict(
        ratio=ratio,
        lo=lo,
        hi=hi,
        slope=slope,
        p_value=p_joint,
        changed=changed,
        verdict=verdict,
        power=power,
        more_runs=more,
        text=text,
    )
    return {"points": points, "curve": curve}


def regression_check(
    now: dict, was: dict, tolerance: float
) -> list[tuple[CurveVerdict, list[PointChange]]]:
    """Per series measured in both (now and was keyed (series, N), as times_by_point):
    its curve's verdict and each common point's (stats/verdicts.py). Alpha is split
    evenly over the series."""
    common = sorted(set(now) & set(was))
    series = sorted({s for s, _ in common})
    out = []
    for name in series:
        keys = [
            key
            for key in common
            if key[0] == name and np.all(now[key] > 0) and np.all(was[key] > 0)
        ]
        if not keys:
            continue
        variance, df = pooled_log_variance([now[k] for k in keys] + [was[k] for k in keys])
        found = verdicts(
            [np.log(now[k]).mean() - np.log(was[k]).mean() for k in keys],
            [now[k].size for k in keys],
            [was[k].size for k in keys],
            variance,
            df,
            [math.log(k[1]) for k in keys],
            tolerance,
            ALPHA / len(series),
        )
        points = []
        for key, v in zip(keys, found["points"], strict=True):
            v = {k: finite(x) if isinstance(x, float) else x for k, x in v.items()}
            change = v["verdict"] if v["verdict"] in (SLOWER, FASTER) else NO_CHANGE
            points.append(
                PointChange(
                    *key,
                    alpha=v.pop("threshold"),
                    change=change,
                    **v,
                    runs_now=int(now[key].size),
                    runs_baseline=int(was[key].size),
                    time_now_s=float(np.median(now[key])),
                    time_baseline_s=float(np.median(was[key])),
                )
            )
        curve = {k: finite(v) if isinstance(v, float) else v for k, v in found["curve"].items()}
        out.append((CurveVerdict(name, **curve), points))
    return out


def point_changes(now: dict, was: dict, tolerance: float) -> list[PointChange]:
    """Per (series, N) measured in both: time ratio now / baseline, its 95 % interval,
    p, the verdict and the change called (regression_check)."""
    return [p for _, points in regression_check(now, was, tolerance) for p in points]
