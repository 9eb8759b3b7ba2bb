"""The best layout of each total, and a grid's heat map (scalestudy.analysis.decisions.layouts)."""

from scalestudy.analysis.decisions.layouts import best_layouts, grid_cells
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.sections.layouts.contract import DATA, Layouts


def produce(given) -> DATA:
    usable = usable_runs(given.runs, given.study)
    totals = best_layouts(given.summary, usable, TIME_COLUMNS[given.study.time], given.study)
    return Layouts(totals, grid_cells(given.study, given.summary, totals))
