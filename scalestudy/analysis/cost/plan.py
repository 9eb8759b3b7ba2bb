"""The price of a study before it runs: its jobs, their layout, and an estimate of
each job's whole-job time and SU (job_price: measured, else from a neighbour or the
fitted model with PRICE_MARGIN, else the time limit, an upper bound). The rules, and
why: docs/studies.md, "What will it cost?"; adaptive rounds: docs/adaptive.md.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pandas as pd

from scalestudy.analysis.cluster.queue import JobStart
from scalestudy.analysis.cost.cost import SECONDS_PER_MINUTE, Cost, charges, within_budget
from scalestudy.analysis.decisions import adaptive
from scalestudy.analysis.stats.predictions import jsonable, times_by_n, usable_runs
from scalestudy.analysis.stats.verdicts import UNDECIDED, point_changes
from scalestudy.analysis.tables import TIME_COLUMNS, times_by_point
from scalestudy.compute.launch import STOP_SLACK_S
from scalestudy.contract import AdaptiveStop, EarlierAnalysis, RefusedRound
from scalestudy.model import Study
from scalestudy.study.points import Point, point_for
from scalestudy.study.resources import job_runtime, shared_job, slurm_resources

MEASURED, NEIGHBOUR, MODEL, LIMIT = "measured", "neighbour", "model", "limit"
# An estimate from measurements is multiplied by this before it prices a point: the
# neighbour's time assumes no speedup (or no loss of efficiency), which a curve past
# its peak, a noisy run or a weak-scaling study's growing time can exceed. At 1.5,
# 1.5-1.7 % of the simulated runs priced from a neighbour cost more than their price
# (outliers, mostly: benchmarks/adaptive_simulator.py --budget).
PRICE_MARGIN = 1.5


def earlier_times(runs: pd.DataFrame | None) -> dict[str, list[float]]:
    """Point label -> whole-job seconds of its successful earlier runs."""
    if runs is None or runs.empty or "wall_s" not in runs:
        return {}
    ok = runs[(runs["status"] == "ok") & pd.to_numeric(runs["wall_s"], errors="coerce").notna()]
    return {str(p): list(g["wall_s"].astype(float)) for p, g in ok.groupby("point")}


def model_time(study: Study, analysis: EarlierAnalysis | None, series: str, n: int) -> float | None:
    """Whole-job seconds at N by the upper end of the 95 % prediction band of the
    study's selected model (its band's lowest speedup), or None where it cannot say
    (no fit, no band, another time basis, weak scaling, N outside its curve)."""
    if not analysis or study.time != "wall" or study.scaling.kind != "strong":
        return None
    for fitted in analysis.series:
        curve = fitted.curve
        if fitted.series != series or not curve or not curve.get("base_time_s"):
            continue
        ns = np.asarray(curve["n"], float)
        slowest = np.asarray(curve.get("band_lo") or [], float)  # None (no band): NaN
        if len(slowest) != len(ns) or not ns.min() <= n <= ns.max():
            return None
        speedup = float(np.interp(math.log(n), np.log(ns), slowest))
        return curve["base_time_s"] / speedup if speedup > 0 else None
    return None


def neighbour_time(n: int, measured: dict[int, float], weak: bool) -> tuple[float, int] | None:
    """(whole-job seconds, the N it is taken from) of an unmeasured N, from the nearest
    point tried below it (else above it); `measured`: N -> the median whole-job seconds
    of each point tried (NaN: its runs all failed, which says nothing but "slow":
    None). Assumed no faster than that neighbour: from below, adding units does not
    make a run faster (strong scaling, so no speedup) nor slower (weak scaling: the
    margin covers what it grows); from above, a strong-scaling point uses no more
    unit-seconds than the larger one (efficiency does not fall as N falls), a
    weak-scaling one no more time."""
    below = [m for m in measured if m < n]
    m = max(below) if below else min((m for m in measured if m > n), default=None)
    if m is None or not math.isfinite(measured[m]):
        return None
    seconds = measured[m] if weak or m < n else measured[m] * m / n
    return seconds, m


def job_price(
    n: int,
    measured: dict[int, float],
    limit_s: float,
    weak: bool = False,
    model_s: float | None = None,
) -> dict:
    """A job's whole-job seconds at N, their basis and `from_n` (the neighbour's N), as
    the module's docstring says (`limit_s`: the time limit), and `reserve_s`, what a
    budget holds back for it: the same, but a measured median too times PRICE_MARGIN
    (half the runs are slower than their median: rounds admitted on medians went over
    their budget). The one rule of the plan, the rounds and the simulator."""
    if math.isfinite(measured.get(n, math.nan)):
        reserve = min(measured[n] * PRICE_MARGIN, limit_s)
        return {"seconds": measured[n], "basis": MEASURED, "from_n": n, "reserve_s": reserve}
    estimates = []
    if n not in measured and (found := neighbour_time(n, measured, weak)) is not None:
        estimates.append((found[0], NEIGHBOUR, found[1]))
    if n not in measured and model_s is not None and math.isfinite(model_s):
        estimates.append((model_s, MODEL, None))
    if estimates:
        seconds, basis, from_n = max(estimates, key=lambda e: e[0])
        if seconds * PRICE_MARGIN < limit_s:
            seconds *= PRICE_MARGIN
            return {"seconds": seconds, "basis": basis, "from_n": from_n, "reserve_s": seconds}
    return {"seconds": limit_s, "basis": LIMIT, "from_n": None, "reserve_s": limit_s}


def basis_text(price: dict, earlier_runs: int) -> str:
    """What a price (job_price) is based on, in words; `earlier_runs`: the point's."""
    if price["basis"] == MEASURED:
        return f"median of {earlier_runs} earlier run{'s' if earlier_runs != 1 else ''}"
    if price["basis"] == NEIGHBOUR:
        return f"from N = {price['from_n']} measured, × {PRICE_MARGIN:g} margin"
    if price["basis"] == MODEL:
        return f"the fitted model's upper prediction, × {PRICE_MARGIN:g} margin"
    return f"upper bound: the {price['seconds'] / SECONDS_PER_MINUTE:g}-min time limit"


@dataclass(frozen=True)
class Totals:
    """A plan's sums over its rows (`to_run`, `done`: runs) and its jobs."""

    SUMMED: ClassVar = ("su", "su_to_run", "seconds_to_run", "to_run", "done")
    su: float
    su_to_run: float
    seconds_to_run: float
    to_run: float
    done: float
    jobs: int
    slurm_jobs: int | None  # jobs on Slurm, where runs share one (None: none do)
    upper_bound: bool  # some job to run is priced at its time limit


@dataclass(frozen=True)
class SoFar:
    """An adaptive study's runs of every round so far, and what they cost."""

    runs: int
    su: float


@dataclass(frozen=True)
class PlanRow:
    """A point's jobs, priced (study_plan: job_price, basis_text), and when its job would
    start (None until Slurm is asked: queue.predict)."""

    point: Point
    repeats: int
    done: int
    to_run: int
    seconds: float
    basis: str
    price_from_n: int | None  # the point whose time priced it
    price_basis: str
    earlier_runs: int
    su_per_job: float
    su_reserve_per_job: float
    su: float
    su_limit_per_job: float
    su_to_run: float
    seconds_to_run: float
    # what one Slurm job of the point asks for (a packed one: all its repeats' time),
    # for sbatch --test-only (scalestudy.analysis.cluster.queue)
    slurm_resources: dict
    slurm_job: str | None  # the Slurm job its runs share (None: each run a job of its own)
    start: JobStart | None = None


@dataclass(frozen=True)
class StudyPlan:
    """Every job of a study, priced (study_plan): one row per point, and totals."""

    study: str
    description: str | None
    rate: str
    rows: list[PlanRow]
    totals: Totals
    budget_su: float | None
    over_budget: bool
    compare: bool  # a paired comparison: on Slurm a's and b's runs of a point share its job
    adaptive: bool  # the rows are round 1; later rounds stop within budget_su
    so_far: SoFar | None


def study_plan(
    study: Study,
    runs: pd.DataFrame | None = None,
    analysis: EarlierAnalysis | None = None,
    finished: set[tuple[str, int]] = frozenset(),
) -> StudyPlan:
    """`runs` and `analysis` are the study's earlier results (None before its first
    run); `finished` the (point, repeat) whose good records exist (they will not run)."""
    times = earlier_times(runs)
    # a point with runs but no successful one was tried: it prices nothing but itself
    tried = set(runs["point"].astype(str)) if runs is not None and "point" in runs else set()
    # an adaptive study's later rounds are chosen from its runs: its plan is round 1
    ns, rules = study.scaling.ns(), study.adaptive and adaptive.Rules.of(study)
    first = rules and adaptive.first_round(ns, study.base_n(ns), rules)
    rows = []
    for series in study.series_names:
        own = study.for_series(series)
        # a job's partition is unknown before it runs: no partition's weights apply
        cost = Cost.of(study, series)
        points = {n: point_for(study, n, series) for n in sorted(own.scaling.ns())}
        measured = {
            n: statistics.median(times[p.label]) if times.get(p.label) else math.nan
            for n, p in points.items()
            if p.label in tried or times.get(p.label)
        }
        for n, point in points.items():
            limit_s = own.resources.runtime * SECONDS_PER_MINUTE
            model_s = model_time(study, analysis, series, n)
            price = job_price(n, measured, limit_s, own.scaling.kind == "weak", model_s)
            seconds, basis = price["seconds"], price["basis"]
            repeats = study.repeats if first is None else first.get(n, 0)
            # a study of CPU and GPU series runs every point in round 1
            repeats = rules.first_repeats if rules and study.series else repeats
            repeats = 0 if own.measured else repeats  # measured elsewhere: no job
            done = sum((point.label, k) in finished for k in range(1, repeats + 1))
            su = float(cost.su(point.cores, point.gpus, seconds))
            reserve = float(cost.su(point.cores, point.gpus, price["reserve_s"]))
            earlier = len(times.get(point.label, []))
            rows.append(
                PlanRow(
                    point,
                    repeats,
                    done,
                    repeats - done,
                    seconds,
                    basis,
                    price["from_n"],
                    basis_text(price, earlier),
                    earlier,
                    su,
                    reserve,
                    su * repeats,
                    float(cost.su(point.cores, point.gpus, limit_s)),
                    su * (repeats - done),
                    seconds * (repeats - done),
                    slurm_resources(point, study) | {"runtime": job_runtime(study, point)},
                    shared_job(study, point),
                )
            )
    # on Slurm, runs that share a job (a packed point's repeats, a comparison's a and
    # b at one N) are one job (the plan is made before any executor is chosen: locally
    # each run stays a job of its own); finished ones count, as in `jobs`
    shared = {r.slurm_job for r in rows if r.repeats > 0}
    totals = Totals(
        **{key: float(sum(getattr(r, key) for r in rows)) for key in Totals.SUMMED},
        jobs=sum(r.repeats for r in rows),
        slurm_jobs=len(shared) if any(r.slurm_job for r in rows) else None,
        upper_bound=any(r.basis == LIMIT and r.to_run for r in rows),
    )
    budget = study.budget_su
    return StudyPlan(
        study=study.name,
        description=study.description,
        rate=Cost.of(study).rate.text(),
        rows=rows,
        totals=totals,
        budget_su=budget,
        over_budget=budget is not None and not within_budget(totals.su, budget),
        compare=study.compare is not None,
        adaptive=first is not None,
        so_far=SoFar(len(runs), charges(runs, study).su)
        if first is not None and runs is not None and not runs.empty
        else None,
    )


def budget_problem(plan: StudyPlan) -> str | None:
    """The words refusing a plan over its study's budget (None when within it)."""
    if not plan.over_budget:
        return None
    jobs = plan.totals.jobs
    bounds = sum(r.repeats for r in plan.rows if r.basis == LIMIT)
    how = (
        f"; {bounds} of its {jobs} jobs are priced at their time limit, an upper bound "
        "(run a few first, or lower resources.runtime, to price them from measurements)"
        if bounds
        else ""
    )
    what = "round 1 of the adaptive study is" if plan.adaptive else "the plan is"
    fewer = (
        "adaptive.first_repeats or adaptive.first_points" if plan.adaptive else "repeats or points"
    )
    return (
        f"studies.{plan.study}.budget_su: {what} estimated at {plan.totals.su:.3g} SU "
        f"({jobs} jobs), above the budget of {plan.budget_su:g} SU{how}. "
        f"Lower {fewer}, or raise budget_su; `snakemake results/plan.html` "
        "shows the price per point."
    )


def round_plan(
    study: Study, round_no: int, runs, baseline=None, question=None
) -> adaptive.RoundPlan:
    """The plan of round `round_no` of an adaptive study (scalestudy.analysis.decisions.adaptive),
    from the runs of the rounds before it (tables.read_runs; None before round 1), keyed by
    point label: the runs each point should have once the round is done ("totals"),
    those it adds and why, its estimated SU, the SU spent so far, and the stopping
    reason, if the study stops here. `baseline`: the runs table of the study's baseline;
    with adaptive.settle_baseline, points where the comparison with it is undecided
    get runs too (runs_for_comparison). A study of CPU and GPU series settles
    `question` instead (adaptive.question_round: a section's `rounds_wanted` of `runs`)."""
    ns = study.scaling.ns()
    base = study.base_n(ns)
    # a study of series plans by point label (its series measured elsewhere left out)
    by_label, priced = bool(study.series), study_plan(study, runs)
    rows = [r for r in priced.rows if not study.for_series(r.point.series).measured]
    keys = [r.point.label if by_label else r.point.n for r in rows]
    label = {n: point_for(study, n).label for n in ns}
    label = {k: r.point.label for k, r in zip(keys, rows, strict=True)} if by_label else label
    made, samples, spent = {}, {}, 0.0
    if runs is not None and not runs.empty:
        ran = runs[runs["point"].isin(list(label.values()))] if by_label else runs
        made = {int(n): len(g) for n, g in ran.groupby("n")}
        made = {str(p): len(g) for p, g in ran.groupby("point")} if by_label else made
        # a point whose runs are all unusable is measured, with no times
        samples = {n: np.empty(0) for n in made}
        samples |= times_by_n(usable_runs(runs, study), TIME_COLUMNS[study.time])
        spent = charges(ran, study).su
    su_per_run = {k: r.su_per_job for k, r in zip(keys, rows, strict=True)}
    # a round is admitted within the budget on what it holds back (job_price)
    reserve = {k: r.su_reserve_per_job for k, r in zip(keys, rows, strict=True)}
    scale = {n: n / base for n in ns} if study.scaling.kind == "weak" else None
    inputs, rules = (round_no, ns, base, made, samples, reserve, spent), adaptive.Rules.of(study)
    planner = adaptive.question_round if by_label else adaptive.next_round
    if by_label:
        inputs = (round_no, list(label), made, question, reserve, spent)
    plan = planner(*inputs, rules, scale)
    if baseline is not None and samples and study.adaptive.settle_baseline and not by_label:
        column = TIME_COLUMNS[study.time]
        now, was = (
            {("", n): x for (_, n), x in times_by_point(usable_runs(t, study), column).items()}
            for t in (runs, baseline)
        )
        now = {key: x for key, x in now.items() if key[1] in ns}
        plan = runs_for_comparison(plan, now, was, study, reserve)
    # a study stopped undecided: the config change that would plan a round again
    decide = adaptive.to_decide(plan, *inputs, rules=rules, scale=scale, planner=planner)
    at_limit = {k: r.su_limit_per_job for k, r in zip(keys, rows, strict=True)}
    n_of = {k: r.point.n for k, r in zip(keys, rows, strict=True)}
    # what its runs may take past their limits (STOP_SLACK_S each) is held back from what
    # is left (a study once spent 0.17089 SU of its 0.17: its limits left no room for it)
    late = STOP_SLACK_S / (study.resources.runtime * SECONDS_PER_MINUTE)
    held = sum(k * at_limit[n] * late for n, k in plan["added"].items())
    left = study.budget_su - spent - held
    shares = adaptive.budget_limits(plan["added"], reserve, at_limit, left)

    def labelled(by_n: dict) -> dict:
        return {label[n]: v for n, v in by_n.items()}

    limits = labelled({n: share * study.resources.runtime for n, share in shares.items()})
    why = labelled(plan["why"])
    for point, minutes in limits.items():
        why[point] += f"; its runs stop at {minutes:.3g} min, their budget limit"

    refused = plan.get("refused")
    return adaptive.RoundPlan(
        round=round_no,
        totals=labelled(plan["totals"]),
        added=labelled(plan["added"]),
        why=why,
        round_su=float(plan["round_su"]),
        spent_su=float(spent),
        stop=plan["stop"] and AdaptiveStop(**plan["stop"]),
        judged=jsonable(plan["judged"]),
        refused=refused
        and RefusedRound(labelled(refused["added"]), labelled(refused["why"]), refused["round_su"]),
        to_decide=decide and replace(decide, added=labelled(decide.added)),
        study=study.name,
        points={label[k]: n_of[k] for k in label},
        su_per_run={label[k]: su_per_run[k] for k in label},
        price_basis={r.point.label: r.price_basis for r in rows},
        priced_at_limit=[r.point.label for r in rows if r.basis == LIMIT],
        budget_su=study.budget_su,
        time_limits_min=limits,
    )


def undecided_points(now: dict, was: dict, tolerance: float) -> dict[int, tuple[int, str]]:
    """N -> (the runs to add now that would decide it, why) where the comparison with
    the baseline is undecided and more runs now can decide it (regression_check).
    Keys of now and was: (series, N) as times_by_point."""
    return {
        p.n: (
            p.more_runs,
            f"the comparison with the baseline is undecided at N = {p.n} (time ratio "
            f"{p.ratio:.2f} [{p.lo:.2f}, {p.hi:.2f}], tolerance {tolerance:.0%}): "
            f"{p.text.removeprefix('undecided: ')}",
        )
        for p in point_changes(now, was, tolerance)
        if p.verdict == UNDECIDED and p.more_runs
    }


def runs_for_comparison(plan: dict, now: dict, was: dict, study: Study, su_per_run: dict) -> dict:
    """An adaptive round plan (analysis.adaptive.next_round, keyed by N) with runs added
    where the comparison with the baseline is undecided: the runs that would decide it,
    up to max_repeats, as many as the budget allows, within max_rounds. A plan stopped
    as decided goes on for them; one stopped by its budget or limits stays stopped."""
    stopped = plan.get("stop")
    if stopped and stopped["reason"] != "decided":
        return plan
    adaptive = study.adaptive
    if plan["round"] > adaptive.max_rounds:
        return plan
    added, why = dict(plan["added"]), dict(plan["why"])
    round_su = plan["round_su"]
    for n, (more, reason) in undecided_points(now, was, study.baseline_tolerance).items():
        have = plan["totals"].get(n, 0)
        extra = min(more - added.get(n, 0), adaptive.max_repeats - have)
        per_run = su_per_run.get(n, math.inf)
        while extra > 0 and not within_budget(
            plan["spent_su"] + round_su + extra * per_run, study.budget_su
        ):
            extra -= 1
        if extra <= 0:
            continue
        added[n] = added.get(n, 0) + extra
        why.setdefault(n, reason)
        round_su += extra * per_run
    if added == plan["added"]:
        return plan
    # plan["totals"] already holds the runs next_round added: count only these
    totals = {n: plan["totals"].get(n, 0) + k - plan["added"].get(n, 0) for n, k in added.items()}
    return plan | {
        "added": added,
        "why": why,
        "round_su": round_su,
        "stop": None,
        "totals": plan["totals"] | totals,
    }
