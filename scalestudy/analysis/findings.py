"""Every number the report shows beyond summary.csv and the predictions, computed once at
aggregation and written to analysis.json under "findings" (scripts/aggregate.py).

The report formats these and computes nothing; the study facts it states (title,
scaling, cost model) are here too, so it needs no config, and so are its verdicts (which
steps the answer stands on, whether the headline names the layout). Values are plain
JSON: numbers stay numbers, missing ones are null; aggregation builds them, with the
predictions, into analysis.json's typed contract (scalestudy.contract).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd

from scalestudy.analysis.cluster.queue import request_waits
from scalestudy.analysis.cluster.result_time import deadline_by_result, study_result_times
from scalestudy.analysis.cost.cost import charges, cost_view
from scalestudy.analysis.decisions.layouts import grid_cells, point_layout
from scalestudy.analysis.decisions.request import study_requests
from scalestudy.analysis.history.baseline import distinct, fingerprint
from scalestudy.analysis.stats.predictions import jsonable, usable_runs
from scalestudy.analysis.tables import (
    TIME_COLUMNS,
    metric_columns,
    shared_machines,
    study_quality_metric,
)
from scalestudy.contract import TELEMETRY, StudyFacts
from scalestudy.model import Scaling, Study, base_series
from scalestudy.records import finite
from scalestudy.study.points import point_for
from scalestudy.study.workload_bridge import workload_capabilities
from scalestudy.thresholds import efficiency_band

# what the runs received (distinct values over the runs)
RECEIVED = [
    "cpus_usable", "threads_given", "torch_threads", "gpus_visible", "mem_limit_mb", "world_size",
    "hosts",
]  # fmt: skip
# what N counts, in the answer's words: (one, several)
AXIS_UNITS = {
    "threads": ("thread", "threads"),
    "devices": ("device per node", "devices per node"),
    "nodes": ("node", "nodes"),
    "processes": ("process", "processes"),
    "gpus": ("GPU", "GPUs"),
    "cores": ("core", "cores"),
}


def is_distributed(study: Study) -> bool:
    """Whether the study's points run several processes (DDP): a workload that can, or
    times measured elsewhere (published DDP times get the source's table too)."""
    if study.measured is None and not workload_capabilities(study.workload).get("distributed"):
        return False
    for series in study.series_names:
        sc = study.for_series(series).scaling
        if sc.points is None:  # published times: their N come from the CSV
            if sc.axis not in ("threads", "cores") or sc.devices * sc.nodes > 1:
                return True
        elif any(point_for(study, n, series).world_size > 1 for n in sc.ns()):
            return True
    return False


def study_kind(study: Study, distributed: bool) -> str:
    """What the study is, for the report's words: times measured elsewhere, the user's
    command, or a training of the workflow's own, in one process or distributed."""
    if study.measured is not None:
        return "measured"
    if study.workload == "command":
        return "command"
    return "distributed" if distributed else "training"


def study_facts(study: Study) -> StudyFacts:
    """What the report states about the study as configured."""
    axis = study.scaling.axis
    one, several = AXIS_UNITS[axis]
    if axis == "devices" and study.scaling.device == "gpu":
        one, several = "GPU", "GPUs"
    distributed = is_distributed(study)
    return StudyFacts(
        study.name, study.description, study.workload, study.measured,
        kind=study_kind(study, distributed), params=jsonable(study.params),
        scaling=Scaling(**jsonable(asdict(study.scaling))),  # as JSON reads it back: lists
        unit=several, unit_one=one, time=study.time, tolerance=study.convergence.tolerance,
        distributed=distributed, include_shared=study.include_shared,
        include_unstable=study.include_unstable, profile_steps=study.profile.steps,
        deadline_s=study.recommend.deadline_s, budget_su=study.recommend.budget_su,
        request=study.request, global_batch_fixed=bool(study.params.get("global_batch_size")),
    )  # fmt: skip


def distinct_columns(runs: pd.DataFrame, columns: list[str]) -> list[list[str]]:
    """[column, distinct values] of each column the runs have a value in."""
    return [[c, text] for c in columns if (text := distinct(runs, c))]


def banded(grid: dict | None) -> dict | None:
    """A grid's cells with their efficiency band (the heat map's colour)."""
    if grid is None:
        return None
    for row in grid["rows"]:
        for cell in row["cells"]:
            cell["band"] = efficiency_band(cell["efficiency"])
    return grid


def ddp_findings(summary: pd.DataFrame, study: Study) -> list[dict]:
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
            {
                "series": series,
                "point": r["point"],
                "world_size": world,
                "processes_per_node": int(world / r["nodes"]) if r["nodes"] else 0,
                "band": efficiency_band(r["efficiency"]),
            }
        )
    return rows


def framework_share(summary: pd.DataFrame) -> dict | None:
    """Lightning's step against the same step in a plain PyTorch loop (base case)."""
    base = summary[summary["is_base"]]
    columns = ["step_time_median_s", "plain_step_time_median_s"]
    if base.empty or not all(c in base for c in columns):
        return None
    lightning, plain = (base[c].iloc[0] for c in columns)
    if not (pd.notna(lightning) and pd.notna(plain) and plain > 0):
        return None
    return {
        "lightning_ms": lightning * 1e3,
        "plain_ms": plain * 1e3,
        "share": 1 - plain / lightning,
    }


def received(runs: pd.DataFrame) -> list[dict]:
    """Per point, what its runs asked for and what they got (distinct values)."""
    if "cpus_usable" not in runs:
        return []
    asked = ["threads", "cores", "gpus", "nodes"]
    columns = list(dict.fromkeys(["point", *asked, *(c for c in RECEIVED if c in runs)]))
    view = []
    for point, group in runs[columns].groupby("point", sort=False):
        first = group.iloc[0]
        if pd.isna(first.get("cpus_usable")):
            continue
        view.append(
            {
                "point": point,
                "threads": first["threads"],
                "processes": int(first["cores"] / first["threads"]),
                "gpus": first["gpus"],
                "nodes": first["nodes"],
                "got": distinct_columns(group, RECEIVED),
            }
        )
    return view


def telemetry(runs: pd.DataFrame) -> list[dict]:
    """Per point, median GPU utilisation and memory, and the share of time spent waiting
    for data, where the runs measured them."""
    columns = [c for c in TELEMETRY if c in runs]
    if not any(runs[c].notna().any() for c in columns):
        return []
    ok = runs[runs["status"] == "ok"]
    medians = ok[columns].apply(pd.to_numeric, errors="coerce").groupby(ok["point"], sort=False)
    return [{"point": point} | row.to_dict() for point, row in medians.median().iterrows()]


def exclusive_node(run: dict) -> bool | None:
    """Whether the run's job had its nodes to itself (Slurm's OverSubscribe=NO, what
    sbatch --exclusive gives); None where the record does not say."""
    value = run.get("slurm_oversubscribe")
    return value == "NO" if isinstance(value, str) else None


def scheduler(runs: pd.DataFrame) -> list[dict]:
    """Each Slurm run of the study: its job, queue wait and run time, the other runs
    that shared its job (packed repeats, one after another) and whether the job had
    its nodes to itself."""
    if "slurm_job_id" not in runs:
        return []
    slurm = runs[runs["slurm_job_id"].notna()].to_dict("records")
    by_job: dict[str, list[dict]] = {}
    for r in slurm:
        by_job.setdefault(str(r["slurm_job_id"]), []).append(r)
    return [
        {
            "point": r["point"],
            "repeat": int(r["repeat"]),
            "job": r["slurm_job_id"],
            "nodes": r.get("slurm_nodelist") if isinstance(r.get("slurm_nodelist"), str) else "",
            "submitted": r.get("slurm_submit_time"),
            "queue_wait_s": r["queue_wait_s"],
            "run_s": r["elapsed_s"],
            "status": r["status"],
            "shared_with": [
                [o["point"], int(o["repeat"])] for o in by_job[str(r["slurm_job_id"])] if o is not r
            ],
            "exclusive": exclusive_node(r),
        }
        for r in slurm
    ]


def allocations(jobs: list[dict]) -> dict | None:
    """How the study's Slurm runs shared allocations: runs, jobs, jobs that ran several
    runs, and whether every job, none or only some had its nodes to itself."""
    if not jobs:
        return None
    ids = {str(j["job"]) for j in jobs}
    shared = {str(j["job"]) for j in jobs if j["shared_with"]}
    known = [j["exclusive"] for j in jobs if j["exclusive"] is not None]
    exclusive = None if not known else "all" if all(known) else "none" if not any(known) else "some"
    return {"runs": len(jobs), "jobs": len(ids), "shared_jobs": len(shared), "exclusive": exclusive}


def shown_metrics(summary: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """The summary's columns of every metric the workloads reported that has a number
    at some point (the report shows those it shows nowhere else)."""
    columns = []
    for name in metric_columns(runs):
        # where the summary has a column of the metric's name, its median is metric_NAME
        column = f"metric_{name}" if f"metric_{name}" in summary else name
        if column in summary and summary[column].notna().any():
            columns.append(column)
    return columns


# what the answer states of its point, from the summary row
ANSWERED = [
    "point", "speedup", "speedup_ci_lo", "speedup_ci_hi", "efficiency", "efficiency_ci_lo",
    "efficiency_ci_hi", "relative_su",
]  # fmt: skip


def answer(pred: dict, summary: pd.DataFrame, study: Study) -> dict:
    """The numbers of one series' recommendation (the template says them in words)."""
    rec = pred["recommendation"]
    rows = summary[summary["series"].astype(object).fillna("") == pred["series"]].set_index("n")
    worth = rec["worth_n"]
    found = {"series": pred["series"], "worth_n": worth, "base_n": pred["base_n"]}
    if worth is not None:
        r = rows.loc[worth]
        layout = point_layout(study, pred["series"], worth)
        found |= {k: r[k] for k in ANSWERED} | {
            "layout": layout,
            # the headline names the layout where N alone does not say it
            "says_layout": layout["nodes"] > 1
            or study.scaling.axis in ("processes", "gpus", "cores"),
        }
    stopped = rec["stopped_at"]
    stopped_at = None
    if stopped:
        stopped_at = dict(zip(("from_n", "to_n", "marginal"), stopped, strict=True))
    peak = pred.get("peak")
    fits = pred["fits"]
    said = ["threshold", "cheapest_meeting_deadline", "deadline_note", "fastest_within_budget",
            "budget_note"]  # fmt: skip
    return (
        found
        | {k: rec[k] for k in said}
        | {
            "stopped_at": stopped_at,
            "peak": peak if peak and peak["beyond_measured"] else None,
            "selected": pred["selected"],
            # whether the runs' spread settles the answer (None: not judged)
            "decided": rec.get("decided"),
            # what would decide it: more repeats at these N, and their SU
            "next_measurements": rec.get("next_measurements"),
            # each step's marginal gain with its interval: [from, to, gain, lo, hi]
            "step_intervals": rec.get("step_intervals", []),
            "steps": decision_steps(worth, stopped_at, rec.get("step_intervals", [])),
            "fitted": any(f["ok"] for f in fits),
            "provenance_note": pred["fit_note"] if pred.get("mixed_provenance") else None,
            "unstable": [p for p, why in pred["excluded"].items() if why.startswith("unstable")],
            # how many points a fit could use, where no model fitted
            "usable_points": max(f["n_points"] for f in fits)
            if fits and not any(f["ok"] for f in fits)
            else None,
        }
    )


def decision_steps(worth_n, stopped_at: dict | None, intervals: list) -> dict:
    """The two steps the answer stands on, each gain with its interval: the step to the
    recommended N and the step after it (None where there is none, or no interval)."""
    found = {"to": None, "after": None}
    after_from = (stopped_at or {}).get("from_n")
    for a, b, gain, lo, hi in intervals:
        which = "to" if b == worth_n else "after" if a == after_from else None
        if which and lo is not None:
            found[which] = {"from_n": a, "to_n": b, "gain": gain, "lo": lo, "hi": hi}
    return found


def adaptive_answer(rounds: dict | None) -> dict:
    """An adaptive study's answer is decided as its last round judged it (target CI
    included); what would decide it is the rounds section's, not more fixed repeats."""
    if rounds is None:
        return {}
    return {"decided": rounds["decided"], "next_measurements": None, "adaptive": True}


def adaptive_findings(study: Study, runs: pd.DataFrame, predictions: dict) -> dict | None:
    """An adaptive study's rounds (scalestudy.analysis.decisions.adaptive.rounds_summary), with
    each usable run's time and round for the figures, and what it would take to
    decide an undecided answer."""
    rounds = predictions.get("adaptive")
    if rounds is None:
        return None
    usable = usable_runs(runs, study)
    times = pd.to_numeric(usable[TIME_COLUMNS[study.time]], errors="coerce")
    marked = [
        {"n": int(n), "time_s": t, "round": int(r), "series": s}
        for n, t, r, s in zip(usable["n"], times, usable["round"], usable["series"], strict=True)
        if np.isfinite(t) and pd.notna(r)
    ]
    refused = rounds["refused"]
    return rounds | {
        "runs": marked,
        "later_runs": sum(m["round"] > 1 for m in marked),
        # a budget stop: the SU the refused round needed on top of what was spent
        "budget_needed": rounds["spent_su"] + refused["round_su"] if refused else None,
    }


def result_times(
    runs: pd.DataFrame, requests: dict, cluster: dict, min_jobs: int | None
) -> dict | None:
    """Each point's time to result, with the waits Slurm gave where the study's jobs
    queue there (`cluster`: its cluster facts); None for times measured elsewhere."""
    if not requests["points"]:
        return None
    waits = request_waits(requests["points"], cluster)
    return study_result_times(runs, requests["points"], waits, min_jobs)


def study_findings(
    study: Study,
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    predictions: dict,
    cluster: dict,
    min_jobs: int | None,
    accounted: tuple[dict, str | None],
) -> dict:
    """The report's numbers of one study, as plain JSON values (`cluster`, `min_jobs`:
    what Slurm said of it and the past jobs that make a typical wait, for the time to
    result; `accounted`: Slurm accounting's figures, request.read_accounting)."""
    base = summary[summary["is_base"]]
    # only the columns said, so that walking the rows stays cheap for wide tables
    failures = runs.loc[runs["status"] != "ok", ["point", "repeat", "reason"]]
    mismatched = (runs["status"] == "ok") & runs["mismatch"].astype(bool)
    mismatches = runs.loc[mismatched, ["point", "repeat", "mismatches"]]
    disturbed = runs.get("disturbed", pd.Series(None, index=runs.index, dtype=object))
    disturbed = runs[["point", "repeat"]].assign(disturbed=disturbed)
    facts = study_facts(study)
    per_point = runs.groupby("n")["repeat"].nunique()
    requests = study_requests(study, summary, runs, accounted)
    times = result_times(runs, requests, cluster, min_jobs)
    answers = [
        answer(p, summary, study) | adaptive_answer(predictions.get("adaptive"))
        for p in predictions.get("series", [])
    ]
    if times is not None:  # the deadline by time to result, where Slurm gave waits
        answers = [deadline_by_result(a, times, summary, study.recommend.deadline_s)
                   for a in answers]  # fmt: skip
    return jsonable(
        {
            "study": facts,
            # the fewest and the most runs of a point (an adaptive study's differ)
            "repeats": [int(per_point.min()), int(per_point.max())] if len(runs) else [0, 0],
            "quality_metric": study_quality_metric(study, runs),
            # the weights every SU figure uses: the study's, its partitions', its series'
            "cost": cost_view(study),
            "charges": charges(runs, study),
            "base": None if base.empty else {k: base.iloc[0][k] for k in ("point", "n", "time_s")},
            "unstable": int(summary["unstable"].fillna(False).astype(bool).sum()),
            "overlapped": int(runs["overlapped"].fillna(False).astype(bool).sum()),
            "shared_machines": shared_machines(runs),
            "failures": [
                {"point": f.point, "repeat": int(f.repeat), "reason": f.reason or None}
                for f in failures.itertuples()
            ],
            "mismatches": [
                {"point": m.point, "repeat": int(m.repeat), "what": m.mismatches}
                for m in mismatches.itertuples()
            ],
            # runs whose CPUs others used, as aggregation found them (disturbed_reasons)
            "disturbed": [
                {"point": r.point, "repeat": int(r.repeat), "what": r.disturbed}
                for r in disturbed.itertuples()
                if isinstance(r.disturbed, str) and r.disturbed
            ],
            "answers": answers,
            # an adaptive study's rounds: what each measured and why, and why it stopped
            "adaptive": adaptive_findings(study, runs, predictions),
            # what to ask the scheduler for at each point, and what the runs used of it
            "requests": requests,
            # several layouts of one total: the fastest, and a grid's heat map
            "layouts": predictions.get("layouts", []),
            "grid": banded(grid_cells(study, summary, predictions.get("layouts", []))),
            "metrics": shown_metrics(summary, runs),
            "ddp": ddp_findings(summary, study) if facts.distributed else None,
            "framework": framework_share(summary),
            "telemetry": telemetry(runs),
            "scheduler": scheduler(runs),
            "allocations": allocations(scheduler(runs)),
            "received": received(runs),
            "fingerprint": fingerprint(study, runs),
            # the queue wait beside the run time
            "time_to_result": times,
        }
    )
