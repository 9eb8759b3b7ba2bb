"""Tables of a checked config: one row per (study, point), or per job."""

import pandas as pd

from scalestudy.model import Study
from scalestudy.study.points import Point, point_for


def points_table(studies: dict[str, Study]) -> pd.DataFrame:
    """One row per (study, point) of every study that runs jobs."""
    rows = []
    for study in studies.values():
        if study.workload is None:
            continue
        for series in study.series_names:
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
