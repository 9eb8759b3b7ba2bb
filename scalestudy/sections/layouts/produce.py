"""The best layout for each total: where several layouts of a study ran the same total
(8 cores as 2 processes x 4 threads, or 8 x 1; 8 GPUs as 1 node x 8 or 2 x 4), which is
fastest, and by how much, with a confidence interval.

The ratio is median(other) / median(best) of the runs' times (the study's `time`), its
interval that of scalestudy.analysis.stats.intervals.ratio_ci (Welch, on log times). "Best"
is the lowest median; when an interval reaches 1 the two layouts are not told apart by
these runs. A grid study's heat map (grid_cells) is made here too.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd

from scalestudy.analysis.findings import point_layout
from scalestudy.analysis.stats.intervals import ratio_ci
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.contract import Placement
from scalestudy.model import Study
from scalestudy.records import jsonable
from scalestudy.sections.layouts.contract import (
    DATA,
    Grid,
    GridCell,
    GridRow,
    Layouts,
    OtherLayout,
    PlacedPoint,
    Total,
)
from scalestudy.thresholds import efficiency_band


def produce(given) -> DATA:
    usable = usable_runs(given.runs, given.study)
    totals = best_layouts(given.summary, usable, TIME_COLUMNS[given.study.time], given.study)
    return Layouts(totals, grid_cells(given.study, given.summary, totals))


def placed(study: Study, cell: pd.Series, time_s: float) -> dict:
    """A summary row's point, where it ran, and its median time (PlacedPoint's fields)."""
    series = cell["series"] if isinstance(cell["series"], str) else ""
    where = point_layout(study, series, int(cell["n"]))
    return asdict(where) | {"point": cell["point"], "series": series, "time_s": time_s}


def best_layouts(
    summary: pd.DataFrame, usable: pd.DataFrame, time_col: str, study: Study
) -> list[Total]:
    """For every total N that two or more layouts (points of different series) ran: the
    fastest, and each other layout's time against it."""
    times = pd.to_numeric(usable[time_col], errors="coerce")
    by_point = {p: t.dropna().to_numpy() for p, t in times.groupby(usable["point"])}
    found = []
    # only the totals of several points (a study of one series has none)
    shared = summary[summary.duplicated("n", keep=False)]
    for n, cells in shared.groupby("n", sort=True):
        cells = cells[cells["point"].map(lambda p: by_point.get(p, np.array([])).size > 0)]
        if len(cells) < 2:
            continue
        medians = cells["point"].map(lambda p: float(np.median(by_point[p])))
        best = cells.loc[medians.idxmin()]
        others = []
        for _, cell in cells.drop(index=medians.idxmin()).iterrows():
            ratio, lo, hi = jsonable(ratio_ci(by_point[cell["point"]], by_point[best["point"]]))
            where = placed(study, cell, float(np.median(by_point[cell["point"]])))
            others.append(
                OtherLayout(
                    **where, ratio=ratio, lo=lo, hi=hi, told_apart=lo is not None and lo > 1
                )
            )
        others.sort(key=lambda o: o.ratio)
        best_point = PlacedPoint(**placed(study, best, float(medians.min())))
        found.append(Total(int(n), best_point, others))
    return found


def grid_value(lay: Placement, key: str) -> int:
    """A layout's value of one grid key."""
    if key == "processes_per_node":
        return lay.tasks_per_node
    if key == "gpus_per_process":
        return lay.gpus_per_node // lay.tasks_per_node
    return getattr(lay, key)


def grid_cells(study: Study, summary: pd.DataFrame, best: list[Total]) -> Grid | None:
    """A grid study's cells as the rows and columns of its heat map: one row per value of
    the grid's first key (a series), one column per value of the second, each with its
    point, total N, median time, efficiency against the grid's one base case (the
    fastest cell of the smallest total), its efficiency band (the colour), and whether
    it is its total's best."""
    grid = study.scaling.grid
    if not grid:
        return None
    (line_key, lines), (along_key, along) = grid.items()
    fastest = {b.best.point for b in best}
    # one base case for the whole grid (each line's series has its own): the fastest
    # cell of the smallest total; efficiency = t_base x N_base / (t x N)
    timed = summary[pd.to_numeric(summary["time_s"], errors="coerce") > 0]
    smallest = timed[timed["n"] == timed["n"].min()]
    base = smallest.loc[smallest["time_s"].astype(float).idxmin()] if len(smallest) else None
    cells = {}
    for _, row in summary.iterrows():
        lay = point_layout(study, row["series"], int(row["n"]))
        efficiency = None
        if base is not None and pd.notna(row["time_s"]) and row["time_s"] > 0:
            efficiency = float(base["time_s"] * base["n"] / (row["time_s"] * row["n"]))
        cells[(grid_value(lay, line_key), grid_value(lay, along_key))] = GridCell(
            row["point"],
            int(row["n"]),
            jsonable(row["time_s"]),
            efficiency,
            row["point"] in fastest,
            efficiency_band(efficiency),
        )
    empty = GridCell(point=None, n=None, time_s=None, efficiency=None, best=False)
    rows = [GridRow(v, [cells.get((v, w), empty) for w in along]) for v in lines]
    return Grid(line_key, along_key, None if base is None else base["point"], list(along), rows)
