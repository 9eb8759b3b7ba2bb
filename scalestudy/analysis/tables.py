"""From records (or a CSV measured elsewhere) to the tidy runs table and the summary.

Speedup, efficiency and relative SU, each against the *base case* (ratios of median
times, never averaged; SU charged for the whole job): docs/report.md, the results table.

Columns: a run's row (runs.csv) is its derived columns, each written once in
derived_columns (status rules, phase sums, the requested layout, overlaps), then every
field of its metrics, received resources, usage and environment under its own name
(record_row, PARTS): a metric a workload reports needs no edit here to arrive. A point's
row (summary.csv) is its own columns (point_row, summarise_series), then the median over
its successful runs of every metric its runs reported (metric_medians).
"""

from __future__ import annotations

import io
import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pandas as pd

from scalestudy.analysis import run_energy
from scalestudy.analysis.cost.cost import Cost
from scalestudy.analysis.decisions import recommendation
from scalestudy.analysis.stats import intervals
from scalestudy.analysis.stats.intervals import _finite
from scalestudy.compute.harness import TRAINING
from scalestudy.model import Study
from scalestudy.records import RecordError, read_placed_record
from scalestudy.study.archives import runs_csv_text
from scalestudy.study.config_tables import read_measured
from scalestudy.study.points import point_for, series_of_points

SERIES_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*$")
# The parts of a record whose fields become columns of the runs table, each under its
# own name (nested objects as name_key, lists joined by commas). A name is claimed by
# the derived columns first, then by these parts in this order; a field whose name is
# taken gets its part's prefix instead (received.nodes -> received_nodes, usage.peak_rss_mb
# -> usage_peak_rss_mb, a metric called `samples` -> metric_samples).
PARTS = {
    "received": (("resources", "received"), "received_"),
    "metrics": (("metrics",), "metric_"),
    "usage": (("resources", "usage"), "usage_"),
    "environment": (("environment",), "env_"),
}
# The runs table's column naming the columns that hold the run's metrics (a JSON list):
# the summary takes their medians and the report shows them, from runs.csv too.
METRIC_NAMES = "metric_names"
# The times a study's speedups can use (config key `time`).
TIME_COLUMNS = {"wall": "wall_s", "train": "train_s", "steady": "steady_epoch_s"}
PHASE_KINDS = ("startup", "data", *TRAINING, "eval")


# Where a run happened, as far as it changes its speed. Runs of one series must agree
# on all of them before their times enter one fit.
PROVENANCE = {
    "cpu_model": "CPU",
    "gpu_models": "GPU model",
    "torch": "PyTorch",
    "python": "Python",
    "cuda": "CUDA",
    "workflow_commit": "workflow commit",
}


def phase_seconds(phases: list[dict], kind: str) -> float:
    return float(sum(p["seconds"] for p in phases if p["kind"] == kind))


def derived_columns(record: dict) -> dict:
    """The runs table's own columns: each written here once, because it takes a rule
    rather than a copy of a field (every other field of the record is flattened as it is,
    see record_row)."""
    phases = record["phases"]
    req = record["resources"]["requested"]
    env = record["environment"]
    overlaps = record.get("overlaps", [])
    status, reason, wall = record["status"], record["reason"], record["wall_s"]
    if status == "ok" and wall is None:
        # a run with no time measured nothing, whatever its status says
        status, reason = "failed", "the record says ok but holds no time"
    ok = status == "ok"
    # seconds per kind of phase; none at all where the run timed no phase (a time
    # measured elsewhere, a run that died before its first phase)
    kinds = {k: phase_seconds(phases, k) if phases else None for k in PHASE_KINDS}
    epochs = [p["seconds"] for p in phases if p["kind"] == "epoch"]
    return {
        "study": record["study"],
        "series": "",  # the series its point belongs to: runs_from_records
        "point": record["point"],
        "n": record["n"],
        "repeat": record["repeat"],
        "run_id": record.get("run_id"),
        "status": status,
        "reason": reason,
        "wall_s": wall if ok else None,
        "elapsed_s": wall,  # charged whether or not the run succeeded
        "train_s": (sum(kinds[k] for k in TRAINING) or None) if ok and phases else None,
        "startup_s": kinds["startup"],
        "data_s": kinds["data"],
        "eval_s": kinds["eval"],
        "other_s": None if wall is None else max(0.0, wall - sum(filter(None, kinds.values()))),
        "epochs": len(epochs),
        "samples": sum(p.get("samples") or 0 for p in phases if p["kind"] in TRAINING) or None,
        # the first epoch pays for warm-up (allocator, caches, lazy init); the rest is steady
        "warmup_s": epochs[0] if ok and len(epochs) > 1 else None,
        "steady_epoch_s": statistics.median(epochs[1:]) if ok and len(epochs) > 1 else None,
        # what the point asked for (what it received is in the received part)
        "threads": req["threads"],
        "cores": req["threads"] * req["tasks_per_node"] * req["nodes"],
        "gpus": req["gpus_per_node"] * req["nodes"],
        "nodes": req["nodes"],
        "mismatch": record["resources"]["mismatch"],
        "mismatches": "; ".join(record["resources"]["mismatches"]),
        "started_at": record["started_at"],
        "finished_at": record["finished_at"],
        "queue_wait_s": queue_wait(env),
        "partition": env.get("slurm_partition"),
        # other timed runs on its host at the same time, from the host's ledger (and,
        # within the study, by host and time: runs_table)
        "overlaps": "; ".join(o["run"] for o in overlaps),
        # an overlap on CPUs we cannot compare counts as on the same ones
        "overlaps_same_cpus": any(o.get("same_cpus") is not False for o in overlaps),
        "overlapped": bool(overlaps),
        "disturbed": None,  # why others disturbed the run, if they did: disturbed_reasons
        # energy read by counters in the run, or why not (scalestudy.analysis.run_energy)
        **run_energy.record_columns(record),
    }


def flat_fields(part: dict | None) -> dict:
    """A record part as scalar columns: nested objects as name_key, lists joined by commas."""
    fields = {}
    for key, value in (part or {}).items():
        if isinstance(value, dict):
            fields.update({f"{key}_{k}": v for k, v in flat_fields(value).items()})
        elif isinstance(value, list):
            fields[key] = ",".join(str(v) for v in value)
        else:
            fields[key] = value
    return fields


def record_row(record: dict) -> dict:
    """One record as a row of the runs table: the derived columns, then every field of
    its metrics, received resources, usage and environment (PARTS)."""
    row = derived_columns(record)
    taken = set(row) | {METRIC_NAMES}
    parts = {}
    for name, (path, prefix) in PARTS.items():
        part = record
        for key in path:
            part = (part or {}).get(key)
        parts[name] = {}
        for field, value in flat_fields(part).items():
            column = field
            while column in taken:
                column = prefix + column
            taken.add(column)
            parts[name][column] = value
    row[METRIC_NAMES] = json.dumps(list(parts["metrics"]))
    for name in ("metrics", "received", "usage", "environment"):  # as runs.csv shows them
        row.update(parts[name])
    return row


def metric_columns(runs: pd.DataFrame) -> list[str]:
    """The columns of a runs table that hold the workloads' metrics, in order of first
    appearance (none for a table without METRIC_NAMES, such as times measured elsewhere)."""
    if METRIC_NAMES not in runs:
        return []
    names: dict[str, None] = {}
    for text in runs[METRIC_NAMES].dropna().unique():
        try:
            names.update(dict.fromkeys(json.loads(text)))
        except (TypeError, ValueError):
            continue
    return [name for name in names if name in runs]


def runs_table(rows: list[dict]) -> pd.DataFrame:
    """Rows of record_row as the runs table, with the runs of one study on one host at
    the same time marked as overlapped."""
    runs = pd.DataFrame(rows)
    runs["overlapped"] = runs["overlapped"].astype(bool) | mark_overlaps(runs)
    return runs


def queue_wait(env: dict) -> float | None:
    """Seconds between submission and start, as Slurm recorded them."""
    try:
        submit = pd.Timestamp(env["slurm_submit_time"])
        start = pd.Timestamp(env["slurm_start_time"])
    except (KeyError, ValueError, TypeError):
        return None
    return max(0.0, (start - submit).total_seconds())


def shared_machines(runs: pd.DataFrame) -> list[str]:
    """Host names that are one physical machine (same boot id): their timings are
    not those of separate nodes."""
    if "boot_id" not in runs:
        return []
    none = pd.Series(None, index=runs.index, dtype=object)
    hosts_of, host_of = runs.get("hosts", none), runs.get("host", none)
    by_boot: dict[str, set[str]] = {}
    for boot, hosts, host in zip(runs["boot_id"], hosts_of, host_of, strict=True):
        if not isinstance(boot, str):
            continue
        names = hosts if isinstance(hosts, str) and hosts else host
        if isinstance(names, str):
            by_boot.setdefault(boot, set()).update(n for n in names.split(",") if n)
    return [", ".join(sorted(h)) for h in by_boot.values() if len(h) > 1]


def mark_overlaps(runs: pd.DataFrame) -> pd.Series:
    """True for runs that shared a host with another run of the study at the same time
    (their timings disturbed each other)."""
    overlapped = np.zeros(len(runs), dtype=bool)
    if runs.empty or "host" not in runs or runs["started_at"].isna().all():
        return pd.Series(overlapped, index=runs.index)
    # numpy arrays, by position: a pandas lookup per run and step took a fifth of
    # reading a study's records
    start = pd.to_datetime(runs["started_at"], utc=True).to_numpy()
    end = pd.to_datetime(runs["finished_at"], utc=True).to_numpy()
    for idx in runs.groupby(["study", "host"], dropna=False).indices.values():
        order = idx[np.argsort(start[idx], kind="stable")]
        latest_end, latest_i = None, None
        for i in order:
            if latest_end is not None and start[i] < latest_end:
                overlapped[i] = overlapped[latest_i] = True
            if latest_end is None or end[i] > latest_end:
                latest_end, latest_i = end[i], i
    return pd.Series(overlapped, index=runs.index)


def read_runs(study: Study, inputs: list[str | Path]) -> pd.DataFrame:
    """The study's runs table, the one way every caller reads it: its records, each
    checked against its path (RecordError names a bad one), with why others disturbed
    a run; or its measured CSV, or each series' (`series.<name>.measured`)."""
    if study.measured is not None:
        return runs_from_measured(inputs[0], study)
    csvs = {s: path for s in study.series_names if (path := study.for_series(s).measured)}
    tables = [runs_from_measured(path, study, series) for series, path in csvs.items()]
    measured = {Path(path).resolve() for path in csvs.values()}
    records = [path for path in inputs if Path(path).resolve() not in measured]
    if records or not tables:
        runs = runs_from_records(records, series_of_points(study))
        tables.append(runs.assign(disturbed=disturbed_reasons(runs, study)))
    return pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]


def runs_from_records(
    paths: list[str | Path], series_of: dict[str, str] | None = None
) -> pd.DataFrame:
    """Read and validate every record into the runs table. RecordError names a bad
    file: unreadable, not matching its path (study, point, repeat, and the series
    `series_of` gives its point), or a run already read from another file."""
    rows, seen = [], {}
    for path in paths:
        series = None if series_of is None else series_of.get(Path(path).parent.name, "")
        record = read_placed_record(path, series)
        run = run_key(record)
        if run in seen:
            raise RecordError(
                f"{path}: the same run as {seen[run]} (run id {run}): a run counts once; "
                "delete the copy, and the run it replaced is redone on the next invocation"
            )
        seen[run] = path
        rows.append(record_row(record) | {"series": series or ""})
    if not rows:
        raise RecordError("no records to aggregate")
    return runs_table(rows)


def run_key(record: dict) -> str:
    """What makes a run one run: its id (records before ids: where and when it ran)."""
    if record.get("run_id"):
        return record["run_id"]
    env = record["environment"]
    return f"{env.get('host')}@{record['started_at']}-{record['finished_at']}"


def runs_from_measured(csv_path: str | Path, study: Study, series: str = "") -> pd.DataFrame:
    """A CSV of times measured by hand (N,time_s[,repeat][,series][,nodes or per_node];
    study.config_tables.read_measured) as a runs table: a series' own (`series`), or the study's.
    On a total axis (processes, gpus, cores) `nodes` or `per_node` says how a row's N was
    placed (8 GPUs on 2 nodes: per_node 4). Its time is the study's `time` (the CSV's
    time_s stands for the whole job, or the training, as the study compares them)."""
    csv_path = Path(csv_path)
    table = read_measured(csv_path)
    # one row per point made as a record's is (a run that timed nothing but its whole, on
    # what its point asks for), taken for each of its runs, then each run's repeat and
    # time (1.0 s until then): a record per line took 15 GB for a million lines
    placed = [c for c in ("series", "nodes", "per_node") if c in table]
    groups = table.groupby(["N", *placed], sort=False, dropna=False)
    rows = []
    for _, runs in groups:
        first = runs.iloc[0]
        name = str(first.series) if "series" in table else series
        if name and not SERIES_NAME.match(name):
            raise RecordError(f"{csv_path}: series {name!r}: use letters, digits and '_'")
        point = point_for(study, int(first.N), name, measured_per_node(first, csv_path))
        layout = ("threads", "tasks_per_node", "nodes", "gpus_per_node")
        requested = {key: getattr(point, key) for key in layout}
        record = {
            "study": study.name,
            "point": point.label,
            "n": point.n,
            "repeat": 1,
            "status": "ok",
            "reason": None,
            "wall_s": 1.0,
            "phases": [],
            "metrics": {},
            "resources": {"requested": requested, "mismatch": False, "mismatches": []},
            "environment": {},
            "started_at": None,
            "finished_at": None,
        }
        rows.append(record_row(record) | {"series": name})
    runs = pd.DataFrame(rows).iloc[groups.ngroup().to_numpy()].reset_index(drop=True)
    time = table["time_s"].astype(float)
    # under `time: train` the CSV's time is the training's
    columns = ("wall_s", "elapsed_s", "other_s", *["train_s"] * (study.time == "train"))
    return runs_table(
        runs.assign(repeat=table["repeat"].astype(int), **dict.fromkeys(columns, time))
    )


def measured_per_node(row, csv_path: Path) -> int | None:
    """A measured row's per_node, given as such or as its nodes (None: not given)."""
    given = getattr(row, "per_node", None)
    nodes = getattr(row, "nodes", None)
    if given is not None and pd.notna(given):
        return int(given)
    if nodes is None or pd.isna(nodes):
        return None
    if row.N % nodes:
        raise RecordError(f"{csv_path}: N={row.N:g} does not spread evenly on {nodes:g} nodes")
    return int(row.N // nodes)


def disturbed_reasons(runs: pd.DataFrame, study: Study) -> pd.Series:
    """Why each run's conditions were broken ("" where they were not): other processes
    took more than the study's `shared_tolerance` of the CPUs the run could use, or
    another timed run (any study, any invocation) ran on the same CPUs at the same time."""
    reasons = pd.Series("", index=runs.index, dtype=object)
    tolerance = study.shared_tolerance
    if "others_cores" in runs:
        others = pd.to_numeric(runs["others_cores"], errors="coerce")
        cpus = pd.to_numeric(runs["cpus_watched"], errors="coerce")
        for i in runs.index[(others > tolerance * cpus) & (runs["status"] == "ok")]:
            reasons[i] = (
                f"other processes used {others[i]:.2g} cores of its {cpus[i]:.0f} CPUs "
                f"during this run (tolerance {tolerance:.0%})"
            )
    if "overlaps_same_cpus" in runs:
        same = runs["overlaps_same_cpus"].fillna(False).astype(bool) & (runs["status"] == "ok")
        for i in runs.index[same & (reasons == "")]:
            reasons[i] = f"ran on the same CPUs at the same time as {runs.at[i, 'overlaps']}"
    return reasons


def point_status(
    group: pd.DataFrame, keep_mismatched: bool = False, keep_disturbed: bool = False
) -> tuple[str, str]:
    """(kind, words) of a point's status: kind bad (its runs failed, or ran on other
    resources than asked or on shared CPUs), warn (some runs failed) or ok."""
    ok = group["status"] == "ok"
    reasons = group.loc[~ok, "reason"].dropna()
    first = reasons.iloc[0] if len(reasons) else "no reason given"
    if not ok.any():
        return "bad", f"failed: {first}"
    mism = group.loc[ok & group["mismatch"].astype(bool), "mismatches"]
    if len(mism):
        left_out = "" if keep_mismatched else " (left out of speedups)"
        return "bad", f"allocation mismatch: {mism.iloc[0]}{left_out}"
    disturbed = group.get("disturbed", pd.Series("", index=group.index)).astype(object).fillna("")
    shared = disturbed[ok & (disturbed != "")]
    if len(shared):
        left_out = "" if keep_disturbed else " (left out of speedups)"
        runs = ", ".join(f"rep{k}" for k in group.loc[shared.index, "repeat"])
        return "bad", f"shared CPUs: {runs}: {shared.iloc[0]}{left_out}"
    if not ok.all():
        return "warn", f"ok ({(~ok).sum()} of {len(group)} runs failed: {first})"
    return "ok", "ok"


QUALITY_METRICS = ("val_loss", "test_loss", "val_accuracy", "test_accuracy", "final_loss")


def study_quality_metric(study: Study, runs: pd.DataFrame) -> str | None:
    """The figure that says how well a run learned: the configured one, else the
    first of QUALITY_METRICS that the runs report."""
    wanted = study.convergence.metric
    if wanted:
        return wanted
    for metric in QUALITY_METRICS:
        if metric in runs and pd.to_numeric(runs[metric], errors="coerce").notna().any():
            return metric
    return None


def global_batch(ok: pd.DataFrame) -> float:
    """Batch over all processes: per-process batch x world size (median over runs)."""
    if "per_process_batch" not in ok or ok.empty:
        return math.nan
    per = pd.to_numeric(ok["per_process_batch"], errors="coerce")
    world = pd.to_numeric(ok.get("world_size", pd.Series(1, index=ok.index)), errors="coerce")
    return float((per * world.fillna(1)).median()) if per.notna().any() else math.nan


def check_convergence(summary: pd.DataFrame, study: Study, base: int, runs: pd.DataFrame) -> None:
    """Flag points whose quality differs from the base case's by more than the
    tolerance (relative): a faster run that learned less is not a speedup."""
    metric = study_quality_metric(study, runs)
    tolerance = study.convergence.tolerance
    reference = summary.loc[summary["n"] == base, "quality"]
    if metric is None or reference.empty or math.isnan(reference.iloc[0]):
        summary["converged"] = pd.NA
        return
    ref = reference.iloc[0]
    deviation = (summary["quality"] - ref).abs() / max(abs(ref), 1e-12)
    summary["converged"] = deviation <= tolerance
    for i in summary.index[(deviation > tolerance) & summary["quality"].notna()]:
        summary.loc[i, "status_kind"] = "bad"
        summary.loc[i, "status"] = (
            f"{summary.loc[i, 'status']}; did not converge like the base case: {metric} "
            f"{summary.loc[i, 'quality']:.4g} vs {ref:.4g} (tolerance {tolerance:.0%})"
        )


def numeric(frame: pd.DataFrame, column: str | None) -> pd.Series:
    """A column's numbers (none where the frame has no such column, or no column is named)."""
    if column not in frame:
        return pd.Series(dtype=float)
    return pd.to_numeric(frame[column], errors="coerce").dropna()


def median_or_nan(frame: pd.DataFrame, column: str) -> float:
    if column not in frame or frame.empty:
        return math.nan
    try:
        values = frame[column].to_numpy(dtype=float)
    except (TypeError, ValueError):  # text in a column of numbers (a CSV edited by hand)
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else math.nan


def point_row(
    group: pd.DataFrame, study: Study, time_col: str, base: int, quality_metric: str | None
) -> tuple[dict, np.ndarray]:
    """One point's summary row: its own columns, each written here once (without the
    ratios to the base case, summarise_series, and the medians of the workload's metrics,
    metric_medians), and the times its speedup uses."""
    keep_mismatched, keep_disturbed = study.include_mismatched, study.include_shared
    ok = group[group["status"] == "ok"]
    # a run that did not get what its point asked for, or whose CPUs others used,
    # does not measure that point
    measured = group[measures_point(group, keep_mismatched, keep_disturbed)]
    timed = numeric(measured, time_col)
    times = timed.to_numpy()
    first = group.iloc[0]
    median, lo, hi = intervals.median_ci(times)
    # an outlier is named as its record's file is (rep3), not by its position
    names = [f"rep{k}" for k in measured.loc[timed.index, "repeat"]]
    noise = intervals.instability(times, names=names)
    partition = next(iter(distinct_text(ok, "partition")), None)
    wall = median_or_nan(measured, "wall_s")
    epochs, train, samples = (median_or_nan(ok, c) for c in ("epochs", "train_s", "samples"))
    jobs = distinct_text(group, "slurm_job_id")
    row = {
        "study": first["study"],
        "series": first.get("series", "") or "",
        "point": first["point"],
        "n": int(first["n"]),
        "is_base": int(first["n"]) == base,
        "repeats": len(group),
        "repeats_ok": len(ok),
        "time_s": median,
        "time_ci_lo": lo,
        "time_ci_hi": hi,
        # the level the interval reaches where few runs keep it below the stated 95 %
        # (NaN where it reaches it): the report says it beside the interval
        "time_ci_level": intervals.short_of_level(
            intervals.median_ci_coverage(int(np.isfinite(times).sum()))
        ),
        "time_min_s": float(times.min()) if len(times) else math.nan,
        "time_max_s": float(times.max()) if len(times) else math.nan,
        "cv": noise["cv"],
        "unstable": noise["unstable"],
        "unstable_reason": noise["reason"],
        "wall_s": median_or_nan(ok, "wall_s"),
        "train_s": train,
        "warmup_s": median_or_nan(ok, "warmup_s"),
        "steady_epoch_s": median_or_nan(ok, "steady_epoch_s"),
        "time_per_epoch_s": train / epochs if epochs and epochs > 0 else math.nan,
        # charged for the whole job, whatever time the speedup uses; `study` is the
        # series' own view (summarise), so its cost override is in study.cost
        "su": Cost.of(study).su(
            first["cores"], first["gpus"], wall, partition, median_or_nan(measured, "energy_j")
        ),
        # the source's throughput: samples x epochs / time, over the whole job
        "throughput": samples / wall if samples and wall else math.nan,
        "global_batch": global_batch(ok),
        "job_ids": " ".join(jobs),
        "quality": float(numeric(ok, quality_metric).median()),
        "cores": int(first["cores"]),
        "gpus": int(first["gpus"]),
        "nodes": int(first["nodes"]) if pd.notna(first.get("nodes")) else 1,
        "world_size": median_or_nan(ok, "world_size"),
    }
    row["status_kind"], row["status"] = point_status(group, keep_mismatched, keep_disturbed)
    return row, times


def distinct_text(frame: pd.DataFrame, column: str) -> list[str]:
    """Distinct non-empty values of a text column, as text, in order of appearance."""
    if column not in frame:
        return []
    values = frame[column].dropna()
    texts = (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v) for v in values)
    return [text for text in dict.fromkeys(texts) if text]


def summarise_series(runs: pd.DataFrame, study: Study, time_col: str) -> pd.DataFrame:
    """One series' points: times with CIs, and speedup, efficiency and cost against the
    series' base case. Speedup is the ratio of medians; its CI resamples the repeats
    of the point and of the base case independently (ratios of runs are never averaged)."""
    ns = sorted(int(n) for n in runs["n"].unique())
    base = study.base_n(ns)
    # one metric for the whole series: points must be compared on the same figure
    quality_metric = study_quality_metric(study, runs)
    rows, times = [], {}
    for n, group in groups_of(runs, "n", sort=True):
        row, times[int(n)] = point_row(group, study, time_col, base, quality_metric)
        rows.append(row)
    summary = pd.DataFrame(rows)
    base_row = summary[summary["is_base"]]
    if base_row.empty:
        raise ValueError(f"base case N={base} has no runs")
    su_base = base_row["su"].iloc[0]
    ratios = [intervals.ratio_ci(times[base], times[n]) for n in map(int, summary["n"])]
    ratio = np.array(ratios, dtype=float)
    if study.scaling.kind == "weak":
        # the problem grows with N: efficiency is t_base / t_N itself, and the speedup
        # is Gustafson's scaled speedup, (N / N_base) x t_base / t_N
        efficiency, speedup = ratio, ratio * (summary["n"].to_numpy() / base)[:, None]
    else:
        efficiency, speedup = ratio * (base / summary["n"].to_numpy())[:, None], ratio
    summary[["speedup", "speedup_ci_lo", "speedup_ci_hi"]] = speedup
    summary[["efficiency", "efficiency_ci_lo", "efficiency_ci_hi"]] = efficiency
    summary["karp_flatt"] = intervals.karp_flatt(summary["speedup"], summary["n"], base)
    summary["relative_su"] = summary["su"] / su_base
    summary["pareto"] = recommendation.pareto_front(summary["time_s"], summary["su"])
    check_convergence(summary, study, base, runs)
    if math.isnan(base_row["time_s"].iloc[0]):
        unmeasured = ~summary["is_base"] & summary["status"].str.startswith("ok")
        summary.loc[unmeasured, "status"] += "; no speedup: the base case failed"
        summary.loc[unmeasured & (summary["status_kind"] == "ok"), "status_kind"] = "warn"
    # last of the point's own columns: the status, and its kind (the report's colour)
    kind, status = summary.pop("status_kind"), summary.pop("status")
    summary["status_kind"], summary["status"] = kind, status
    return summary.join(metric_medians(runs, list(summary)), on="n")


def metric_medians(runs: pd.DataFrame, taken: list[str]) -> pd.DataFrame:
    """Per N, the median over the successful runs of every metric the workload reported
    (what is not a number counts as missing), each under its column's name in the runs
    table, or with the prefix metric_ where the summary has a column of that name."""
    metrics = metric_columns(runs)
    ok = runs.loc[runs["status"] == "ok", ["n", *metrics]]
    values = ok[metrics].apply(pd.to_numeric, errors="coerce").astype(float)
    medians = values.groupby(ok["n"].astype(int)).median()
    return medians.rename(columns={c: f"metric_{c}" for c in metrics if c in taken})


def provenance_differences(runs: pd.DataFrame) -> dict[str, list[str]]:
    """Fields of PROVENANCE on which the successful runs disagree, with their values."""
    ok = runs[runs["status"] == "ok"]
    differing = {}
    for column, label in PROVENANCE.items():
        if column not in ok:
            continue
        values = sorted({str(v) for v in ok[column].dropna() if str(v)})
        if len(values) > 1:
            differing[label] = values
    return differing


def split_by_provenance(runs: pd.DataFrame, study: Study) -> pd.DataFrame:
    """With `provenance: split`, give each combination of differing fields its own
    series (e.g. "a [GPU model=A100]"); otherwise leave the runs as they are."""
    if study.provenance != "split" or runs.empty:
        return runs
    runs = runs.copy()
    for series, group in runs.groupby("series", sort=False):
        differing = [c for c, label in PROVENANCE.items() if label in provenance_differences(group)]
        if not differing:
            continue
        for i in group.index:
            tag = ", ".join(f"{PROVENANCE[c]}={runs.at[i, c]}" for c in differing)
            runs.at[i, "series"] = f"{series} [{tag}]".strip()
    return runs


def study_tables(
    study: Study, runs: pd.DataFrame, accounted: tuple[dict, str | None], rounds=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs table as the analysis reads it (each run's energy, with Slurm
    accounting's `accounted`: request.read_accounting; its round, `rounds`, where it has
    one; split by provenance), and the summary."""
    if not study.elsewhere:  # times measured elsewhere have no energy
        runs = run_energy.with_energy(runs, accounted[0], study.time)
    if rounds is not None:
        runs = runs.assign(round=rounds)
    runs = split_by_provenance(runs, study)
    return runs, summarise(runs, study)


def summarise(runs: pd.DataFrame, study: Study) -> pd.DataFrame:
    """One row per point of each series: times, speedup, efficiency and cost."""
    if runs.empty:
        raise ValueError("no runs to summarise")
    time_col = TIME_COLUMNS[study.time]
    runs = runs.assign(series=runs["series"].astype(object).fillna("") if "series" in runs else "")
    groups = groups_of(runs, "series", sort=False)
    parts = [summarise_series(group, study.for_series(name), time_col) for name, group in groups]
    return pd.concat(parts, ignore_index=True)


def groups_of(frame: pd.DataFrame, key: str, sort: bool):
    """(value, rows) of each group of `frame` by `key`, one group's rows copied at a time
    (pandas' groupby iteration first sorts a copy of the whole frame: a million runs
    measured elsewhere), none where there is one group."""
    indices = frame.groupby(key, sort=sort).indices
    if len(indices) == 1:
        return [(next(iter(indices)), frame)]
    return ((value, frame.take(index)) for value, index in indices.items())


def measures_point(
    runs: pd.DataFrame, keep_mismatched: bool = False, keep_disturbed: bool = False
) -> pd.Series:
    """Which runs measure their point, its time and its energy: successful; not
    mismatched, not disturbed by others unless the study keeps them (others' work would
    be in the time and in a node's counter)."""
    counts = runs["status"] == "ok" if "status" in runs else pd.Series(True, index=runs.index)
    if not keep_mismatched and "mismatch" in runs:
        counts &= ~runs["mismatch"].astype(bool)
    if not keep_disturbed and "disturbed" in runs:
        counts &= runs["disturbed"].astype(object).fillna("") == ""
    return counts


def distinct(runs: pd.DataFrame, column: str) -> str:
    """The distinct values of a column over the runs (each of a list's too), in order."""
    if column not in runs and f"env_{column}" in runs:
        column = f"env_{column}"
    parts = (part for text in distinct_text(runs, column) for part in text.split(","))
    return ", ".join(dict.fromkeys(part for part in parts if part))


def times_by_point(runs: pd.DataFrame, column: str) -> dict[tuple[str, int], np.ndarray]:
    """Each point's times of its successful runs, keyed by (series, N)."""
    ok = runs[(runs["status"] == "ok")]
    if "series" in ok:  # a CSV read back gives NaN for a study without series
        series = ok["series"].astype("string").fillna("")
    else:
        series = pd.Series("", index=ok.index)
    out: dict[tuple[str, int], np.ndarray] = {}
    for (s, n), times in pd.to_numeric(ok[column], errors="coerce").groupby([series, ok["n"]]):
        x = _finite(times)
        if x.size:
            out[(str(s), int(n))] = x
    return out


def read_runs_csv(path: str | Path) -> pd.DataFrame:
    """A kept runs table (a baseline's, an archive's), checked whole as the config
    check reads it (scalestudy.study.archives.runs_csv_text: RecordError names the
    file and line)."""
    return pd.read_csv(io.StringIO(runs_csv_text(Path(path))))
