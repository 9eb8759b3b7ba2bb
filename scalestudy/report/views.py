"""What the report shows of a study: analysis.json and summary.csv rows as display rows.

analysis.json arrives as its typed contract (scalestudy.contract), read by attribute. A
view chooses columns and formats each number with its column's one precision (COLUMNS);
it computes and decides nothing (aggregation did: scalestudy.analysis.findings) and says
nothing in sentences (the template does, scalestudy/report/templates/report.html.j2).
"""

from __future__ import annotations

import base64
import dataclasses
import math
import os
from pathlib import Path

import pandas as pd

from scalestudy import contract
from scalestudy.contract import Comparison, Rounds, SeriesFit
from scalestudy.records import RecordError, finite, read_record
from scalestudy.sections import SECTIONS, Analysis, part
from scalestudy.thresholds import BANDS_WORDS, BOTTLENECK_WORDS, INSTABILITY_WORDS, band_words


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
        needed = [self.decimals(v) for v in values if finite(v)]
        return f"{{:.{max(needed, default=0)}f}}{self.unit}"

    def format(self, value) -> str:
        return self.fixed([value]).format(value)


class Percent:
    """A share as a whole percentage, spaced as the report writes it: 66 %."""

    def format(self, value) -> str:
        return f"{100 * value:.0f} %"


def shallow(part) -> dict:
    """A part of the contract's fields, one level deep (its own parts stay dataclasses),
    for a view to add its formatted text to."""
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}


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
    "efficiency": ("efficiency [95 % CI]", Percent()),
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
    # what the runs received (distinct values over the runs)
    "cpus_usable": ("usable CPUs", "{}"),
    "threads_given": ("threads given", "{}"),
    "torch_threads": ("torch threads", "{}"),
    "gpus_visible": ("GPUs visible", "{}"),
    "mem_limit_mb": ("memory limit (MB)", "{}"),
    "hosts": ("hosts", "{}"),
}
DEFAULT_FORMAT = Significant(3)
# The columns of each part of the report, in their order.
RESULTS = [
    "series",
    "point",
    "n",
    "repeats_ok",
    "time_s",
    "cv",
    "speedup",
    "efficiency",
    "karp_flatt",
    "warmup_s",
    "steady_epoch_s",
    "relative_su",
    "samples_per_s",
    "global_batch",
    "quality",
    "fit",
    "status",
]
# the table of the source documents, for studies of distributed training; the template
# says `config` and `band` in words
DDP = [
    "job_ids",
    "config",
    "world_size",
    "nodes",
    "wall_s",
    "time_per_epoch_s",
    "val_loss",
    "val_accuracy",
    "speedup",
    "efficiency",
    "band",
    "throughput",
]
# what the answers' headlines state of their points
ANSWER = ["speedup", "relative_su"]
# Columns shown with their confidence interval: column -> (lo, hi) columns.
WITH_CI = {
    "time_s": ("time_ci_lo", "time_ci_hi"),
    "speedup": ("speedup_ci_lo", "speedup_ci_hi"),
    "efficiency": ("efficiency_ci_lo", "efficiency_ci_hi"),
}
# a column's interval that reaches less than the headers' level (few runs) says the
# level it reaches: its row's column here (the analysis leaves it empty otherwise)
CI_LEVEL = {"time_s": "time_ci_level"}


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
    forms = {c: pattern(c) for c in columns}
    return {
        c: f.fixed([r.get(c) for r in rows]) if isinstance(f, Significant) else f
        for c, f in forms.items()
    }


def cell(row: dict, column: str, form=None) -> str:
    """A column's value in `form` (default its declared format), with its confidence
    interval if it has one, in the same format."""
    form = form or pattern(column)
    text = fmt(row.get(column), form)
    if column in WITH_CI and text != "–":
        lo, hi = (fmt(row.get(c), form) for c in WITH_CI[column])
        if "–" not in (lo, hi):
            text += f" [{lo}, {hi}]"
            level = row.get(CI_LEVEL.get(column, ""))
            if isinstance(level, float) and not math.isnan(level):
                text += f" ({100 * level:g} % CI)"
    return text


def cells(row: dict, columns, forms: dict | None = None) -> dict[str, str]:
    return {c: cell(row, c, (forms or {}).get(c)) for c in columns}


def table(rows: list[dict], columns) -> list[dict[str, str]]:
    """The cells of every row, each column in its one format for this table."""
    forms = column_formats(rows, columns)
    return [cells(r, columns, forms) for r in rows]


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


# the results table's columns that compare a point with its series' base case
SELF_COMPARED = ["speedup", "efficiency", "karp_flatt", "relative_su"]
# the results table's columns shown only where a point has a value in them: what the
# runs hold decides (no warm-up for one-epoch runs, no throughput or quality for times
# measured elsewhere or a command that reports none)
OPTIONAL = ["warmup_s", "steady_epoch_s", "samples_per_s", "global_batch", "quality"]


def results_view(summary: list[dict], fitted_series: list[SeriesFit], has_series: bool) -> dict:
    """The results table: a column only where it has something to show (no series
    column without series, OPTIONAL ones only with a value)."""
    columns = [
        c
        for c in RESULTS
        if (c != "series" or has_series)
        and (c not in OPTIONAL or any(cell(r, c) != "–" for r in summary))
    ]
    excluded = {
        (p.series, point): reason for p in fitted_series for point, reason in p.excluded.items()
    }
    fitted = {p.series: any(f.ok for f in p.fits) for p in fitted_series}
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
                "status_class": r["status_kind"],
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


def ddp_view(summary: list[dict], ddp: list[contract.DdpPoint]) -> dict:
    """The source's table: each cell formatted; `config` is said by the template from
    its numbers, `band` in its words. A column none of the study's points has a value in
    (no job ids for published times, no val loss where the runs report none) is left out."""
    found = {(d.series, d.point): d for d in ddp}
    rows = [r | {"world_size": found[(series_of(r), r["point"])].world_size} for r in summary]
    formatted = table(rows, DDP + ["global_batch"])
    order = [
        c for c in DDP if c in ("config", "band") or any(f[c] not in ("–", "") for f in formatted)
    ]
    view = []
    for r, f in zip(rows, formatted, strict=True):
        d = found[(series_of(r), r["point"])]
        said = {"processes_per_node": d.processes_per_node, "band": band_words(d.band)}
        view.append(f | said | {"nodes_count": r["nodes"]})
    return {"columns": [label(c) for c in order], "order": order, "rows": view}


def comparison_view(c: Comparison) -> dict:
    per_n = [
        shallow(e)
        | {k: fmt(getattr(e, k), "{:.3f}") for k in ("ratio", "lo", "hi")}
        | {"p": fmt(e.p_value, "{:.3g}")}
        for e in c.per_n
    ]
    return shallow(c) | {"a": c.a or "(default)", "p": fmt(c.p_value, "{:.3g}"), "per_n": per_n}


def step_text(step: contract.Step | None) -> dict | None:
    """A step the answer stands on, its gain and interval to two decimals."""
    return step and shallow(step) | {
        k: fmt(getattr(step, k), "{:.2f}") for k in ("gain", "lo", "hi")
    }


def adaptive_view(rounds: Rounds | None) -> dict | None:
    """An adaptive study's rounds in words and formatted numbers."""
    if rounds is None:
        return None

    def added_text(added: dict) -> str:
        # points of several series are named by their labels
        at = {
            p: f"N = {n}" if rounds.question == "how many" else p for p, n in rounds.points.items()
        }
        return ", ".join(f"{k} at {at[p]}" for p, k in added.items())

    refused, to_decide = rounds.refused, rounds.to_decide
    rows = [
        shallow(r)
        | {
            "added": added_text(r.added),
            "su": fmt(r.su, "{:.3g}"),
            "why": "; ".join(dict.fromkeys(r.why.values())),
        }
        for r in rounds.rounds
    ]
    relative = rounds.relative_to_grid
    decide = to_decide and {
        "setting": f"{to_decide.key}: {to_decide.value:g}",
        "added": added_text(to_decide.added),
        "su": fmt(to_decide.round_su, "{:.2g}"),
    }
    return shallow(rounds) | {
        "rows": rows,
        "budget": fmt(rounds.budget_su, "{:g}"),
        "spent": fmt(rounds.spent_su, "{:.3g}"),
        "grid": fmt(rounds.grid_su, "{:.3g}"),
        "relative_pct": fmt(relative and 100 * relative, "{:.0f} %"),
        "refused_text": added_text(refused.added) if refused else None,
        "refused_su": fmt(refused.round_su, "{:.3g}") if refused else None,
        "budget_needed": fmt(rounds.budget_needed, "{:.3g}"),
        "shared": added_text(rounds.shared),
        "to_decide": to_decide and shallow(to_decide) | decide,
    }


def runs_by_count(added: dict) -> dict | None:
    """The runs to add at each point ({where: runs}; none where 0 or None) as the words
    group them (by count, most first), and the most any point needs: by how much
    `repeats` is raised."""
    groups = {}
    for where, k in added.items():
        groups.setdefault(k, []).extend([str(where)] if k else [])
    groups = sorted((k, where) for k, where in groups.items() if k)
    return groups and {"groups": groups[::-1], "most": groups[-1][0]} or None


def with_ci(value, lo, hi, form: str | None = None, unit: str = "") -> str:
    """A value and its interval in one format (three significant digits unless given):
    1.27x [1.21, 1.33]; the value alone without an interval."""
    form = form or Significant(3).fixed([value, lo, hi])
    text = fmt(value, form) + unit
    known = finite(lo) is not None and finite(hi) is not None
    return f"{text} [{fmt(lo, form)}, {fmt(hi, form)}]" if known else text


# --- the study ---------------------------------------------------------------------------


def pct(share: float) -> str:
    """A share of the study's rules (a margin, a limit) in per cent, without the sign:
    the template says "10 %"."""
    return fmt(100 * share, "{:g}")


def drawn(name: str, data) -> bool:
    """Whether a section's figure is drawn (and shown): where it has data, and its
    view's drawn(data) says so if it has one."""
    view = part(name, "view")
    return data is not None and (not hasattr(view, "drawn") or view.drawn(data))


def study_view(
    analysis: Analysis | dict,
    summary: pd.DataFrame,
    figures: dict[str, Path],
    profiles: list[dict] = (),
) -> dict:
    """One study of the report, from its analysis.json (the contract, or its JSON
    values, loaded strictly), summary.csv, figures and profiling runs."""
    if isinstance(analysis, dict):
        analysis = Analysis.from_values(analysis)
    found = analysis.findings
    study = found.study
    energy = analysis.section("energy")
    # a series of one point: no point is compared with itself (its ratios left blank)
    alone = {p.series or "" for p in analysis.section("series") if p.one_point}
    rows = summary.to_dict("records")
    rows = [r | dict.fromkeys(SELF_COMPARED) if series_of(r) in alone else r for r in rows]
    has_series = any(series_of(r) for r in rows)
    results = results_view(rows, analysis.section("series"), has_series)
    distributed = study.distributed
    ddp = ddp_view(rows, found.ddp) if distributed else None
    framework = found.framework
    # every metric the runs reported that no other part of the report shows
    shown = {*results["keys"], *(DDP if distributed else ())}
    # and those a section with data shows itself (its view's SHOWS)
    for name in SECTIONS:
        if analysis.sections[name]:
            shown |= set(getattr(part(name, "view"), "SHOWS", ()))
    if framework:
        shown |= {"step_time_median_s", "plain_step_time_median_s"}
    answers = found.answers
    # each section's view, in the registry's order (scalestudy.sections); a section
    # with no data in this study (None) has none
    data = {name: analysis.sections[name] for name in SECTIONS}
    views = {name: v if v is None else part(name, "view").view(v) for name, v in data.items()}
    result_text = part("time_to_result", "view").result_text
    request_for = part("requests", "view").request_for
    view = (
        shallow(study)
        | shallow(found)
        | {
            "time_kind": study.time,
            "mem_margin": pct(study.request.mem_margin),
            "time_margin": pct(study.request.time_margin),
            "tolerance": pct(study.tolerance),
            "instability": INSTABILITY_WORDS,
            "bottleneck": BOTTLENECK_WORDS,
            "bands": BANDS_WORDS,
            "deadline": fmt(study.deadline_s, "{:g}"),
            "budget": fmt(study.budget_su, "{:g}"),
            # "3" or "3-4" runs per point
            "repeats": "-".join(map(str, dict.fromkeys(found.repeats))),
            "repeats_most": found.repeats[1],
            "base_failure": found.base_failure,
            "base": None
            if found.base is None
            else shallow(found.base) | {"time": cell(shallow(found.base), "time_s")},
            "columns": results["columns"],
            "rows": results["rows"],
            "metrics": metrics_view(rows, found.metrics, shown, has_series),
            # times measured elsewhere have no phases to show
            "figures": {
                k: data_uri(v)
                for k, v in figures.items()
                if (k != "phases" or study.measured is None)
                # a section's figure where it has something to draw
                and (k not in SECTIONS or drawn(k, data[k]))
            },
            "profiles": list(profiles),
            # the answer's numbers in the results table's formats
            "answers": [
                shallow(a)
                | {"request": request_for(analysis.section("requests"), a)}
                | {"cells": cells(shallow(a), ANSWER)}
                # the headline states efficiency without its interval, beside the speedup's
                | {"efficiency_text": fmt(a.efficiency, pattern("efficiency"))}
                | alone_point(a, rows, analysis.section("series"))
                | next_runs(a.next_measurements)
                | {"steps": {"to": step_text(a.steps.to), "after": step_text(a.steps.after)}}
                | {"threshold": fmt(a.threshold, "{:g}"), "zone": fmt(a.zone, "{:.2g}")}
                # the answer's time to result, where Slurm gave waits
                | {"result_text": result_text(views["time_to_result"], a.point)}
                # energy to result: the answer's cost in energy, where measured
                | {"energy": part("energy", "view").energy_of_answer(energy, a.series)}
                for a in answers
            ],
            "any_fitted": any(a.fitted for a in answers),
            "adaptive": adaptive_view(found.adaptive),
            "comparisons": [comparison_view(c) for c in analysis.comparisons],
            "ddp": ddp,
            "framework": framework
            and cells(shallow(framework), ["lightning_ms", "plain_ms", "share"]),
            "charges": cells(shallow(found.charges), ["core_hours", "gpu_hours", "su"]),
            "fingerprint": [(k, v) for k, v in found.fingerprint.items() if v],
            # the answers' and the requests' time to result
            "result_times": views["time_to_result"],
            # each section's template and place in the study's part (its view's PLACE;
            # by default after the fits)
            "sections": [
                {
                    "template": f"section:{name}",
                    "v": v,
                    "place": getattr(part(name, "view"), "PLACE", "fits"),
                }
                for name, v in views.items()
                if v is not None
            ],
        }
    )
    # the first table's lines: each section's line.html.j2 where its view has a RANK (its
    # question: the study's main one first, then how many, then the baseline beside them)
    asks = [n for n, v in views.items() if v and hasattr(part(n, "view"), "RANK")]
    asks = [n for n in asks if getattr(part(n, "view"), "asks", bool)(views[n])]
    asks.sort(key=lambda name: part(name, "view").RANK)
    return view | {
        "questions": [
            {"template": f"section:{name}/line", "v": views[name], "alone": len(asks) == 1}
            for name in asks
        ]
    }


def alone_point(a: contract.Answer, rows: list[dict], fits: list[SeriesFit]) -> dict:
    """Whether an answer's series has one good point: its time and SU a run, then, are
    what the headline says (it compares no point with itself)."""
    if a.worth_n is None or not any(f.one_point for f in fits if f.series == a.series):
        return {"one_point": False}
    row = next(r for r in rows if series_of(r) == (a.series or "") and r["point"] == a.point)
    time = with_ci(*(row[k] for k in ("time_s", "time_ci_lo", "time_ci_hi")), unit=" s")
    return {"one_point": True, "time": time, "su": fmt(row["su"], "{:.3g}")}


def next_runs(more: contract.NextMeasurements | None) -> dict:
    """The runs that would likely decide an answer, as the words group them (runs_by_count)."""
    repeats = more.repeats if more else []
    at_least = any(r.at_least for r in repeats)
    return {
        "more": runs_by_count({f"N = {r.n}": r.more for r in repeats}),
        "more_at_least": at_least,
    }
