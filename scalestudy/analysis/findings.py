"""Every number the report shows beyond summary.csv and the predictions, computed once at
aggregation and written to analysis.json under "findings" (scripts/aggregate.py).

The report formats these and computes nothing; the study facts it states (title,
scaling, cost model) are here too, so it needs no config, and so are its verdicts (which
steps the answer stands on, whether the headline names the layout). Values are plain
JSON: numbers stay numbers, missing ones are null; study_findings returns them as the
contract's Findings (scalestudy.contract).
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import pandas as pd

from scalestudy.analysis.cluster.result_time import deadline_by_result
from scalestudy.analysis.cost.cost import charges, cost_view
from scalestudy.analysis.decisions.recommendation import within_zone
from scalestudy.analysis.tables import (
    distinct,
    metric_columns,
    shared_machines,
    study_quality_metric,
)
from scalestudy.contract import (
    Answer,
    BaseCase,
    DdpPoint,
    DecisionSteps,
    Failure,
    Findings,
    FingerprintDiff,
    FrameworkShare,
    Mismatch,
    MoreRuns,
    NextMeasurements,
    Placement,
    ResultTimes,
    Rounds,
    SeriesFit,
    Step,
    StoppedAt,
    StudyFacts,
)
from scalestudy.model import Scaling, Study, base_series
from scalestudy.records import finite, jsonable
from scalestudy.study.points import point_for
from scalestudy.study.workload_bridge import workload_capabilities
from scalestudy.thresholds import efficiency_band

# what N counts, in the answer's words: (one, several)
AXIS_UNITS = {
    "threads": ("thread", "threads"),
    "devices": ("device per node", "devices per node"),
    "nodes": ("node", "nodes"),
    "processes": ("process", "processes"),
    "gpus": ("GPU", "GPUs"),
    "cores": ("core", "cores"),
}


def point_layout(study: Study, series: str, n: int) -> Placement:
    """Where a point of a series runs: nodes, processes per node, threads each, GPUs per
    node (a series split by provenance runs as its configured series; none: "")."""
    point = point_for(study, n, base_series(series if isinstance(series, str) else ""))
    return Placement(point.nodes, point.tasks_per_node, point.threads, point.gpus_per_node)


# The fingerprint: label -> the runs table's column (a record's environment field under
# its own name; tables.PARTS: env_ before it where another part took the name)
FINGERPRINT = {
    "cluster": "slurm_cluster",
    "partition": "partition",
    "hosts": "host",
    "nodes": "nodes",
    "cpu": "cpu_model",
    "gpu": "gpu_models",
    "python": "python",
    "pytorch": "torch",
    "cuda": "cuda",
    "driver": "gpu_driver",
    "workflow commit": "workflow_commit",
}


def fingerprint(study: Study, runs: pd.DataFrame) -> dict[str, str]:
    """Where and with what the study's runs ran (the values its runs hold, distinct, in
    order; "" where none says), and the workload with its parameters."""
    found = {label: distinct(runs, column) for label, column in FINGERPRINT.items()}
    if "workflow_dirty" in runs and runs["workflow_dirty"].astype(str).eq("True").any():
        found["workflow commit"] += " (with uncommitted changes)"
    found["workload"] = study.workload or f"measured: {study.measured or 'a CSV a series'}"
    found["parameters"] = json.dumps(study.params, sort_keys=True)
    return found


def fingerprint_changes(now: dict, was: dict | None) -> tuple[list[FingerprintDiff], str]:
    """What differs between the two fingerprints, and a note when the baseline's is
    unknown (records and analyses made before fingerprints)."""
    if was is None:
        return [], "the baseline's environment is unknown (its analysis has no fingerprint)"
    return [
        FingerprintDiff(k, was.get(k, ""), now.get(k, ""))
        for k in now
        if was.get(k, "") != now.get(k, "")
    ], ""


def is_distributed(study: Study) -> bool:
    """Whether the study's points run several processes (DDP): a workload that can, or
    times measured elsewhere (published DDP times get the source's table too)."""
    if not study.elsewhere and not workload_capabilities(study.workload).get("distributed"):
        return False
    for series in study.series_names:
        sc = study.for_series(series).scaling
        if sc.points is None:  # published times: their N come from the CSV
            if sc.axis not in ("threads", "cores") or sc.devices * sc.nodes > 1:
                return True
        elif any(point_for(study, n, series).world_size > 1 for n in sc.ns()):
            return True
    return False


def study_facts(study: Study) -> StudyFacts:
    """What the report states about the study as configured."""
    axis = study.scaling.axis
    one, several = AXIS_UNITS[axis]
    if axis == "devices" and study.scaling.device == "gpu":
        one, several = "GPU", "GPUs"
    distributed = is_distributed(study)
    # what the study is, for the report's words: times measured elsewhere, the user's
    # command, or a training of the workflow's own, in one process or distributed
    kind = "distributed" if distributed else "training"
    # times measured elsewhere: the study's CSV, or its series' own
    files = dict.fromkeys(study.for_series(s).measured for s in study.series_names)
    measured = ", ".join(f for f in files if f) if study.elsewhere else None
    if measured or study.workload == "command":
        kind = "measured" if measured else "command"
    return StudyFacts(
        study.name,
        study.description,
        study.workload,
        measured,
        kind=kind,
        params=jsonable(study.params),
        scaling=Scaling(**jsonable(asdict(study.scaling))),  # as JSON reads it back: lists
        unit=several,
        unit_one=one,
        time=study.time,
        tolerance=study.convergence.tolerance,
        distributed=distributed,
        include_shared=study.include_shared,
        include_unstable=study.include_unstable,
        profile_steps=study.profile.steps,
        deadline_s=study.recommend.deadline_s,
        budget_su=study.recommend.budget_su,
        request=study.request,
        global_batch_fixed=bool(study.params.get("global_batch_size")),
    )


def ddp_findings(summary: pd.DataFrame, study: Study) -> list[DdpPoint]:
    """Per point, the source's reading of a distributed point: processes (as the runs
    saw them, else as the point asks: times measured elsewhere record none), processes
    per node and the efficiency band."""
    rows = []
    for r in summary.to_dict("records"):
        series = r["series"] if isinstance(r["series"], str) else ""
        world = r["world_size"]
        if not (finite(world) or 0) > 0:
            world = point_for(study, int(r["n"]), base_series(series)).world_size
        rows.append(
            DdpPoint(
                series,
                r["point"],
                float(world),
                int(world / r["nodes"]) if r["nodes"] else 0,
                efficiency_band(r["efficiency"]),
            )
        )
    return rows


def framework_share(summary: pd.DataFrame) -> FrameworkShare | None:
    """Lightning's step against the same step in a plain PyTorch loop (base case)."""
    base = summary[summary["is_base"]]
    columns = ["step_time_median_s", "plain_step_time_median_s"]
    if base.empty or not all(c in base for c in columns):
        return None
    lightning, plain = (base[c].iloc[0] for c in columns)
    if not (pd.notna(lightning) and pd.notna(plain) and plain > 0):
        return None
    return FrameworkShare(float(lightning) * 1e3, float(plain) * 1e3, float(1 - plain / lightning))


def shown_metrics(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """The summary's columns of every metric the workloads reported that has a number
    at some point (the report shows those it shows nowhere else)."""
    # where the summary has a column of the metric's name, its median is metric_NAME
    columns = [f"metric_{n}" if f"metric_{n}" in summary else n for n in metric_columns(runs)]
    return [c for c in columns if c in summary and summary[c].notna().any()]


# what the answer states of its point, from the summary row
ANSWERED = [
    "point",
    "speedup",
    "speedup_ci_lo",
    "speedup_ci_hi",
    "efficiency",
    "efficiency_ci_lo",
    "efficiency_ci_hi",
    "relative_su",
]
# what it states as the recommendation's working has it
SAID = [
    "threshold",
    "zone",
    "cheapest_meeting_deadline",
    "deadline_note",
    "fastest_within_budget",
    "budget_note",
]


def answer(pred: SeriesFit, summary: pd.DataFrame, study: Study) -> Answer:
    """The numbers of one series' recommendation (the template says them in words)."""
    rec = pred.recommendation
    rows = summary[summary["series"].astype(object).fillna("") == pred.series].set_index("n")
    worth = rec["worth_n"]
    point = {}
    if worth is not None:
        layout = point_layout(study, pred.series, worth)
        point = jsonable(rows.loc[worth, ANSWERED].to_dict()) | {
            "layout": layout,
            # the headline names the layout where N alone does not say it
            "says_layout": layout.nodes > 1 or study.scaling.axis in ("processes", "gpus", "cores"),
        }
    stopped = rec["stopped_at"]
    stopped_at = StoppedAt(*stopped) if stopped else None
    more = rec.get("next_measurements")
    if more is not None:
        more = NextMeasurements([MoreRuns(**m) for m in more["repeats"]], more["su"])
    # each step's marginal gain with its interval: [from, to, gain, lo, hi]
    intervals = rec.get("step_intervals", [])
    return Answer(
        series=pred.series,
        worth_n=worth,
        base_n=pred.base_n,
        **{k: rec[k] for k in SAID},
        stopped_at=stopped_at,
        peak=pred.peak if pred.peak and pred.peak.beyond_measured else None,
        selected=pred.selected,
        # whether the runs' spread settles the answer (None: not judged)
        decided=rec.get("decided"),
        # what would decide it: more repeats at these N, and their SU
        next_measurements=more,
        step_intervals=intervals,
        steps=decision_steps(worth, stopped_at, intervals, rec["threshold"], rec["zone"]),
        fitted=any(f.ok for f in pred.fits),
        provenance_note=pred.fit_note if pred.mixed_provenance else None,
        unstable=[p for p, why in pred.excluded.items() if why.startswith("unstable")],
        usable_points=pred.usable_points,
        **point,
    )


def decision_steps(
    worth_n, stopped_at: StoppedAt | None, intervals: list, threshold: float, zone: float
) -> DecisionSteps:
    """The two steps the answer stands on, each gain with its interval: the step to the
    recommended N and the step after it (None where there is none, or no interval),
    and whether its interval reaches across the threshold inside the zone."""
    found = {"to": None, "after": None}
    after_from = stopped_at and stopped_at.from_n
    for a, b, gain, lo, hi in intervals:
        which = "to" if b == worth_n else "after" if a == after_from else None
        if which and lo is not None:
            found[which] = Step(a, b, gain, lo, hi, within_zone(gain, (lo, hi), threshold, zone))
    return DecisionSteps(**found)


def study_findings(
    study: Study,
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    predictions: dict,
    rounds: Rounds | None,
    times: ResultTimes | None,
) -> Findings:
    """The report's numbers of one study (`predictions`: study_predictions; `rounds`: an
    adaptive study's, adaptive.rounds_summary; `times`: each point's time to result,
    result_time.study_result_times, which judges the deadline where Slurm gave waits)."""
    base = summary[summary["is_base"]]
    # only the columns said, so that walking the rows stays cheap for wide tables
    failures = runs.loc[runs["status"] != "ok", ["point", "repeat", "reason"]]
    mismatched = (runs["status"] == "ok") & runs["mismatch"].astype(bool)
    mismatches = runs.loc[mismatched, ["point", "repeat", "mismatches"]]
    disturbed = runs.get("disturbed", pd.Series(None, index=runs.index, dtype=object))
    disturbed = runs[["point", "repeat"]].assign(disturbed=disturbed)
    facts = study_facts(study)
    per_point = runs.groupby("n")["repeat"].nunique()
    answers = [answer(p, summary, study) for p in predictions["series"]]
    if rounds is not None and rounds.question == "how many":
        # an adaptive study's answer is decided as its last round judged it (target CI
        # included, unless out of reach); what would decide it is the rounds section's,
        # not more fixed repeats (the rounds of one of CPU and GPU series settle its GPU
        # verdict: its series' answers are judged on their runs)
        answers = [
            replace(a, decided=rounds.decided, next_measurements=None, adaptive=True)
            for a in answers
        ]
    if times is not None:  # the deadline by time to result, where Slurm gave waits
        answers = [
            deadline_by_result(a, times, summary, study.recommend.deadline_s) for a in answers
        ]
    return Findings(
        study=facts,
        # the fewest and the most runs of a point (an adaptive study's differ)
        repeats=[int(per_point.min()), int(per_point.max())] if len(runs) else [0, 0],
        quality_metric=study_quality_metric(study, runs),
        # the weights every SU figure uses: the study's, its partitions', its series'
        cost=cost_view(study),
        charges=charges(runs, study),
        base=None
        if base.empty
        else BaseCase(*(jsonable(base.iloc[0][k]) for k in ("point", "n", "time_s"))),
        unstable=int(summary["unstable"].fillna(False).astype(bool).sum()),
        overlapped=int(runs["overlapped"].fillna(False).astype(bool).sum()),
        shared_machines=shared_machines(runs),
        failures=[Failure(f.point, int(f.repeat), f.reason or None) for f in failures.itertuples()],
        mismatches=[
            Mismatch(m.point, int(m.repeat), jsonable(m.mismatches))
            for m in mismatches.itertuples()
        ],
        # runs whose CPUs others used, as aggregation found them (disturbed_reasons)
        disturbed=[
            Mismatch(point=r.point, repeat=int(r.repeat), what=r.disturbed)
            for r in disturbed.itertuples()
            if isinstance(r.disturbed, str) and r.disturbed
        ],
        answers=answers,
        # an adaptive study's rounds: what each measured and why, and why it stopped
        adaptive=rounds,
        metrics=shown_metrics(summary, runs),
        ddp=ddp_findings(summary, study) if facts.distributed else None,
        framework=framework_share(summary),
        fingerprint=fingerprint(study, runs),
    )
