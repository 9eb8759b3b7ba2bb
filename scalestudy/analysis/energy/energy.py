"""Energy to result: each run's measured energy, and per point its median with a 95 %
interval, its ratio to the base case and the point that uses least. Only counters count,
never an estimate; a run's energy comes from one source (RAPL + NVML, else Slurm's
ConsumedEnergy, else NVML alone), and points are compared only on their base case's
source: docs/measuring.md, "Energy", and docs/report.md, "Energy to result".
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd

from scalestudy.analysis.cost.cost import Cost
from scalestudy.analysis.decisions import recommendation
from scalestudy.analysis.decisions.request import run_accounting_keys
from scalestudy.analysis.stats import intervals
from scalestudy.compute.harness import TRAINING
from scalestudy.contract import Answer
from scalestudy.records import finite, jsonable
from scalestudy.sections.energy.contract import Energy, EnergyAnswer, EnergyPoint

# the runs table's energy columns from a record (record_columns): per counter, the
# run's whole figure and the figure of the phases each `time` basis uses, or why none
BASES = {"wall": "", "train": "_train", "steady": "_steady"}
RECORD_COLUMNS = tuple(
    f"energy_{part}{basis}_{what}"
    for part in ("gpu", "node")
    for basis in BASES.values()
    for what in ("j", "why")
)
NO_RECORD_ENERGY = "no counter: the record holds no energy reading"
NO_PHASE_ENERGY = "no energy per phase in the record (it was made before phases were read)"
# what each basis's energy covers, as the report says it
WINDOWS = {
    "wall": "the workload's whole run after start-up (no counter reads the start-up, "
    "which the time includes)",
    "train": "the training epochs, as the times",
    "steady": "the median epoch after the first, as the times",
}
SOURCE_WORDS = {
    "rapl+nvml": "RAPL (CPU packages of the node) + NVML (GPU boards)",
    "rapl": "RAPL (CPU packages of the node)",
    "slurm": "Slurm accounting (ConsumedEnergy, the site's energy plugin)",
    "nvml": "NVML (GPU boards only)",
}


# A window read at its 2k ends (k phases) from a counter that moves every u seconds is
# off by up to 2ku seconds of its power: a figure that may be off by more than this
# share of itself is not given (NVML's counter, seen moving every 0.1 s, needs about 2 s
# for one phase). RAPL's counters move about every millisecond: not judged.
MAX_COUNTER_ERROR = 0.1


def too_coarse(seconds: list[float], update_s: float | None) -> str | None:
    """Why phases of `seconds` are too short for a counter moving every `update_s`."""
    if not update_s or not seconds:
        return None
    total = sum(seconds)
    bound = 2 * len(seconds) * update_s / total if total > 0 else math.inf
    if bound <= MAX_COUNTER_ERROR:
        return None
    phases = "a phase" if len(seconds) == 1 else f"{len(seconds)} phases"
    return (
        f"too short for the counter: {phases} of {total:.3g} s from a counter that moves "
        f"every {update_s:.2g} s (up to {min(bound, 9.99):.0%} off)"
    )


def record_columns(record: dict) -> dict:
    """A record's energy as runs-table columns (RECORD_COLUMNS): per counter, joules or
    why not measured, for the whole run and for the phases of each time basis (tables'
    train_s: every epoch; steady_epoch_s: the median epoch after the first)."""
    energy = record.get("energy") or {}
    phases = record.get("phases", [])
    epochs = [p for p in phases if p["kind"] in TRAINING]
    epoch_s = [p["seconds"] for p in epochs]
    # the whole run's window: the workload's run after start-up
    startup_s = sum(p["seconds"] for p in phases if p["kind"] == "startup")
    run_s = (record.get("wall_s") or 0) - startup_s
    columns = {}
    for name in ("gpu", "node"):
        part = energy.get(name) or {}
        whole = part.get("joules")
        why = part.get("not_measured") if part else NO_RECORD_ENERGY
        per_epoch = [(p.get("energy") or {}).get(f"{name}_j") for p in epochs]
        train = steady = None
        phase_why = steady_why = why
        if whole is not None:
            if not epochs:
                phase_why = steady_why = "no training epoch timed"
            elif any(j is None for j in per_epoch):
                phase_why = steady_why = NO_PHASE_ENERGY
            else:
                train, phase_why = sum(per_epoch), None
                if len(per_epoch) > 1:
                    steady, steady_why = statistics.median(per_epoch[1:]), None
                else:
                    steady_why = "one epoch: no steady epoch"
        update_s = part.get("update_s")
        for basis, joules, reason, seconds in (
            ("", whole, why, [run_s]),
            ("_train", train, phase_why, epoch_s),
            ("_steady", steady, steady_why, [statistics.median(epoch_s[1:] or [0.0])]),
        ):
            coarse = too_coarse(seconds, update_s) if joules is not None else None
            if coarse:
                joules, reason = None, coarse
            columns[f"energy_{name}{basis}_j"] = joules
            columns[f"energy_{name}{basis}_why"] = None if joules is not None else reason
    return columns


def slurm_part(job: dict | None, exclusive) -> tuple[float | None, str | None]:
    """(joules, why not) of a run from its sacct entry (request.consumed_energy)."""
    if job is None:
        return None, "no counter: Slurm accounting has no entry for this run"
    part = job.get("energy") or {}
    if part.get("joules") is None:
        return None, part.get("not_measured") or "no counter: Slurm accounting gathered no energy"
    if exclusive != "NO":
        return None, "shared node: Slurm's node energy counts others' jobs too"
    return part["joules"], None


def chosen(gpu, node, slurm) -> tuple[float | None, str | None]:
    """(joules, source): RAPL (+ NVML, disjoint parts of the node), else Slurm's figure
    (its scope unknown: NVML is not added, which could count the GPUs twice), else NVML."""
    if node is not None:
        return node + (gpu or 0.0), "rapl+nvml" if gpu is not None else "rapl"
    if slurm is not None:
        return slurm, "slurm"
    if gpu is not None:
        return gpu, "nvml"
    return None, None


def _taken(row, basis: str, s_j, s_why) -> tuple[float | None, str | None, str | None]:
    """(joules, source, why none) of a run over one window: the counters' parts of
    `basis` (BASES) and Slurm's figure, by the order of `chosen`."""
    gpu = finite(getattr(row, f"energy_gpu{basis}_j"))
    node = finite(getattr(row, f"energy_node{basis}_j"))
    joules, src = chosen(gpu, node, s_j) if row.status == "ok" else (None, None)
    if joules is not None:
        return joules, src, None
    if row.status != "ok":
        return None, None, "the run failed"
    # a run that asked for no GPU: its GPU counter is no reason worth saying
    no_gpu = getattr(row, "gpus", None) == 0
    said = (
        ("GPU", None if no_gpu else getattr(row, f"energy_gpu{basis}_why")),
        ("node", getattr(row, f"energy_node{basis}_why")),
        ("Slurm", s_why),
    )
    reasons = [f"{what}: {text}" for what, text in said if isinstance(text, str) and text]
    return None, None, "; ".join(reasons) or "no counter: no energy reading"


def with_energy(runs: pd.DataFrame, jobs: dict[str, dict], time: str) -> pd.DataFrame:
    """The runs table with each run's energy: Slurm's figure (energy_slurm_j); the run's
    energy taken (energy_j), its source (energy_source) and, where none, why
    (energy_why); and likewise its energy per result over the phases of the study's
    `time` (energy_result_j, energy_result_source, energy_result_why).
    `jobs`: accounting's answer (request.accounting), {} where sacct was not asked."""
    runs = runs.copy()
    for column in RECORD_COLUMNS:
        if column not in runs:
            runs[column] = None
    keys = run_accounting_keys(runs) if len(runs) else []
    exclusive = runs.get("slurm_oversubscribe", pd.Series(None, index=runs.index, dtype=object))
    # Slurm's figure is the whole job's or step's: no window but the whole run's
    slurm_covers = time == "wall"
    found = []
    for row, key, shared in zip(runs.itertuples(), keys, exclusive, strict=True):
        s_j, s_why = (None, None) if key is None else slurm_part(jobs.get(key), shared)
        whole = _taken(row, "", s_j, s_why)
        if slurm_covers:
            result = whole
        else:
            whole_job = f"its figure is the whole job's, not {WINDOWS[time].split(',')[0]}"
            result = _taken(row, BASES[time], None, whole_job if s_j is not None else s_why)
        found.append((s_j, s_why, *whole, *result))
    columns = ["energy_slurm_j", "energy_slurm_why", "energy_j", "energy_source", "energy_why"]
    columns += ["energy_result_j", "energy_result_source", "energy_result_why"]
    energy = pd.DataFrame(found, index=runs.index, columns=columns)
    joules = [c for c in energy if c.endswith("_j")]
    return runs.assign(**energy.astype(dict.fromkeys(joules, float)))


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


def point_energy(
    group: pd.DataFrame, keep_mismatched: bool = False, keep_disturbed: bool = False
) -> tuple[np.ndarray, str | None, str | None]:
    """A point's energies from its most common source, that source, and why there are
    none: over the runs its time uses (measures_point). Columns, not rows, are selected:
    a selection of the table's rows cost a millisecond each."""
    counts = measures_point(group, keep_mismatched, keep_disturbed)
    if "energy_result_j" not in group or not counts.any():
        return np.array([]), None, "no run that measures the point"
    energies = group["energy_result_j"][counts]
    measured = energies.notna()
    if not measured.any():
        reasons = group["energy_result_why"][counts].dropna().astype(str)
        return np.array([]), None, reasons.iloc[0] if len(reasons) else "not measured"
    sources = group["energy_result_source"][counts][measured]
    source = sources.value_counts().index[0]
    return energies[measured][sources == source].to_numpy(float), str(source), None


def energy_findings(summary: pd.DataFrame, runs: pd.DataFrame, answers: list[Answer], study):
    """Per point the median energy per result (one run) with its 95 % interval, its ratio
    to the base case (ratio of medians, Welch interval: ratio_ci) and the energy Pareto front
    against time; per series the least-energy point and what the recommended point costs
    in energy against the base case. None for a study without records (times measured
    elsewhere)."""
    if "energy_result_j" not in runs:
        return None
    points, series_answers = [], []
    # the runs that count, each point's selected once, and only the summary's columns
    # read here: a selection from the whole table per point took most of this time
    kept = runs[measures_point(runs, study.include_mismatched, study.include_shared)]
    by_point = dict(list(kept.groupby("point", sort=False)))
    no_runs = kept.iloc[:0]
    columns = summary[["series", "point", "n", "time_s", "is_base"]]
    for name, rows in columns.groupby(columns["series"].fillna(""), sort=False):
        found = {}
        for row in rows.itertuples():
            values, source, why = point_energy(by_point.get(row.point, no_runs), True, True)
            median, lo, hi = intervals.median_ci(values)
            found[int(row.n)] = {
                "series": name,
                "point": row.point,
                "n": int(row.n),
                "runs": int(values.size),
                "energy_j": median if values.size else None,
                "energy_ci_lo": lo,
                "energy_ci_hi": hi,
                "source": source,
                "source_words": SOURCE_WORDS.get(source),
                "not_measured": why,
                "time_s": row.time_s,
                "values": values,
            }
        base = next((found[int(r.n)] for r in rows.itertuples() if r.is_base), None)
        # the base case's source, else the most common one (a tie: the first measured)
        sources = [p["source"] for p in found.values() if p["source"]]
        common = max(sources, key=sources.count, default=None)
        basis = base["source"] if base and base["source"] else common
        for p in found.values():
            p["comparable"] = p["source"] == basis and p["source"] is not None
            related = p["comparable"] and base is not None and base["source"] == basis
            ratio = intervals.ratio_ci(p["values"], base["values"]) if related else (None,) * 3
            p["relative_energy"], p["relative_ci_lo"], p["relative_ci_hi"] = ratio
            p["pareto"] = p["least"] = False
        for p in found.values():
            del p["values"]
        usable = [p for p in found.values() if p["comparable"]]
        front = recommendation.pareto_front(
            [p["time_s"] for p in usable], [p["energy_j"] for p in usable]
        )
        for p, on in zip(usable, front, strict=True):
            p["pareto"] = bool(on)
        least = min(usable, key=lambda p: p["energy_j"], default=None)
        if least is not None:
            least["least"] = True
        points.extend(found.values())
        series_answers.append(_answer(name, found, base, least, answers))
    measured, why = any(p["energy_j"] is not None for p in points), None
    if not measured:
        reasons = runs.loc[runs["status"] == "ok", "energy_result_why"].dropna().astype(str)
        why = reasons.value_counts().index[0] if len(reasons) else "no successful run"
    points = [EnergyPoint(**jsonable(p)) for p in points]
    return Energy(
        measured, why, points, series_answers, WINDOWS[study.time], Cost.of(study).energy_weight
    )


SAME_SOURCE = "not measured from the same source as the base case"


def _answer(series: str, found: dict, base: dict | None, least: dict | None, answers):
    """What the recommended point costs in energy against the base case."""
    answer = next((a for a in answers if (a.series or "") == series), None)
    worth = answer and answer.worth_n
    chosen = found.get(int(worth), {}) if worth is not None else {}
    # why the recommended point has no ratio (None: it has one, or there is no point)
    why = None
    if chosen and chosen["relative_energy"] is None:
        why = chosen["not_measured"] or (base or {}).get("not_measured") or SAME_SOURCE
    least = least or {}
    return EnergyAnswer(
        series,
        chosen.get("point"),
        answer.speedup if chosen else None,
        finite(chosen.get("relative_energy")),
        why,
        base and base["point"],
        least.get("point"),
        finite(least.get("relative_energy")),
    )
