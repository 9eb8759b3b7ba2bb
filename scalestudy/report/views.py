"""What the report shows of a study: analysis.json and summary.csv rows as display rows.

analysis.json arrives as its typed contract (scalestudy.contract), read by attribute. A
view chooses columns and formats each number with its column's one precision (COLUMNS);
it computes and decides nothing (aggregation did: scalestudy.analysis.findings) and says
nothing in sentences (the template does, scalestudy/report/templates/report.html.j2).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pandas as pd

from scalestudy import contract
from scalestudy.contract import Comparison, Rounds, SeriesFit
from scalestudy.records import RecordError, read_record
from scalestudy.sections import SECTIONS, Analysis, part
from scalestudy.sections.formatting import (
    cell,
    cells,
    column_formats,
    fmt,
    label,
    pattern,
    pct,
    runs_by_count,
    shallow,
    table,
    with_ci,
)
from scalestudy.thresholds import BANDS_WORDS, BOTTLENECK_WORDS, INSTABILITY_WORDS, band_words

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


# --- the study ---------------------------------------------------------------------------


def added_by_sections(views: dict, answer: contract.Answer) -> dict:
    """What each section's view adds to an answer's (its of_answer(view, answer)), in the
    registry's order."""
    added = {}
    for name, v in views.items():
        hook = getattr(part(name, "view"), "of_answer", None)
        added |= hook(v, answer) if hook else {}
    return added


def has_answer(name: str) -> bool:
    """Whether a section shows a part in each answer's block (its answer.html.j2)."""
    return Path(part(name, "contract").__file__).with_name("answer.html.j2").is_file()


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
                | {"cells": cells(shallow(a), ANSWER)}
                # the headline states efficiency without its interval, beside the speedup's
                | {"efficiency_text": fmt(a.efficiency, pattern("efficiency"))}
                | alone_point(a, rows, analysis.section("series"))
                | next_runs(a.next_measurements)
                | {"steps": {"to": step_text(a.steps.to), "after": step_text(a.steps.after)}}
                | {"threshold": fmt(a.threshold, "{:g}"), "zone": fmt(a.zone, "{:.2g}")}
                | added_by_sections(views, a)
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
            # each section's view by name, for another section's partial
            "views": views,
            "of_answers": [
                {"template": f"section:{name}/answer", "v": views[name]}
                for name in SECTIONS
                if has_answer(name)
            ],
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
