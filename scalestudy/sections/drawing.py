"""What the report's figures share (scalestudy.report.plots draws the study's own, each
section's figure.py its own): their size, their axes, the legend below them and the
series' colours."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

FIG_WIDTH, FIG_HEIGHT = 5.2, 3.6  # inches, before the legend below the axes


def axes(title: str, xlabel: str, ylabel: str):
    # constrained layout makes room for the legend outside the axes (legend_below)
    fig, ax = plt.subplots(figsize=(FIG_WIDTH, FIG_HEIGHT), dpi=100, layout="constrained")
    ax.set_title(title, fontsize=11)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    return fig, ax


def legend_below(ax, fontsize: float = 7):
    """The axes' legend below it, outside the data: a legend inside the axes covers
    bars and points wherever it goes. As many columns as the longest label allows; the
    figure grows by the legend's rows, so the axes keep their height."""
    handles, labels = ax.get_legend_handles_labels()
    if ax.get_legend() is not None:
        ax.get_legend().remove()  # pandas draws its own inside the axes
    if not handles:
        return None
    fig = ax.figure
    # about 0.55 em a character, plus the handle and the gap between columns (points)
    column_pt = fontsize * 0.55 * max(len(label) for label in labels) + 32
    ncols = max(1, min(len(labels), int(FIG_WIDTH * 72 * 0.95 // column_pt)))
    rows = -(-len(labels) // ncols)
    fig.set_figheight(FIG_HEIGHT + 0.1 + rows * fontsize * 1.45 / 72)
    return fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=ncols,
        fontsize=fontsize,
        frameon=False,
        handlelength=1.6,
        columnspacing=1.2,
    )


def series_colours(series) -> list[tuple[str, str]]:
    """(series name, its colour) of each distinct name, in order: the first in black."""
    names = list(dict.fromkeys(series))
    colours = ["black"] + sns.color_palette("tab10", max(len(names) - 1, 1)).as_hex()
    return list(zip(names, colours, strict=False))
