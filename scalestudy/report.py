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

from scalestudy.analysis import charges, shared_machines, study_quality_metric
from scalestudy.records import RecordError, read_record, write_text_atomic
from scalestudy.studies import WORKLOADS

TEMPLATES = Path(__file__).with_name("templates")
ENVIRONMENT_FIELDS = {
    "host": "host(s)",
    "cpu_model": "CPU",
    "gpu_models": "GPU",
    "python": "Python",
    "torch": "PyTorch",
    "cuda": "CUDA (build)",
    "workflow_commit": "workflow commit",
    "slurm_job_id": "Slurm job ids",
    "slurm_nodelist": "Slurm node lists",
}
TABLE_COLUMNS = [
    ("point", "point", "{}"),
    ("n", "N", "{}"),
    ("repeats_ok", "runs ok", "{}"),
    ("time_s", "time (s, median)", "{:.4g}"),
    ("time_min_s", "min (s)", "{:.4g}"),
    ("time_max_s", "max (s)", "{:.4g}"),
    ("speedup", "speedup", "{:.2f}"),
    ("efficiency", "efficiency", "{:.0%}"),
    ("relative_su", "relative SU", "{:.2f}"),
    ("samples_per_s", "samples/s", "{:.0f}"),
    ("global_batch", "global batch", "{:.0f}"),
    ("quality", "quality", "{:.4g}"),
    ("status", "status", "{}"),
]


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
    if status.startswith(("failed", "allocation mismatch")) or "did not converge" in status:
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
) -> dict:
    base = summary[summary["is_base"]]
    base_row = base.iloc[0] if len(base) else None
    time_kind = study.get("time", "wall")
    rows = [
        {
            "cells": [fmt(r[col], pattern) for col, _, pattern in TABLE_COLUMNS],
            "status_class": status_class(str(r["status"])),
            "is_base": bool(r["is_base"]),
        }
        for _, r in summary.iterrows()
    ]
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
        "distributed": WORKLOADS.get(study.get("workload"), {}).get("distributed", False),
        "tolerance": study.get("convergence", {}).get("tolerance", 0.1),
        "cost": study.get("cost", {}),
        "base": None
        if base_row is None
        else {
            "point": base_row["point"],
            "n": int(base_row["n"]),
            "time": fmt(base_row["time_s"], "{:.4g}"),
        },
        "columns": [label for _, label, _ in TABLE_COLUMNS],
        "rows": rows,
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
        "profiles": list(profiles),
        "profile_steps": study.get("profile", {}).get("steps"),
        "overlapped": int(runs["overlapped"].fillna(False).astype(bool).sum()),
        "shared_machines": shared_machines(runs),
        "charges": {k: fmt(v, "{:.4f}") for k, v in charges(runs, study).items()},
        "scheduler": [
            {
                "point": r.point,
                "repeat": int(r.repeat),
                "job": r.slurm_job_id,
                "nodes": r.slurm_nodelist if isinstance(r.slurm_nodelist, str) else "",
                "submitted": r.slurm_submit_time,
                "queue_wait": fmt(r.queue_wait_s, "{:.1f}"),
                "run": fmt(r.elapsed_s, "{:.1f}"),
                "status": r.status,
            }
            for r in runs.itertuples()
            if isinstance(r.slurm_job_id, str | int | float) and not pd.isna(r.slurm_job_id)
        ],
        "environment": [
            (label, distinct(runs, col))
            for col, label in ENVIRONMENT_FIELDS.items()
            if distinct(runs, col)
        ],
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
