"""The one self-contained HTML report: every study, its table, figures, failures, environment.

Rendered with Jinja2 (autoescape on: names and reasons come from users and
programs); figures are inlined as data URIs, so the file makes no requests.
"""

from __future__ import annotations

import base64
import math
import os
from datetime import UTC, datetime
from pathlib import Path

import jinja2
import pandas as pd

from scalestudy.analysis import charges, metric_columns, shared_machines, study_quality_metric
from scalestudy.cost import cost_view
from scalestudy.records import RecordError, read_record, write_text_atomic
from scalestudy.studies import workload_capabilities

TEMPLATES = Path(__file__).with_name("templates")
# Every column the report shows, declared once: its label and its format (one precision
# per column). The report's tables pick columns from here by name; a metric a workload
# reports that is not here is shown under its own name with DEFAULT_FORMAT.
COLUMNS = {
    # the results table
    "series": ("series", "{}"),
    "point": ("point", "{}"),
    "n": ("N", "{}"),
    "repeats_ok": ("runs ok", "{}"),
    "time_s": ("time (s, median [95 % CI])", "{:.4g}"),
    "cv": ("CV", "{:.1%}"),
    "speedup": ("speedup [95 % CI]", "{:.2f}"),
    "efficiency": ("efficiency [95 % CI]", "{:.0%}"),
    "karp_flatt": ("Karp-Flatt e", "{:.3f}"),
    "warmup_s": ("warm-up epoch (s)", "{:.4g}"),
    "steady_epoch_s": ("steady epoch (s)", "{:.4g}"),
    "relative_su": ("relative SU", "{:.2f}"),
    "samples_per_s": ("samples/s", "{:.0f}"),
    "global_batch": ("global batch", "{:.0f}"),
    "quality": ("quality", "{:.4g}"),
    "fit": ("in model fit", "{}"),
    "status": ("status", "{}"),
    # the source's table of distributed training
    "job_ids": ("job id(s)", "{}"),
    "config": ("configuration", "{}"),
    "world_size": ("processes (GPUs / devices)", "{:.0f}"),
    "nodes": ("nodes", "{}"),
    "wall_s": ("time (s)", "{:.4g}"),
    "time_per_epoch_s": ("time / epoch (s)", "{:.4g}"),
    "val_loss": ("val loss", "{:.4g}"),
    "val_accuracy": ("val accuracy", "{:.2%}"),
    "band": ("interpretation", "{}"),
    "throughput": ("throughput (samples/s)", "{:.4g}"),
    # data loading and GPU use (medians over a point's runs)
    "stage_s": ("staging to scratch (slowest copy)", "{:.3g} s"),
    "stagers": ("copies at once", "{:.0f}"),
    "time_to_first_batch_s": ("time to first batch", "{:.3g} s"),
    "wait_fraction": ("time waiting for data", "{:.0%}"),
    "gpu_util_mean_pct": ("GPU utilisation (mean)", "{:.0f} %"),
    "gpu_util_peak_pct": ("GPU utilisation (peak)", "{:.0f} %"),
    "gpu_mem_peak_mb": ("GPU memory (peak)", "{:.0f} MB"),
    # the framework's share of a step
    "step_time_median_s": ("step time, Lightning (s)", "{:.4g}"),
    "plain_step_time_median_s": ("step time, plain PyTorch (s)", "{:.4g}"),
    # what the runs received, and where they ran (distinct values over the runs)
    "cpus_usable": ("usable CPUs", "{}"),
    "threads_given": ("threads given", "{}"),
    "torch_threads": ("torch threads", "{}"),
    "gpus_visible": ("GPUs visible", "{}"),
    "mem_limit_mb": ("memory limit (MB)", "{}"),
    "hosts": ("hosts", "{}"),
    "host": ("host(s)", "{}"),
    "cpu_model": ("CPU", "{}"),
    "gpu_models": ("GPU", "{}"),
    "python": ("Python", "{}"),
    "torch": ("PyTorch", "{}"),
    "cuda": ("CUDA (build)", "{}"),
    "workflow_commit": ("workflow commit", "{}"),
    "slurm_job_id": ("Slurm job ids", "{}"),
    "slurm_nodelist": ("Slurm node lists", "{}"),
}
DEFAULT_FORMAT = "{:.4g}"
# The columns of each part of the report, in their order.
RESULTS = [
    "series", "point", "n", "repeats_ok", "time_s", "cv", "speedup", "efficiency", "karp_flatt",
    "warmup_s", "steady_epoch_s", "relative_su", "samples_per_s", "global_batch", "quality",
    "fit", "status",
]  # fmt: skip
# the table of the source documents, for studies of distributed training
DDP = [
    "job_ids", "config", "world_size", "nodes", "wall_s", "time_per_epoch_s", "val_loss",
    "val_accuracy", "speedup", "efficiency", "band", "throughput",
]  # fmt: skip
# the telemetry table's cells (the template's names for them) and their columns
TELEMETRY = {
    "stage": "stage_s",
    "stagers": "stagers",
    "first_batch": "time_to_first_batch_s",
    "wait": "wait_fraction",
    "util": "gpu_util_mean_pct",
    "util_peak": "gpu_util_peak_pct",
    "mem": "gpu_mem_peak_mb",
}
FRAMEWORK = ["step_time_median_s", "plain_step_time_median_s"]
RECEIVED = [
    "cpus_usable", "threads_given", "torch_threads", "gpus_visible", "mem_limit_mb", "world_size",
    "hosts",
]  # fmt: skip
ENVIRONMENT = [
    "host", "cpu_model", "gpu_models", "python", "torch", "cuda", "workflow_commit",
    "slurm_job_id", "slurm_nodelist",
]  # fmt: skip


def label(column: str) -> str:
    return COLUMNS.get(column, (column, DEFAULT_FORMAT))[0]


def pattern(column: str) -> str:
    return COLUMNS.get(column, (column, DEFAULT_FORMAT))[1]


# Columns shown with their confidence interval: column -> (lo, hi) columns.
WITH_CI = {
    "time_s": ("time_ci_lo", "time_ci_hi"),
    "speedup": ("speedup_ci_lo", "speedup_ci_hi"),
    "efficiency": ("efficiency_ci_lo", "efficiency_ci_hi"),
}


def efficiency_band(efficiency: float) -> str:
    """The source's reading of parallel efficiency."""
    if not isinstance(efficiency, float) or math.isnan(efficiency):
        return "–"
    if efficiency >= 0.9:
        return "excellent (≥ 90 %)"
    if efficiency >= 0.75:
        return "good (75-90 %)"
    return "poor (< 75 %): look for a bottleneck"


def cell(row, column: str) -> str:
    """A column's value in its declared format, with its confidence interval if it has one."""
    form = pattern(column)
    text = fmt(row.get(column), form)
    if column in WITH_CI and text != "–":
        lo, hi = (row.get(c) for c in WITH_CI[column])
        if not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (lo, hi)):
            text += f" [{fmt(lo, form)}, {fmt(hi, form)}]"
    return text


def ddp_rows(summary: pd.DataFrame, study: dict) -> list[list[str]]:
    rows = []
    for _, r in summary.iterrows():
        r = r.to_dict()
        per_node = int(r["world_size"] / r["nodes"]) if r["nodes"] and r["world_size"] > 0 else 0
        batch = cell(r, "global_batch")
        r["config"] = f"{per_node} process(es)/node × {r['nodes']} node(s), global batch {batch}"
        r["band"] = efficiency_band(r["efficiency"])
        rows.append([cell(r, c) for c in DDP])
    return rows


def fmt(value, pattern: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    try:
        return pattern.format(value)
    except (ValueError, TypeError):
        return str(value)


def data_uri(path: Path) -> str:
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def distinct(runs: pd.DataFrame, column: str) -> str:
    if column not in runs:
        return ""
    values = []
    for v in runs[column].dropna().astype(str):
        for part in v.split(","):
            if part and part not in values:
                values.append(part)
    return ", ".join(values)


def status_class(status: str) -> str:
    if (
        status.startswith(("failed", "allocation mismatch", "shared CPUs"))
        or "did not converge" in status
    ):
        return "bad"
    return "warn" if status != "ok" else "ok"


def profile_links(records: list[Path], report_path: Path) -> list[dict]:
    """Each profiling run of a study: its trace, linked relative to the report, or why
    there is none."""
    links = []
    for path in records:
        trace = path.with_name(f"{path.stem}.trace.json")
        try:
            record = read_record(path)
            reason = record["reason"]
        except RecordError as e:
            reason = str(e)
        ok = reason is None and trace.is_file()
        links.append(
            {
                "point": path.stem,
                "href": os.path.relpath(trace, report_path.parent) if ok else None,
                "size_mb": fmt(trace.stat().st_size / 2**20, "{:.1f}") if ok else None,
                "reason": None if ok else reason or "the run wrote no trace",
            }
        )
    return links


def study_context(
    name: str,
    study: dict,
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    figures: dict[str, Path],
    profiles: list[dict] = (),
    predictions: dict | None = None,
) -> dict:
    predictions = predictions or {}
    base = summary[summary["is_base"]]
    base_row = base.iloc[0] if len(base) else None
    time_kind = study.get("time", "wall")
    has_series = bool(summary["series"].astype(object).fillna("").astype(str).str.len().any())
    # no series column without series, no warm-up columns for one-epoch runs
    columns = [
        c
        for c in RESULTS
        if (c != "series" or has_series)
        and (c not in ("warmup_s", "steady_epoch_s") or summary[c].notna().any())
    ]
    excluded = {
        (p["series"], point): reason
        for p in predictions.get("series", [])
        for point, reason in p["excluded"].items()
    }
    fitted = {p["series"]: bool(p["fits"]) for p in predictions.get("series", [])}
    rows = []
    for _, r in summary.iterrows():
        r = r.to_dict()
        series = r["series"] if isinstance(r["series"], str) else ""
        reason = excluded.get((series, r["point"]))
        r["series"] = series or "–"
        r["fit"] = f"no: {reason}" if reason else ("yes" if fitted.get(series) else "–")
        rows.append(
            {
                "cells": [cell(r, c) for c in columns],
                "status_class": status_class(str(r["status"])),
                "is_base": bool(r["is_base"]),
                "unstable": bool(r["unstable"]),
            }
        )
    distributed = workload_capabilities(study.get("workload")).get("distributed", False)
    telemetry = telemetry_view(runs)
    framework = framework_share(summary)
    # every metric the runs reported that no other part of the report shows
    shown = {*columns, *(DDP if distributed else ()), *(TELEMETRY.values() if telemetry else ())}
    shown |= set(FRAMEWORK) if framework else set()
    failures = runs[runs["status"] != "ok"][["point", "repeat", "reason"]]
    mismatches = runs[(runs["status"] == "ok") & runs["mismatch"].astype(bool)]
    return {
        "name": name,
        "description": study.get("description", ""),
        "workload": study.get("workload"),
        "measured": study.get("measured"),
        "params": study.get("params", {}),
        "scaling": study["scaling"],
        "repeats": int(runs.groupby("n")["repeat"].nunique().max()) if len(runs) else 0,
        "time_kind": time_kind,
        "quality_metric": study_quality_metric(study, runs),
        "distributed": distributed,
        "tolerance": study.get("convergence", {}).get("tolerance", 0.1),
        # the weights every SU figure uses: the study's, its partitions', its series'
        "cost": cost_view(study),
        "base": None
        if base_row is None
        else {
            "point": base_row["point"],
            "n": int(base_row["n"]),
            "time": fmt(base_row["time_s"], pattern("time_s")),
        },
        "columns": [label(c) for c in columns],
        "rows": rows,
        "metrics": metrics_view(summary, runs, shown, has_series),
        # times measured elsewhere have no phases to show
        "figures": {
            k: data_uri(v) for k, v in figures.items() if k != "phases" or "measured" not in study
        },
        "failures": [
            {"point": f.point, "repeat": int(f.repeat), "reason": f.reason or "no reason given"}
            for f in failures.itertuples()
        ],
        "mismatches": [
            {"point": m.point, "repeat": int(m.repeat), "what": m.mismatches}
            for m in mismatches.itertuples()
        ],
        # runs whose CPUs others used, as aggregation found them (analysis.disturbed_reasons)
        "disturbed": [
            {"point": r.point, "repeat": int(r.repeat), "what": r.disturbed}
            for r in runs.itertuples()
            if isinstance(getattr(r, "disturbed", None), str) and r.disturbed
        ],
        "include_shared": study.get("include_shared", False),
        "profiles": list(profiles),
        "answers": [answer(p, study, summary) for p in predictions.get("series", [])],
        "models": [models_view(p) for p in predictions.get("series", [])],
        "comparisons": [comparison_view(c) for c in predictions.get("comparisons", [])],
        "ddp": {"columns": [label(c) for c in DDP], "rows": ddp_rows(summary, study)}
        if distributed
        else None,
        "framework": framework,
        "include_unstable": study.get("include_unstable", False),
        "unstable": int(summary["unstable"].fillna(False).astype(bool).sum()),
        "profile_steps": study.get("profile", {}).get("steps"),
        "overlapped": int(runs["overlapped"].fillna(False).astype(bool).sum()),
        "shared_machines": shared_machines(runs),
        "charges": {k: fmt(v, "{:.4f}") for k, v in charges(runs, study).items()},
        "scheduler": scheduler_view(runs),
        "received": received_view(runs),
        "gpu_verdict": predictions.get("gpu_verdict"),
        "telemetry": telemetry,
        "staging": staging_view(runs),
        "environment": [(label(c), distinct(runs, c)) for c in ENVIRONMENT if distinct(runs, c)],
    }


def render(title: str, studies: list[dict]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return env.get_template("report.html.j2").render(
        title=title, studies=studies, generated=generated
    )


def write_report(path: Path, title: str, studies: list[dict]) -> None:
    write_text_atomic(path, render(title, studies))


AXIS_UNITS = {"threads": "threads", "devices": "devices per node", "nodes": "nodes"}


def answer(pred: dict, study: dict, summary: pd.DataFrame) -> dict:
    """The recommendation of one series in words, with its numbers."""
    rec = pred["recommendation"]
    axis = study["scaling"]["axis"]
    unit = "GPUs" if axis == "devices" and study["scaling"]["device"] == "gpu" else AXIS_UNITS[axis]
    rows = summary[summary["series"].astype(object).fillna("") == pred["series"]].set_index("n")
    worth = rec["worth_n"]
    lines = []
    if worth is None:
        headline = "No recommendation: no point has a speedup (did the base case fail?)."
    else:
        r = rows.loc[worth]
        ci = ""
        if pd.notna(r["speedup_ci_lo"]):
            ci = f" (95 % CI {r['speedup_ci_lo']:.2f}-{r['speedup_ci_hi']:.2f})"
        headline = (
            f"Ask for {worth} {unit}: speedup {r['speedup']:.2f}{ci} over the base case N = "
            f"{pred['base_n']}, at {r['relative_su']:.2f}x its cost in SU."
        )
        threshold = rec["threshold"]
        if rec["stopped_at"]:
            a, b, marginal = rec["stopped_at"]
            lines.append(
                f"Going from {a} to {b} {unit} adds only {marginal:.2f} speedup per added unit "
                f"(below {threshold:g}), so it is not worth its cost."
            )
        else:
            lines.append(
                f"Every measured step still adds at least {threshold:g} speedup per unit: "
                f"measure beyond N = {worth} to find where scaling stops paying."
            )
    if study.get("recommend", {}).get("deadline_s") is not None:
        n = rec["cheapest_meeting_deadline"]
        lines.append(
            f"Cheapest point within the deadline of {study['recommend']['deadline_s']:g} s: "
            + (f"N = {n} ({rec['deadline_note']})." if n is not None else rec["deadline_note"])
        )
    if study.get("recommend", {}).get("budget_su") is not None:
        n = rec["fastest_within_budget"]
        lines.append(
            f"Fastest point within the budget of {study['recommend']['budget_su']:g} SU: "
            + (f"N = {n} ({rec['budget_note']})." if n is not None else rec["budget_note"])
        )
    peak = pred.get("peak")
    if peak and peak["beyond_measured"]:
        lines.append(
            f"Prediction (model {pred['selected']}, extrapolated beyond the measured range): "
            f"the speedup peaks near N = {peak['n']:.1f} at {peak['speedup']:.2f}; more "
            f"{unit} than that would make the run slower."
        )
    if pred.get("mixed_provenance"):
        lines.append(pred["fit_note"])
    unstable = [p for p, why in pred["excluded"].items() if why.startswith("unstable")]
    if unstable:
        lines.append(
            f"Caution: point(s) {', '.join(unstable)} are unstable (their repeats disagree): "
            "rerun them or add repeats before relying on this answer."
        )
    return {"series": pred["series"], "headline": headline, "lines": lines}


def models_view(pred: dict) -> dict:
    """The fitted models of one series, for the report's table."""
    fits = []
    note = pred.get("fit_note", "")
    if pred["fits"] and not any(f["ok"] for f in pred["fits"]):
        usable = max(f["n_points"] for f in pred["fits"])
        note = (
            f"No scaling model fitted: {usable} point(s) usable; Amdahl's law needs at least "
            "3 distinct N, the three-parameter models at least 4. Add points or repeats."
        )
    for f in pred["fits"]:
        if not f["ok"]:
            note += (
                f" {f['name']} not fitted: {f['note']}."
                if any(g["ok"] for g in pred["fits"])
                else ""
            )
            continue
        params = ", ".join(
            f"{k} = {fmt(v, '{:.4g}')} [{fmt(f['param_ci'].get(k, (None,))[0], '{:.3g}')}, "
            f"{fmt(f['param_ci'].get(k, (None, None))[1], '{:.3g}')}]"
            for k, v in f["params"].items()
        )
        fits.append(
            {
                "name": f["name"],
                "formula": f["formula"],
                "params": params,
                "r2": fmt(f["r2"], "{:.4f}"),
                "aicc": fmt(f["aicc"], "{:.2f}"),
                "weight": fmt(f["weight"], "{:.0%}"),
                "selected": f["name"] == pred["selected"],
            }
        )
    return {
        "series": pred["series"],
        "fits": fits,
        "note": note.strip(),
        "excluded": pred["excluded"],
        "bound": pred.get("bound"),
    }


def comparison_view(c: dict) -> dict:
    per_n = [
        f"N={e['n']}: {fmt(e['ratio'], '{:.3f}')} [{fmt(e['lo'], '{:.3f}')}, "
        f"{fmt(e['hi'], '{:.3f}')}], p = {fmt(e['p_value'], '{:.3g}')}"
        for e in c["per_n"]
    ]
    verdict = (
        "differ significantly (p < 0.05)"
        if c["significant"]
        else "show no significant difference"
        if c["p_value"] is not None
        else "cannot be compared"
    )
    return {
        "a": c["a"] or "(default)",
        "b": c["b"],
        "verdict": verdict,
        "p": fmt(c["p_value"], "{:.3g}"),
        "method": c.get("method", ""),
        "note": c.get("note", ""),
        "per_n": per_n,
    }


def framework_share(summary: pd.DataFrame) -> dict | None:
    """Lightning's step against the same step in a plain PyTorch loop (base case)."""
    base = summary[summary["is_base"]]
    if base.empty or not all(c in base for c in FRAMEWORK):
        return None
    lightning = base["step_time_median_s"].iloc[0]
    plain = base["plain_step_time_median_s"].iloc[0]
    if not (pd.notna(lightning) and pd.notna(plain) and plain > 0):
        return None
    return {
        "lightning_ms": fmt(lightning * 1e3, "{:.3f}"),
        "plain_ms": fmt(plain * 1e3, "{:.3f}"),
        "share": fmt(1 - plain / lightning, "{:.0%}"),
    }


def received_view(runs: pd.DataFrame) -> list[dict]:
    """Per point, what its runs asked for and what they got (distinct values)."""
    if "cpus_usable" not in runs:
        return []
    view = []
    for point, group in runs.groupby("point", sort=False):
        first = group.iloc[0]
        if pd.isna(first.get("cpus_usable")):
            continue
        view.append(
            {
                "point": point,
                "asked": f"{first['threads']} thread(s) × {int(first['cores'] / first['threads'])}"
                f" process(es), {first['gpus']} GPU(s), {first['nodes']} node(s)",
                "got": "; ".join(
                    f"{label(c)} {distinct(group, c)}" for c in RECEIVED if distinct(group, c)
                ),
            }
        )
    return view


def staging_view(runs: pd.DataFrame) -> dict | None:
    """How staging time grows with the copies made at once (k), when the study's runs
    differ in k: per k the slowest and the typical copy (medians over runs), the
    slowest copy's time relative to the smallest k, and the data moved per second by
    all k copies together."""
    if "stagers" not in runs or "stage_s" not in runs:
        return None
    ok = runs[(runs["status"] == "ok") & runs["stagers"].notna() & runs["stage_s"].notna()]
    if ok["stagers"].nunique() < 2:
        return None
    rows = []
    for k, group in ok.groupby("stagers"):
        slowest = pd.to_numeric(group["stage_s"]).median()
        # one copy records no median of copies: its own time is the typical one
        typical = pd.to_numeric(group.get("stage_s_median", group["stage_s"]))
        typical = typical.fillna(pd.to_numeric(group["stage_s"])).median()
        size_mb = pd.to_numeric(group["dataset_mb"]).median() if "dataset_mb" in group else None
        rate = k * size_mb / slowest if size_mb and slowest > 0 else None
        rows.append(
            {"k": int(k), "runs": len(group), "slowest": slowest, "typical": typical, "rate": rate}
        )
    first, last = rows[0], rows[-1]
    growth = last["slowest"] / first["slowest"] if first["slowest"] > 0 else None
    return {
        "summary": (
            f"From {first['k']} to {last['k']} copies at once, the slowest copy takes "
            f"{fmt(growth, '{:.2f}')}x as long ({fmt(first['slowest'], '{:.3g}')} s to "
            f"{fmt(last['slowest'], '{:.3g}')} s)"
            + (
                f"; all copies together move {fmt(last['rate'], '{:.0f}')} MB/s against "
                f"{fmt(first['rate'], '{:.0f}')} MB/s for {first['k']}"
                if first["rate"] and last["rate"]
                else ""
            )
        ),
        "rows": [
            {
                "k": r["k"],
                "runs": r["runs"],
                "slowest": fmt(r["slowest"], "{:.3g} s"),
                "typical": fmt(r["typical"], "{:.3g} s"),
                "growth": fmt(r["slowest"] / first["slowest"], "{:.2f}x")
                if first["slowest"] > 0
                else "–",
                "rate": fmt(r["rate"], "{:.0f} MB/s"),
            }
            for r in rows
        ],
    }


def telemetry_view(runs: pd.DataFrame) -> list[dict]:
    """Per point, median GPU utilisation and memory, and the share of time spent waiting
    for data, where the runs measured them."""
    columns = [c for c in TELEMETRY.values() if c in runs]
    if not any(runs[c].notna().any() for c in columns):
        return []
    ok = runs[runs["status"] == "ok"]
    medians = ok[columns].apply(pd.to_numeric, errors="coerce").groupby(ok["point"], sort=False)
    return [
        {"point": point} | {key: cell(row, column) for key, column in TELEMETRY.items()}
        for point, row in medians.median().iterrows()
    ]


def metrics_view(
    summary: pd.DataFrame, runs: pd.DataFrame, shown: set[str], has_series: bool
) -> dict | None:
    """Per point, the median of every metric the runs reported that the report shows
    nowhere else (each under its own name, in its declared format or DEFAULT_FORMAT)."""
    columns = []
    for name in metric_columns(runs):
        # where the summary has a column of the metric's name, its median is metric_NAME
        column = f"metric_{name}" if f"metric_{name}" in summary else name
        if column in summary and column not in shown and summary[column].notna().any():
            columns.append(column)
    if not columns:
        return None
    keys = ["series", "point"] if has_series else ["point"]
    return {
        "columns": [label(c) for c in keys] + [label(c) for c in columns],
        "rows": [[cell(r, c) for c in keys + columns] for r in summary.to_dict("records")],
    }


def scheduler_view(runs: pd.DataFrame) -> list[dict]:
    """Each Slurm job of the study: queue wait and run time."""
    if "slurm_job_id" not in runs:
        return []
    return [
        {
            "point": r["point"],
            "repeat": int(r["repeat"]),
            "job": r["slurm_job_id"],
            "nodes": r.get("slurm_nodelist") if isinstance(r.get("slurm_nodelist"), str) else "",
            "submitted": r.get("slurm_submit_time"),
            "queue_wait": fmt(r["queue_wait_s"], "{:.1f}"),
            "run": fmt(r["elapsed_s"], "{:.1f}"),
            "status": r["status"],
        }
        for r in runs[runs["slurm_job_id"].notna()].to_dict("records")
    ]
