"""Several layouts of one total, in the report, after the answer and its rounds."""

from scalestudy.sections.formatting import fmt, shallow
from scalestudy.sections.layouts.contract import Grid, Layouts, Total

# where the report shows it: after the answer's rounds, before the requests
PLACE = "layouts"


def drawn(found: Layouts) -> bool:
    """Its figure, the grid's heat map, only for a grid study."""
    return found.grid is not None


def view(layouts: Layouts) -> dict | None:
    if not layouts.totals and layouts.grid is None:
        return None
    return {"totals": [layouts_view(t) for t in layouts.totals], "grid": grid_view(layouts.grid)}


def layout_text(cell) -> dict:
    """A layout's numbers for the template's words (nodes x processes x threads)."""
    return shallow(cell) | {"time": fmt(cell.time_s, "{:.3g} s")}


def layouts_view(total: Total) -> dict:
    """The best layout of one total against the others, ratios to two decimals (whether
    the runs tell them apart is the analysis's `told_apart`)."""
    return shallow(total) | {
        "best": layout_text(total.best),
        "others": [
            layout_text(o) | {k: fmt(getattr(o, k), "{:.2f}") for k in ("ratio", "lo", "hi")}
            for o in total.others
        ],
    }


def grid_view(grid: Grid | None) -> dict | None:
    """A grid's heat map: each cell's time and efficiency (its band, the cell's colour,
    came with it from the findings)."""
    if grid is None:
        return None
    rows = []
    for row in grid.rows:
        cells = [
            layout_text(c) | {"efficiency_pct": fmt(c.efficiency, "{:.0%}")} for c in row.cells
        ]
        rows.append({"value": row.value, "cells": cells})
    return shallow(grid) | {"rows": rows}
