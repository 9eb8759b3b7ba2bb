"""How the report writes a number: each column declared once with its label and its
one precision (COLUMNS), a value with its interval, a share, a table's cells. The
report's views and every section's view format with these (scalestudy.report.views
chooses what a study shows; a section's view.py what its part shows)."""

from __future__ import annotations

import dataclasses
import math

from scalestudy.records import finite


class Significant:
    """A column's format by significant digits: each value rounded to `digits` of them,
    and every row given the decimals the most exacting one needs (one precision per
    column: 3.22 and 3.35 samples/s, not 3 and 3; 0.567 beside 0.569, not beside
    0.5688; 171 beside 49, 171.0 beside 9.5). A value alone (in a sentence) gets its
    own: 171 s."""

    def __init__(self, digits: int, unit: str = ""):
        self.digits, self.unit = digits, unit

    def decimals(self, value: float) -> int:
        """The decimals `value` needs for its digits, without trailing zeros."""
        places = max(self.digits - 1 - math.floor(math.log10(abs(value))), 0)
        text = f"{value:.{min(places, 6)}f}"
        return len(text.rstrip("0").split(".")[1]) if "." in text else 0

    def fixed(self, values) -> str:
        """The fixed-point pattern of a column of `values`."""
        needed = [self.decimals(v) for v in values if finite(v)]
        return f"{{:.{max(needed, default=0)}f}}{self.unit}"

    def format(self, value) -> str:
        return self.fixed([value]).format(value)


class Percent:
    """A share as a whole percentage, spaced as the report writes it: 66 %."""

    def format(self, value) -> str:
        return f"{100 * value:.0f} %"


def shallow(part) -> dict:
    """A part of the contract's fields, one level deep (its own parts stay dataclasses),
    for a view to add its formatted text to."""
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}


# Every column the report shows, declared once: its label and its format (one precision
# per column: a fixed one, or Significant, fixed per table by the column's values). The
# report's tables pick columns from here by name; a metric a workload reports that is not
# here is shown under its own name with DEFAULT_FORMAT.
COLUMNS = {
    # the results table
    "series": ("series", "{}"),
    "point": ("point", "{}"),
    "n": ("N", "{}"),
    "repeats_ok": ("runs ok", "{}"),
    "time_s": ("time (s, median [95 % CI])", Significant(3)),
    "cv": ("CV", "{:.1%}"),
    "speedup": ("speedup [95 % CI]", "{:.2f}"),
    "efficiency": ("efficiency [95 % CI]", Percent()),
    "karp_flatt": ("Karp-Flatt e", "{:.3f}"),
    "warmup_s": ("warm-up epoch (s)", Significant(3)),
    "steady_epoch_s": ("steady epoch (s)", Significant(3)),
    "relative_su": ("relative SU", "{:.2f}"),
    "samples_per_s": ("samples/s", Significant(3)),
    "global_batch": ("global batch", "{:.0f}"),
    "quality": ("quality", Significant(3)),
    "fit": ("in model fit", "{}"),
    "status": ("status", "{}"),
    # the source's table of distributed training
    "job_ids": ("job id(s)", "{}"),
    "config": ("configuration", "{}"),
    "world_size": ("processes (GPUs / devices)", "{:.0f}"),
    "nodes": ("nodes", "{}"),
    "wall_s": ("time (s)", Significant(3)),
    "time_per_epoch_s": ("time / epoch (s)", Significant(3)),
    "val_loss": ("val loss", Significant(3)),
    "val_accuracy": ("val accuracy", "{:.2%}"),
    "band": ("interpretation", "{}"),
    "throughput": ("throughput (samples/s)", Significant(3)),
    # data loading and GPU use (medians over a point's runs)
    "stage_s": ("staging to scratch (slowest copy)", Significant(3, " s")),
    "stagers": ("copies at once", "{:.0f}"),
    "time_to_first_batch_s": ("time to first batch", Significant(3, " s")),
    "wait_fraction": ("time waiting for data", "{:.0%}"),
    "gpu_util_mean_pct": ("GPU utilisation (mean)", "{:.0f} %"),
    "gpu_util_peak_pct": ("GPU utilisation (peak)", "{:.0f} %"),
    "gpu_mem_peak_mb": ("GPU memory (peak)", "{:.0f} MB"),
    # the staging table (per number of copies at once)
    "slowest_s": ("slowest copy", Significant(3, " s")),
    "typical_s": ("typical copy", Significant(3, " s")),
    "growth": ("slowest vs fewest copies", "{:.2f}x"),
    "mb_per_s": ("all copies together", "{:.0f} MB/s"),
    # the framework's share of a step, the charges, the Slurm jobs
    "lightning_ms": ("step time, Lightning (ms)", "{:.3f}"),
    "plain_ms": ("step time, plain PyTorch (ms)", "{:.3f}"),
    "share": ("framework share", "{:.0%}"),
    "core_hours": ("core-hours", "{:.4f}"),
    "gpu_hours": ("GPU-hours", "{:.4f}"),
    "su": ("SU", "{:.4f}"),
    "queue_wait_s": ("queue wait (s)", "{:.1f}"),
    "run_s": ("run (s)", "{:.1f}"),
    "submitted": ("submitted", "{}"),
    # what the runs received (distinct values over the runs)
    "cpus_usable": ("usable CPUs", "{}"),
    "threads_given": ("threads given", "{}"),
    "torch_threads": ("torch threads", "{}"),
    "gpus_visible": ("GPUs visible", "{}"),
    "mem_limit_mb": ("memory limit (MB)", "{}"),
    "hosts": ("hosts", "{}"),
}
DEFAULT_FORMAT = Significant(3)
WITH_CI = {
    "time_s": ("time_ci_lo", "time_ci_hi"),
    "speedup": ("speedup_ci_lo", "speedup_ci_hi"),
    "efficiency": ("efficiency_ci_lo", "efficiency_ci_hi"),
}
# a column's interval that reaches less than the headers' level (few runs) says the
# level it reaches: its row's column here (the analysis leaves it empty otherwise)
CI_LEVEL = {"time_s": "time_ci_level"}


def label(column: str) -> str:
    return COLUMNS.get(column, (column, DEFAULT_FORMAT))[0]


def pattern(column: str) -> str:
    return COLUMNS.get(column, (column, DEFAULT_FORMAT))[1]


def fmt(value, pattern: str) -> str:
    """A value in `pattern`; a dash for a missing one."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    try:
        return pattern.format(value)
    except (ValueError, TypeError):
        return str(value)


def column_formats(rows: list[dict], columns) -> dict[str, str]:
    """Each column's one format in a table of `rows` (Significant ones fixed by the
    column's values)."""
    forms = {c: pattern(c) for c in columns}
    return {
        c: f.fixed([r.get(c) for r in rows]) if isinstance(f, Significant) else f
        for c, f in forms.items()
    }


def cell(row: dict, column: str, form=None, ci: tuple[str, str] | None = None) -> str:
    """A column's value in `form` (default its declared format), with its confidence
    interval (the row's columns `ci`, default its declared ones: WITH_CI) if it has
    one, in the same format."""
    form = form or pattern(column)
    text = fmt(row.get(column), form)
    ci = ci or WITH_CI.get(column)
    if ci and text != "–":
        lo, hi = (fmt(row.get(c), form) for c in ci)
        if "–" not in (lo, hi):
            text += f" [{lo}, {hi}]"
            level = row.get(CI_LEVEL.get(column, ""))
            if isinstance(level, float) and not math.isnan(level):
                text += f" ({100 * level:g} % CI)"
    return text


def cells(row: dict, columns, forms: dict | None = None) -> dict[str, str]:
    return {c: cell(row, c, (forms or {}).get(c)) for c in columns}


def table(rows: list[dict], columns) -> list[dict[str, str]]:
    """The cells of every row, each column in its one format for this table."""
    forms = column_formats(rows, columns)
    return [cells(r, columns, forms) for r in rows]


def runs_by_count(added: dict) -> dict | None:
    """The runs to add at each point ({where: runs}; none where 0 or None) as the words
    group them (by count, most first), and the most any point needs: by how much
    `repeats` is raised."""
    groups = {}
    for where, k in added.items():
        groups.setdefault(k, []).extend([str(where)] if k else [])
    groups = sorted((k, where) for k, where in groups.items() if k)
    return groups and {"groups": groups[::-1], "most": groups[-1][0]} or None


def with_ci(value, lo, hi, form: str | None = None, unit: str = "") -> str:
    """A value and its interval in one format (three significant digits unless given):
    1.27x [1.21, 1.33]; the value alone without an interval."""
    form = form or Significant(3).fixed([value, lo, hi])
    text = fmt(value, form) + unit
    known = finite(lo) is not None and finite(hi) is not None
    return f"{text} [{fmt(lo, form)}, {fmt(hi, form)}]" if known else text


def pct(share: float) -> str:
    """A share of the study's rules (a margin, a limit) in per cent, without the sign:
    the template says "10 %"."""
    return fmt(100 * share, "{:g}")
