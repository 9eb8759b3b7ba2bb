"""Per point, what its runs asked for and what they got."""

import pandas as pd

from scalestudy.analysis.tables import distinct
from scalestudy.sections.received.contract import DATA, Received

# what the runs received (distinct values over the runs)
RECEIVED = [
    "cpus_usable",
    "threads_given",
    "torch_threads",
    "gpus_visible",
    "mem_limit_mb",
    "world_size",
    "hosts",
]


def produce(given) -> DATA:
    """Per point, what its runs asked for and what they got (distinct values)."""
    runs = given.runs
    if "cpus_usable" not in runs:
        return []
    asked = ["threads", "cores", "gpus", "nodes"]
    columns = list(dict.fromkeys(["point", *asked, *(c for c in RECEIVED if c in runs)]))
    view = []
    for point, group in runs[columns].groupby("point", sort=False):
        first = group.iloc[0]
        if pd.isna(first.get("cpus_usable")):
            continue
        got = [[c, text] for c in RECEIVED if (text := distinct(group, c))]
        view.append(
            Received(
                point,
                int(first["threads"]),
                int(first["cores"] / first["threads"]),
                int(first["gpus"]),
                int(first["nodes"]),
                got,
            )
        )
    return view
