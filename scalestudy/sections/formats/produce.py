"""Which data format loads fastest: per point, each series' loading time (its staging
and its reading), the fastest against every other with a 95 % interval on their ratio
(ratio_ci), decided where every interval lies above 1 or within FORMATS_ALIKE of it.
The rules and their simulation: docs/cpu-or-gpu.md ("Which format loads fastest")."""

import math

import numpy as np
import pandas as pd

from scalestudy.analysis.stats.intervals import ratio_ci, runs_to_decide, side_of_one
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.records import jsonable
from scalestudy.sections.formats.contract import DATA, FormatLoad, FormatsAt
from scalestudy.thresholds import FORMATS_ALIKE


def produce(given) -> DATA:
    study = given.study
    if study.workload != "data_formats" or len(study.series_names) < 2:
        return None
    runs = usable_runs(given.runs, study)
    zero = pd.Series(0.0, index=runs.index)
    stage = pd.to_numeric(runs.get("stage_s", zero), errors="coerce").fillna(0.0)
    # with `train`, reading is what the steps waited for data; else the timed reading
    read = pd.to_numeric(runs.get("wait_s", zero * math.nan), errors="coerce")
    runs = runs.assign(load_s=stage + read.fillna(pd.to_numeric(runs["train_s"])), stage=stage)
    found = []
    for n, at in runs[runs["load_s"] > 0].groupby("n"):
        points = dict(list(at.groupby("point", sort=False)))
        if len(points) > 1:
            found.append(formats_at(int(n), points, study))
    return found or None


def fastest(loads: dict[str, np.ndarray], zone: float = FORMATS_ALIKE) -> tuple:
    """(names fastest first by median, the next best's ratio to the fastest (ratio_ci),
    the call: FASTEST where every other's interval over the fastest lies above 1 (or,
    beyond the next best, within the zone), ALIKE where the next best's lies within 1 +-
    zone and no other's reaches across, else None; and name -> runs that would likely
    decide it (empty where none would: they load too alike for the zone))."""
    order = sorted(loads, key=lambda k: (np.median(loads[k]), k))
    best = order[0]
    sides = {k: side_of_one(*ratio_ci(loads[k], loads[best])[1:], zone) for k in order[1:]}
    call = sides[order[1]] if None not in sides.values() else None
    more = {}
    for k in [k for k, side in sides.items() if side is None]:
        runs = runs_to_decide(loads[k], loads[best], zone)[0]
        if runs is None:
            return order, ratio_ci(loads[order[1]], loads[best]), None, {}
        for name in (best, k):
            more[name] = max(more.get(name, 0), runs)
    return order, ratio_ci(loads[order[1]], loads[best]), call, more


def formats_at(n: int, points: dict[str, pd.DataFrame], study) -> FormatsAt:
    loads = {p: part["load_s"].to_numpy(float) for p, part in points.items()}
    order, ratio, call, more = fastest(loads)
    rows = []
    for point in order:
        part, series = points[point], str(points[point]["series"].iloc[0])
        medians = jsonable([part["load_s"].median(), part["stage"].median()])
        rows.append(
            FormatLoad(series, point, how(study.for_series(series).params), len(part), *medians)
        )
    return FormatsAt(n, rows, *jsonable(ratio), call, more)


def how(p: dict) -> str:
    """A series' way of loading, in words: "tar, extracted", "folder, not staged"."""
    words = [p["format"], "not staged" * (not p["stage"])]
    words += [
        "extracted" * (p["format"] == "tar" and p["extract_tar"]),
        "cold cache" * (p["cache"] == "cold"),
    ]
    words.append(f"{p['parallel_stagers']} copies at once" * (p["parallel_stagers"] > 1))
    return ", ".join(w for w in words if w)
