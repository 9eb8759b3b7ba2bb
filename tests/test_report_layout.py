"""The report's layout in real headless Chromium at 900 and 1400 px: nothing scrolls
sideways, the figure grid has no dead space, and no legend covers data (measured in the
figures' SVG, whose legend and data artists carry gids: scalestudy.report.plots)."""

import sys

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from scalestudy.report.plots import phases_figure, plain_number, times_figure
from scalestudy.sections import FIGURES
from tests.browser import report_layout
from tests.conftest import copy_of_the_workflow
from tests.test_workflow import MEASURED, needs_chromium


def in_the_browser(test):
    return pytest.mark.slow(pytest.mark.browser(needs_chromium(test)))


# a run study of seconds, so that the report holds a phases figure (stacked bars)
SLEEP = {
    "description": "a command that sleeps",
    "workload": "command",
    "params": {"command": [sys.executable, "-c", "import time; time.sleep(0.2)"]},
    "scaling": {"axis": "threads", "points": [1, 2]},
    "repeats": 1,
    "include_shared": True,  # other tests may run beside this one; not under test here
}
WIDTHS = (900, 1400)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    workflow = copy_of_the_workflow(root)
    workflow.write_config({"studies": {"sleep": SLEEP, "published": MEASURED}})
    workflow.snakemake("--cores", "2")
    return root / "results" / "report.html"


@pytest.fixture(scope="module")
def layouts(report):
    shots = report.parent
    return {w: report_layout(report, w, screenshot=shots / f"report-{w}.png") for w in WIDTHS}


# no grid study (the layouts heat map), no baseline, and no energy measured (no counter
# on the test machine) among the studies shown
NOT_SHOWN = {"layouts", "baseline", "energy"}


@in_the_browser
@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_scrolls_sideways(layouts, width, report):
    overflow = layouts[width]["overflow"]
    assert (report.parent / f"report-{width}.png").stat().st_size > 0  # the screenshot
    assert overflow["scroll_width"] <= overflow["client_width"], (
        f"at {width} px the page is {overflow['scroll_width']} px wide; "
        f"sticking out: {overflow['sticking_out']}"
    )
    assert overflow["sticking_out"] == []


@in_the_browser
@pytest.mark.parametrize("width", WIDTHS)
def test_figures_fill_their_grid(layouts, width):
    grids = layouts[width]["grids"]
    # 6 figures of the run study, 5 of the measured one (no phases); neither is a grid
    # study nor compared with a baseline, so neither shows those figures
    shown = set(FIGURES) - NOT_SHOWN
    assert [len(g["figures"]) for g in grids] == [len(shown), len(shown) - 1]
    for grid in grids:
        figures = grid["figures"]
        for f in figures:
            # scaled to the cell, never beyond the grid, in the figure's own proportions
            assert f["left"] >= 0 and f["right"] <= grid["grid_width"] + 0.5, f
            ratio = f["natural_height"] / f["natural_width"]
            assert f["height"] == pytest.approx(f["width"] * ratio, rel=0.02), f
        # no dead space: the first row's figures span the grid's width (gaps aside)
        row = [f for f in figures if abs(f["top"] - figures[0]["top"]) < 1]
        used = sum(f["width"] for f in row)
        assert used >= 0.9 * grid["grid_width"], (
            f"at {width} px {len(row)} figure(s) a row use {used:.0f} of "
            f"{grid['grid_width']:.0f} px"
        )
        if width >= 1400:
            assert len(row) >= 2, "a wide window shows figures side by side"


@in_the_browser
@pytest.mark.parametrize("width", WIDTHS)
def test_no_legend_covers_data(layouts, width):
    figures = layouts[width]["figures"]
    assert figures and all(f["svg"] for f in figures)
    names = {f["figure"] for f in figures}
    # the phases figure (of the run study) among them
    assert names == set(FIGURES) - NOT_SHOWN
    for f in figures:
        assert f["data"] > 0, f"{f['alt']}: no data artists (gid 'data...') in the SVG"
        assert f["legends"], f"{f['alt']}: no legend (gid 'legend') in the SVG"
    collisions = {f["alt"]: sorted(set(f["collisions"])) for f in figures if f["collisions"]}
    assert collisions == {}, f"legends cover data: {collisions}"
    clipped = {f["alt"]: f["clipped"] for f in figures if f["clipped"]}
    assert clipped == {}, f"legends cut off at the figure's edge: {clipped}"


def times(lo: float, hi: float) -> pd.DataFrame:
    t = [hi, (lo * hi) ** 0.5, lo]
    return pd.DataFrame(
        {"series": "", "n": [1, 2, 4], "time_s": t, "time_ci_lo": t, "time_ci_hi": t, "gpus": 0}
    )


def shown_labels(axis) -> list[str]:
    lo, hi = sorted(axis.get_view_interval())
    ticks = [t for t in axis.get_major_ticks() + axis.get_minor_ticks() if lo <= t.get_loc() <= hi]
    return [t.label1.get_text() for t in sorted(ticks, key=lambda t: t.get_loc())]


@pytest.mark.parametrize(
    "lo, hi, shown",
    [
        (6.2, 19, ["6", "7", "8", "9", "10", "20"]),  # under a decade: every tick, no 6×10⁰
        (1.1, 14, ["1", "2", "3", "5", "10"]),  # about a decade: 2, 3 and 5 between
        (0.002, 3, ["0.01", "0.1", "1"]),  # several: decades only, as plain numbers
    ],
)
def test_log_axis_tick_labels_are_plain(lo, hi, shown):
    fig = times_figure(times(lo, hi), "N")
    fig.canvas.draw()
    labels = [t for t in shown_labels(fig.axes[0].yaxis) if t]
    plt.close(fig)
    assert labels == shown
    assert [plain_number(x) for x in (0.5125, 6.0, 0.30000000000000004, 1500.0)] == [
        "0.5125", "6", "0.3", "1500",
    ]  # fmt: skip


def test_the_phases_legend_stands_below_the_bars():
    runs = pd.DataFrame(
        {
            "status": "ok",
            "n": [1, 2],
            "startup_s": [1.0, 1.0],
            "data_s": [0.5, 0.5],
            "train_s": [8.0, 4.0],
            "eval_s": [0.5, 0.5],
            "other_s": [0.2, 0.2],
        }
    )
    fig = phases_figure(runs, "threads N")
    fig.canvas.draw()
    (ax,) = fig.axes
    assert ax.get_legend() is None and len(fig.legends) == 1
    legend = fig.legends[0].get_window_extent()
    axes = ax.get_window_extent()
    assert legend.y1 < axes.y0  # below the axes, so below every bar
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.x1  # and not cut off
    plt.close(fig)
