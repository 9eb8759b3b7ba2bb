"""Per point, medians of how the data was loaded and the GPU used."""

import pandas as pd

from scalestudy.records import finite
from scalestudy.sections.telemetry.contract import DATA, TELEMETRY, PointTelemetry


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
        PointTelemetry(point=point, **{k: finite(v) for k, v in row.items()})
        for point, row in medians.median().iterrows()
    ]
