"""Adaptive studies: after each round of runs, is the answer decided, and if not, which
runs would decide it, and may the study afford them? Pure functions of the runs'
times (cumulative per-round totals: a later plan never takes a run back), shared by
rules/adaptive.smk and benchmarks/adaptive_simulator.py. The rules in full, and why:
docs/adaptive.md (written once, there).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalestudy import contract
from scalestudy.analysis.cost.cost import charges, within_budget
from scalestudy.analysis.decisions.recommendation import (
    DECISION_LEVEL,
    recommend,
    step_decided,
    step_intervals,
    within_zone,
    zone_half_width,
    zone_text,
)
from scalestudy.analysis.stats.intervals import LEVEL, _t_quantile, ratio_ci
from scalestudy.analysis.stats.predictions import shared_left_out, usable_runs
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.records import jsonable, write_json_atomic

DECIDED, BUDGET, LIMITS = "decided", "budget", "limits"


@dataclass(frozen=True)
class Rules:
    """The stopping and selection settings of one adaptive study."""

    threshold: float  # recommend.min_marginal_speedup
    indifference: float  # recommend.indifference: the zone, a share of the threshold
    target_ci: float  # relative half-width of the recommended point's speedup CI
    budget_su: float
    max_repeats: int
    max_rounds: int
    first_repeats: int
    first_points: int

    @classmethod
    def of(cls, study) -> Rules:
        """The rules of a study model with `adaptive` set."""
        own = ("target_ci", "max_repeats", "max_rounds", "first_repeats", "first_points")
        return cls(
            threshold=study.recommend.min_marginal_speedup,
            indifference=study.recommend.indifference,
            budget_su=study.budget_su,
            **{k: getattr(study.adaptive, k) for k in own},
        )

    @property
    def zone(self) -> float:
        """The indifference zone's half-width around the threshold, in gain units."""
        return zone_half_width(self.threshold, self.indifference)


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
    `new` (N -> why a candidate not yet measured should be)."""
    ns = sorted(n for n in samples if n in candidates)
    scale = scale or {}
    base_times = np.asarray(samples.get(base, []), dtype=float)

    # N -> (speedup, lo, hi)
    speedup_cis = {
        n: tuple(scale.get(n, 1.0) * x for x in ratio_ci(base_times, samples[n])) for n in ns
    }
    speedups = [speedup_cis[n][0] for n in ns]
    rec = recommend(ns, speedups, ns, threshold=rules.threshold, indifference=rules.indifference)
    speedup_at = dict(zip(ns, speedups, strict=True))
    intervals = step_intervals(samples, {n: n for n in ns}, base, rec["steps"], scale)
    by_step = {tuple(s[:2]): iv for s, iv in zip(rec["steps"], intervals, strict=True)}
    needs: dict[int, str] = {}

    def need(points, why):
        for n in points:
            needs.setdefault(n, why)

    # a point without an interval (fewer than 2 usable runs: failed, disturbed or on
    # the wrong allocation) cannot take part in a decided walk: it is measured again
    usable = {n: int(np.isfinite(np.asarray(samples[n], dtype=float)).sum()) for n in ns}
    short = {}  # N -> (usable runs, runs wanted)
    for n in ns:
        if usable[n] < 2:
            short[n] = (usable[n], 2)
            need((n,), f"only {usable[n]} usable run{'s' if usable[n] != 1 else ''} at N = {n}")
    worth = rec["worth_n"]
    recommended = next((s for s in rec["steps"] if s[1] == worth), None)
    stopped = rec["stopped_at"]
    # the candidates to measure for the first time; the jump between measured points
    # is planned on the speedups' lower CI ends
    lower = {n: speedup_cis[n][1] if n != base else speedup_at[n] for n in ns}
    unmeasured = sorted(set(candidates) - set(samples))
    new = new_points(unmeasured, lower, rec, by_step, rules)
    # where `new` goes beyond the next candidate up, a round the budget cannot afford
    # measures that one alone (next_round)
    up = next((n for n in unmeasured if lower and n > max(lower)), None)  # the next one up
    fallback = up if up is not None and new and min(new) >= up and set(new) != {up} else None

    def undecided(step) -> bool:
        return not skips(unmeasured, *step[:2]) and not step_decided(
            step[2], by_step[tuple(step[:2])], rules.threshold, rules.zone
        )

    # repeats for a deciding step between neighbouring candidates (a step over
    # unmeasured ones is split by `new` first)
    for step, may in ((recommended, "may not pay"), (stopped, "may pay")):
        if step is not None and undecided(step):
            a, b = step[:2]
            need(sorted(moved_by(base, speedup_at, a, b)), f"the step {a}->{b} {may}")
    # the points of the deciding steps need runs enough to trust their intervals: of 2
    # runs, the bootstrap median takes 3 values, and decided answers were wrong in 5 %
    # of the simulated studies (1-2 % when they must have 3). Asked for only once the
    # steps are otherwise decided: before, those runs may go to points that end up
    # deciding nothing.
    deciding = {base} | {n for step in (recommended, stopped) if step for n in step[:2]}
    for n in sorted(deciding & set(ns)) if not new and not needs else ():
        if 2 <= usable[n] < min(MIN_DECIDING_RUNS, rules.max_repeats):
            short[n] = (usable[n], MIN_DECIDING_RUNS)
            need((n,), f"only {usable[n]} usable runs at N = {n}, too few to decide on")
    # which N to ask for is decided on the steps; the speedup CI's target asks for
    # runs too, but one out of reach (next_round) leaves the answer decided
    answer_decided = not needs and not new and worth is not None
    ci = {"speedup": math.nan, "lo": math.nan, "hi": math.nan, "half_width": math.nan}
    if worth is not None and worth != base:
        speedup, lo, hi = speedup_cis[worth]
        half = (hi - lo) / 2 / speedup if speedup > 0 else math.nan
        ci = {"speedup": speedup, "lo": lo, "hi": hi, "half_width": half}
        # not while a new point may still move the answer
        if not half <= rules.target_ci and not new:
            need((worth, base), f"the speedup at N = {worth} is not yet within the target")
    return {
        "base": base,
        "worth_n": worth,
        "steps": [[a, b, g, *(by_step[(a, b)] or (None, None))] for a, b, g in rec["steps"]],
        # the steps into and out of the answer, where they join measured neighbours
        "deciding": [
            tuple(step[:2])
            for step in (recommended, stopped)
            if step and not skips(unmeasured, *step[:2])
        ],
        "usable": usable,  # N -> its usable runs
        "speedup_ci": ci,
        "speedups": speedup_at,
        "needs": needs,
        # N -> (its usable runs, the runs it needs) where too few: fewer than 2 (no
        # interval), or than MIN_DECIDING_RUNS at a point of a deciding step
        "short": short,
        # N -> why it is measured for the first time
        "new": new,
        # the next candidate up, where `new` goes beyond it
        "fallback": fallback,
        "decided": not needs and not new and worth is not None,
        # decided but for the speedup CI's target
        "answer_decided": answer_decided,
    }


# Runs of a candidate measured for the first time after round 1: the fewest that give
# an interval; more follow where its step is unclear. Three instead, at the config's
# defaults: 0.472 of the 5-run grid's SU (median) against 0.393, for 80.6 % right
# answers against 81.1 % (the grid: 79.5 %; benchmarks/adaptive_simulator, 5 x 1000
# studies)
NEW_POINT_RUNS = 2
MIN_DECIDING_RUNS = 3
# a fitted serial share at or below this is none: rounding decides it on linear speedups
SERIAL_SHARE_TOLERANCE = 1e-9


def skips(unmeasured, a: int, b: int) -> bool:
    """Does the step a -> b go over a candidate not yet measured?"""
    return any(a < n < b for n in unmeasured)


def new_points(
    unmeasured: list[int], lower: dict[int, float], rec: dict, by_step: dict, rules: Rules
) -> dict[int, str]:
    """The candidates to measure for the first time (N -> why; `unmeasured`: those not
    yet measured, sorted; `lower`: N -> the lower end of its speedup's CI): around the
    steps into and out of the answer, where the Amdahl law fitted to `lower` puts the
    answer while every measured step pays, and every candidate of a stretch where the
    gains clearly rise. The cases, and why: docs/adaptive.md, "What each round adds"."""
    new = {}
    stopped = rec["stopped_at"]
    for (a, b, _), (c, d, _) in itertools.pairwise(rec["steps"]):
        earlier, later = by_step[(a, b)], by_step[(c, d)]
        # steps beyond the one that stopped the walk cannot move the answer
        past_the_stop = stopped is not None and c > stopped[0]
        if earlier and later and later[0] > earlier[1] and not past_the_stop:
            for n in unmeasured:
                if a < n < d:
                    new.setdefault(
                        n,
                        f"the gain rises from the step {a}->{b} to {c}->{d}: "
                        "every candidate between them is measured",
                    )
    recommended = next((s for s in rec["steps"] if s[1] == rec["worth_n"]), None)
    if recommended is not None and skips(unmeasured, *recommended[:2]):
        a, worth = recommended[:2]
        below = max(n for n in unmeasured if n < worth)
        new.setdefault(
            below, f"the walk went from {a} to {worth} over it: does the step {below}->{worth} pay?"
        )
    if stopped is not None and skips(unmeasured, *stopped[:2]):
        a, b = stopped[:2]
        above = min(n for n in unmeasured if n > a)
        new.setdefault(
            above,
            f"the walk stopped at the step {a}->{b}, over it: does the step {a}->{above} pay?",
        )
    elif stopped is None and lower:
        top = max(lower)
        span = [n for n in unmeasured if n > top]
        answer = predicted_answer(lower, top, span, rules)
        if answer is None:
            why = "too few speedups to fit a law to: the next candidate up"
            if len(positive(lower)) >= 2:
                why = (
                    "every measured step pays, and the speedups' lower CI ends are linear "
                    "or better, which no Amdahl law with a serial share fits: the next "
                    "candidate up"
                )
            answer = top
        else:
            why = (
                "every measured step pays, and the Amdahl law fitted to the speedups' "
                f"lower CI ends puts the last step that pays at N = {answer}"
            )
        for n in [n for n in span if n >= answer][: 1 + (answer in span)]:
            new.setdefault(n, why)
    return new


def positive(speedups: dict[int, float]) -> dict[int, float]:
    """The speedups a law can be fitted to: finite and positive."""
    return {n: sp for n, sp in speedups.items() if np.isfinite(sp) and sp > 0}


def predicted_answer(
    speedups: dict[int, float], start: int, span: list[int], rules: Rules
) -> int | None:
    """Walking up from the measured point `start` through the candidates `span`, the
    last one whose step still pays by the Amdahl law fitted to `speedups` (N ->
    speedup); `start` when the first step does not. Amdahl is linear in 1/N (1/S = s +
    (1 - s)/N), so a least-squares line is the fit. None without a fit: fewer than 2
    speedups, or a line whose serial share s is not positive (speedups linear or
    better, on the whole: the law's speedup would grow without bound)."""
    good = positive(speedups)
    if len(good) < 2:
        return None
    slope, intercept = np.polyfit([1 / n for n in good], [1 / sp for sp in good.values()], 1)
    if not intercept > SERIAL_SHARE_TOLERANCE:
        return None

    def predicted(n):
        inverse = intercept + slope / n
        return 1 / inverse if inverse > 0 else math.nan  # nan: no step pays

    answer = start
    for n in span:
        if not (predicted(n) - predicted(answer)) / (n - answer) >= rules.threshold:
            break
        answer = n
    return answer


def more_runs(have: int, interval_factor: float, rules: Rules) -> int:
    """Runs to add at a point with `have` runs, whose interval should shrink by
    `interval_factor` (its width over the width wanted): runs scale with its square,
    at most doubling per round, within max_repeats."""
    have = max(have, 1)
    if math.isfinite(interval_factor):  # inf: a gain right at the threshold
        extra = min(max(math.ceil(have * interval_factor**2 - have), 1), have)
    else:
        extra = have
    return max(min(extra, rules.max_repeats - have), 0)


def shrink_factors(judged: dict, n: int, rules: Rules, curtailed=()) -> dict[str, float]:
    """How much the intervals that N decides must shrink (their width over the width
    wanted; inf: unknown): "step", the widest undecided step interval that N's runs
    move (not of the `curtailed` steps), and "ci", the speedup CI where N is the answer
    or the base. Empty when no such interval touching N is undecided."""
    factors = {}
    for a, b, gain, lo, hi in judged["steps"]:
        if (
            lo is None
            or step_decided(gain, (lo, hi), rules.threshold, rules.zone)
            or (a, b) in curtailed
            or n not in moved_by(judged["base"], judged["speedups"], a, b)
        ):
            continue
        # the interval must shrink to reach the zone's far edge
        distance = abs(gain - rules.threshold) + rules.zone
        factor = (hi - lo) / 2 / distance if distance > 0 else math.inf
        factors["step"] = max(factors.get("step", 0.0), factor)
    ci = judged["speedup_ci"]
    if n in (judged["worth_n"], judged["base"]) and ci["half_width"] > rules.target_ci:
        factors["ci"] = ci["half_width"] / rules.target_ci
    return factors


# A study that cannot be decided (max_repeats runs would not bring its speedup CI
# within target) spends runs on a step only for the chance that they change the
# answer: a step whose gain would cross the threshold with a smaller chance, even at
# max_repeats runs, gets none (0.05, 0.1 and 0.2 against none: the figures are in
# benchmarks/adaptive_simulator.py's docstring)
CURTAIL_CHANCE = 0.1


def curtailed_steps(judged: dict, runs: dict[int, int], rules: Rules) -> dict:
    """The undecided deciding steps (a, b) -> the chance that more runs, up to
    max_repeats at the points that move the step's gain, take the gain across the
    threshold, where it is below CURTAIL_CHANCE (stochastic curtailment: from `have`
    usable runs to max_repeats, the estimate moves by a normal of sd se * sqrt(1 - have
    / max_repeats); se from the step's interval, on its side toward the threshold).
    Only steps whose points have MIN_DECIDING_RUNS usable runs (of 2 runs, a bootstrap
    interval is far too narrow to tell) and room for more (`runs`: made, failed too)."""
    # imported here: scipy.stats costs ~0.9 s of every Snakemake start (the workflow
    # imports this module through the plan), each Slurm job's and packed member's too
    from scipy.stats import norm

    z_level = norm.ppf((1 + DECISION_LEVEL) / 2)
    found = {}
    for a, b, gain, lo, hi in judged["steps"]:
        if (
            (a, b) not in judged["deciding"]
            or lo is None
            or step_decided(gain, (lo, hi), rules.threshold, rules.zone)
        ):
            continue
        points = moved_by(judged["base"], judged["speedups"], a, b)
        if not any(runs.get(n, 0) < rules.max_repeats for n in points):
            continue
        have = min(judged["usable"].get(n, 0) for n in points)
        if not MIN_DECIDING_RUNS <= have < rules.max_repeats:
            continue
        # the interval's side toward the threshold: a bootstrap interval of few runs
        # is often lopsided
        se = (gain - lo if gain >= rules.threshold else hi - gain) / z_level
        left = math.sqrt(1 - have / rules.max_repeats)
        chance = float(norm.sf(abs(gain - rules.threshold) / (se * left)))
        # nor while max_repeats runs would likely narrow the interval's side to the
        # zone's far edge (width ~ 1/sqrt(runs)): then they decide the step
        deciding_at_max = se * z_level * math.sqrt(have / rules.max_repeats)
        decides = deciding_at_max <= abs(gain - rules.threshold) + rules.zone
        if chance < CURTAIL_CHANCE and not decides:
            found[(a, b)] = chance
    return found


# A point is measured again for a step when its runs carry at least this share of the
# variance of the step's gain (the base case barely moves a step high up the curve)
VARIANCE_SHARE = 0.1


def moved_by(base: int, speedups: dict[int, float], a: int, b: int) -> set[int]:
    """The points whose runs move the step a -> b's gain: its ends, and the base case
    where its share of the gain's variance is at least VARIANCE_SHARE. With equal
    noise at every point (delta method on log times), the shares go as gain**2 for
    the base and (S_x / (b - a))**2 for an end x (`speedups`: N -> speedup)."""
    ends = {a, b}
    if base in ends or not all(np.isfinite(speedups.get(x, math.nan)) for x in ends):
        return ends | {base}
    gain = (speedups[b] - speedups[a]) / (b - a)
    weights = {base: gain**2} | {x: (speedups[x] / (b - a)) ** 2 for x in ends}
    total = sum(weights.values())
    return ends | ({base} if total > 0 and weights[base] / total >= VARIANCE_SHARE else set())


# a plan's parts before it adds runs (never changed in place)
NOTHING_ADDED = {"added": {}, "why": {}, "round_su": 0.0, "stop": None, "judged": None}


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
    plan = {"round": round_no, "totals": dict(runs), "spent_su": spent_su} | NOTHING_ADDED
    if round_no == 1 and not runs:
        added = first_round(candidates, base, rules)
        why = {
            n: "round 1: the base case" if n == base else "round 1: a first step up" for n in added
        }
    else:
        judged = judge(candidates, samples, base, rules, scale)
        plan["judged"] = judged
        # a CI target that max_repeats runs at both its ends (the answer and the base)
        # would not reach gets no runs, and does not stop the work on the steps
        ci, ends = judged["speedup_ci"], sorted({judged["worth_n"], base} & set(runs))
        reach = half_width_at_max_repeats(ci["half_width"], ends, judged["usable"], runs, rules)
        beyond = set(ends) if reach > rules.target_ci else set()
        if judged["decided"] or judged["answer_decided"] and beyond:
            return plan | {"stop": stop(DECIDED, decided_text(judged, rules, reach))}
        if round_no > rules.max_rounds:
            return plan | {"stop": stop(LIMITS, f"{rules.max_rounds} rounds were run (max_rounds)")}
        new_runs = min(NEW_POINT_RUNS, rules.first_repeats, rules.max_repeats)
        added, why = dict.fromkeys(judged["new"], new_runs), dict(judged["new"])
        at_limit = []  # points that still decide the answer but have max_repeats runs
        # where the CI target is out of reach, steps that more runs would hardly change
        # (nor decide) get none
        curtailed = curtailed_steps(judged, runs, rules) if beyond else {}
        open_steps = [step for step in judged["deciding"] if step not in curtailed]
        for n, reason in judged["needs"].items():
            usable, wanted = judged["short"].get(n, (None, 0))
            # a point short of usable runs gets what it lacks
            extra = min(wanted - usable, rules.max_repeats - runs.get(n, 0)) if wanted else 0
            factors = shrink_factors(judged, n, rules, curtailed)
            if n in beyond:
                factors.pop("ci", None)
            moved = any(n in moved_by(base, judged["speedups"], *s) for s in open_steps)
            if curtailed and not factors and not wanted and not moved:
                continue  # only curtailed steps wanted its runs
            # as many runs as the intervals N decides ask for (not at a point without 2
            # usable runs: no interval to project). A step is not given up before
            # max_repeats because deciding it would take more: judged on its gain as
            # measured, few noisy runs gave up on 8 % of the easy simulated studies, and
            # giving up later still cost more right answers than it saved SU.
            projected = usable is None or usable >= 2
            if projected and (factors or not wanted and n not in beyond):
                factor = max(factors.values(), default=2.0)  # no interval yet: double
                extra = max(extra, more_runs(runs.get(n, 0), factor, rules))
            if extra > 0:
                added[n], why[n] = extra, reason
            elif factors or wanted or n not in beyond:
                at_limit.append(n)
        if not added:
            parts = []
            if at_limit:
                full = ", ".join(f"N = {n}" for n in sorted(at_limit))
                parts.append(
                    f"the points that would decide it ({full}) have max_repeats = "
                    f"{rules.max_repeats} runs"
                )
            if curtailed:
                parts.append(curtailed_text(judged, curtailed, rules))
            if beyond:
                at = " and ".join(f"N = {n}" for n in ends)
                parts.append(
                    f"the speedup at N = {judged['worth_n']} is known to "
                    f"±{100 * ci['half_width']:.1f} %, and the target of "
                    f"±{100 * rules.target_ci:g} % is out of reach: max_repeats = "
                    f"{rules.max_repeats} runs at {at} would give about "
                    f"±{100 * reach:.1f} %"
                )
            # the report says "stopped at the limits, not decided:" before it
            return plan | {"stop": stop(LIMITS, "; and ".join(parts))}

    round_su = float(sum(k * su_per_run[n] for n, k in added.items()))
    up = plan["judged"] and plan["judged"]["fallback"]
    if up and not within_budget(spent_su + round_su, rules.budget_su):
        # the new candidates beyond the next one up cost the most: that one alone, as
        # a walk without the fitted law would go
        planned = ", ".join(f"N = {n}" for n in plan["judged"]["new"])
        text = (
            f"the round with {planned} (about {round_su:.3g} SU) would take the study "
            f"to {spent_su + round_su:.3g} SU, above its budget of {rules.budget_su:g} "
            "SU: the next candidate up alone"
        )
        for n in plan["judged"]["new"]:
            added.pop(n), why.pop(n)
        added[up], why[up] = new_runs, text
    return admitted(plan, added, why, su_per_run, rules)


def admitted(plan: dict, added: dict, why: dict, su_per_run: dict, rules: Rules) -> dict:
    """`plan` with the runs `added` (and `why`), or stopped where its budget cannot
    afford them (the round refused, kept to say what would decide it)."""
    round_su = float(sum(k * su_per_run[n] for n, k in added.items()))
    plan |= {"added": added, "why": why, "round_su": round_su}
    spent_su, runs = plan["spent_su"], plan["totals"]
    if not within_budget(spent_su + round_su, rules.budget_su):
        text = (
            f"the next round ({sum(added.values())} runs, about {round_su:.3g} SU) would "
            f"take the study to {spent_su + round_su:.3g} SU, above its budget of "
            f"{rules.budget_su:g} SU"
        )
        return plan | {
            "added": {},
            "why": {},
            "round_su": 0.0,
            "stop": stop(BUDGET, text),
            "refused": {"added": added, "why": why, "round_su": round_su},
        }
    plan["totals"] = {n: runs.get(n, 0) + added.get(n, 0) for n in sorted(set(runs) | set(added))}
    return plan


def question_round(round_no, points, runs, question, su_per_run, spent_su, rules, scale=None):
    """The plan of a round of a study whose rounds settle a section's question, not how
    many (one of CPU and GPU series: its GPU verdict), as next_round's but keyed by point
    label: round 1 runs every point that runs (`points`) `first_repeats` times (which
    CPU point is the fastest, and which the cheapest, only runs tell); a later one adds
    the runs `question` asks for at those points ((decided, its words, point -> (runs,
    why)): the section's `rounds_wanted` of the runs so far), each point's runs at most
    doubling, within max_repeats, max_rounds and the budget. `scale`: unused (to_decide
    passes next_round's arguments)."""
    plan = {"round": round_no, "totals": dict(runs), "spent_su": spent_su} | NOTHING_ADDED
    if round_no == 1 and not runs:
        first, why = min(rules.first_repeats, rules.max_repeats), "round 1: every point it weighs"
        return admitted(
            plan, dict.fromkeys(points, first), dict.fromkeys(points, why), su_per_run, rules
        )
    decided, said, wanted = question
    plan["judged"] = {"said": said, "wanted": {p: k for p, (k, _) in wanted.items()}}
    if decided:
        return plan | {"stop": stop(DECIDED, said)}
    if round_no > rules.max_rounds:
        return plan | {"stop": stop(LIMITS, f"{rules.max_rounds} rounds were run (max_rounds)")}
    added, why = {}, {}
    for point, (k, reason) in wanted.items():
        have = runs.get(point, 0)
        if point in points and (extra := min(k, max(have, 1), rules.max_repeats - have)) > 0:
            added[point], why[point] = extra, reason
    if added:
        return admitted(plan, added, why, su_per_run, rules)
    parts, full = [said], sorted(p for p in wanted if p in points)
    if full:
        parts.append(
            f"the points that would decide it ({', '.join(full)}) have max_repeats = "
            f"{rules.max_repeats} runs"
        )
    if elsewhere := sorted(set(wanted) - set(points)):
        parts.append(
            f"it needs more runs at {', '.join(elsewhere)}, measured elsewhere: "
            "measure them and add them to its series' CSV"
        )
    return plan | {"stop": stop(LIMITS, "; and ".join(parts))}


def budget_limits(
    added: dict[int, int], reserve_su: dict[int, float], limit_su: dict[int, float], left_su: float
) -> dict[int, float]:
    """N -> the share of its time limit each run of an admitted round may take, where at
    their limits (`limit_su`: N -> SU per run) they could cost more than `left_su`: its
    reserve scaled by `left_su` over the round's reserve, at most 1. The limits sum to
    at most `left_su`, and a run stopped at its limit costs it: the budget holds."""
    if not added or within_budget(sum(k * limit_su[n] for n, k in added.items()), left_su):
        return {}
    scale = max(left_su, 0.0) / sum(k * reserve_su[n] for n, k in added.items())
    return {n: min(scale * reserve_su[n] / limit_su[n], 1.0) for n in added}


# the schema's maximum of adaptive.max_repeats
MOST_REPEATS = 100


def to_decide(plan, *inputs, rules: Rules, scale=None, planner=None) -> contract.ToDecide | None:
    """Where `plan` (`planner`'s, next_round by default, of these `inputs`: its round
    number and the rest of its arguments but the rules) stops undecided: the one change
    of the study's config after which its next run of the workflow plans a round again,
    and that round (its `added` keyed as the plan's); None: decided, or no change within
    reach. The new round is planned as the workflow will: one round number on (the
    stopped plan's round is history), from the same runs."""
    if plan["stop"] is None or plan["stop"]["reason"] == DECIDED:
        return None
    round_no, *rest = inputs
    if plan["stop"]["reason"] == BUDGET:
        refused = plan["refused"]
        needed = significant_ceiling(plan["spent_su"] + refused["round_su"])
        return contract.ToDecide("budget_su", needed, refused["added"], refused["round_su"], True)
    # a study past max_rounds gets one more round (the stopped round counts); one at
    # max_repeats, twice the runs (its deciding steps are what is undecided: an
    # unreachable CI target no longer keeps it so)
    tries = [("max_rounds", round_no + 1)] if round_no > rules.max_rounds else []
    tries.append(("max_repeats", min(2 * rules.max_repeats, MOST_REPEATS)))
    for key, value in tries:
        then = (planner or next_round)(round_no + 1, *rest, replace(rules, **{key: value}), scale)
        if then["stop"] is None or then["stop"]["reason"] == DECIDED:
            return contract.ToDecide(
                f"adaptive.{key}",
                value,
                then["added"],
                then["round_su"],
                runs_decide=then["stop"] is None,
            )
    return None


def significant_ceiling(value: float, digits: int = 2) -> float:
    """`value` rounded up to `digits` significant digits: 0.1134 -> 0.12."""
    if not value > 0:
        return value
    unit = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return round(math.ceil(value / unit - 1e-9) * unit, 12)


def curtailed_text(judged: dict, curtailed: dict, rules: Rules) -> str:
    """'more runs would hardly change the answer: the step 16->32 (gain 0.13 [0.08,
    0.19]) would cross 0.1 with a chance of 4 % at max_repeats = 6 runs'."""
    gains = {(a, b): (g, lo, hi) for a, b, g, lo, hi in judged["steps"]}
    steps = "; ".join(
        f"the step {a}->{b} (gain {gains[(a, b)][0]:.3g} [{gains[(a, b)][1]:.3g}, "
        f"{gains[(a, b)][2]:.3g}]) would cross {rules.threshold:g} with a chance of "
        + (f"{100 * chance:.0f} %" if chance >= 0.005 else "under 1 %")
        for (a, b), chance in sorted(curtailed.items())
    )
    return (
        f"more runs would hardly change the answer: {steps} at max_repeats = "
        f"{rules.max_repeats} runs"
    )


def half_width_at_max_repeats(
    half_width: float, ends: list[int], usable: dict[int, int], runs: dict[int, int], rules: Rules
) -> float:
    """The speedup CI's relative half-width projected to max_repeats runs at its `ends`
    (the answer and the base; failed runs count against max_repeats): with equal noise
    at both (as moved_by), its square goes as the sum of 1 / usable runs over them, and
    it goes as the t quantile of ratio_ci's Welch interval (its degrees of freedom
    taken as those of equal noise: 4.3 at 3 + 3 runs, 2.0 at 20 + 20)."""
    if len(ends) < 2:  # the answer is the base: no CI to reach
        return math.nan
    now = sum(1 / max(usable.get(n, 0), 1) for n in ends)
    room = {n: max(rules.max_repeats - runs[n], 0) for n in ends}  # a lowered max_repeats: none
    then = sum(1 / max(usable.get(n, 0) + room[n], 1) for n in ends)
    df_now = max(sum(usable.get(n, 0) for n in ends) - 2, 1)
    df_then = max(sum(usable.get(n, 0) + room[n] for n in ends) - 2, 1)
    quantiles = _t_quantile(LEVEL, df_then) / _t_quantile(LEVEL, df_now)
    return half_width * math.sqrt(then / now) * float(quantiles)


def stop(reason: str, text: str) -> dict:
    return {"reason": reason, "text": text}


def decided_text(judged: dict, rules: Rules, reach: float = math.nan) -> str:
    """'ask for N = 16 (speedup ...)', with the steps decided only by the zone ('N = 8
    and N = 16 are both right: ...') and a CI target out of reach (`reach`: the
    half-width max_repeats runs would give)."""
    worth, ci = judged["worth_n"], judged["speedup_ci"]
    words = f"ask for N = {worth}"
    if math.isfinite(ci["half_width"]):
        words += (
            f" (speedup {ci['speedup']:.3g}, 95 % CI {ci['lo']:.3g}-{ci['hi']:.3g}, "
            f"±{100 * ci['half_width']:.1f} % against a target of ±{100 * rules.target_ci:g} %"
        )
        if ci["half_width"] > rules.target_ci:
            at = " and ".join(f"N = {n}" for n in sorted({judged["base"], worth}))
            words += (
                f", out of reach: max_repeats = {rules.max_repeats} runs at {at} would "
                f"give about ±{100 * reach:.1f} %"
            )
        words += ")"
    for a, b, gain, lo, hi in judged["steps"]:
        if (a, b) in judged["deciding"] and within_zone(
            gain, (lo, hi), rules.threshold, rules.zone
        ):
            words += "; " + zone_text(a, b, gain, lo, hi, rules.threshold, rules.zone)
    return words


@dataclass(frozen=True, kw_only=True)
class RoundPlan:
    """A round's plan, results/<study>/rounds/round<r>.json (cost.plan.round_plan), by
    point label. `totals`: the runs each point has once the round is done."""

    round: int
    totals: dict[str, int]
    added: dict[str, int]
    why: dict[str, str]
    round_su: float
    spent_su: float
    stop: contract.AdaptiveStop | None  # None: the round runs
    judged: dict[str, Any] | None  # judge's view of the runs (None: round 1)
    refused: contract.RefusedRound | None = None  # the round the budget refused
    # an undecided study: the one config change that would plan a round again
    to_decide: contract.ToDecide | None = None
    study: str
    points: dict[str, int]  # every candidate's label -> N, measured or not
    su_per_run: dict[str, float]
    price_basis: dict[str, str]  # what each price is based on, in words
    priced_at_limit: list[str]  # the points priced at their time limit: an upper bound
    budget_su: float
    # point label -> its runs' time limit (min) where the budget sets one (budget_limits)
    time_limits_min: dict[str, float] = field(default_factory=dict)
    # the config it was planned under (get_round_config) and its fingerprint
    config_fingerprint: str | None = None
    config: dict[str, Any] | None = None
    version: int = 2

    def dump(self, path: str | Path) -> None:
        """The plan written, atomically (NaN as null)."""
        write_json_atomic(path, jsonable(asdict(self)))

    @classmethod
    def load(cls, path: str | Path) -> RoundPlan:
        """A round's plan of any version this code reads, as today's (ContractError names
        the file and the key, or the version it cannot read: its rule plans it again)."""
        data = contract.read_json(path)
        contract.versioned(data, str(path), cls.version, {1: plan_of_version_1})
        return contract.parse(cls, data, str(path))


def plan_of_version_1(data: dict) -> dict:
    """A round's plan written before versions (up to 90acaa5) as version 2: each part it
    was written without as unknown (its prices' basis not said; none priced at its limit,
    no budget limit, no config kept) and a ToDecide's `shared`, there for a while, left
    out. Without the parts a round is made of (its runs, its stop) it stays refused."""
    decide = data.get("to_decide")
    if isinstance(decide, dict):
        decide = {k: v for k, v in decide.items() if k != "shared"}
    unknown = dict.fromkeys(("judged", "refused", "config", "config_fingerprint"))
    basis = dict.fromkeys(data.get("su_per_run") or {}, "not said (an earlier plan)")
    unknown |= {"price_basis": basis, "priced_at_limit": [], "time_limits_min": {}}
    return unknown | data | {"to_decide": decide}


def round_of_run(plans: list[RoundPlan], point: str, repeat: int) -> int | None:
    """The round that added run `repeat` of `point`."""
    return next((p.round for p in plans if p.totals.get(point, 0) >= repeat), None)


def config_fingerprint(study_config: dict) -> str:
    """A short name of a study's (validated) config: each round file keeps the one it
    was planned under, so that the report can say where the config changed."""
    text = json.dumps(study_config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def rounds_summary(plans: list[RoundPlan], runs: pd.DataFrame, study) -> contract.Rounds:
    """What the report says of an adaptive study's rounds: what each added and why,
    its SU, the stopping reason, each usable run's time and round (`runs`: with their
    round, tables.study_tables) for the figures, and the study's SU against the full grid
    of the same candidates at `repeats` runs each (priced as the last plan prices a
    run: measured where the point was, else estimated)."""
    # times measured elsewhere (a series' CSV) cost the study nothing
    ran = runs[[not study.for_series(s).measured for s in runs["series"]]]
    last, spent_su = plans[-1], charges(ran, study).su
    # where the rounds' config changed (none: one config throughout, or plans made
    # before fingerprints)
    configs = [
        contract.ConfigChange(p.round, p.config_fingerprint)
        for i, p in enumerate(plans)
        if not i or p.config_fingerprint != plans[i - 1].config_fingerprint
    ]
    grid_su = study.repeats * sum(last.su_per_run.values())
    usable = usable_runs(runs, study)
    times = pd.to_numeric(usable[TIME_COLUMNS[study.time]], errors="coerce")
    marked = [
        contract.TimedRun(int(n), float(t), int(r), jsonable(s))
        for n, t, r, s in zip(usable["n"], times, usable["round"], usable["series"], strict=True)
        if np.isfinite(t) and pd.notna(r)
    ]
    return contract.Rounds(
        rounds=[contract.Round(p.round, p.added, p.why, p.round_su) for p in plans if p.added],
        stop=last.stop,
        decided=last.stop.reason == DECIDED,
        points=last.points,
        refused=last.refused,
        budget_su=last.budget_su,
        spent_su=spent_su,
        grid_repeats=study.repeats,
        grid_su=grid_su,
        grid_su_estimated=not set(last.totals) >= set(last.points),
        # some candidate priced at its time limit: the grid's SU is at most grid_su,
        # and this study's share of it at least relative_to_grid
        grid_su_bound=bool(last.priced_at_limit),
        relative_to_grid=spent_su / grid_su if grid_su > 0 else None,
        runs=marked,
        later_runs=sum(m.round > 1 for m in marked),
        # a budget stop: the SU the refused round needed on top of what was spent,
        # rounded up as the first line's (to_decide): one figure, never below the need
        budget_needed=last.refused and significant_ceiling(spent_su + last.refused.round_su),
        to_decide=last.to_decide,
        shared=shared_left_out(runs, study),
        configs=configs if len(configs) > 1 else [],
        # a study of CPU and GPU series: its rounds settle the GPU verdict alone
        question="CPU or GPU" if study.series else "how many",
    )
