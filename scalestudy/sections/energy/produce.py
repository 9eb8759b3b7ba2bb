"""Energy to result: per point its median energy per result with a 95 % interval, its
ratio to the base case and the point that uses least, from each run's energy
(scalestudy.analysis.run_energy); points are compared only on their base case's source:
docs/report.md, "Energy to result".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalestudy.analysis.cost.cost import Cost
from scalestudy.analysis.decisions import recommendation
from scalestudy.analysis.run_energy import WINDOWS
from scalestudy.analysis.stats import intervals
from scalestudy.analysis.tables import measures_point
from scalestudy.contract import Answer
from scalestudy.records import finite, jsonable
from scalestudy.sections.energy.contract import DATA, Energy, EnergyAnswer, EnergyPoint

SOURCE_WORDS = {
    "rapl+nvml": "RAPL (CPU packages of the node) + NVML (GPU boards)",
    "rapl": "RAPL (CPU packages of the node)",
    "slurm": "Slurm accounting (ConsumedEnergy, the site's energy plugin)",
    "nvml": "NVML (GPU boards only)",
}


def produce(given) -> DATA:
    return energy_findings(given.summary, given.runs, given.analysis.findings.answers, given.study)


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
