"""Both speedup curves, now and the baseline's (the report's figure "baseline")."""

from scalestudy.sections.baseline.contract import BaselineComparison
from scalestudy.sections.drawing import axes, legend_below

# what the figure says where the study has nothing to draw (the report does not show it)
NOTHING = "no baseline in this study"


def figure(baseline: BaselineComparison, xlabel: str):
    """Both speedup curves, now and the baseline's, with their 95 % intervals as bands."""
    fig, ax = axes("Speedup: now and the baseline", xlabel, "speedup")
    for curves in baseline.speedups:
        tag = f" ({curves.series})" if curves.series else ""
        for points, name, colour in (
            (curves.baseline, "baseline", "grey"),
            (curves.now, "now", "tab:blue"),
        ):
            drawn = [p for p in points if p.speedup is not None]
            if not drawn:
                continue
            ns = [p.n for p in drawn]
            ax.plot(ns, [p.speedup for p in drawn], "o-", color=colour, label=name + tag)
            banded = [p for p in drawn if p.lo is not None and p.hi is not None]
            if banded:
                ax.fill_between(
                    [p.n for p in banded],
                    [p.lo for p in banded],
                    [p.hi for p in banded],
                    color=colour,
                    alpha=0.2,
                )
    legend_below(ax)
    return fig
