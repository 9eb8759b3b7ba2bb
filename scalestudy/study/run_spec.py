"""The run spec: what one run of a point is told (scalestudy.compute reads it)."""

import random

from scalestudy.compute import data
from scalestudy.model import Study
from scalestudy.study.points import point_for

DATASETS = tuple(data.DATASETS)  # the prepared data sets: scalestudy.compute.data


def dataset_of(study: Study) -> str | None:
    """The prepared data set a study's runs read, if any."""
    dataset = study.params.get("dataset")
    return dataset if dataset in DATASETS else None


def run_spec(
    study: Study,
    n: int,
    repeat: int,
    series: str = "",
    *,
    data_dir: str | None = None,
    profile_trace: str | None = None,
    budget_limit_min: float | None = None,
) -> dict:
    """What the launcher needs to run one job of a point, whole: the prepared data sets'
    folder (data_dir, when the workflow gives one), for a profiling job (one extra run
    of the point, traced) the steps to profile and where the trace goes, and the time
    limit its round's budget sets (adaptive.budget_limits), where it sets one."""
    point = point_for(study, n, series)
    own = study.for_series(series)
    spec = {
        "study": study.name,
        "point": point.label,
        "repeat": repeat,
        "workload": own.workload,
        "n": n,
        "params": own.params,
        "requested": {
            "threads": point.threads,
            "tasks_per_node": point.tasks_per_node,
            "nodes": point.nodes,
            "gpus_per_node": point.gpus_per_node,
            "mem_mb": own.resources.mem_mb,
        },
        "time_limit_min": budget_limit_min or own.resources.runtime,
        "series": series,
    }
    if study.compare is not None:
        variant = study.compare.variant(series)
        spec |= {key: variant[key] for key in ("python", "container") if key in variant}
        position = paired_order(study, n).index((series, repeat)) + 1
        spec["compare"] = {"seed": study.compare.order_seed, "position": position}
    if budget_limit_min is not None:
        spec["budget_limit_min"] = budget_limit_min
    if data_dir is not None:
        spec["data_dir"] = data_dir
    if profile_trace is not None:
        spec["profile"] = {"steps": study.profile.steps, "trace": profile_trace}
    return spec


# How long a command study's probe may run (the launcher stops it there): long enough
# for a program to fail at its start (imports, arguments, files: `import torch` takes
# 3 s here, 8-10 s on a 16-core GPU node), short enough not to hold back the study's
# runs much (rules/run.smk, probe_command).
PROBE_MIN = 1 / 3


def probe_spec(study: Study, n: int, series: str, data_dir: str) -> dict:
    """The spec of the command's probe at point n: one run, stopped at PROBE_MIN."""
    return run_spec(study, n, 1, series, data_dir=data_dir, budget_limit_min=PROBE_MIN) | {
        "probe": True
    }


def paired_order(study: Study, n: int) -> list[tuple[str, int]]:
    """The order a comparison's runs of point n run in, as (variant, repeat): pair k is
    a's and b's repeat k, next to each other, which of them first drawn from the seed,
    the point and k alone (more repeats later leave the first pairs' order as it was)."""
    order = []
    for k in range(1, study.repeats + 1):
        first = random.Random(f"{study.compare.order_seed}/{n}/{k}").choice("ab")
        order += [(first, k), ("b" if first == "a" else "a", k)]
    return order


def previous_paired_run(study: Study, n: int, series: str, repeat: int) -> tuple[str, int] | None:
    """The comparison's run just before (series, repeat) at point n; None for the first
    (or outside a comparison)."""
    if study.compare is None:
        return None
    order = paired_order(study, n)
    position = order.index((series, repeat))
    return order[position - 1] if position else None


def profile_targets(studies: dict[str, Study]) -> list[tuple[str, str]]:
    """(study, point label) of every point a study asked to profile."""
    targets = []
    for name, study in studies.items():
        if study.workload is not None and study.profile.enabled:
            # the first series' point: profiling is about the code, not the series
            series = study.series_names[0]
            points = study.for_series(series).scaling.ns()
            n = study.profile.point if study.profile.point is not None else study.base_n(points)
            targets.append((name, point_for(study, n, series).label))
    return targets
