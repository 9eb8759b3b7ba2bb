"""Adaptive studies: after each round of runs, is the answer decided, and if not, which
runs would decide it, and may the study afford them?

A study with `adaptive:` runs in rounds (rules/adaptive.smk: one Snakemake checkpoint
per round). Each round's plan says how many runs each candidate point should have
once the round is done (cumulative totals: a later plan never takes a run back, so a
rerun, a raised budget or a tighter target continue from what exists and redo
nothing). Pure functions of the runs' times, shared by the workflow and by
benchmarks/adaptive_simulator.py.

The rules, and why:

* Round 1 measures the base case and the next `first_points - 1` candidates up, with
  `first_repeats` runs each: the smallest points of a strong-scaling study cost the
  least SU, and they are the first steps of the walk that the recommendation takes
  (scalestudy.analysis.recommendation.recommend: up from the smallest N while each
  step's marginal gain is at least the threshold).
* The answer is decided when (a) the recommended step's marginal-gain interval lies
  above the threshold, (b) the next step's lies below it, or there is no next
  candidate, and (c) the recommended point's speedup CI (the summary's, a bootstrap of
  the ratio of medians) has a relative half-width within `target_ci`.
* Otherwise the next round adds what decides it: while every measured step pays, the
  next candidate up (the walk must see a step fail before it can stop); repeats at
  both ends of an undecided step and at the base case (every speedup divides by the
  base's median); repeats at the recommended point and the base where its CI is too
  wide. How many: as many as would shrink the interval to the distance between the
  gain and the threshold (width ~ 1/sqrt(runs)), at most doubling a point's runs per
  round (the estimate itself is rough on few runs), and never beyond `max_repeats`.
* It stops, saying why, when the answer is decided, when the next round would take the
  study above its budget, or when the limits are reached (`max_rounds` rounds, or
  nothing left to add within `max_repeats`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scalestudy.analysis.intervals import ratio_ci
from scalestudy.analysis.recommendation import recommend, step_intervals

DECIDED, BUDGET, LIMITS = "decided", "budget", "limits"


@dataclass(frozen=True)
class Rules:
    """The stopping and selection settings of one adaptive study."""

    threshold: float  # recommend.min_marginal_speedup
    target_ci: float  # relative half-width of the recommended point's speedup CI
    budget_su: float
    max_repeats: int
    max_rounds: int
    first_repeats: int
    first_points: int

    @classmethod
    def of(cls, study) -> Rules:
        """The rules of a study model with `adaptive` set."""
        a = study.adaptive
        return cls(
            threshold=study.recommend.min_marginal_speedup,
            target_ci=a.target_ci,
            budget_su=study.budget_su,
            max_repeats=a.max_repeats,
            max_rounds=a.max_rounds,
            first_repeats=a.first_repeats,
            first_points=a.first_points,
        )


def first_round(candidates: list[int], base: int, rules: Rules) -> dict[int, int]:
    """N -> runs of round 1: every candidate up to the base, and the next ones up."""
    ns = sorted(candidates)
    below = [n for n in ns if n <= base]
    above = [n for n in ns if n > base][: max(rules.first_points - 1, 0)]
    return {n: min(rules.first_repeats, rules.max_repeats) for n in below + above}


def judge(
    candidates: list[int], samples: dict[int, np.ndarray], base: int, rules: Rules, scale=None
) -> dict:
    """Where the answer stands on these runs' times (N -> the usable times of a point;
    a measured point whose runs all failed has an empty array). `scale`: N -> factor of
    the speedup (N / N_base for weak scaling). Returns the recommendation (`worth_n`),
    whether it is decided, and what is missing: `needs` (N -> why more runs there) and
    `extend` (the next candidates up to measure, or None)."""
    ns = sorted(n for n in samples if n in candidates)
    scale = scale or {}
    base_times = np.asarray(samples.get(base, []), dtype=float)

    def speedup_of(n: int) -> tuple[float, float, float]:
        k = scale.get(n, 1.0)
        ratio, lo, hi = ratio_ci(base_times, samples[n])
        return k * ratio, k * lo, k * hi

    speedups = [speedup_of(n)[0] for n in ns]
    rec = recommend(ns, speedups, ns, threshold=rules.threshold)
    intervals = step_intervals(samples, {n: n for n in ns}, base, rec["steps"], scale)
    by_step = {tuple(s[:2]): iv for s, iv in zip(rec["steps"], intervals, strict=True)}
    needs: dict[int, str] = {}

    def need(points, why):
        for n in points:
            needs.setdefault(n, why)

    # a point without an interval (fewer than 2 usable runs: failed, disturbed or on
    # the wrong allocation) cannot take part in a decided walk: it is measured again
    unusable = {}
    for n in ns:
        usable = int(np.isfinite(np.asarray(samples[n], dtype=float)).sum())
        if usable < 2:
            unusable[n] = usable
            need((n,), f"only {usable} usable run{'s' if usable != 1 else ''} at N = {n}")
    worth = rec["worth_n"]
    recommended = next((s for s in rec["steps"] if s[1] == worth), None)
    if recommended is not None:
        lo = (by_step[recommended[:2]] or (-math.inf,))[0]
        if not lo >= rules.threshold:
            need((recommended[0], worth, base),
                 f"the step {recommended[0]}->{worth} may not pay")  # fmt: skip
    extend = None
    stopped = rec["stopped_at"]
    if stopped is not None:
        hi = (by_step[tuple(stopped[:2])] or (None, math.inf))[1]
        if not hi < rules.threshold:
            need((stopped[0], stopped[1], base), f"the step {stopped[0]}->{stopped[1]} may pay")
    else:
        above = [n for n in sorted(candidates) if n > max(ns, default=-math.inf)]
        extend = above[: predicted_paying_steps(ns, speedups, above, rules) + 1] or None
    ci = {"speedup": math.nan, "lo": math.nan, "hi": math.nan, "half_width": math.nan}
    if worth is not None and worth != base:
        speedup, lo, hi = speedup_of(worth)
        half = (hi - lo) / 2 / speedup if speedup > 0 else math.nan
        ci = {"speedup": speedup, "lo": lo, "hi": hi, "half_width": half}
        if not half <= rules.target_ci:
            need((worth, base), f"the speedup at N = {worth} is not yet within the target")
    return {
        "base": base,
        "worth_n": worth,
        "steps": [[a, b, g, *(by_step[(a, b)] or (None, None))] for a, b, g in rec["steps"]],
        "speedup_ci": ci,
        "needs": needs,
        # N -> its usable runs, where fewer than 2 (those are retried, not projected)
        "unusable": unusable,
        "extend": extend,
        "decided": not needs and extend is None and worth is not None,
    }


# A study stops as not decided, rather than spend, when the runs that deciding it would
# take (projected from the intervals so far: width ~ 1/sqrt(runs)) exceed this many
# times max_repeats at a point.
FUTILITY = 2.0
MAX_NEW_POINTS = 2  # candidates added in one round: the model may be wrong beyond


def predicted_paying_steps(ns, speedups, above, rules: Rules) -> int:
    """How many of the next candidates `above` the Amdahl law fitted to the measured
    speedups says are still worth a step (their marginal gain at least the
    threshold), at most MAX_NEW_POINTS - 1: the round then measures them and the one
    after, where the walk should stop. Amdahl is linear in 1/N (1/S = s + (1 - s)/N),
    so a least-squares line is the fit; it is optimistic where contention grows,
    which the cap bounds."""
    good = [(n, sp) for n, sp in zip(ns, speedups, strict=True) if np.isfinite(sp) and sp > 0]
    if len(good) < 2 or not above:
        return 0
    x, y = np.array([1 / n for n, _ in good]), np.array([1 / sp for _, sp in good])
    slope, intercept = np.polyfit(x, y, 1)
    if not (np.isfinite(slope) and np.isfinite(intercept)):
        return 0

    def predicted(n):
        inverse = intercept + slope / n
        return 1 / inverse if inverse > 0 else math.inf

    paying, last = 0, good[-1]
    for n in above[: MAX_NEW_POINTS - 1]:
        if (predicted(n) - last[1]) / (n - last[0]) < rules.threshold:
            break
        paying, last = paying + 1, (n, predicted(n))
    return paying


def more_runs(have: int, interval_factor: float, rules: Rules) -> int:
    """Runs to add at a point with `have` runs, whose interval should shrink by
    `interval_factor` (its width over the width wanted): runs scale with its square,
    at most doubling per round, within max_repeats."""
    have = max(have, 1)
    need = have * interval_factor**2 if math.isfinite(interval_factor) else math.inf
    extra = min(max(math.ceil(need - have), 1), have)
    return max(min(extra, rules.max_repeats - have), 0)


def shrink_factor(judged: dict, n: int, rules: Rules) -> float:
    """How much the widest undecided interval touching N must shrink (inf: unknown)."""
    factors = []
    for a, b, gain, lo, hi in judged["steps"]:
        if n not in (a, b) and n != judged["base"]:
            continue
        if lo is None:
            continue
        distance = abs(gain - rules.threshold)
        if lo < rules.threshold <= hi:
            factors.append((hi - lo) / 2 / distance if distance > 0 else math.inf)
    ci = judged["speedup_ci"]
    if n in (judged["worth_n"], judged["base"]) and ci["half_width"] > rules.target_ci:
        factors.append(ci["half_width"] / rules.target_ci)
    return max(factors, default=2.0)  # no interval yet: as many runs again


def next_round(
    round_no: int,
    candidates: list[int],
    base: int,
    runs: dict[int, int],
    samples: dict[int, np.ndarray],
    su_per_run: dict[int, float],
    spent_su: float,
    rules: Rules,
    scale=None,
) -> dict:
    """The plan of round `round_no` (1-based), from the runs so far: `runs` N -> runs
    made (failed ones too), `samples` N -> their usable times, `su_per_run` N -> the
    estimated SU of one run (measured where it can be), `spent_su` the SU the study
    has cost. Returns {"round", "totals" (N -> runs once the round is done), "added"
    (N -> runs added), "why" (N -> the reason), "round_su", "spent_su", "stop" (None,
    or {"reason": decided|budget|limits, "text"}), "judged" (judge's view, or None)}."""
    plan = {"round": round_no, "totals": dict(runs), "added": {}, "why": {}, "round_su": 0.0,
            "spent_su": spent_su, "stop": None, "judged": None}  # fmt: skip
    if round_no == 1 and not runs:
        added = first_round(candidates, base, rules)
        why = {n: "round 1: the base case" if n == base else "round 1: a first step up"
               for n in added}  # fmt: skip
    else:
        judged = judge(candidates, samples, base, rules, scale)
        plan["judged"] = judged
        if judged["decided"]:
            return plan | {"stop": stop(DECIDED, decided_text(judged, rules))}
        if round_no > rules.max_rounds:
            return plan | {"stop": stop(LIMITS, f"{rules.max_rounds} rounds were run "
                                        "(max_rounds) and the answer is not decided")}  # fmt: skip
        added, why = {}, {}
        for n in judged["extend"] or ():
            added[n] = min(rules.first_repeats, rules.max_repeats)
            why[n] = f"every measured step pays: the next candidates up, to N = {n}"
        projected = {}
        for n, reason in judged["needs"].items():
            if n in judged["unusable"]:
                # as many runs as it lacks usable ones: retried, not projected
                extra = min(2 - judged["unusable"][n], rules.max_repeats - runs.get(n, 0))
            else:
                factor = shrink_factor(judged, n, rules)
                projected[n] = max(runs.get(n, 0), 1) * factor**2
                extra = more_runs(runs.get(n, 0), factor, rules)
            if extra > 0:
                added[n], why[n] = extra, reason
        hopeless = {n: k for n, k in projected.items() if k > FUTILITY * rules.max_repeats}
        if hopeless and not judged["extend"]:
            where = ", ".join(f"about {math.ceil(k) if math.isfinite(k) else 'unbounded'} "
                              f"at N = {n}" for n, k in sorted(hopeless.items()))  # fmt: skip
            return plan | {"stop": stop(LIMITS, f"not decided, and deciding it would take "
                                        f"more runs than max_repeats = {rules.max_repeats} "
                                        f"allows ({where})")}  # fmt: skip
        if not added:
            full = ", ".join(f"N = {n}" for n in sorted(judged["needs"]))
            return plan | {"stop": stop(LIMITS, f"not decided, and the points that would "
                                        f"decide it ({full}) have max_repeats = "
                                        f"{rules.max_repeats} runs")}  # fmt: skip
    round_su = float(sum(k * su_per_run[n] for n, k in added.items()))
    plan |= {"added": added, "why": why, "round_su": round_su}
    if spent_su + round_su > rules.budget_su:
        text = (
            f"the next round ({sum(added.values())} runs, about {round_su:.3g} SU) would take "
            f"the study to {spent_su + round_su:.3g} SU, above its budget of "
            f"{rules.budget_su:g} SU"
        )
        return plan | {"added": {}, "why": {}, "round_su": 0.0, "stop": stop(BUDGET, text),
                       "refused": {"added": added, "why": why, "round_su": round_su}}  # fmt: skip
    plan["totals"] = {n: runs.get(n, 0) + added.get(n, 0) for n in sorted(set(runs) | set(added))}
    return plan


def stop(reason: str, text: str) -> dict:
    return {"reason": reason, "text": text}


def decided_text(judged: dict, rules: Rules) -> str:
    worth, ci = judged["worth_n"], judged["speedup_ci"]
    words = f"decided: ask for N = {worth}"
    if math.isfinite(ci["half_width"]):
        words += (
            f" (speedup {ci['speedup']:.3g}, 95 % CI {ci['lo']:.3g}-{ci['hi']:.3g}, "
            f"±{100 * ci['half_width']:.1f} % against a target of ±{100 * rules.target_ci:g} %)"
        )
    return words


def round_of_run(plans: list[dict], point: str, repeat: int) -> int | None:
    """The round that added run `repeat` of `point` (plans keyed by point label)."""
    return next((p["round"] for p in plans if p["totals"].get(point, 0) >= repeat), None)


def rounds_summary(plans: list[dict], spent_su: float, grid_repeats: int) -> dict:
    """What the report says of an adaptive study's rounds: what each added and why,
    its SU, the stopping reason, and the study's SU against the full grid of the same
    candidates at `grid_repeats` runs each (priced as the last plan prices a run:
    measured where the point was, else estimated)."""
    last = plans[-1]
    grid_su = grid_repeats * sum(last["su_per_run"].values())
    measured_all = set(last["totals"]) >= set(last["points"])
    return {
        "rounds": [
            {"round": p["round"], "added": p["added"], "why": p["why"], "su": p["round_su"]}
            for p in plans
            if p["added"]
        ],
        "stop": last["stop"],
        "decided": last["stop"]["reason"] == DECIDED,
        # the round the budget refused, and what it would have cost
        "refused": last.get("refused"),
        "budget_su": last["budget_su"],
        "spent_su": spent_su,
        "grid_repeats": grid_repeats,
        "grid_su": grid_su,
        "grid_su_estimated": not measured_all,
        "relative_to_grid": spent_su / grid_su if grid_su > 0 else None,
    }
