"""How staging time grows with the copies made at once."""

import numpy as np
import pandas as pd

from scalestudy.analysis.stats.intervals import ratio_ci, runs_to_decide, side_of_one
from scalestudy.records import jsonable
from scalestudy.sections.staging.contract import DATA, Staging, StagingRow
from scalestudy.thresholds import STAGING_FLAT


def produce(given) -> DATA:
    return staging(given.runs)


def staging(runs: pd.DataFrame) -> Staging | None:
    """How staging time grows with the copies made at once (k), when the study's runs
    differ in k: per k the slowest and the typical copy (medians over runs), the
    slowest copy's time relative to the smallest k, and the data moved per second by
    all k copies together."""
    if "stagers" not in runs or "stage_s" not in runs:
        return None
    ok = runs[(runs["status"] == "ok") & runs["stagers"].notna() & runs["stage_s"].notna()]
    if ok["stagers"].nunique() < 2:
        return None
    rows, copies = [], {}
    for k, group in ok.groupby("stagers"):
        copies[k] = pd.to_numeric(group["stage_s"]).to_numpy(float)
        slowest = float(np.median(copies[k]))
        # one copy records no median of copies: its own time is the typical one
        typical = pd.to_numeric(group.get("stage_s_median", group["stage_s"]))
        typical = typical.fillna(pd.to_numeric(group["stage_s"])).median()
        size_mb = pd.to_numeric(group["dataset_mb"]).median() if "dataset_mb" in group else None
        rate = k * size_mb / slowest if size_mb and slowest > 0 else None
        # the slowest copy's time against the fewest copies'
        growth = ratio_ci(copies[k], copies[min(copies)])
        rows.append(StagingRow(*jsonable([int(k), len(group), slowest, typical, rate, *growth])))
    grows = side_of_one(*growth[1:], STAGING_FLAT)
    more = None if grows else runs_to_decide(copies[max(copies)], copies[min(copies)], STAGING_FLAT)
    return Staging(rows, grows, more and more[0])
