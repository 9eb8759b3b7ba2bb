"""The run spec: what one run of a point is told (scalestudy.compute reads it)."""

from __future__ import annotations

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
) -> dict:
    """What the launcher needs to run one job of a point, whole: the prepared data sets'
    folder (data_dir, when the workflow gives one), and for a profiling job (one extra
    run of the point, traced) the steps to profile and where the trace goes."""
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
        "time_limit_min": own.resources.runtime,
        "series": series,
    }
    if data_dir is not None:
        spec["data_dir"] = data_dir
    if profile_trace is not None:
        spec["profile"] = {"steps": study.profile.steps, "trace": profile_trace}
    return spec


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
