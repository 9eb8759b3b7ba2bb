"""Time against energy per result, one point per layout (the report's figure "energy")."""

import numpy as np

from scalestudy.sections.drawing import axes, legend_below, series_colours
from scalestudy.sections.energy.contract import Energy

# what the figure says where the study has nothing to draw (the report does not show it)
NOTHING = "energy not measured"


def figure(energy: Energy, xlabel: str):
    """Time against energy per result, one point per layout, and the front of points no
    other beats in both (the analysis marked it): only points measured from their base
    case's source."""
    fig, ax = axes(
        "Time against energy per result", "energy per result (kJ, median)", "time (s, median)"
    )
    for name, colour in series_colours(p.series for p in energy.points):
        points = [
            p
            for p in energy.points
            if p.series == name and p.comparable and p.energy_j is not None and p.time_s is not None
        ]
        if not points:
            continue
        x = np.array([p.energy_j / 1000 for p in points])
        y = np.array([p.time_s for p in points])
        lo = np.array([(p.energy_j - (p.energy_ci_lo or p.energy_j)) / 1000 for p in points])
        hi = np.array([((p.energy_ci_hi or p.energy_j) - p.energy_j) / 1000 for p in points])
        ax.errorbar(
            x,
            y,
            xerr=[lo.clip(0), hi.clip(0)],
            fmt="o",
            color=colour,
            capsize=3,
            alpha=0.8,
            label=name or "points (95 % CI of energy)",
        )
        front = sorted((p for p in points if p.pareto), key=lambda p: p.energy_j)
        ax.plot(
            [p.energy_j / 1000 for p in front],
            [p.time_s for p in front],
            "-",
            color=colour,
            lw=1,
            label=f"front{' ' + name if name else ''}",
        )
        for p in points:
            ax.annotate(
                f"N={p.n}" + (" least" if p.least else ""),
                (p.energy_j / 1000, p.time_s),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
    ax.grid(True, alpha=0.3)
    ax.ticklabel_format(style="plain", useOffset=False)  # no offset, no scientific notation
    legend_below(ax)
    return fig
