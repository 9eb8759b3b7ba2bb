"""Per point, medians of how the data was loaded and the GPU used."""

import pandas as pd

from scalestudy.records import finite
from scalestudy.sections.telemetry.contract import DATA, TELEMETRY, PointTelemetry
from scalestudy.thresholds import BOTTLENECK_WAIT


def produce(given) -> DATA:
    """Per point, median GPU utilisation and memory, and the share of time spent waiting
    for data, where the runs measured them."""
    runs = given.runs
    columns = [c for c in TELEMETRY if c in runs]
    if not any(runs[c].notna().any() for c in columns):
        return []
    ok = runs[runs["status"] == "ok"]
    medians = ok[columns].apply(pd.to_numeric, errors="coerce").groupby(ok["point"], sort=False)
    return [
        PointTelemetry(point=point, **{k: finite(v) for k, v in row.items()}, **waiting(group))
        for (point, row), (_, group) in zip(medians.median().iterrows(), medians, strict=True)
    ]


def waiting(group: pd.DataFrame) -> dict:
    """Whether the point's steps wait for data more than BOTTLENECK_WAIT of their time
    (its median run's), and whether each of its runs (2 or more) says the same."""
    waits = group.get("wait_fraction", pd.Series(dtype=float)).dropna()
    bottleneck = bool(waits.median() > BOTTLENECK_WAIT)
    agree = len(waits) > 1 and bool(((waits > BOTTLENECK_WAIT) == bottleneck).all())
    return {"bottleneck": bottleneck, "runs_agree": agree} if len(waits) else {}
