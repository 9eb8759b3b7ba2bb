"""When each job of a plan would start: Slurm's own prediction (sbatch --test-only on
the plugin's own submit command, one call per shape of job), beside the waits of
past jobs of the same shape (sacct) with a 95 % upper bound on their 90th percentile.
It only reads what Slurm said (scalestudy.slurm.gather) and asks nothing. The rules,
and why: docs/slurm.md, "When each job would start" and "Time to result, at aggregation".
"""

from __future__ import annotations

import bisect
import math
import re
import shlex
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

from snakemake_interface_common.exceptions import WorkflowError

from scalestudy.contract import PointRequest
from scalestudy.records import write_json_atomic
from scalestudy.slurm import (
    HISTORY_FIELDS,
    LOCAL,
    SLURM,
    ClusterFacts,
    last_line,
    output_of,
    probe_command,
    slurm_seconds,
    unreachable,
)
from scalestudy.thresholds import BOUND_LEVEL, BOUND_QUANTILE

TEST_ONLY = "sbatch --test-only"
# what a row or the page says of --test-only's figure
NOT_A_BOUND = (
    "sbatch --test-only's start is Slurm's estimate now, not a bound either way: it may "
    "miss pending jobs of higher priority (too early) and takes every job ahead to run "
    "to its time limit (too late, as it came on the test cluster)"
)
UNREADABLE = "could not read the start time"
NOT_ASKED = "Slurm was not asked about this job"

# sbatch: Job 123 to start at 2024-05-01T10:00:00 using 64 processors on nodes
# n[01-02] in partition gpu. Since Slurm 25.05 a stray "a" follows the time
# ("... at TIME a using ..."), and " on cluster C" may follow the time too.
_LINE = re.compile(
    r"Job (?P<job>\d+) to start at (?P<start>\S+)"
    r"(?:\s+(?:on cluster (?P<cluster>\S+)|a(?=\s)))*"
    r"\s+using (?P<cpus>\d+) processors on nodes? (?P<nodes>\S+) in partition (?P<partition>\S+)"
)


def parse_test_only(text: str) -> dict | None:
    """The prediction in sbatch --test-only's output (any Slurm since 22.05: with or
    without 25.05's stray "a" and " on cluster C"), or None where no line reads as one:
    job, start (the text as printed), start_time (a datetime, None where the time is
    not an ISO time), cluster, cpus, nodes, partition."""
    match = _LINE.search(text)
    if not match:
        return None
    found = match.groupdict()
    try:
        start_time = datetime.fromisoformat(found["start"])
    except ValueError:
        start_time = None
    return found | {"job": int(found["job"]), "cpus": int(found["cpus"]), "start_time": start_time}


NO_PREDICTION = {"predicted_start": None, "predicted_wait_s": None, "start_basis": None}


@dataclass(frozen=True)
class JobStart:
    """When a planned job would start (predict), the --test-only command asked, and how
    long past jobs of its shape waited (past_waits). The defaults: nothing known."""

    predicted_start: str | None = None
    predicted_wait_s: float | None = None
    corrected_start: str | None = None
    corrected_wait_s: float | None = None
    start_basis: str | None = None
    queue_note: str | None = None
    sbatch_test_only: str | None = None
    history_wait_median_s: float | None = None
    history_wait_p90_s: float | None = None
    history_jobs: int = 0
    history_wait_bound_s: float | None = None
    history_wait_max_s: float | None = None
    history_bound_covered: int = 0
    history_bound_tested: int = 0


@dataclass(frozen=True)
class PlannedJob:
    """A job a plan will submit (planned_jobs)."""

    point: str
    series: str
    n: int
    runs: int
    nodes: int
    layout: dict[str, int]
    seconds: float
    su: float
    price_basis: str
    price_from_n: int | dict[str, int] | None
    start: JobStart


@dataclass(frozen=True)
class Forecast:
    """results/plan.json: what Slurm said of the plans' jobs (predict), and each study's
    jobs (`studies`: its name and PlannedJob's)."""

    queue: str
    asked_at: str | None
    calls: int
    note: str | None
    bound: str | None
    history_days: int | None
    history_note: str | None
    history: bool  # whether the rows carry past waits (sacct answered)
    coverage: dict | None  # the bound's backtest over every shape in the history
    coverage_words: str | None  # what the top of a wait is, measured and backtested
    run_to_limit: dict | None  # --test-only's correction (None: uncorrected, as
    correction_note: str | None  # this says)
    bound_min_jobs: int
    studies: list[dict]

    def dump(self, path: str | Path) -> None:
        """plan.json written, atomically: each job's start among its other fields."""
        found = asdict(self)
        for study in found["studies"]:
            study["jobs"] = [job | job.pop("start") for job in study["jobs"]]
        write_json_atomic(path, found)


# the bound on past waits (BOUND_LEVEL, BOUND_QUANTILE: scalestudy.thresholds) needs
# BOUND_MIN_JOBS jobs, the least n whose largest wait is the bound (1 - q^n >= level): 29
BOUND_MIN_JOBS = math.ceil(math.log(1 - BOUND_LEVEL) / math.log(BOUND_QUANTILE))
# where no ended past job gives --test-only's correction
UNCORRECTED = (
    "sbatch --test-only's starts are uncorrected: no past job's run time to time limit is known"
)


# how often the top wait (top_wait) and the bound alone held, as measured on the test
# cluster (benchmarks/queue_prediction.py --bound, 2026-11-27; docs/slurm.md): of
# `jobs` backtested, under the bound alone and under the top wait
TOP_WAIT_MEASURED = {"jobs": 102, "bound": 81, "top": 100}


@cache  # the backtest asks it of every count of a shape's waits
def bound_rank(n: int) -> int | None:
    """The rank k (1 = smallest) of n past waits that is a BOUND_LEVEL upper confidence
    bound on their BOUND_QUANTILE: the least k with P(Bin(n, q) <= k - 1) >= level
    (the k-th smallest exceeds the q-quantile unless at most k - 1 waits lie below it);
    None where even the largest is no such bound (n < BOUND_MIN_JOBS)."""
    import numpy as np
    from scipy.special import bdtr  # P(Bin(n, q) <= j), a ufunc: fast

    # below floor(n q) - 1 lies less than half the mass (the median is floor or ceil
    # of n q): no k - 1 there can reach the level, so the search starts there
    below = np.arange(max(0, math.floor(n * BOUND_QUANTILE) - 1), n)
    reach = np.flatnonzero(bdtr(below, n, BOUND_QUANTILE) >= BOUND_LEVEL)
    return int(below[reach[0]]) + 1 if reach.size else None


def p90_bound(waits: list[float]) -> float | None:
    """The 95 % upper confidence bound on the 90th percentile of these waits (None:
    fewer than BOUND_MIN_JOBS of them)."""
    k = bound_rank(len(waits))
    return None if k is None else float(sorted(waits)[k - 1])


def top_wait(wait_now_s: float | None, bound_s: float | None) -> float | None:
    """The top of a wait's interval: the bound on past waits, raised to the wait
    --test-only sees now where that is longer (a queue busier now than in its history:
    docs/slurm.md; TOP_WAIT_MEASURED). None where neither is known."""
    return max((w for w in (wait_now_s, bound_s) if w is not None), default=None)


def backtest(waits: list[float], now: list[float | None] | None = None) -> tuple[int, int]:
    """How many waits (in time order) lie at or under the bound of the waits before
    them (raised to `now`'s wait predicted for that job where given: top_wait), of how
    many had such a bound: (covered, tested)."""
    earlier: list[float] = []
    covered = tested = 0
    for position, wait in enumerate(waits):
        k = bound_rank(len(earlier))
        if k is not None:
            tested += 1
            top = top_wait(None if now is None else now[position], earlier[k - 1])
            covered += bool(wait <= top)  # a plain int, for JSON
        bisect.insort(earlier, wait)
    return covered, tested


def history_coverage(jobs: list[dict]) -> dict:
    """The bound's backtest over every shape of the history: each shape's waits in
    time order (backtest), summed."""
    by_shape: dict[tuple, list[dict]] = {}
    for job in jobs:
        by_shape.setdefault(tuple(job[k] for k in SHAPE_KEYS), []).append(job)
    in_order = (sorted(same, key=lambda j: j["eligible"]) for same in by_shape.values())
    found = [backtest([j["wait_s"] for j in same]) for same in in_order]
    covered, tested = sum(c for c, _ in found), sum(t for _, t in found)
    return {"covered": covered, "tested": tested, "coverage": covered / tested if tested else None}


def coverage_words(coverage: dict) -> str:
    """What the top of a wait is and how often it held, in the plan's words: as measured
    on the test cluster (TOP_WAIT_MEASURED), and the bound alone backtested over this
    history (`coverage`: history_coverage; past jobs' --test-only waits are not known,
    so the history cannot raise it)."""
    jobs, bound, top = (TOP_WAIT_MEASURED[k] for k in ("jobs", "bound", "top"))
    words = (
        "Time to result takes as the top of a job's wait the bound on past waits, raised to "
        "the wait sbatch --test-only predicts (corrected where it can be) where that is "
        f"longer: on the test cluster that held for {top} of {jobs} jobs "
        f"({100 * top / jobs:.1f} %), the bound "
        f"alone for {bound} ({100 * bound / jobs:.1f} %; benchmarks/queue_prediction.py --bound)"
    )
    if not coverage["tested"]:
        return words + ". No shape in the history has enough jobs to backtest the bound"
    return words + (
        ". Backtested over this history, each wait against the bound alone of the waits of "
        f"its shape before it: {coverage['covered']} of {coverage['tested']} "
        f"({100 * coverage['coverage']:.0f} %) were under it"
    )


def run_to_limit(jobs: list[dict]) -> dict | None:
    """The median ratio of run time (Elapsed) to time limit of the past jobs that ended,
    and how many (None where none did)."""
    import numpy as np

    ratios = [job["run_to_limit"] for job in jobs if job["run_to_limit"] is not None]
    if not ratios:
        return None
    return {"ratio": float(np.median(ratios)), "jobs": len(ratios)}


def corrected(predicted_wait_s: float | None, asked: datetime | None, ratio: dict | None) -> dict:
    """--test-only's wait scaled by the jobs' measured run time to limit (run_to_limit),
    and the start it gives (None where either is unknown)."""
    if predicted_wait_s is None or ratio is None:
        return {"corrected_start": None, "corrected_wait_s": None}
    wait = float(round(predicted_wait_s * ratio["ratio"]))
    start = None if asked is None else (asked + timedelta(seconds=wait)).isoformat()
    return {"corrected_start": start, "corrected_wait_s": wait}


def read_prediction(returncode: int, output: str, now: datetime) -> dict:
    """One --test-only answer as a row's queue fields: predicted_start (ISO text),
    predicted_wait_s (seconds from `now`, never below 0), start_basis, and a note
    where Slurm refused the shape or its line could not be read."""
    if returncode != 0:
        why = last_line(output) or f"exit status {returncode}"
        return NO_PREDICTION | {"queue_note": f"Slurm refused this job: {why}"}
    found = parse_test_only(output)
    if found is None or found["start_time"] is None:
        raw = last_line(output) or "(no output)"
        return NO_PREDICTION | {"queue_note": f"{UNREADABLE}: {raw}"}
    start = found["start_time"]
    if start.tzinfo is not None:  # Slurm prints local time; keep to the same clock
        start = start.astimezone().replace(tzinfo=None)
    return {
        "predicted_start": start.isoformat(timespec="seconds"),
        "predicted_wait_s": float(max(0, round((start - now).total_seconds()))),
        "start_basis": TEST_ONLY,
        "queue_note": None,
    }


def parse_history(text: str) -> list[dict]:
    """The past jobs in sacct's output (scalestudy.slurm.history_command) that started: each one's
    shape (nodes, gpus, cpus, partition, minutes: its time limit), wait_s (Start minus
    Eligible, never below 0), eligible (when it queued) and run_to_limit (Elapsed over
    Timelimit once it ended, else None). Lines that do not read are left out."""
    jobs = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != len(HISTORY_FIELDS):
            continue
        _, nodes, req, partition, limit, eligible, start, elapsed, state = fields
        try:
            waited = datetime.fromisoformat(start) - datetime.fromisoformat(eligible)
        except ValueError:  # Unknown, None: not started (or never eligible)
            continue
        # ReqTRES: billing=2,cpu=2,mem=1000M,node=1,gres/gpu=2
        asked = dict(part.partition("=")[::2] for part in req.split(",") if "=" in part)
        seconds, ran = slurm_seconds(limit), slurm_seconds(elapsed)
        ended = not state.startswith(("RUNNING", "PENDING", "REQUEUED", "SUSPENDED"))
        cpus, gpus = asked.get("cpu", ""), asked.get("gres/gpu", "0")
        jobs.append(
            {
                "nodes": int(nodes) if nodes.isdigit() else None,
                "gpus": int(gpus) if gpus.isdigit() else None,
                "cpus": int(cpus) if cpus.isdigit() else None,
                "partition": partition,
                "minutes": None if seconds is None else int(seconds // 60),
                "wait_s": max(0.0, waited.total_seconds()),
                "eligible": eligible,  # ISO text: sorts in time order
                # a job may overrun its limit by OverTimeLimit: capped at the limit
                "run_to_limit": min(1.0, ran / seconds)
                if ended and ran is not None and seconds
                else None,
            }
        )
    return jobs


SHAPE_KEYS = ("nodes", "gpus", "cpus", "minutes", "partition")


def job_shape(row, partition: str | None) -> dict:
    """A plan row's (cost.plan.PlanRow) job, or a point's request (PointRequest), as
    sacct's history describes one (SHAPE_KEYS): nodes, GPUs, CPUs, time limit in minutes
    and partition (None: the default, whichever it is)."""
    if isinstance(row, PointRequest):
        of, minutes = row, row.time_min
    else:
        of, minutes = row.point, row.slurm_resources["runtime"]
    shape = (of.nodes, of.gpus, of.cores, minutes, partition or None)
    return dict(zip(SHAPE_KEYS, shape, strict=True))


def same_shape(job: dict, shape: dict) -> bool:
    """Whether a past job has the shape (any partition where the shape's is None)."""
    if shape["partition"] is not None and job["partition"] != shape["partition"]:
        return False
    return all(job[key] == shape[key] for key in SHAPE_KEYS[:-1])


def past_waits(jobs: list[dict], shape: dict) -> dict:
    """The waits of the past jobs of this shape: median, sample 90th percentile, the
    95 % upper bound on the 90th percentile (p90_bound; None under BOUND_MIN_JOBS),
    the largest, the count, and the bound's backtest over them in time order (none
    where none matched: JobStart's defaults)."""
    import numpy as np

    same = sorted((job for job in jobs if same_shape(job, shape)), key=lambda j: j["eligible"])
    waits = [job["wait_s"] for job in same]
    if not waits:
        return {}
    covered, tested = backtest(waits)
    return {
        "history_wait_median_s": float(np.median(waits)),
        "history_wait_p90_s": float(np.percentile(waits, 90)),
        "history_jobs": len(waits),
        "history_wait_bound_s": p90_bound(waits),
        "history_wait_max_s": float(max(waits)),
        "history_bound_covered": covered,
        "history_bound_tested": tested,
    }


def past_jobs(facts: ClusterFacts) -> tuple[list[dict], str | None]:
    """The past jobs in sacct's answer (parse_history), and a note instead where it
    could not be asked (no sacct, accounting disabled, no answer in time)."""
    answer = facts.history
    if answer is None:
        return [], None
    if answer["error"] is not None:
        return [], f"no past waits: {answer['error']}"
    if answer["returncode"] != 0:
        why = last_line(output_of(answer)) or f"exit status {answer['returncode']}"
        return [], f"no past waits: sacct was not available ({why})"
    return parse_history(answer["stdout"]), None


def asked_at(facts: ClusterFacts) -> datetime | None:
    """When Slurm was asked (the clock a predicted start is a wait from)."""
    return None if facts.asked_at is None else datetime.fromisoformat(facts.asked_at)


def started(facts: ClusterFacts, resources: dict) -> tuple[dict, str | None]:
    """What Slurm said of the --test-only command of a job of these resources: the
    row's queue fields (with the command asked), and a note (instead) when Slurm could
    not be asked at all."""
    try:
        command = probe_command(resources, facts.site)
    except WorkflowError as e:  # the plugin would refuse to submit it too
        refused = f"the Slurm plugin would not submit this job: {e}"
        return NO_PREDICTION | {"queue_note": refused}, None
    asked = {"sbatch_test_only": shlex.join(command)}
    answer = facts.test_only.get(asked["sbatch_test_only"])
    if answer is None:  # asking stopped before it, or the command was never asked
        return NO_PREDICTION | {"queue_note": NOT_ASKED} | asked, None
    if answer["error"] is not None:
        return {}, f"Slurm could not be asked for start times: {answer['error']}"
    output = output_of(answer)
    if unreachable(answer):
        return {}, f"Slurm could not be asked for start times ({last_line(output)})"
    return read_prediction(answer["returncode"], output, asked_at(facts)) | asked, None


def job_start(
    facts: ClusterFacts,
    resources: dict,
    shape: dict,
    past: list[dict],
    ratio: dict | None,
    note: str | None,
) -> tuple[JobStart, str | None]:
    """A Slurm job's past waits (`past`: past_jobs), and what --test-only said of it
    (started), corrected (`ratio`: run_to_limit), unless Slurm could not be asked
    (`note`: one note, no job's reasons); and the note."""
    found = past_waits(past, shape)
    if note is None:
        start, note = started(facts, resources)
        found |= start | corrected(start.get("predicted_wait_s"), asked_at(facts), ratio)
    return JobStart(**found), note


def predict(plans: list, facts: ClusterFacts) -> tuple[list, Forecast]:
    """The plans (cost.plan.StudyPlan) with each row's start (JobStart), and plan.json
    (Forecast): per study, per job to run, its nodes, layout, price and start.
    `facts`: what Slurm said (scalestudy.slurm.gather, or local_facts: every job's wait 0)."""
    queue, site = facts.queue, facts.site
    note = None
    past, history_note = past_jobs(facts)
    ratio = run_to_limit(past)
    asked = []
    for plan in plans:
        rows = []
        for row in plan.rows:
            start = JobStart(predicted_wait_s=0.0, start_basis=LOCAL)
            if queue == SLURM:
                shape = job_shape(row, site.get("slurm_partition"))
                start, note = job_start(facts, row.slurm_resources, shape, past, ratio, note)
            rows.append(replace(row, start=start))
        asked.append(replace(plan, rows=rows))
    slurm = queue == SLURM
    history = slurm and facts.history is not None and history_note is None
    coverage = history_coverage(past) if history else None
    return asked, Forecast(
        queue=queue,
        asked_at=facts.asked_at,
        calls=len(facts.test_only),
        note=note,
        bound=NOT_A_BOUND if slurm and note is None else None,
        history_days=facts.history_days if slurm else None,
        history_note=history_note,
        history=history,
        coverage=coverage,
        coverage_words=coverage_words(coverage) if history else None,
        run_to_limit=ratio,
        correction_note=UNCORRECTED if slurm and note is None and ratio is None else None,
        bound_min_jobs=BOUND_MIN_JOBS,
        studies=[{"study": plan.study, "jobs": planned_jobs(plan, queue)} for plan in asked],
    )


def planned_jobs(plan, queue: str) -> list[PlannedJob]:
    """The jobs a plan (cost.plan.StudyPlan, asked: predict) will submit: one per run to
    come, or on Slurm one per group of runs that share a job (a packed point's repeats,
    a comparison's a and b at one N: the row's slurm_job), each with its layout, its
    price (the runs' time and SU one after another, and what each price is based on)
    and start. A shared job's rows are alike in shape: its layout and start are its
    first row's."""
    groups: dict = {}
    for position, row in enumerate(plan.rows):
        if not row.to_run:
            continue
        if queue == SLURM and row.slurm_job is not None:
            groups.setdefault(row.slurm_job, []).append((row, row.to_run))
        else:
            for k in range(row.to_run):
                groups[(position, k)] = [(row, 1)]
    jobs = []
    for shared in groups.values():
        row = shared[0][0]
        point = row.point
        bases = {r.point.label: r.price_basis for r, _ in shared}
        # the N whose time priced the runs; {label: N} where they differ
        from_n = {r.point.label: r.price_from_n for r, _ in shared}
        jobs.append(
            PlannedJob(
                point=", ".join(r.point.label for r, _ in shared),
                series=", ".join(r.point.series for r, _ in shared if r.point.series),
                n=point.n,
                runs=sum(runs for _, runs in shared),
                nodes=point.nodes,
                layout={
                    key: getattr(point, key)
                    for key in ("nodes", "tasks_per_node", "threads", "gpus_per_node")
                },
                seconds=sum(r.seconds * runs for r, runs in shared),
                su=sum(r.su_per_job * runs for r, runs in shared),
                # per run's point where they differ: "a-t1: ...; b-t1: ..."
                price_basis=row.price_basis
                if len(set(bases.values())) == 1
                else "; ".join(f"{k}: {t}" for k, t in bases.items()),
                price_from_n=row.price_from_n if len(set(from_n.values())) == 1 else from_n,
                start=row.start,
            )
        )
    return jobs


# --- the waits of a study's requests, at aggregation (time to result) -------

# which wait a point's time to result adds (scalestudy.analysis.cluster.result_time)
NOW = "now"  # sbatch --test-only, asked at aggregation
TYPICAL = "typical"  # the median of past jobs of the shape (sacct), enough of them
UNKNOWN = "unknown wait"  # Slurm could not be asked, or refused the shape


def request_waits(requests: list[PointRequest], facts: ClusterFacts) -> dict:
    """What Slurm said of the waits of the study's requests (`facts`: its cluster facts,
    scalestudy.slurm.gather), per point (label): wait_now_s (None: no figure), its
    correction wait_now_corrected_s (None: uncorrected), queue_note, and the past waits
    of its shape (past_waits); and the correction's ratio. Locally every wait_now_s is
    0."""
    local = facts.queue != SLURM
    site = facts.site
    past, history_note = past_jobs(facts)
    ratio = run_to_limit(past)
    note = None
    points = {}
    for r in requests:
        start = JobStart(predicted_wait_s=0.0 if local else None)
        if not local and r.resources is not None:  # no run measured: no request to ask about
            shape = job_shape(r, site.get("slurm_partition"))
            start, note = job_start(facts, r.resources, shape, past, ratio, note)
        history = {k: v for k, v in asdict(start).items() if k.startswith("history_")}
        points[r.point] = history | {
            "wait_now_s": start.predicted_wait_s,
            "queue_note": start.queue_note,
            "wait_now_corrected_s": start.corrected_wait_s,
        }
    return {
        "queue": LOCAL if local else SLURM,
        "asked_at": facts.asked_at,
        "calls": len(facts.test_only),
        "note": note,
        "history_note": history_note,
        "history_days": None if local else facts.history_days,
        "run_to_limit": None if local else ratio,
        "points": points,
    }
