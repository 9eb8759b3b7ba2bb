"""Figures of one study: speedup, efficiency, relative cost, phase times.

Each figure is written as SVG (inlined in the report) and PNG.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from scalestudy import FIGURES  # noqa: E402

PHASE_COLUMNS = {
    "startup_s": "start-up (imports)",
    "data_s": "data loading",
    "train_s": "training",
    "eval_s": "evaluation",
    "other_s": "other",
}
AXIS_LABELS = {"threads": "threads N", "devices": "processes / GPUs per node N", "nodes": "nodes N"}


def _axes(title: str, xlabel: str, ylabel: str):
    fig, ax = plt.subplots(figsize=(5.2, 3.6), dpi=100)
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


def _ticks(ax, ns):
    ax.set_xticks(list(ns))
    ax.grid(True, alpha=0.3)


def _save(fig, out_dir: Path, name: str) -> None:
    fig.tight_layout()
    for ext in ("svg", "png"):
        fig.savefig(out_dir / f"{name}.{ext}", format=ext)
    plt.close(fig)


def speedup_figure(summary: pd.DataFrame, xlabel: str):
    ok = summary.dropna(subset=["speedup"])
    base = summary.loc[summary["is_base"], "n"].iloc[0]
    fig, ax = _axes(f"Speedup against the base case N={base}", xlabel, "speedup t_base / t_N")
    ns = summary["n"]
    ax.plot(ns, ns / base, "--", color="grey", label="ideal (s = N / N_base)")
    sns.lineplot(data=ok, x="n", y="speedup", marker="o", ax=ax, label="measured (medians)")
    _ticks(ax, ns)
    ax.legend(fontsize=8)
    return fig


def efficiency_figure(summary: pd.DataFrame, xlabel: str):
    fig, ax = _axes("Parallel efficiency", xlabel, "efficiency (%)")
    ax.axhspan(90, 100, color="tab:green", alpha=0.12, label="90-100 % excellent")
    ax.axhspan(75, 90, color="gold", alpha=0.15, label="75-90 % good")
    ax.axhspan(0, 75, color="tab:red", alpha=0.07, label="< 75 % look for a bottleneck")
    ok = summary.dropna(subset=["efficiency"]).assign(pct=lambda d: 100 * d["efficiency"])
    sns.lineplot(data=ok, x="n", y="pct", marker="o", ax=ax, color="black")
    top = max(110.0, float(ok["pct"].max()) + 10 if len(ok) else 110.0)
    ax.set_ylim(0, top)
    _ticks(ax, summary["n"])
    ax.legend(fontsize=7, loc="lower left")
    return fig


def cost_figure(summary: pd.DataFrame, xlabel: str):
    fig, ax = _axes("Cost relative to the base case", xlabel, "relative SU (SU_N / SU_base)")
    ax.axhline(1.0, ls="--", color="grey", label="base case cost")
    ok = summary.dropna(subset=["relative_su"])
    sns.lineplot(
        data=ok, x="n", y="relative_su", marker="o", ax=ax, color="tab:purple", label="measured"
    )
    _ticks(ax, summary["n"])
    ax.legend(fontsize=8)
    return fig


def phases_figure(runs: pd.DataFrame, xlabel: str):
    fig, ax = _axes("Where the time goes (median per phase)", xlabel, "seconds")
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
    ax.legend(fontsize=7)
    return fig


def write_figures(summary: pd.DataFrame, runs: pd.DataFrame, axis: str, out_dir: Path) -> list:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.85)
    xlabel = AXIS_LABELS[axis]
    makers = {
        "speedup": lambda: speedup_figure(summary, xlabel),
        "efficiency": lambda: efficiency_figure(summary, xlabel),
        "cost": lambda: cost_figure(summary, xlabel),
        "phases": lambda: phases_figure(runs, xlabel),
    }
    for name in FIGURES:
        _save(makers[name](), out_dir, name)
    return [out_dir / f"{name}.{ext}" for name in FIGURES for ext in ("svg", "png")]
