"""From records (or a CSV measured elsewhere) to the tidy runs table and the summary.

Vocabulary: the *base case* is the point that speedups are relative to;
`speedup = t_base / t_N` uses the median time of each point (ratios are never
averaged); `efficiency = speedup x N_base / N`; `relative_su = SU_N / SU_base`
with SU = (core_weight x cores + gpu_weight x GPUs) x hours of whole-job time
(what the allocation is charged, also when speedups use training time only).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from scalestudy.records import RecordError, read_record
from scalestudy.studies import base_n, point_for

RUN_COLUMNS = [
    "study",
    "point",
    "n",
    "repeat",
    "status",
    "reason",
    "wall_s",
    "train_s",
    "startup_s",
    "data_s",
    "eval_s",
    "other_s",
    "epochs",
    "samples_per_s",
    "final_loss",
    "test_loss",
    "test_accuracy",
    "peak_rss_mb",
    "mismatch",
    "mismatches",
    "threads",
    "cores",
    "gpus",
    "nodes",
    "host",
    "hosts",
    "cpu_model",
    "python",
    "torch",
    "cuda",
    "gpu_models",
    "workflow_commit",
    "slurm_job_id",
    "slurm_nodelist",
    "started_at",
    "finished_at",
    "overlapped",
    "elapsed_s",
    "queue_wait_s",
    "slurm_submit_time",
    "slurm_start_time",
    "boot_id",
    "val_loss",
    "val_accuracy",
    "per_process_batch",
    "world_size",
]

SUMMARY_COLUMNS = [
    "study",
    "point",
    "n",
    "is_base",
    "repeats",
    "repeats_ok",
    "time_s",
    "time_min_s",
    "time_max_s",
    "wall_s",
    "train_s",
    "speedup",
    "efficiency",
    "su",
    "relative_su",
    "samples_per_s",
    "test_accuracy",
    "cores",
    "gpus",
    "global_batch",
    "quality",
    "converged",
    "status",
]


def phase_seconds(phases: list[dict], kind: str) -> float:
    return float(sum(p["seconds"] for p in phases if p["kind"] == kind))


def record_row(record: dict) -> dict:
    """Flatten one record into a row of the runs table."""
    phases = record["phases"]
    req = record["resources"]["requested"]
    env = record["environment"]
    metrics = record["metrics"]
    ok = record["status"] == "ok"
    kinds = {k: phase_seconds(phases, k) for k in ("startup", "data", "epoch", "eval")}
    wall = record["wall_s"]
    other = None if wall is None else max(0.0, wall - sum(kinds.values()))
    return {
        "study": record["study"],
        "point": record["point"],
        "n": record["n"],
        "repeat": record["repeat"],
        "status": record["status"],
        "reason": record["reason"],
        "wall_s": wall if ok else None,
        "train_s": kinds["epoch"] if ok and kinds["epoch"] > 0 else None,
        "startup_s": kinds["startup"],
        "data_s": kinds["data"],
        "eval_s": kinds["eval"],
        "other_s": other,
        "epochs": sum(1 for p in phases if p["kind"] == "epoch"),
        "samples_per_s": metrics.get("samples_per_s"),
        "final_loss": metrics.get("final_loss"),
        "test_loss": metrics.get("test_loss"),
        "test_accuracy": metrics.get("test_accuracy"),
        "peak_rss_mb": metrics.get("peak_rss_mb"),
        "mismatch": record["resources"]["mismatch"],
        "mismatches": "; ".join(record["resources"]["mismatches"]),
        "threads": req["threads"],
        "cores": req["threads"] * req["tasks_per_node"] * req["nodes"],
        "gpus": req["gpus_per_node"] * req["nodes"],
        "nodes": req["nodes"],
        "host": env.get("host"),
        "hosts": ",".join(env.get("hosts", [])),
        "cpu_model": env.get("cpu_model"),
        "python": env.get("python"),
        "torch": env.get("torch"),
        "cuda": env.get("cuda"),
        "gpu_models": ",".join(env.get("gpu_models", [])),
        "workflow_commit": env.get("workflow_commit"),
        "slurm_job_id": env.get("slurm_job_id"),
        "slurm_nodelist": env.get("slurm_nodelist"),
        "started_at": record["started_at"],
        "finished_at": record["finished_at"],
        "elapsed_s": wall,  # charged whether or not the run succeeded
        "queue_wait_s": queue_wait(env),
        "slurm_submit_time": env.get("slurm_submit_time"),
        "slurm_start_time": env.get("slurm_start_time"),
        "boot_id": env.get("boot_id"),
        "val_loss": metrics.get("val_loss"),
        "val_accuracy": metrics.get("val_accuracy"),
        "per_process_batch": metrics.get("per_process_batch"),
        "world_size": record["resources"]["received"].get("world_size"),
    }


def queue_wait(env: dict) -> float | None:
    """Seconds between submission and start, as Slurm recorded them."""
    try:
        submit = pd.Timestamp(env["slurm_submit_time"])
        start = pd.Timestamp(env["slurm_start_time"])
    except (KeyError, ValueError, TypeError):
        return None
    return max(0.0, (start - submit).total_seconds())


def charges(runs: pd.DataFrame, study: dict) -> dict:
    """What the study's runs were charged: every run counts, failed ones too."""
    weights = study.get("cost", {})
    hours = pd.to_numeric(runs["elapsed_s"], errors="coerce").fillna(0) / 3600
    core_h = float((runs["cores"] * hours).sum())
    gpu_h = float((runs["gpus"] * hours).sum())
    return {
        "core_hours": core_h,
        "gpu_hours": gpu_h,
        "su": weights.get("core_weight", 1) * core_h + weights.get("gpu_weight", 2) * gpu_h,
    }


def shared_machines(runs: pd.DataFrame) -> list[str]:
    """Host names that are one physical machine (same boot id): their timings are
    not those of separate nodes."""
    by_boot: dict[str, set[str]] = {}
    for boot, hosts, host in zip(runs["boot_id"], runs["hosts"], runs["host"], strict=True):
        if not isinstance(boot, str):
            continue
        names = hosts if isinstance(hosts, str) and hosts else host
        if isinstance(names, str):
            by_boot.setdefault(boot, set()).update(n for n in names.split(",") if n)
    return [", ".join(sorted(h)) for h in by_boot.values() if len(h) > 1]


def mark_overlaps(runs: pd.DataFrame) -> pd.Series:
    """True for runs that shared a host with another run of the study at the same time
    (their timings disturbed each other)."""
    overlapped = pd.Series(False, index=runs.index)
    if runs.empty or runs["started_at"].isna().all():
        return overlapped
    start = pd.to_datetime(runs["started_at"], utc=True)
    end = pd.to_datetime(runs["finished_at"], utc=True)
    for _, idx in runs.groupby(["study", "host"], dropna=False).groups.items():
        order = sorted(idx, key=lambda i: start[i])
        latest_end, latest_i = None, None
        for i in order:
            if latest_end is not None and start[i] < latest_end:
                overlapped[i] = overlapped[latest_i] = True
            if latest_end is None or end[i] > latest_end:
                latest_end, latest_i = end[i], i
    return overlapped


def runs_from_records(paths: list[str | Path]) -> pd.DataFrame:
    """Read and validate every record (RecordError names a bad file) into the runs table."""
    rows = [record_row(read_record(p)) for p in paths]
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS)
    runs["overlapped"] = mark_overlaps(runs)
    return runs


def runs_from_measured(csv_path: str | Path, study_name: str, study: dict) -> pd.DataFrame:
    """A CSV of times measured by hand (N,time_s[,repeat]) as a runs table."""
    csv_path = Path(csv_path)
    try:
        table = pd.read_csv(csv_path)
    except (OSError, ValueError) as e:
        raise RecordError(f"{csv_path}: cannot read as CSV ({e})") from None
    missing = {"N", "time_s"} - set(table.columns)
    if missing:
        raise RecordError(f"{csv_path}: missing column(s) {sorted(missing)}; need N,time_s")
    if table.empty:
        raise RecordError(f"{csv_path}: no rows")
    for col in ["N", "time_s"] + (["repeat"] if "repeat" in table else []):
        values = pd.to_numeric(table[col], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.astype(float)) | (values <= 0)
        if bad.any():
            row = int(bad.idxmax()) + 2  # 1-based, after the header line
            raise RecordError(
                f"{csv_path}: line {row}: {col}={table[col].iloc[bad.idxmax()]!r} "
                "is not a positive finite number"
            )
        table[col] = values
    if (table["N"] != table["N"].round()).any():
        raise RecordError(f"{csv_path}: N must be whole numbers")
    if "repeat" not in table:
        table["repeat"] = table.groupby("N").cumcount() + 1
    rows = []
    for r in table.itertuples():
        point = point_for(study_name, study, int(r.N))
        rows.append(
            {
                "study": study_name,
                "point": point.label,
                "n": point.n,
                "repeat": int(r.repeat),
                "status": "ok",
                "reason": None,
                "wall_s": float(r.time_s),
                "elapsed_s": float(r.time_s),
                "mismatch": False,
                "mismatches": "",
                "threads": point.threads,
                "cores": point.cores,
                "gpus": point.gpus,
                "nodes": point.nodes,
                "overlapped": False,
            }
        )
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def point_status(group: pd.DataFrame, keep_mismatched: bool = False) -> str:
    ok = group["status"] == "ok"
    reasons = group.loc[~ok, "reason"].dropna()
    first = reasons.iloc[0] if len(reasons) else "no reason given"
    if not ok.any():
        return f"failed: {first}"
    mism = group.loc[ok & group["mismatch"].astype(bool), "mismatches"]
    if len(mism):
        left_out = "" if keep_mismatched else " (left out of speedups)"
        return f"allocation mismatch: {mism.iloc[0]}{left_out}"
    if not ok.all():
        return f"ok ({(~ok).sum()} of {len(group)} runs failed: {first})"
    return "ok"


QUALITY_METRICS = ("val_loss", "test_loss", "val_accuracy", "test_accuracy", "final_loss")


def study_quality_metric(study: dict, runs: pd.DataFrame) -> str | None:
    """The figure that says how well a run learned: the configured one, else the
    first of QUALITY_METRICS that the runs report."""
    wanted = study.get("convergence", {}).get("metric")
    if wanted:
        return wanted
    for metric in QUALITY_METRICS:
        if metric in runs and pd.to_numeric(runs[metric], errors="coerce").notna().any():
            return metric
    return None


def median_of(runs: pd.DataFrame, column: str | None) -> float:
    if column is None or column not in runs or runs.empty:
        return math.nan
    return float(pd.to_numeric(runs[column], errors="coerce").median())


def global_batch(ok: pd.DataFrame) -> float:
    """Batch over all processes: per-process batch x world size (median over runs)."""
    if "per_process_batch" not in ok or ok.empty:
        return math.nan
    per = pd.to_numeric(ok["per_process_batch"], errors="coerce")
    world = pd.to_numeric(ok.get("world_size", pd.Series(1, index=ok.index)), errors="coerce")
    return float((per * world.fillna(1)).median()) if per.notna().any() else math.nan


def check_convergence(summary: pd.DataFrame, study: dict, base: int, runs: pd.DataFrame) -> None:
    """Flag points whose quality differs from the base case's by more than the
    tolerance (relative): a faster run that learned less is not a speedup."""
    metric = study_quality_metric(study, runs)
    tolerance = study.get("convergence", {}).get("tolerance", 0.1)
    reference = summary.loc[summary["n"] == base, "quality"]
    if metric is None or reference.empty or math.isnan(reference.iloc[0]):
        summary["converged"] = pd.NA
        return
    ref = reference.iloc[0]
    deviation = (summary["quality"] - ref).abs() / max(abs(ref), 1e-12)
    summary["converged"] = deviation <= tolerance
    for i in summary.index[(deviation > tolerance) & summary["quality"].notna()]:
        summary.loc[i, "status"] = (
            f"{summary.loc[i, 'status']}; did not converge like the base case: {metric} "
            f"{summary.loc[i, 'quality']:.4g} vs {ref:.4g} (tolerance {tolerance:.0%})"
        )


def summarise(runs: pd.DataFrame, study: dict) -> pd.DataFrame:
    """One row per point: times, speedup, efficiency and cost against the base case."""
    if runs.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    time_col = "train_s" if study.get("time", "wall") == "train" else "wall_s"
    weights = study.get("cost", {})
    core_w, gpu_w = weights.get("core_weight", 1.0), weights.get("gpu_weight", 2.0)
    ns = sorted(runs["n"].unique())
    base = base_n(study, ns)
    rows = []
    keep_mismatched = study.get("include_mismatched", False)
    for n, group in runs.groupby("n", sort=True):
        ok = group[group["status"] == "ok"]
        # a run that did not get what its point asked for does not measure that point
        measured = ok if keep_mismatched else ok[~ok["mismatch"].astype(bool)]
        times = pd.to_numeric(measured[time_col], errors="coerce").dropna()
        first = group.iloc[0]
        units = core_w * first["cores"] + gpu_w * first["gpus"]
        t = float(times.median()) if len(times) else math.nan
        rows.append(
            {
                "study": first["study"],
                "point": first["point"],
                "n": int(n),
                "is_base": int(n) == base,
                "repeats": len(group),
                "repeats_ok": len(ok),
                "time_s": t,
                "time_min_s": float(times.min()) if len(times) else math.nan,
                "time_max_s": float(times.max()) if len(times) else math.nan,
                "wall_s": float(pd.to_numeric(ok["wall_s"]).median()) if len(ok) else math.nan,
                "train_s": float(pd.to_numeric(ok["train_s"]).median()) if len(ok) else math.nan,
                # charged for the whole job, whatever time the speedup uses
                "su": units * median_of(measured, "wall_s") / 3600,
                "samples_per_s": float(pd.to_numeric(ok["samples_per_s"]).median())
                if len(ok)
                else math.nan,
                "test_accuracy": float(pd.to_numeric(ok["test_accuracy"]).median())
                if len(ok)
                else math.nan,
                "global_batch": global_batch(ok),
                "quality": median_of(ok, study_quality_metric(study, runs)),
                "cores": int(first["cores"]),
                "gpus": int(first["gpus"]),
                "status": point_status(group, keep_mismatched),
            }
        )
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    base_row = summary[summary["is_base"]]
    if base_row.empty:
        raise ValueError(f"base case N={base} has no runs")
    t_base, su_base = base_row["time_s"].iloc[0], base_row["su"].iloc[0]
    summary["speedup"] = t_base / summary["time_s"]
    summary["efficiency"] = summary["speedup"] * base / summary["n"]
    summary["relative_su"] = summary["su"] / su_base
    check_convergence(summary, study, base, runs)
    if math.isnan(t_base):
        summary.loc[~summary["is_base"] & summary["status"].str.startswith("ok"), "status"] += (
            "; no speedup: the base case failed"
        )
    return summary
