"""How staging time grows with the copies made at once."""

import pandas as pd

from scalestudy.analysis.stats.predictions import jsonable
from scalestudy.sections.staging.contract import DATA, Staging, StagingRow


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
    rows = []
    for k, group in ok.groupby("stagers"):
        slowest = pd.to_numeric(group["stage_s"]).median()
        # one copy records no median of copies: its own time is the typical one
        typical = pd.to_numeric(group.get("stage_s_median", group["stage_s"]))
        typical = typical.fillna(pd.to_numeric(group["stage_s"])).median()
        size_mb = pd.to_numeric(group["dataset_mb"]).median() if "dataset_mb" in group else None
        rate = k * size_mb / slowest if size_mb and slowest > 0 else None
        rows.append(
            {"k": int(k), "runs": len(group), "slowest_s": slowest, "typical_s": typical,
             "mb_per_s": rate}
        )  # fmt: skip
    first = rows[0]["slowest_s"]
    for r in rows:
        r["growth"] = r["slowest_s"] / first if first > 0 else None
    return Staging([StagingRow(**jsonable(r)) for r in rows])
