"""Tables of a checked config: one row per (study, point), or per job; and a CSV of
times measured elsewhere, checked as the config is."""

from pathlib import Path

import numpy as np
import pandas as pd

from scalestudy.model import Study
from scalestudy.records import LONGEST_S, RecordError, plain
from scalestudy.study.points import Point, point_for


def points_table(studies: dict[str, Study]) -> pd.DataFrame:
    """One row per (study, point) of every study that runs jobs."""
    rows = []
    for study in studies.values():
        for series in study.series_names:
            if study.for_series(series).workload is None:  # times measured elsewhere
                continue
            for n in sorted(study.for_series(series).scaling.ns()):
                point = point_for(study, n, series)
                rows.append(point.as_dict() | {"workload": study.workload})
    columns = list(Point.__dataclass_fields__) + ["cores", "gpus", "world_size", "workload"]
    return pd.DataFrame(rows, columns=columns).rename(columns={"label": "point"})


def runs_table(studies: dict[str, Study]) -> pd.DataFrame:
    """One row per job of a fixed study: (study, point, repeat). An adaptive study's
    jobs are chosen round by round (rules/adaptive.smk)."""
    points = points_table({k: s for k, s in studies.items() if s.adaptive is None})
    rows = [
        {"study": p.study, "point": p.point, "repeat": k}
        for p in points.itertuples()
        for k in range(1, studies[p.study].repeats + 1)
    ]
    return pd.DataFrame(rows, columns=["study", "point", "repeat"])


def read_measured(csv_path: Path) -> pd.DataFrame:
    """A CSV of times measured elsewhere (N,time_s[,repeat][,series][,nodes or per_node]),
    its numbers checked and each row's repeat given: RecordError names the file and the
    line of a bad value and of a run given twice."""
    try:
        table = pd.read_csv(csv_path)
    except (OSError, ValueError) as e:
        raise RecordError(f"{csv_path}: cannot read as CSV ({e})") from None
    missing = {"N", "time_s"} - set(table.columns)
    if missing:
        raise RecordError(f"{csv_path}: missing column(s) {sorted(missing)}; need N,time_s")
    if table.empty:
        raise RecordError(f"{csv_path}: no rows")
    optional = [c for c in ("repeat", "nodes", "per_node") if c in table]
    for col in ["N", "time_s", *optional]:
        values = pd.to_numeric(table[col], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.astype(float)) | (values <= 0)
        # a time no run takes (a record's schema refuses it too): its statistics overflow
        too_long = values > LONGEST_S if col == "time_s" else bad & False
        if (bad | too_long).any():
            at = int((bad | too_long).idxmax())
            years = LONGEST_S / 3.15576e7
            why = f"is longer than a run takes (at most {LONGEST_S:g} s, {years:.0f} years)"
            raise RecordError(
                f"{csv_path}: line {at + 2}: {col}={plain(table[col].iloc[at])} "
                + ("is not a positive finite number" if bad[at] else why)
            )
        table[col] = values
    if (table["N"] != table["N"].round()).any():
        raise RecordError(f"{csv_path}: N must be whole numbers")
    keys = ["series", "N"] if "series" in table else ["N"]
    if "repeat" not in table:
        table["repeat"] = table.groupby(keys).cumcount() + 1
    keys.append("repeat")
    repeated = table[table.duplicated(keys, keep=False)]
    if not repeated.empty:
        first = tuple(repeated.iloc[0][keys])
        lines = [i + 2 for i in repeated.index if tuple(table.loc[i, keys]) == first]
        pairs = zip(keys, first, strict=True)
        run = ", ".join(f"{k}={v}" if k == "series" else f"{k}={v:g}" for k, v in pairs)
        raise RecordError(
            f"{csv_path}: lines {', '.join(map(str, lines))} are the same run ({run}): "
            "a run counts once; give each its own repeat number"
        )
    return table
