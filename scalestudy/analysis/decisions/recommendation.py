"""What N to ask for, from the measured points: the N up to which every step pays
(marginal speedup per resource unit at least a threshold), the cheapest point that
meets a deadline, the fastest within a budget, and the Pareto front of time against
cost. Its choices, and why: docs/report.md, "The answer, and why".
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from scalestudy.analysis.cost.cost import within_budget


def _py(x):
    """Plain Python number, int when integral (N values read better as 6 than 6.0)."""
    x = float(x)
    return int(x) if x.is_integer() else x


def _pick(candidates: np.ndarray, first: np.ndarray, second: np.ndarray, ns: np.ndarray):
    """Index among `candidates` minimising `first`, then `second`, then N."""
    order = np.lexsort((ns[candidates], second[candidates], first[candidates]))
    return int(candidates[order[0]])


def recommend(
    ns,
    speedups,
    units,
    threshold: float = 0.1,
    times=None,
    costs=None,
    deadline_s: float | None = None,
    budget: float | None = None,
    indifference: float = 0.0,
) -> dict:
    """What N to ask for (the choices: module docstring).

    (a) worth_n: the walk up while a step's marginal gain d(speedup)/d(units) is at
    least threshold; "steps" lists every step's gain between good points, "stopped_at"
    the first below threshold (None if none), "skipped_n" the failed points. Units must
    not fall as N rises; a step that adds no units has marginal +inf if it gains speed.
    (b) cheapest_meeting_deadline and fastest_within_budget: None with a note saying
    why, when not asked or nothing qualifies. `indifference` (recommend.indifference)
    sets "zone", the half-width around the threshold within which a step is as good
    taken as not (decision)."""
    ns = np.asarray(ns, dtype=float).ravel()
    speedups = np.asarray(speedups, dtype=float).ravel()
    units = np.asarray(units, dtype=float).ravel()
    if not ns.size == speedups.size == units.size:
        raise ValueError("ns, speedups and units must have the same length")
    order = np.argsort(ns, kind="stable")
    good = np.isfinite(speedups[order]) & np.isfinite(units[order])
    valid, skipped = order[good], order[~good]
    steps, stopped, worth = [], None, (_py(ns[valid[0]]) if valid.size else None)
    for i, j in itertools.pairwise(valid):
        d_units, d_speed = units[j] - units[i], speedups[j] - speedups[i]
        if d_units < 0:
            raise ValueError(f"units fall from N={_py(ns[i])} to N={_py(ns[j])}")
        if d_units == 0:
            marginal = math.inf if d_speed > 0 else (0.0 if d_speed == 0 else -math.inf)
        else:
            marginal = float(d_speed / d_units)
        step = (_py(ns[i]), _py(ns[j]), marginal)
        steps.append(step)
        if stopped is None:
            if marginal >= threshold:
                worth = step[1]
            else:
                stopped = step
    result = {
        "worth_n": worth,
        "steps": steps,
        "stopped_at": stopped,
        "threshold": threshold,
        "zone": zone_half_width(threshold, indifference),
        "skipped_n": [_py(ns[i]) for i in skipped],
        "cheapest_meeting_deadline": None,
        "deadline_note": "no deadline given",
        "fastest_within_budget": None,
        "budget_note": "no budget given",
    }
    if deadline_s is None and budget is None:
        return result
    if times is None:
        note = "needs the times of the points"
        result["deadline_note"] = note if deadline_s is not None else result["deadline_note"]
        result["budget_note"] = note if budget is not None else result["budget_note"]
        return result
    t = np.asarray(times, dtype=float).ravel()
    c = units * t if costs is None else np.asarray(costs, dtype=float).ravel()
    basis = "units x time" if costs is None else "given costs"
    usable = np.isfinite(t) & np.isfinite(c)
    if deadline_s is not None:
        best, note = meeting_deadline(ns, t, c, deadline_s, basis)
        result["cheapest_meeting_deadline"], result["deadline_note"] = best, note
    if budget is not None:
        within = np.flatnonzero(usable & within_budget(c, budget))
        if within.size:
            best = _pick(within, t, c, ns)
            result["fastest_within_budget"] = _py(ns[best])
            result["budget_note"] = f"time {t[best]:.4g} s, cost {c[best]:.4g} ({basis})"
        elif usable.any():
            cheap = _pick(np.flatnonzero(usable), c, t, ns)
            result["budget_note"] = (
                f"no point costs at most {budget:g} "
                f"(cheapest: {c[cheap]:.4g} at N={_py(ns[cheap])}, {basis})"
            )
        else:
            result["budget_note"] = "no point has both a time and a cost"
    return result


def meeting_deadline(ns, t, c, deadline_s: float, basis: str, what: str = "time"):
    """The cheapest point whose `what` (t, seconds) is at most the deadline (a tie: the
    faster, then the smaller N), and the note that says it or why there is none."""
    ns, t, c = (np.asarray(x, dtype=float).ravel() for x in (ns, t, c))
    usable = np.isfinite(t) & np.isfinite(c)
    meet = np.flatnonzero(usable & (t <= deadline_s))
    if meet.size:
        best = _pick(meet, c, t, ns)
        return _py(ns[best]), f"cost {c[best]:.4g} ({basis}), {what} {t[best]:.4g} s"
    if usable.any():
        fast = _pick(np.flatnonzero(usable), t, c, ns)
        done = "finishes" if what == "time" else "has its result"
        return None, (
            f"no point {done} within {deadline_s:g} s "
            f"(fastest: {t[fast]:.4g} s at N={_py(ns[fast])})"
        )
    return None, "no point has both a time and a cost"


def pareto_front(times, costs) -> np.ndarray:
    """True for points that no other point dominates (as fast or faster and as cheap or
    cheaper, strictly better in one). Points with a non-finite time or cost: False."""
    t = np.asarray(times, dtype=float).ravel()
    c = np.asarray(costs, dtype=float).ravel()
    finite = np.isfinite(t) & np.isfinite(c)
    # [i, j]: point j is at least as good as point i in both, and better in one
    weakly = (t[None, :] <= t[:, None]) & (c[None, :] <= c[:, None])
    strictly = (t[None, :] < t[:, None]) | (c[None, :] < c[:, None])
    dominated = np.any(weakly & strictly & finite[None, :], axis=1)
    return finite & ~dominated


# The decision's uncertainty: how sure the walk above is of each step.
DECISION_LEVEL = 0.95
DECISION_BOOT = 2000
MAX_MORE_REPEATS = 20  # advice beyond this many more runs a point says "at least"


def zone_half_width(threshold: float, indifference: float) -> float:
    """The indifference zone around the threshold, in gain units: a step whose gain
    lies within threshold +- this is as good taken as not (`indifference` is
    recommend.indifference, a share of the threshold)."""
    return indifference * threshold


def step_decided(gain: float, interval, threshold: float, zone: float) -> bool:
    """Is the walk's choice at this step right, with 95 % confidence, up to the zone
    (`zone`: its half-width, zone_half_width)? A step the walk takes (gain at least
    the threshold) is when its interval's lower end is at least threshold - zone; a
    step it stops at, when the upper end is below threshold + zone (why: docs/adaptive.md,
    "When the answer is decided"). None (no interval): not decided."""
    if interval is None or interval[0] is None:
        return False
    lo, hi = interval[:2]
    return lo >= threshold - zone if gain >= threshold else hi < threshold + zone


def within_zone(gain: float, interval, threshold: float, zone: float) -> bool:
    """Does a step's interval fall short of the threshold on the walk's side (below it
    for a step taken, at or above it for a step stopped at)? Decided (step_decided),
    such a step lies inside the zone, and both its ends are right: the report says so."""
    if zone <= 0 or interval is None or interval[0] is None:
        return False
    return interval[0] < threshold if gain >= threshold else interval[1] >= threshold


def zone_text(a, b, gain: float, lo: float, hi: float, threshold: float, zone: float) -> str:
    """The words of a step decided inside the zone (within_zone)."""
    return (
        f"N = {a} and N = {b} are both right: the step {a}->{b} adds {gain:.3g} "
        f"[{lo:.3g}, {hi:.3g}] speedup per unit, within the indifference zone "
        f"{threshold:g} ± {zone:.3g} (recommend.indifference)"
    )


def step_intervals(
    samples: dict, units: dict, base_n, steps: list, scale=None, seed: int = 0
) -> list[tuple[float, float] | None]:
    """A 95 % percentile-bootstrap interval of each step's marginal gain: the runs of
    every point are resampled (each point on its own, the base case too), the speedups
    recomputed from the resampled medians, then the steps' gains. None for a step with
    fewer than two runs at an end, or at the base (no interval without repeats).
    `scale`: N -> factor of the speedup (N / N_base for weak scaling, else 1)."""
    rng = np.random.default_rng(seed)
    medians = {}
    for n, times in samples.items():
        times = np.asarray(times, dtype=float)
        times = times[np.isfinite(times)]
        if times.size >= 2:
            draws = rng.choice(times, size=(DECISION_BOOT, times.size), replace=True)
            medians[n] = np.median(draws, axis=1)
    tails = (100 * (1 - DECISION_LEVEL) / 2, 100 * (1 + DECISION_LEVEL) / 2)
    found = []
    for a, b, _ in steps:
        if not {a, b, base_n} <= set(medians) or units[b] == units[a]:
            found.append(None)
            continue
        speed = {n: (scale or {}).get(n, 1.0) * medians[base_n] / medians[n] for n in (a, b)}
        gains = (speed[b] - speed[a]) / (units[b] - units[a])
        lo, hi = np.percentile(gains, tails)
        found.append((float(lo), float(hi)))
    return found


def decision(rec: dict, intervals: list, runs_at: dict, su_at: dict) -> dict:
    """Is the walk's answer decided? It is when the recommended step and the next one
    are (step_decided: each interval on its side of the threshold, up to the zone).
    When it is not, the cheapest measurements likely to decide it: more repeats at
    both ends of each undecided step, as many as would shrink its interval (width ~
    1/sqrt(repeats)) to the distance between its gain and the far edge of the zone,
    with their SU (from each point's SU per run)."""
    threshold, zone, steps = rec["threshold"], rec["zone"], rec["steps"]
    by_step = {tuple(s[:2]): iv for s, iv in zip(steps, intervals, strict=True)}
    recommended = next((s for s in steps if s[1] == rec["worth_n"]), None)
    checks = [s for s in (recommended, rec["stopped_at"]) if s is not None]
    shown = [[a, b, gain, *(by_step[(a, b)] or (None, None))] for a, b, gain in steps]
    settled = {"step_intervals": shown, "next_measurements": None, "undecided_steps": []}
    if rec["stopped_at"] is None:
        return {"decided": False} | settled  # every measured step still pays: nothing beyond
    more: dict = {}
    undecided = []
    for a, b, gain in checks:
        interval = by_step[(a, b)]
        if step_decided(gain, interval, threshold, zone):
            continue
        undecided.append([a, b])
        if interval is None:
            factor = 2.0  # no interval yet: as many runs again gives one
        else:
            half, distance = (interval[1] - interval[0]) / 2, abs(gain - threshold) + zone
            factor = (half / distance) ** 2 if distance > 0 else math.inf
        for n in (a, b):
            have = max(runs_at.get(n, 0), 1)
            need = have * factor if math.isfinite(factor) else math.inf
            extra = MAX_MORE_REPEATS if need - have > MAX_MORE_REPEATS else math.ceil(need - have)
            more[n] = max(more.get(n, 0), max(extra, 1), 2 - runs_at.get(n, 0))
    if not undecided:
        return {"decided": True} | settled
    su = sum(k * su_at[n] for n, k in more.items() if np.isfinite(su_at.get(n, np.nan)))
    repeats = [
        {"n": n, "more": k, "at_least": k >= MAX_MORE_REPEATS} for n, k in sorted(more.items())
    ]
    # undecided_steps: the steps whose interval still reaches across the threshold
    return {
        "decided": False,
        "step_intervals": shown,
        "undecided_steps": undecided,
        "next_measurements": {"repeats": repeats, "su": float(su)},
    }
