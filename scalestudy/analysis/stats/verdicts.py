"""Has a curve of times changed? From per-point log ratios (now / then) and one pooled
log-scale variance: a verdict per point and for the whole curve, each slower, faster,
same (with its power stated) or undecided (with the runs that would decide it). Pure
functions; the one simulation (_union_level) draws from a fixed seed. The baseline
check (analysis/history/baseline.py) uses it; any comparison of two sets of runs per
point can (a paired one: `runs_other` infinite, the variance that of the paired
differences).

Statistical choices, and why (benchmarks/baseline_calls.py measures them):

* One log-scale variance pooled over every point and both sides (run times vary by a
  factor, about alike at every N): 3 runs a side at 5 points give 20 degrees of
  freedom where a Welch test per point had 2-4, so a 10 % change at CV 5 % can be seen.
* The whole curve first: the changes a scaling curve shows are a shift at every
  point, or one that grows with log N from none at the smallest N (more
  communication, a scaling regression) or fades with it (a slower serial part).
  Each shape's weighted contrast of the log ratios gets a t test; their smallest p
  (Bonferroni over the shapes) is the curve's joint test. The shapes span the same
  intercept and slope as an F test of the log ratio against log N, but aim the test
  at the changes that matter (benchmarks/baseline_calls.py, CV 5 %, 3 runs a side:
  a ramp 0 to +10 % called 65 % -> 67 %, one point 27.5 % -> 29 %, all points 98.9 %
  -> 99.2 %, false alarms alike, 20,000 simulated studies each). The curve changed
  when that test, or the smallest point p (Bonferroni over the points), rejects:
  JOINT_SHARE of alpha to the shapes, the rest to the points, both raised together
  until the union's size under no change is alpha (_union_level: Bonferroni alone
  gives power away). A study's false alarms are held at alpha (4.8-5.0 % at CV 5-20 %
  with log-normal runs, so no slack to spend; outliers raise them to about 6 %,
  docs/baselines.md). The two shares are a trade: all of alpha
  to the points calls one point +10 % at most 34 %, all to the shapes a ramp at most
  75 %; no sharing reaches both goals (75 %, 35 %: benchmarks/baseline_calls.py).
* Where: closed testing. Each point's hypothesis is rejected when the curve's is and
  Bonferroni rejects every smaller set of points holding it: Holm's step-down with
  thresholds alpha / (k - 1), alpha / (k - 1), alpha / (k - 2), ..., alpha.
* The tolerance is applied to the estimate, not as a shifted null (a shifted null
  needs about 4x the runs): slower or faster only when the test rejects AND the ratio
  lies beyond 1 +- tolerance (the fitted curve somewhere, for the whole curve).
* Same: not called, the ratio within 1 +- tolerance, and the test had power of at
  least POWER to call a change of CHANGE_SEEN x tolerance (noncentral t at the
  estimated variance: a point's at its own step, the curve's that of the shift at
  every point, at its share). Short of that power the verdict is undecided, with the
  runs now that would bring it there (none when the other side's runs alone keep it
  short).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

ALPHA = 0.05
JOINT_SHARE = 0.5  # the shapes' share of alpha (benchmarks/baseline_calls.py)
POWER = 0.8  # a "same" needs this power ...
CHANGE_SEEN = 2.0  # ... against a change of this many tolerances
MAX_MORE_RUNS = 50  # the most runs a point is searched for to decide it
UNION_DRAWS = 20_000  # null draws that size the curve's test (its size within 0.2 %)

SLOWER, FASTER, SAME, UNDECIDED = "slower", "faster", "same", "undecided"
MIXED = "slower and faster"  # the curve: slower at some points, faster at others
NO_VARIANCE = "undecided: no variance to judge by (one {unit} a point, or identical times)"


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


def _same_text(tolerance: float, power: float, curve: bool) -> str:
    chance = "above 0.99" if power > 0.99 else f"{power:.2f}"
    where = (" over the curve", " at every point") if curve else ("", "")
    return (
        f"no change beyond {tolerance:.0%}{where[0]} (a {CHANGE_SEEN * tolerance:.0%} change"
        f"{where[1]} would have been called with probability {chance})"
    )


def _change_text(ratio: float, lo: float, hi: float) -> str:
    if ratio >= 1:
        return f"slower by {ratio - 1:.0%} [{lo - 1:.0%}, {hi - 1:.0%}]"
    return f"faster by {1 - ratio:.0%} [{1 - hi:.0%}, {1 - lo:.0%}]"


def _point_power(se, df, threshold_p: float, tolerance: float) -> np.ndarray:
    """Probability that a change of CHANGE_SEEN x tolerance is called: t beyond the
    step's critical value and the estimate beyond the tolerance (se, df: arrays alike)."""
    from scipy.stats import nct, t  # here: scipy.stats costs ~1 s of an import

    critical = np.maximum(t.isf(threshold_p / 2, df), math.log1p(tolerance) / se)
    return nct.sf(critical, df, math.log1p(CHANGE_SEEN * tolerance) / se)


def _shapes(log_n: np.ndarray) -> np.ndarray:
    """The curve's shapes of change, one row each: a shift at every point, one growing
    linearly in log N from none at the smallest N, one fading to none at the largest
    (a single N: the shift alone)."""
    span = np.ptp(log_n)
    if span == 0:
        return np.ones((1, log_n.size))
    grows = (log_n - log_n.min()) / span
    return np.stack([np.ones(log_n.size), grows, 1 - grows])


def _shapes_p(d: np.ndarray, weights: np.ndarray, shapes: np.ndarray, variance, df):
    """The shapes' joint p, Bonferroni over them: each shape v's t is v'Wd over
    sqrt(variance v'Wv) (W: the points' weights). d: one row of log ratios per study,
    variance: one per study."""
    from scipy.stats import t

    spread = np.sqrt(np.asarray(variance)[..., None] * ((shapes * weights) * shapes).sum(axis=1))
    p = 2 * t.sf(np.abs((d * weights) @ shapes.T) / spread, df)
    return np.minimum(1.0, shapes.shape[0] * p.min(axis=-1))


def _design(weights: np.ndarray, centred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve's design (1, and log N centred, where 2 or more points) and X'WX."""
    design = np.column_stack([np.ones(weights.size), centred])[:, : min(2, weights.size)]
    return design, design.T @ (design * weights[:, None])


@lru_cache(maxsize=512)
def _union_level(weights: tuple, log_n: tuple, df: int, alpha: float) -> float:
    """The factor g by which both the shapes' and the points' shares of alpha are
    raised so that "p_joint <= g x its share, or the smallest point p <= g x the
    points' share / k" has size alpha under no change (g = 1, Bonferroni, has less):
    the alpha-quantile of each null draw's smallest g that rejects it."""
    from scipy.stats import t

    rng = np.random.default_rng(0)
    w, k = np.asarray(weights), len(weights)
    z = rng.standard_normal((UNION_DRAWS, k)) / np.sqrt(w)  # log ratios, sigma 1
    s2 = rng.chisquare(df, UNION_DRAWS) / df
    p_joint = _shapes_p(z, w, _shapes(np.asarray(log_n)), s2, df)
    p_min = 2 * t.sf(np.max(np.abs(z) * np.sqrt(w), axis=1) / np.sqrt(s2), df)
    g = np.minimum(p_joint / (JOINT_SHARE * alpha), p_min * k / ((1 - JOINT_SHARE) * alpha))
    return float(np.quantile(g, alpha))


def _undecided(powers, unit: str, where: str = "") -> tuple[int | None, str]:
    """The fewest more runs (powers[k]: with k more) whose power reaches POWER, None if
    none within MAX_MORE_RUNS, and the undecided verdict's words saying so."""
    reached = np.flatnonzero(np.asarray(powers[1:]) >= POWER)
    if not reached.size:
        return None, f"undecided: more {unit}s now cannot decide it alone"
    more = int(reached[0]) + 1
    return more, f"undecided: {more} more {unit}{'s' if more > 1 else ''}{where} would decide it"


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
    ratio, interval (95 %), p, verdict, power, more_runs (the runs to add now at the
    point, or at every point for the curve, that would decide it; None: none would) and
    the verdict said in words (`unit`: what one of the runs is called, "pair" for a
    paired comparison)."""
    from scipy.stats import t

    d = np.asarray(log_ratios, dtype=float)
    n_now = np.asarray(runs_now, dtype=float)
    n_other = np.asarray(runs_other, dtype=float)
    x = np.asarray(log_n, dtype=float)
    k = d.size
    known = df > 0 and math.isfinite(variance) and variance > 0
    scale = 1 / n_now + 1 / n_other
    se = np.sqrt(variance * scale) if known else np.full(k, math.nan)
    half = t.isf(ALPHA / 2, df) if known else math.nan  # 95 % intervals
    p = 2 * t.sf(np.abs(d / se), df) if known else np.full(k, math.nan)
    # the curve's estimate: weighted least squares of d on (1, log N - its weighted mean)
    weights = 1 / scale
    q = min(2, k)
    centred = x - np.average(x, weights=weights)
    design, info = _design(weights, centred)
    beta = np.linalg.solve(info, design.T @ (weights * d))
    fitted = design @ beta
    shapes = _shapes(x)
    p_joint = float(_shapes_p(d, weights, shapes, variance, df)) if known and k > 1 else math.nan
    # the curve changed: the shapes' test or the smallest point p, sized together
    level = 1.0
    if k == 1:
        curve_rejected = bool(known and p[0] <= alpha)
    elif known:
        level = _union_level(tuple(weights), tuple(x), df, alpha)
        smallest = min(p_joint / (JOINT_SHARE * alpha), p.min() * k / ((1 - JOINT_SHARE) * alpha))
        curve_rejected = bool(smallest <= level)
    else:
        curve_rejected = False
    # where: Holm's step-down below the curve's test (closed testing)
    steps = [alpha / max(k - 1, 1)] + [alpha / (k - j) for j in range(1, k)]
    rejected = np.zeros(k, dtype=bool)
    if curve_rejected:
        for step, i in enumerate(np.argsort(p)):
            if p[i] > steps[step]:
                break
            rejected[i] = True
    threshold_of = dict(zip(np.argsort(p).tolist(), steps, strict=True)) if known else {}
    beyond = math.log1p(tolerance), math.log1p(-tolerance)
    points = []
    for i in range(k):
        ratio = math.exp(d[i])
        lo, hi = math.exp(d[i] - half * se[i]), math.exp(d[i] + half * se[i])
        power, more = math.nan, None
        if rejected[i] and d[i] > beyond[0]:
            verdict, text = SLOWER, _change_text(ratio, lo, hi)
        elif rejected[i] and d[i] < beyond[1]:
            verdict, text = FASTER, _change_text(ratio, lo, hi)
        elif not known:
            verdict, text = UNDECIDED, NO_VARIANCE.format(unit=unit)
        else:
            # the power of the point's own Holm step, now and with more runs
            step = threshold_of[i]
            more_runs = np.arange(MAX_MORE_RUNS + 1)
            powers = _point_power(
                np.sqrt(variance * (1 / (n_now[i] + more_runs) + 1 / n_other[i])),
                df + more_runs,
                step,
                tolerance,
            )
            power = float(powers[0])
            if power >= POWER and beyond[1] <= d[i] <= beyond[0]:
                verdict, text = SAME, _same_text(tolerance, power, curve=False)
            else:
                verdict = UNDECIDED
                # where the estimate is beyond the tolerance, power enough says which
                more, text = _undecided(powers, unit)
        points.append(
            {
                "ratio": ratio,
                "lo": lo,
                "hi": hi,
                "p_value": float(p[i]),
                "threshold": threshold_of.get(i, math.nan),
                "verdict": verdict,
                "power": power,
                "more_runs": more,
                "text": text,
            }
        )
    # the curve's verdict: its mean ratio over the points (the intercept), and slope
    mean_se = math.sqrt(variance / weights.sum()) if known else math.nan
    ratio = math.exp(beta[0])
    lo, hi = math.exp(beta[0] - half * mean_se), math.exp(beta[0] + half * mean_se)
    signs = {v["verdict"] for v in points} & {SLOWER, FASTER}
    signs |= {SLOWER for v in fitted if v > beyond[0]} | {FASTER for v in fitted if v < beyond[1]}
    power, more = math.nan, None
    if curve_rejected and signs:
        verdict = MIXED if len(signs) > 1 else signs.pop()
        text = (
            "slower at some points, faster at others"
            if verdict == MIXED
            else f"{_change_text(ratio, lo, hi)} on average over the points"
        )
    elif not known:
        verdict, text = UNDECIDED, NO_VARIANCE.format(unit=unit)
    else:
        # the shift at every point called by its own shape at the shapes' share
        share = JOINT_SHARE * alpha * level / shapes.shape[0] if k > 1 else alpha
        more_runs = np.arange(MAX_MORE_RUNS + 1)
        weight = (1 / (1 / (n_now + more_runs[:, None]) + 1 / n_other)).sum(axis=1)
        powers = _point_power(np.sqrt(variance / weight), df + k * more_runs, share, tolerance)
        power = float(powers[0])
        within = bool(np.all((fitted >= beyond[1]) & (fitted <= beyond[0])))
        if power >= POWER and within:
            verdict, text = SAME, _same_text(tolerance, power, curve=True)
        else:
            verdict = UNDECIDED
            more, text = _undecided(powers, unit, " at every point")
    curve = {
        "ratio": ratio,
        "lo": lo,
        "hi": hi,
        "slope": float(beta[1]) if q > 1 else 0.0,
        "p_value": p_joint,
        "changed": curve_rejected,
        "verdict": verdict,
        "power": power,
        "more_runs": more,
        "text": text,
    }
    return {"points": points, "curve": curve}
