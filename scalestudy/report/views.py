"""What the report shows of a study: analysis.json and summary.csv rows as display rows.

A view chooses columns and formats each number with its column's one precision
(COLUMNS); it computes nothing (aggregation did: scalestudy.analysis.findings) and says
nothing in sentences (the template does, scalestudy/report/templates/report.html.j2).
"""

from __future__ import annotations

import base64
import math
import numbers
import os
from pathlib import Path

import pandas as pd

from scalestudy.records import RecordError, read_record


class Significant:
    """A column's format by significant digits: each value rounded to `digits` of them,
    and every row given the decimals the most exacting one needs (one precision per
    column: 3.22 and 3.35 samples/s, not 3 and 3; 0.567 beside 0.569, not beside
    0.5688; 171 beside 49, 171.0 beside 9.5). A value alone (in a sentence) gets its
    own: 171 s."""

    def __init__(self, digits: int, unit: str = ""):
        self.digits, self.unit = digits, unit

    def decimals(self, value: float) -> int:
        """The decimals `value` needs for its digits, without trailing zeros."""
        places = max(self.digits - 1 - math.floor(math.log10(abs(value))), 0)
        text = f"{value:.{min(places, 6)}f}"
        return len(text.rstrip("0").split(".")[1]) if "." in text else 0

    def fixed(self, values) -> str:
        """The fixed-point pattern of a column of `values`."""
        needed = [self.decimals(v) for v in values if is_number(v) and v != 0]
        return f"{{:.{max(needed, default=0)}f}}{self.unit}"

    def format(self, value) -> str:
        return self.fixed([value]).format(value)


class Percent:
    """A share as a percentage, spaced as the report writes it: 66 %."""

    def __init__(self, decimals: int = 0):
        self.decimals = decimals

    def format(self, value) -> str:
        return f"{100 * value:.{self.decimals}f} %"


def is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


# Every column the report shows, declared once: its label and its format (one precision
# per column: a fixed one, or Significant, fixed per table by the column's values). The
# report's tables pick columns from here by name; a metric a workload reports that is not
# here is shown under its own name with DEFAULT_FORMAT.
COLUMNS = {
    # the results table
    "series": ("series", "{}"),
    "point": ("point", "{}"),
    "n": ("N", "{}"),
    "repeats_ok": ("runs ok", "{}"),
    "time_s": ("time (s, median [95 % CI])", Significant(3)),
    "cv": ("CV", "{:.1%}"),
    "speedup": ("speedup [95 % CI]", "{:.2f}"),
    "efficiency": ("efficiency [95 % CI]", Percent(0)),
    "karp_flatt": ("Karp-Flatt e", "{:.3f}"),
    "warmup_s": ("warm-up epoch (s)", Significant(3)),
    "steady_epoch_s": ("steady epoch (s)", Significant(3)),
    "relative_su": ("relative SU", "{:.2f}"),
    "samples_per_s": ("samples/s", Significant(3)),
    "global_batch": ("global batch", "{:.0f}"),
    "quality": ("quality", Significant(3)),
    "fit": ("in model fit", "{}"),
    "status": ("status", "{}"),
    # the source's table of distributed training
    "job_ids": ("job id(s)", "{}"),
    "config": ("configuration", "{}"),
    "world_size": ("processes (GPUs / devices)", "{:.0f}"),
    "nodes": ("nodes", "{}"),
    "wall_s": ("time (s)", Significant(3)),
    "time_per_epoch_s": ("time / epoch (s)", Significant(3)),
    "val_loss": ("val loss", Significant(3)),
    "val_accuracy": ("val accuracy", "{:.2%}"),
    "band": ("interpretation", "{}"),
    "throughput": ("throughput (samples/s)", Significant(3)),
    # data loading and GPU use (medians over a point's runs)
    "stage_s": ("staging to scratch (slowest copy)", Significant(3, " s")),
    "stagers": ("copies at once", "{:.0f}"),
    "time_to_first_batch_s": ("time to first batch", Significant(3, " s")),
    "wait_fraction": ("time waiting for data", "{:.0%}"),
    "gpu_util_mean_pct": ("GPU utilisation (mean)", "{:.0f} %"),
    "gpu_util_peak_pct": ("GPU utilisation (peak)", "{:.0f} %"),
    "gpu_mem_peak_mb": ("GPU memory (peak)", "{:.0f} MB"),
    # the staging table (per number of copies at once)
    "slowest_s": ("slowest copy", Significant(3, " s")),
    "typical_s": ("typical copy", Significant(3, " s")),
    "growth": ("slowest vs fewest copies", "{:.2f}x"),
    "mb_per_s": ("all copies together", "{:.0f} MB/s"),
    # the framework's share of a step, the charges, the Slurm jobs
    "lightning_ms": ("step time, Lightning (ms)", "{:.3f}"),
    "plain_ms": ("step time, plain PyTorch (ms)", "{:.3f}"),
    "share": ("framework share", "{:.0%}"),
    "core_hours": ("core-hours", "{:.4f}"),
    "gpu_hours": ("GPU-hours", "{:.4f}"),
    "su": ("SU", "{:.4f}"),
    "queue_wait_s": ("queue wait (s)", "{:.1f}"),
    "run_s": ("run (s)", "{:.1f}"),
    "submitted": ("submitted", "{}"),
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
DEFAULT_FORMAT = Significant(3)
# The columns of each part of the report, in their order.
RESULTS = [
    "series", "point", "n", "repeats_ok", "time_s", "cv", "speedup", "efficiency", "karp_flatt",
    "warmup_s", "steady_epoch_s", "relative_su", "samples_per_s", "global_batch", "quality",
    "fit", "status",
]  # fmt: skip
# the table of the source documents, for studies of distributed training; the template
# says `config` and `band` in words
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
# the Slurm jobs' table: the template's names for its cells, and their columns
SCHEDULER = {"queue_wait": "queue_wait_s", "run": "run_s", "submitted": "submitted"}
# what the answers (the headline, the summary at the top) state of their points
ANSWER = ["speedup", "relative_su"]
# Columns shown with their confidence interval: column -> (lo, hi) columns.
WITH_CI = {
    "time_s": ("time_ci_lo", "time_ci_hi"),
    "speedup": ("speedup_ci_lo", "speedup_ci_hi"),
    "efficiency": ("efficiency_ci_lo", "efficiency_ci_hi"),
}


def label(column: str) -> str:
    return COLUMNS.get(column, (column, DEFAULT_FORMAT))[0]


def pattern(column: str) -> str:
    return COLUMNS.get(column, (column, DEFAULT_FORMAT))[1]


def fmt(value, pattern: str) -> str:
    """A value in `pattern`; a dash for a missing one."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    try:
        return pattern.format(value)
    except (ValueError, TypeError):
        return str(value)


def column_formats(rows: list[dict], columns) -> dict[str, str]:
    """Each column's one format in a table of `rows` (Significant ones fixed by the
    column's values)."""
    forms = {}
    for c in columns:
        form = pattern(c)
        forms[c] = form.fixed([r.get(c) for r in rows]) if isinstance(form, Significant) else form
    return forms


def cell(row: dict, column: str, form=None) -> str:
    """A column's value in `form` (default its declared format), with its confidence
    interval if it has one, in the same format."""
    form = form or pattern(column)
    text = fmt(row.get(column), form)
    if column in WITH_CI and text != "–":
        lo, hi = (row.get(c) for c in WITH_CI[column])
        if not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (lo, hi)):
            text += f" [{fmt(lo, form)}, {fmt(hi, form)}]"
    return text


def cells(row: dict, columns, forms: dict | None = None) -> dict[str, str]:
    return {c: cell(row, c, (forms or {}).get(c)) for c in columns}


def table(rows: list[dict], columns) -> list[dict[str, str]]:
    """The cells of every row, each column in its one format for this table."""
    forms = column_formats(rows, columns)
    return [cells(r, columns, forms) for r in rows]


def status_class(status: str) -> str:
    if (
        status.startswith(("failed", "allocation mismatch", "shared CPUs"))
        or "did not converge" in status
    ):
        return "bad"
    return "warn" if status != "ok" else "ok"


def series_of(row: dict) -> str:
    return row["series"] if isinstance(row["series"], str) else ""


def data_uri(path: Path) -> str:
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def profile_links(records: list[Path], report_path: Path) -> list[dict]:
    """Each profiling run of a study: its trace, linked relative to the report, or why
    there is none. The record says whether the trace was written, and its size."""
    links = []
    for path in records:
        trace = path.with_name(f"{path.stem}.trace.json")
        try:
            record = read_record(path)
            reason, size_mb = record["reason"], record["metrics"].get("trace_mb")
        except RecordError as e:
            reason, size_mb = str(e), None
        ok = reason is None and size_mb is not None
        links.append(
            {
                "point": path.stem,
                "href": os.path.relpath(trace, report_path.parent) if ok else None,
                "size_mb": fmt(size_mb, "{:.1f}") if ok else None,
                "reason": None if ok else (reason or "the run wrote no trace"),
            }
        )
    return links


# the results table's columns shown only where a point has a value in them: what the
# runs hold decides (no warm-up for one-epoch runs, no throughput or quality for times
# measured elsewhere or a command that reports none)
OPTIONAL = ["warmup_s", "steady_epoch_s", "samples_per_s", "global_batch", "quality"]


def results_view(summary: list[dict], predictions: dict, has_series: bool) -> dict:
    """The results table: a column only where it has something to show (no series
    column without series, OPTIONAL ones only with a value)."""
    columns = [
        c
        for c in RESULTS
        if (c != "series" or has_series)
        and (c not in OPTIONAL or any(cell(r, c) != "–" for r in summary))
    ]
    excluded = {
        (p["series"], point): reason
        for p in predictions.get("series", [])
        for point, reason in p["excluded"].items()
    }
    fitted = {p["series"]: any(f["ok"] for f in p["fits"]) for p in predictions.get("series", [])}
    forms = column_formats(summary, columns)
    rows = []
    for r in summary:
        series = series_of(r)
        reason = excluded.get((series, r["point"]))
        # only the kind of reason ("unstable", "allocation mismatch"): the status column
        # and the models' list say it in full, and one narrow column saying it twice
        # made a row ten lines tall
        why = reason and reason.split(":", 1)[0]
        r = r | {"series": series or "–", "fit": why or ("yes" if fitted.get(series) else "–")}
        rows.append(
            {
                "cells": [cell(r, c, forms[c]) for c in columns],
                # the fit column's reason is said as one ("no: ...") by the template
                "fit_excluded": columns.index("fit") if reason else None,
                "status_class": status_class(str(r["status"])),
                "is_base": bool(r["is_base"]),
                "unstable": bool(r["unstable"]),
            }
        )
    return {"columns": [label(c) for c in columns], "keys": columns, "rows": rows}


def metrics_view(summary: list[dict], metrics: list[str], shown: set[str], has_series: bool):
    """Per point, the median of every metric the runs reported that the report shows
    nowhere else (each under its own name, in its declared format or DEFAULT_FORMAT)."""
    columns = [c for c in metrics if c not in shown]
    if not columns:
        return None
    keys = ["series", "point"] if has_series else ["point"]
    return {
        "columns": [label(c) for c in keys] + [label(c) for c in columns],
        "rows": [list(row.values()) for row in table(summary, keys + columns)],
    }


def ddp_view(summary: list[dict], ddp: list[dict]) -> dict:
    """The source's table: each cell formatted; `config` and `band` are said by the
    template from their numbers. A column none of the study's points has a value in
    (no job ids for published times, no val loss where the runs report none) is left out."""
    found = {(d["series"], d["point"]): d for d in ddp}
    rows = [r | {"world_size": found[(series_of(r), r["point"])]["world_size"]} for r in summary]
    formatted = table(rows, DDP + ["global_batch"])
    order = [
        c for c in DDP if c in ("config", "band") or any(f[c] not in ("–", "") for f in formatted)
    ]
    view = []
    for r, f in zip(rows, formatted, strict=True):
        d = found[(series_of(r), r["point"])]
        view.append(
            f
            | {"processes_per_node": d["processes_per_node"], "nodes_n": fmt(r["nodes"], "{}")}
            | {"band": d["band"]}
        )
    return {"columns": [label(c) for c in order], "order": order, "rows": view}


def models_view(pred: dict, usable_points: int | None) -> dict:
    """The fitted models of one series, for the report's table."""
    fits = [
        {
            "name": f["name"],
            "formula": f["formula"],
            "params": [
                {
                    "name": k,
                    "value": fmt(v, "{:.4g}"),
                    "lo": fmt(f["param_ci"].get(k, (None, None))[0], "{:.3g}"),
                    "hi": fmt(f["param_ci"].get(k, (None, None))[1], "{:.3g}"),
                }
                for k, v in f["params"].items()
            ],
            "r2": fmt(f["r2"], "{:.4f}"),
            "aicc": fmt(f["aicc"], "{:.2f}"),
            "weight": fmt(f["weight"], "{:.0%}"),
            "selected": f["name"] == pred["selected"],
        }
        for f in pred["fits"]
        if f["ok"]
    ]
    return {
        "series": pred["series"],
        "fits": fits,
        "fit_note": pred.get("fit_note", ""),
        "usable_points": usable_points,
        # a model that did not fit beside one that did, with why
        "unfitted": [{"name": f["name"], "note": f["note"]} for f in pred["fits"] if not f["ok"]]
        if fits
        else [],
        "excluded": pred["excluded"],
        "bound": pred.get("bound"),
    }


def comparison_view(c: dict) -> dict:
    return {
        "a": c["a"] or "(default)",
        "b": c["b"],
        "significant": c["significant"],
        "tested": c["p_value"] is not None,
        "p": fmt(c["p_value"], "{:.3g}"),
        "method": c.get("method", ""),
        "note": c.get("note", ""),
        "per_n": [
            {
                "n": e["n"],
                "ratio": fmt(e["ratio"], "{:.3f}"),
                "lo": fmt(e["lo"], "{:.3f}"),
                "hi": fmt(e["hi"], "{:.3f}"),
                "p": fmt(e["p_value"], "{:.3g}"),
            }
            for e in c["per_n"]
        ],
    }


def staging_view(staging: dict | None) -> dict | None:
    """Per number of copies at once, its copies' times formatted; the first and the
    last as numbers too (the template's sentence compares them)."""
    if staging is None:
        return None
    formatted = table(staging["rows"], ["slowest_s", "typical_s", "growth", "mb_per_s"])
    rows = [
        {"k": r["k"], "runs": r["runs"], "slowest": f["slowest_s"], "typical": f["typical_s"]}
        | {"growth": f["growth"], "rate": f["mb_per_s"]}
        for r, f in zip(staging["rows"], formatted, strict=True)
    ]
    return {"first": staging["rows"][0], "last": staging["rows"][-1], "rows": rows}


def mem_text(mb) -> str:
    """--mem as a site writes it: whole GB where it is, else MB."""
    if mb is None:
        return "–"
    return f"{mb // 1024} GB" if mb % 1024 == 0 else f"{mb} MB"


def request_view(r: dict) -> dict:
    """One point's request, its numbers formatted."""
    return r | {
        "mem": mem_text(r["mem_mb"]),
        "asked_mem": mem_text(r["asked_mem_mb"]),
        "peak_mem": fmt(r["peak_mem_mb"] and r["peak_mem_mb"] / 1024, "{:.2g} GB"),
        "time": fmt(r["time_min"], "{} min"),
        "slowest": fmt(r.get("slowest_s"), "{:.3g} s"),
        "cpu_busy_pct": fmt(r["cpu_busy"] and 100 * r["cpu_busy"], "{:.0f} %"),
        "memory_used_pct": fmt(r["memory_used"] and 100 * r["memory_used"], "{:.0f} %"),
        "gpu_util": fmt(r["gpu_util_pct"], "{:.0f} %"),
        "sacct_cpu_busy_pct": fmt(r["sacct_cpu_busy"] and 100 * r["sacct_cpu_busy"], "{:.0f} %"),
        "sacct_peak_mem": fmt(
            r["sacct_peak_mem_mb"] and r["sacct_peak_mem_mb"] / 1024, "{:.2g} GB"
        ),
    }


def request_for(answer: dict, requests: list[dict]) -> dict | None:
    """The request of the point an answer recommends."""
    for r in requests:
        if r["series"] == answer["series"] and r["n"] == answer["worth_n"]:
            return r
    return None


def decision_steps(answer: dict) -> dict:
    """The two steps the answer stands on, each gain with its interval: the step to the
    recommended N and the step after it (None where there is none, or no interval)."""
    found = {"to": None, "after": None}
    stopped = answer.get("stopped_at") or {}
    for a, b, gain, lo, hi in answer.get("step_intervals", []):
        which = "to" if b == answer["worth_n"] else "after" if a == stopped.get("from_n") else None
        if which and lo is not None:
            found[which] = {"from_n": a, "to_n": b, "gain": fmt(gain, "{:.2f}"),
                            "lo": fmt(lo, "{:.2f}"), "hi": fmt(hi, "{:.2f}")}  # fmt: skip
    return found


def layout_text(cell: dict) -> dict:
    """A layout's numbers for the template's words (nodes x processes x threads)."""
    return cell | {"time": fmt(cell["time_s"], "{:.3g} s")}


def layouts_view(total: dict) -> dict:
    """The best layout of one total against the others, ratios to two decimals."""
    return {
        "n": total["n"],
        "best": layout_text(total["best"]),
        "others": [
            layout_text(o)
            | {
                "ratio": fmt(o["ratio"], "{:.2f}"),
                "lo": fmt(o["lo"], "{:.2f}"),
                "hi": fmt(o["hi"], "{:.2f}"),
            }  # fmt: skip
            for o in total["others"]
        ],
    }


def grid_view(grid: dict | None) -> dict | None:
    """A grid's heat map: each cell's time and efficiency (its band, the cell's colour,
    came with it from the findings)."""
    if grid is None:
        return None
    rows = []
    for row in grid["rows"]:
        formatted = []
        for c in row["cells"]:
            formatted.append(c | {"time": fmt(c["time_s"], "{:.3g} s"),
                                  "efficiency_pct": fmt(c["efficiency"], "{:.0%}")})  # fmt: skip
        rows.append({"value": row["value"], "cells": formatted})
    return grid | {"rows": rows}


def adaptive_view(rounds: dict | None) -> dict | None:
    """An adaptive study's rounds in words and formatted numbers."""
    if rounds is None:
        return None

    def added_text(added: dict) -> str:
        return ", ".join(f"{k} at N = {rounds['points'][p]}" for p, k in added.items())

    refused = rounds["refused"]
    relative = rounds["relative_to_grid"]
    return rounds | {
        "rows": [
            {
                "round": r["round"],
                "added": added_text(r["added"]),
                "why": "; ".join(dict.fromkeys(r["why"].values())),
                "su": fmt(r["su"], "{:.3g}"),
            }
            for r in rounds["rounds"]
        ],  # fmt: skip
        "spent": fmt(rounds["spent_su"], "{:.3g}"),
        "grid": fmt(rounds["grid_su"], "{:.3g}"),
        "relative_pct": fmt(100 * relative, "{:.0f} %") if relative is not None else "–",
        "refused_text": added_text(refused["added"]) if refused else None,
        "refused_su": fmt(refused["round_su"], "{:.3g}") if refused else None,
        "budget_needed": fmt(rounds["budget_needed"], "{:.3g}"),
    }


def study_view(
    analysis: dict,
    summary: pd.DataFrame,
    figures: dict[str, Path],
    profiles: list[dict] = (),
) -> dict:
    """One study of the report, from its analysis.json, summary.csv, figures and
    profiling runs."""
    if "findings" not in analysis:
        raise ValueError("analysis.json has no findings: aggregate the study again")
    found = analysis["findings"]
    study = found["study"]
    rows = summary.to_dict("records")
    has_series = any(series_of(r) for r in rows)
    results = results_view(rows, analysis, has_series)
    distributed = study["distributed"]
    ddp = ddp_view(rows, found["ddp"]) if distributed else None
    telemetry = [
        {"point": t["point"]} | {key: f[column] for key, column in TELEMETRY.items()}
        for t, f in zip(
            found["telemetry"], table(found["telemetry"], TELEMETRY.values()), strict=True
        )
    ]
    framework = found["framework"]
    # every metric the runs reported that no other part of the report shows
    shown = {*results["keys"], *(DDP if distributed else ())}
    if telemetry:
        shown |= set(TELEMETRY.values())
    if framework:
        shown |= {"step_time_median_s", "plain_step_time_median_s"}
    answers = found["answers"]
    requests = [request_view(r) for r in found["requests"]["points"]]
    return study | {
        "scaling": study["scaling"],
        "time_kind": study["time"],
        # "3" or "3-4" runs per point
        "repeats": "-".join(map(str, dict.fromkeys(found["repeats"]))),
        "repeats_most": found["repeats"][1],
        "quality_metric": found["quality_metric"],
        "cost": found["cost"],
        "base": None
        if found["base"] is None
        else found["base"] | {"time": cell(found["base"], "time_s")},
        "columns": results["columns"],
        "rows": results["rows"],
        "metrics": metrics_view(rows, found["metrics"], shown, has_series),
        # times measured elsewhere have no phases to show
        "figures": {
            k: data_uri(v)
            for k, v in figures.items()
            if (k != "phases" or study["measured"] is None)
            and (k != "layouts" or found.get("grid"))
        },
        "failures": found["failures"],
        "mismatches": found["mismatches"],
        "disturbed": found["disturbed"],
        "profiles": list(profiles),
        # the answer's numbers in the results table's formats
        "answers": [
            a
            | {"request": request_for(a, requests), "cells": cells(a, ANSWER)}
            # the headline states efficiency without its interval, beside the speedup's
            | {"efficiency_text": fmt(a.get("efficiency"), pattern("efficiency"))}
            | {"steps": decision_steps(a)}
            for a in answers
        ],
        "requests": requests,
        "accounting_note": found["requests"]["accounting_note"],
        "layouts": [layouts_view(t) for t in found.get("layouts", [])],
        "adaptive": adaptive_view(found.get("adaptive")),
        "grid": grid_view(found.get("grid")),
        "models": [
            models_view(p, a["usable_points"])
            for p, a in zip(analysis.get("series", []), answers, strict=True)
        ],
        "comparisons": [comparison_view(c) for c in analysis.get("comparisons", [])],
        "ddp": ddp,
        "framework": framework and cells(framework, ["lightning_ms", "plain_ms", "share"]),
        "unstable": found["unstable"],
        "overlapped": found["overlapped"],
        "shared_machines": found["shared_machines"],
        "charges": cells(found["charges"], ["core_hours", "gpu_hours", "su"]),
        "scheduler": [
            j | {k: f[c] for k, c in SCHEDULER.items()}
            for j, f in zip(
                found["scheduler"], table(found["scheduler"], SCHEDULER.values()), strict=True
            )
        ],
        "allocations": found.get("allocations"),
        "received": [
            r | {"got": [[label(c), values] for c, values in r["got"]]} for r in found["received"]
        ],
        "gpu_verdict": analysis.get("gpu_verdict"),
        "telemetry": telemetry,
        "staging": staging_view(found["staging"]),
        "environment": [(label(c), values) for c, values in found["environment"]],
    }
