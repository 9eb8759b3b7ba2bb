"""A grid study's heat map of its layouts (the report's figure "layouts")."""

import numpy as np

from scalestudy.sections.drawing import axes, legend_below
from scalestudy.sections.layouts.contract import Layouts

# what the figure says where the study has nothing to draw (the report does not show it)
NOTHING = "no grid in this study"


def figure(found: Layouts, xlabel: str):
    """A grid study's heat map: efficiency (against the grid's one base case) of every
    layout, its median time written in the cell, and dashed lines through the cells of
    equal total (only a grid study has one: NOTHING otherwise)."""
    grid = found.grid
    rows, columns = grid.rows, grid.columns
    values = np.array(
        [[np.nan if c.efficiency is None else 100 * c.efficiency for c in r.cells] for r in rows]
    )
    fig, ax = axes(
        "Efficiency of each layout (%)",
        grid.along_key.replace("_", " "),
        grid.line_key.replace("_", " "),
    )
    ax.grid(False)
    image = ax.imshow(values, cmap="RdYlGn", vmin=50, vmax=100, aspect="auto", origin="lower")
    fig.colorbar(image, ax=ax, label="efficiency (%)")
    ax.set_xticks(range(len(columns)), [str(c) for c in columns])
    ax.set_yticks(range(len(rows)), [str(r.value) for r in rows])
    totals: dict = {}
    for i, row in enumerate(rows):
        for j, cell in enumerate(row.cells):
            if cell.point is None:
                continue
            totals.setdefault(cell.n, []).append((j, i))
            text = f"{cell.time_s:.3g} s" + ("\nbest" if cell.best else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
    for n, cells in sorted(totals.items()):
        if len(cells) > 1:
            xs, ys = zip(*sorted(cells), strict=True)
            ax.plot(xs, ys, "--", lw=1, color="black", alpha=0.6, label=f"N = {n}")
    legend_below(ax)
    return fig
