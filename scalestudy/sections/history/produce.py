"""A study's time at each point across its archives (`make archive`) and its results
now, with a step marked where a change was called against the entry before:

    python -m scalestudy.sections.history.produce STUDY   (or: make history STUDY=...)

The report shows the same for a study with archives (aggregation reads them). A
change is called as a baseline comparison calls it (the regression check,
scalestudy.analysis.stats.verdicts: the ratio's 95 % interval excludes 1 and the ratio
lies beyond the study's baseline_tolerance); what differs in the fingerprint is said
under the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from scalestudy.analysis.findings import fingerprint_changes
from scalestudy.analysis.stats.verdicts import point_changes
from scalestudy.analysis.tables import TIME_COLUMNS, read_runs_csv, times_by_point
from scalestudy.contract import NO_CHANGE, earlier_analysis
from scalestudy.model import SCHEMA_FILE
from scalestudy.records import RecordError
from scalestudy.sections.history.contract import DATA, HistoryEntry, HistoryPoint
from scalestudy.study.archives import archives


def produce(given) -> DATA:
    if not given.archives:
        return []
    now = times_by_point(given.runs, TIME_COLUMNS[given.study.time])
    fingerprint = given.analysis.findings.fingerprint
    return history_section(given.archives, now, fingerprint, given.study.baseline_tolerance)


def read_entry(folder: Path) -> tuple[dict, dict | None]:
    """An archive's (or results folder's) times per (series, N), and its fingerprint
    (None: an analysis made before fingerprints). RecordError names a broken file."""
    analysis = earlier_analysis(folder / "analysis.json")
    runs = read_runs_csv(folder / "runs.csv")
    try:
        column = TIME_COLUMNS[analysis.study.time]
        times = times_by_point(runs, column)
    except (ValueError, KeyError, AttributeError) as e:
        raise RecordError(f"{folder}: not an archive of an aggregated study ({e})") from None
    return times, analysis.fingerprint


def steps(items: list[tuple[str, dict, dict | None]], tolerance: float) -> list[dict]:
    """Per entry (name, times per (series, N), fingerprint), oldest first: its median
    time per N, the changes called against the entry before ((series, N) -> slower |
    faster) and what differs in the fingerprint."""
    rows, before = [], None
    for name, times, fp in items:
        medians = {k: float(np.median(x)) for k, x in times.items()}
        row = {"name": name, "times": medians, "changes": {}, "differences": []}
        if before is not None:
            for p in point_changes(times, before[0], tolerance):
                if p.change != NO_CHANGE:
                    row["changes"][(p.series, p.n)] = p.change
            if fp is not None and before[1] is not None:
                row["differences"], _ = fingerprint_changes(fp, before[1])
        rows.append(row)
        before = (times, fp)
    return rows


def history(study: str, tolerance: float, workdir: Path = Path(".")) -> list[dict]:
    """The history of a study (steps) from its archives, oldest first, then its results now."""
    folders = [(p.name, p) for p in archives(study, workdir)]
    now = workdir / "results" / study
    if (now / "runs.csv").is_file():
        folders.append(("now", now))
    return steps([(name, *read_entry(folder)) for name, folder in folders], tolerance)


def history_section(
    folders: list[Path], now: dict, now_fp: dict | None, tolerance: float
) -> list[HistoryEntry]:
    """The report's history: the archives in `folders`, oldest first, then the runs now."""
    items = [(f.name, *read_entry(f)) for f in folders] + [("now", now, now_fp)]
    return [
        HistoryEntry(
            row["name"],
            [
                HistoryPoint(s, int(n), t, row["changes"].get((s, n), NO_CHANGE))
                for (s, n), t in sorted(row["times"].items())
            ],
            row["differences"],
        )
        for row in steps(items, tolerance)
    ]


def table_text(rows: list[dict]) -> str:
    """The history as a plain-text table: seconds per point, a step marked."""
    keys = sorted({k for r in rows for k in r["times"]})
    head = ["entry"] + [f"N={n}" + (f" {s}" if s else "") for s, n in keys]
    lines = [head]
    for r in rows:
        cells = [r["name"]]
        for k in keys:
            t = r["times"].get(k)
            mark = {"slower": " ^slower", "faster": " vfaster"}.get(r["changes"].get(k), "")
            cells.append("-" if t is None else f"{t:.3g}{mark}")
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )
    for r in rows:
        if r["differences"]:
            said = "; ".join(f"{d.key} {d.baseline} -> {d.now}" for d in r["differences"])
            text += f"\n{r['name']}: {said}"
    return text


def tolerance_of(study: str, workdir: Path) -> float:
    """The study's baseline_tolerance as the checked config gives it."""
    import yaml

    from scalestudy.study.validation import checked_config

    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    studies = checked_config(config, workdir / SCHEMA_FILE, workdir)["studies"]
    if study not in studies:
        raise SystemExit(f"history: no study {study!r} in config/config.yaml")
    return float(studies[study]["baseline_tolerance"])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    here = Path(".")
    found = history(sys.argv[1], tolerance_of(sys.argv[1], here), here)
    if not found:
        raise SystemExit(f"history: no archive or results of {sys.argv[1]} yet")
    print(table_text(found))
