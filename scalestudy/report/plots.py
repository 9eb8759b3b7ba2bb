"""Figures of one study: speedup, efficiency, relative cost, phase times.

Each figure is written once, as the SVG the report inlines.
"""

from __future__ import annotations

import logging
from pathlib import Path
from xml.sax.saxutils import escape

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import Formatter, FuncFormatter, LogLocator  # noqa: E402

from scalestudy.contract import Rounds, SeriesFit  # noqa: E402
from scalestudy.report.views import drawn  # noqa: E402
from scalestudy.sections import FIGURES, SECTIONS, Analysis, part  # noqa: E402
from scalestudy.sections.drawing import (  # noqa: E402
    FIG_HEIGHT,
    FIG_WIDTH,
    axes,
    legend_below,
    series_colours,
)
from scalestudy.thresholds import EFFICIENCY_BANDS, band_words  # noqa: E402

# the efficiency figure's shade of each band (scalestudy.thresholds): colour, alpha
BAND_SHADES = {"excellent": ("tab:green", 0.12), "good": ("gold", 0.15), "poor": ("tab:red", 0.07)}
PHASE_COLUMNS = {
    "startup_s": "start-up (imports)",
    "data_s": "data loading",
    "train_s": "training",
    "eval_s": "evaluation",
    "other_s": "other",
}
AXIS_LABELS = {
    "threads": "threads N",
    "devices": "processes / GPUs per node N",
    "nodes": "nodes N",
    "processes": "processes N (total)",
    "gpus": "GPUs N (total)",
    "cores": "cores N (total)",
}


def plain_number(x: float) -> str:
    """x as a plain decimal, at most 6 significant digits: 0.05, 6, 0.5125, 1500 (never
    6×10⁰, 1e+03 or an offset)."""
    if x == 0 or not np.isfinite(x):
        return f"{x:g}"
    return np.format_float_positional(x, precision=6, unique=True, fractional=False, trim="-")


class PlainLogFormatter(Formatter):
    """Tick labels of a log axis as plain numbers (plain_number). Decades always; the
    ticks between them where there is room: all of them (6, 7, 8, 9) on an axis
    spanning up to 0.8 of a decade, 2, 3 and 5 up to 1.6 decades, 2 and 5 up to 3,
    none on a wider one."""

    def __call__(self, x, pos=None):
        if not x > 0:
            return ""
        lo, hi = sorted(self.axis.get_view_interval())
        decades = np.log10(hi / lo) if lo > 0 else np.inf
        mantissa = round(x / 10 ** np.floor(np.log10(x) + 1e-9), 6)
        shown = (
            mantissa == 1
            or decades <= 0.8
            or (decades <= 1.6 and mantissa in (2, 3, 5))
            or (decades <= 3 and mantissa in (2, 5))
        )
        return plain_number(x) if shown else ""


def plain_log_axis(axis) -> None:
    """A log axis (ax.xaxis or ax.yaxis) with plain tick labels: 6, 7, 8, 10, 20 s."""
    axis.set_major_locator(LogLocator(base=10))
    axis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10)))
    axis.set_major_formatter(PlainLogFormatter())
    axis.set_minor_formatter(PlainLogFormatter())


def axis_top(values, floor: float, headroom: float) -> float:
    """The top of a linear axis from 0: `headroom` times the largest value, at least
    `floor`. A value no axis can hold (infinite, or overflowing with the headroom) sets
    no limit: matplotlib refuses one ("Axis limits cannot be NaN or Inf")."""
    numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").astype(float)
    with np.errstate(over="ignore"):
        tops = numbers[np.isfinite(numbers)] * headroom
    tops = tops[np.isfinite(tops)]
    return max(floor, float(tops.max())) if len(tops) else floor


def extrapolated_ticks(ns, top: float) -> list[float]:
    """Round N beyond the largest measured N, up to `top` (the farthest N a prediction
    is drawn at): without them the extrapolated region has no readable x axis. Measured
    N that double go on doubling (16, 32, 64); others continue in steps of 1, 2, 5, 10,
    20, ... no finer than the last measured step and at most about 5 ticks."""
    ns = sorted({float(n) for n in ns if pd.notna(n)})
    if not ns or not top > ns[-1]:
        return []
    last = ns[-1]
    gap = last - ns[-2] if len(ns) > 1 else 1.0
    if len(ns) > 1 and last >= 2 * ns[-2] and 2 * last <= top * (1 + 1e-9):
        return [last * 2**k for k in range(1, int(np.log2(top * (1 + 1e-9) / last)) + 1)]
    wanted = max(gap, (top - last) / 5)
    steps = (m * 10**e for e in range(12) for m in (1, 2, 5))
    step = next((s for s in steps if s >= wanted), wanted)
    first = (last // step + 1) * step
    return [float(v) for v in np.arange(first, top * (1 + 1e-9), step)]


def _ticks(ax, ns, top: float | None = None):
    """x ticks at the measured N (and, up to `top`, at extrapolated_ticks), as plain
    numbers: no offset or scientific notation on an axis of unit counts."""
    ticks = [float(n) for n in ns if pd.notna(n)]
    if top is not None:
        ticks += extrapolated_ticks(ticks, top)
    ax.set_xticks(sorted(set(ticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
    ax.grid(True, alpha=0.3)


def _mark(fig) -> None:
    """SVG ids (matplotlib gids) for what a reader must see: "legend" for each legend,
    "data-<i>" for every line, marker, bar, band and label drawn on an axes that has
    none yet (background shading is marked "shade-..." where it is drawn). The
    report's layout test measures these in the browser (tests/test_report_layout.py)."""
    for a, ax in enumerate(fig.axes):
        drawn = [*ax.lines, *ax.collections, *ax.patches, *ax.texts]
        for i, artist in enumerate(d for d in drawn if d.get_gid() is None):
            artist.set_gid(f"data-{a}-{i}")
        if ax.get_legend() is not None:
            ax.get_legend().set_gid(f"legend-{a}")
    for i, legend in enumerate(fig.legends):
        legend.set_gid(f"legend-fig-{i}")


def figure_path(out_dir: Path, name: str) -> Path:
    return Path(out_dir) / f"{name}.svg"


def _save(fig, out_dir: Path, name: str) -> None:
    _mark(fig)  # every figure is laid out by axes's constrained layout
    fig.savefig(figure_path(out_dir, name), format="svg")
    plt.close(fig)


def _write_note(out_dir: Path, name: str, text: str) -> None:
    """A figure the report does not show (no grid, no baseline, no energy measured):
    its words in a small SVG, not drawn by matplotlib, which took a sixth of a study's
    figure time on them."""
    width, height = FIG_WIDTH * 72, FIG_HEIGHT * 72  # points
    figure_path(out_dir, name).write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}pt" height="{height:g}pt" '
        f'viewBox="0 0 {width:g} {height:g}"><text x="{width / 2:g}" y="{height / 2:g}" '
        f'text-anchor="middle" font-family="sans-serif" font-size="11">{escape(text)}</text>'
        "</svg>\n"
    )


def by_series(summary: pd.DataFrame):
    """(series name, its rows, its colour): one line per series, the first in black."""
    for name, colour in series_colours(summary["series"].fillna("")):
        yield name, summary[summary["series"].fillna("") == name], colour


def error_bars(ax, rows: pd.DataFrame, column: str, colour: str, label: str, scale=1.0):
    """Medians with their 95 % CIs; lines join points only within one series, where a
    trend over N means something."""
    y = rows[column] * scale
    lo = (rows[column] - rows[f"{column}_ci_lo"]).clip(lower=0).fillna(0) * scale
    hi = (rows[f"{column}_ci_hi"] - rows[column]).clip(lower=0).fillna(0) * scale
    ax.errorbar(rows["n"], y, yerr=[lo, hi], fmt="o-", color=colour, capsize=3, label=label)


def times_figure(summary: pd.DataFrame, xlabel: str, rounds: Rounds | None = None):
    """Absolute times of every series on one axis: CPU-thread curves and GPU points
    side by side, where speedups (each against its own base) cannot be compared.
    An adaptive study's runs are drawn too, those added after round 1 marked."""
    fig, ax = axes("Time per point (median, 95 % CI)", xlabel, "time (s, log scale)")
    if rounds and rounds.runs:
        for later, style in (
            (False, dict(marker=".", color="0.6", label="runs of round 1")),
            (True, dict(marker="x", color="tab:orange", label="runs added in later rounds")),
        ):
            part = [r for r in rounds.runs if (r.round > 1) == later]
            if part:
                ax.scatter([r.n for r in part], [r.time_s for r in part], s=18, zorder=3, **style)
    for name, rows, colour in by_series(summary):
        ok = rows.dropna(subset=["time_s"])
        gpu = ok["gpus"].gt(0).any() if "gpus" in ok else False
        label = (name or "measured") + (" (GPU)" if gpu else "")
        error_bars(
            ax,
            ok.rename(columns={"time_ci_lo": "time_s_ci_lo", "time_ci_hi": "time_s_ci_hi"}),
            "time_s",
            colour,
            label,
        )
    ax.set_yscale("log")
    plain_log_axis(ax.yaxis)
    _ticks(ax, summary["n"])
    legend_below(ax)
    return fig


def speedup_figure(summary: pd.DataFrame, fitted: list[SeriesFit], xlabel: str):
    fig, ax = axes("Speedup (95 % CI) and fitted model", xlabel, "speedup t_base / t_N")
    fits = {p.series: p for p in fitted}
    top_n = summary["n"].max()
    for name, rows, colour in by_series(summary):
        base = rows.loc[rows["is_base"], "n"]
        base = base.iloc[0] if len(base) else rows["n"].min()
        ok = rows.dropna(subset=["speedup"])
        suffix = f" {name}" if name else ""
        error_bars(ax, ok, "speedup", colour, f"measured{suffix} (base N={base})")
        curve = fits[name].curve if name in fits else None
        if curve:
            drawn = (curve.n, curve.speedup, curve.band_lo, curve.band_hi)
            n, s, lo, hi = (pd.Series(v, dtype=float) for v in drawn)
            inside = n <= curve.measured_max_n
            model = fits[name].selected
            # the curve is against the measured base median, as the measured speedups
            # (scalestudy.analysis.stats.predictions); older analyses, or a base without a
            # time, used the model's own t(base): say so on the figure
            against = "" if curve.base_source == "measured" else ", vs its own t(base)"
            ax.plot(
                n[inside],
                s[inside],
                "-",
                color=colour,
                alpha=0.5,
                lw=1,
                label=f"model: {model}{suffix}{against}",
            )
            ax.plot(n[~inside], s[~inside], ":", color=colour, alpha=0.8, lw=1.5)
            ax.fill_between(
                n, lo, hi, color=colour, alpha=0.10, lw=0, label=f"95 % prediction band{suffix}"
            )
            top_n = max(top_n, n.max())
    measured_max = summary["n"].max()
    if top_n > measured_max:
        ax.axvspan(
            measured_max,
            top_n,
            color="tab:orange",
            alpha=0.07,
            label="extrapolated (beyond measured N)",
            gid="shade-extrapolated",
        )
    base_n = summary.loc[summary["is_base"], "n"].min()
    ideal_n = pd.Series(sorted(set(summary["n"]) | {top_n}), dtype=float)
    ax.plot(ideal_n, ideal_n / base_n, "--", color="grey", lw=1, label="ideal (N / N_base)")
    highest = summary["speedup_ci_hi"].fillna(summary["speedup"])
    # headroom over the highest interval, none for a legend: that stands below the axes
    ax.set_ylim(0, axis_top(highest, 1.2, 1.1))
    _ticks(ax, summary["n"], top=top_n)
    legend_below(ax)
    return fig


def efficiency_figure(summary: pd.DataFrame, xlabel: str):
    fig, ax = axes("Parallel efficiency (95 % CI)", xlabel, "efficiency (%)")
    upper = 100
    for name, lowest, _ in EFFICIENCY_BANDS:
        colour, alpha = BAND_SHADES[name]
        ax.axhspan(
            100 * lowest,
            upper,
            color=colour,
            alpha=alpha,
            label=band_words(name),
            gid=f"shade-{100 * lowest:g}",
        )
        upper = 100 * lowest
    top = 110.0
    for name, rows, colour in by_series(summary):
        ok = rows.dropna(subset=["efficiency"])
        error_bars(ax, ok, "efficiency", colour, name or "measured", scale=100)
        top = max(top, axis_top(ok["efficiency_ci_hi"].fillna(ok["efficiency"]), 0, 110))
    ax.set_ylim(0, top)
    _ticks(ax, summary["n"])
    legend_below(ax)
    return fig


def cost_figure(summary: pd.DataFrame, xlabel: str):
    fig, ax = axes("Cost relative to the base case", xlabel, "relative SU (SU_N / SU_base)")
    ax.axhline(1.0, ls="--", color="grey", label="base case cost")
    for name, rows, colour in by_series(summary):
        ok = rows.dropna(subset=["relative_su"])
        ax.plot(ok["n"], ok["relative_su"], "o-", color=colour, label=name or "measured")
    _ticks(ax, summary["n"])
    legend_below(ax)
    return fig


def pareto_figure(summary: pd.DataFrame, xlabel: str):
    fig, ax = axes("Time against cost (Pareto front)", "SU per run", "time (s, median)")
    for name, rows, colour in by_series(summary):
        ok = rows.dropna(subset=["time_s", "su"]).sort_values("su")
        front = ok[ok["pareto"].astype(bool)]
        ax.scatter(ok["su"], ok["time_s"], color=colour, alpha=0.6, label=name or "points")
        ax.plot(
            front["su"],
            front["time_s"],
            "-",
            color=colour,
            lw=1,
            label=f"Pareto front{' ' + name if name else ''}",
        )
        for r in ok.itertuples():
            ax.annotate(
                f"N={r.n}", (r.su, r.time_s), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
    ax.grid(True, alpha=0.3)
    ax.ticklabel_format(style="plain", useOffset=False)  # no offset, no scientific notation
    legend_below(ax)
    return fig


def phases_figure(runs: pd.DataFrame, xlabel: str):
    fig, ax = axes("Where the time goes (median per phase)", xlabel, "seconds")
    ok = runs[runs["status"] == "ok"]
    cols = [c for c in PHASE_COLUMNS if pd.to_numeric(ok[c], errors="coerce").notna().any()]
    if ok.empty or cols == ["other_s"] or not cols:
        ax.text(
            0.5,
            0.5,
            "no phase times recorded\n(times measured elsewhere)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_xticks([])
        return fig
    medians = ok.groupby("n")[cols].median(numeric_only=False).apply(pd.to_numeric)
    medians = medians.rename(columns=PHASE_COLUMNS)
    medians.plot.bar(stacked=True, ax=ax, colormap="tab20c", width=0.7)
    ax.set_xticklabels([str(n) for n in medians.index], rotation=0)
    ax.set_xlabel(xlabel)
    legend_below(ax)
    return fig


def not_drawn(name: str, error: Exception):
    """The figure that stands in for one matplotlib could not draw."""
    fig, ax = axes(name.capitalize(), "", "")
    ax.text(
        0.5,
        0.5,
        f"this figure could not be drawn:\n{error}",
        ha="center",
        va="center",
        wrap=True,
        transform=ax.transAxes,
    )
    ax.set_axis_off()
    return fig


def write_figures(
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    axis: str,
    out_dir: Path,
    analysis: Analysis | None = None,
) -> list:
    """The study's figures, from its summary, runs and analysis (None: measured times
    only, no model)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.85)
    # text as text, not glyph outlines: SVGs several times smaller, and searchable
    plt.rcParams["svg.fonttype"] = "none"
    xlabel = AXIS_LABELS[axis]
    fitted = analysis.section("series") if analysis else []
    makers = {
        "times": lambda: times_figure(summary, xlabel, analysis and analysis.findings.adaptive),
        "speedup": lambda: speedup_figure(summary, fitted, xlabel),
        "pareto": lambda: pareto_figure(summary, xlabel),
        "efficiency": lambda: efficiency_figure(summary, xlabel),
        "cost": lambda: cost_figure(summary, xlabel),
        "phases": lambda: phases_figure(runs, xlabel),
    }
    for name in FIGURES:
        # a section's figure (its figure.py), where its data has something to draw
        if name in SECTIONS:
            data = analysis and analysis.section(name)
            if not drawn(name, data):
                _write_note(out_dir, name, part(name, "figure").NOTHING)
                continue
            makers[name] = lambda name=name, data=data: part(name, "figure").figure(data, xlabel)
        try:
            _save(makers[name](), out_dir, name)
        except (ValueError, OverflowError, FloatingPointError) as e:
            # a number no axis can hold must not cost the report: the figure says so
            plt.close("all")
            logging.warning("figure %s not drawn: %s", name, e)
            _save(not_drawn(name, e), out_dir, name)
    return [figure_path(out_dir, name) for name in FIGURES]
