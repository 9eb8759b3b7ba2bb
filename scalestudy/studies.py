"""From a validated config to studies, points and repeats.

This is the only module that knows how a scaling point becomes resources;
rules/common.smk calls it, and so do the tests.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

import workloads as registry
from scalestudy.commandline import check_command_params

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
DATASETS = ("mnist", "fashion_mnist")


class ConfigError(ValueError):
    """A config value that the schema accepts but the workflow cannot use."""


@dataclass(frozen=True)
class Point:
    """One resource point of a study: what one job asks for."""

    study: str
    label: str
    n: int
    series: str
    threads: int  # CPU threads (cpus per task) of each process
    tasks_per_node: int  # processes per node
    nodes: int
    gpus_per_node: int

    @property
    def cores(self) -> int:
        return self.threads * self.tasks_per_node * self.nodes

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def world_size(self) -> int:
        return self.tasks_per_node * self.nodes

    def as_dict(self) -> dict:
        return asdict(self) | {
            "cores": self.cores,
            "gpus": self.gpus,
            "world_size": self.world_size,
        }


def point_label(axis: str, n: int, device: str, nodes: int) -> str:
    """A label that says what the point is: t4, p2, g8-n2, n2."""
    if axis == "threads":
        return f"t{n}"
    if axis == "devices":
        prefix = "g" if device == "gpu" else "p"
        return f"{prefix}{n}" if nodes == 1 else f"{prefix}{n}-n{nodes}"
    return f"n{n}"


def series_names(study: dict) -> list[str]:
    """The study's series ("" when it has none)."""
    return list(study.get("series", {})) or [""]


def series_study(study: dict, series: str) -> dict:
    """The study as one of its series sees it: the series' params, scaling, resources
    and cost override the study's, key by key."""
    overrides = study.get("series", {}).get(series)
    if not overrides:
        return study
    merged = {k: v for k, v in study.items() if k != "series"}
    for key in ("params", "scaling", "resources", "cost"):
        if key in overrides:
            merged[key] = study.get(key, {}) | overrides[key]
    return merged


def base_series(name: str) -> str:
    """The configured series of a series that was split by provenance ("a [GPU=x]")."""
    return name.split("[", 1)[0].strip()


def series_of_points(study_name: str, study: dict) -> dict[str, str]:
    """Point label -> series, for every point of the study."""
    return {
        point_for(study_name, study, n, series).label: series
        for series in series_names(study)
        for n in series_study(study, series)["scaling"].get("points", [])
    }


def point_for(study_name: str, study: dict, n: int, series: str = "") -> Point:
    study = series_study(study, series)
    scaling = study["scaling"]
    axis = scaling["axis"]
    threads = n if axis == "threads" else scaling["threads"]
    devices = n if axis == "devices" else scaling["devices"]
    nodes = n if axis == "nodes" else scaling["nodes"]
    gpus = devices if scaling["device"] == "gpu" else 0
    label = point_label(axis, n, scaling["device"], nodes)
    return Point(
        study=study_name,
        label=f"{series}-{label}" if series else label,
        n=n,
        series=series,
        threads=threads,
        tasks_per_node=devices,
        nodes=nodes,
        gpus_per_node=gpus,
    )


def base_n(study: dict, ns: list[int]) -> int:
    """The base case N: the configured one, else the smallest N."""
    return study["scaling"].get("base", min(ns))


WorkloadError = registry.WorkloadError  # a workload module without a valid declaration


def workloads_of(workdir: Path) -> dict[str, registry.Workload]:
    """The workloads a workflow in `workdir` can run, read from their modules'
    declarations without importing them (see workloads/__init__.py)."""
    return registry.discover(registry.folder_for(workdir))


def workload_capabilities(name: str | None, workdir: Path | None = None) -> dict:
    """What workload `name` can do ({} for none, or one this workflow does not have):
    distributed, steps, devices."""
    if name is None:
        return {}
    known = workloads_of(Path.cwd() if workdir is None else workdir)
    return known[name].capabilities if name in known else {}


def find_workload(name: str, study: dict, known: dict) -> registry.Workload:
    if study["workload"] not in known:
        message = registry.unknown_message(study["workload"], known)
        raise ConfigError(f"studies.{name}.workload: {message}")
    return known[study["workload"]]


def complete_params(name: str, study: dict, known: dict) -> None:
    """Validate the study's params against its workload's schema and fill in the
    defaults; each series' params overrides are validated merged into them."""
    workload = find_workload(name, study, known)
    try:
        study["params"] = workload.complete(study.get("params", {}))
    except registry.ParamsError as e:
        raise ConfigError(f"studies.{name}.{e}") from None
    for series, overrides in study.get("series", {}).items():
        if "params" not in overrides:
            continue
        try:
            workload.complete(study["params"] | overrides["params"])
        except registry.ParamsError as e:
            raise ConfigError(f"studies.{name}.series.{series}.{e}") from None


def check_study(
    name: str, study: dict, workdir: Path, limits: dict | None = None, known: dict | None = None
) -> None:
    """Checks the schema cannot express; raise ConfigError naming the key. `known`: the
    workloads (default: those of the workflow in workdir)."""
    if not SAFE_NAME.match(name):
        raise ConfigError(f"studies.{name}: study names may only use letters, digits, '-' and '_'")
    if "measured" in study:
        path = workdir / study["measured"]
        if not path.is_file():
            raise ConfigError(f"studies.{name}.measured: no such file: {path}")
        return
    workload = find_workload(name, study, workloads_of(workdir) if known is None else known)
    for series in series_names(study):
        check_series(name, series_study(study, series), limits, series, workload)


def check_series(
    name: str, study: dict, limits: dict | None, series: str, workload: registry.Workload
) -> None:
    scaling = study["scaling"]
    points = scaling["points"]
    if study["workload"] == "command":
        try:
            check_command_params(study["params"])
        except ValueError as e:
            raise ConfigError(f"studies.{name}.{e}") from None
    if scaling["device"] not in workload.devices:
        raise ConfigError(
            f"studies.{name}.scaling.device: workload {workload.name} runs on "
            f"{' or '.join(workload.devices)} only, not {scaling['device']}"
        )
    if not workload.distributed and (
        scaling["axis"] in ("devices", "nodes") or scaling["devices"] > 1 or scaling["nodes"] > 1
    ):
        raise ConfigError(
            f"studies.{name}.scaling: workload {study['workload']} runs one process; "
            "scale it over threads (axis: threads, devices: 1, nodes: 1)"
        )
    for n in points:
        check_limits(name, point_for(name, study, n, series), limits or {})
    profile = study.get("profile", {})
    if profile.get("enabled"):
        if not workload.steps:
            raise ConfigError(
                f"studies.{name}.profile: workload {study['workload']} has no training steps "
                "the PyTorch profiler can see; profile your program with its own tools"
            )
        if profile.get("point", base_n(study, points)) not in points:
            raise ConfigError(
                f"studies.{name}.profile.point: {profile['point']} is not one of the points "
                f"{sorted(points)}"
            )
    base = scaling.get("base")
    if base is not None and base not in points:
        raise ConfigError(
            f"studies.{name}.scaling.base: {base} is not one of the points {sorted(points)}"
        )


# Slack between the job's time limit and its run's: room to start the step and
# write the record after Slurm stopped a run that was out of time.
TIME_SLACK_MIN = 2
# Memory of the job beyond the run's own: Snakemake's job-step process (about
# 300 MB) and the launcher live in the job too. The run's step gets exactly the
# study's mem_mb, so Slurm stops the run, not the job that records why.
JOB_MEM_OVERHEAD_MB = 512


def slurm_resources(point: Point, study: dict) -> dict:
    """Snakemake resources of a point's job, as the Slurm executor plugin reads them.

    Threads become cpus_per_task (and the rule's threads, which Snakemake exports as
    OMP_NUM_THREADS). A point with several processes is an `mpi` job whose rule runs
    its own srun step; the plugin refuses mpi with one task per node, so such points
    give `tasks` (CPU) or rely on one task per GPU (GPU). A single-process point
    gives mpi="" so the plugin submits it as a plain job but runs the rule in the
    batch step, where the launcher's own srun step gets the cores.
    """
    res = {
        "cpus_per_task": point.threads,
        "nodes": point.nodes,
        "mem_mb": study["resources"]["mem_mb"] + JOB_MEM_OVERHEAD_MB,
        "runtime": study["resources"]["runtime"] + TIME_SLACK_MIN,
        "mpi": "srun" if point.world_size > 1 else "",
        "tasks": None,
        "tasks_per_node": None,
        "tasks_per_gpu": None,
        "gpu": None,
        "gpu_model": None,
    }
    if point.gpus:
        res["gpu"] = point.gpus
        res["tasks_per_gpu"] = 1
        res["gpu_model"] = study["resources"].get("gpu_model")
    if point.world_size > 1:
        if point.tasks_per_node > 1:
            res["tasks_per_node"] = point.tasks_per_node
        else:
            res["tasks"] = point.world_size
    elif not point.gpus:
        res["tasks"] = 1
    return res


def check_limits(name: str, point: Point, limits: dict) -> None:
    """Refuse a point the partition cannot hold, before any job is submitted."""
    checks = [
        ("cpus_per_node", point.threads * point.tasks_per_node, "CPUs per node"),
        ("gpus_per_node", point.gpus_per_node, "GPUs per node"),
        ("nodes", point.nodes, "nodes"),
    ]
    for key, need, what in checks:
        limit = limits.get(key)
        if limit is not None and need > limit:
            raise ConfigError(
                f"studies.{name}: point {point.label} needs {need} {what}, the partition has "
                f"{limit} (partition_limits.{key})"
            )


def dataset_of(study: dict) -> str | None:
    """The prepared data set a study's runs read, if any."""
    dataset = study.get("params", {}).get("dataset")
    return dataset if dataset in DATASETS else None


def run_spec(study_name: str, study: dict, n: int, repeat: int, series: str = "") -> dict:
    """What the launcher needs to run one job of a point."""
    point = point_for(study_name, study, n, series)
    study = series_study(study, series)
    return {
        "study": study_name,
        "point": point.label,
        "repeat": repeat,
        "workload": study["workload"],
        "n": n,
        "params": study["params"],
        "requested": {
            "threads": point.threads,
            "tasks_per_node": point.tasks_per_node,
            "nodes": point.nodes,
            "gpus_per_node": point.gpus_per_node,
            "mem_mb": study["resources"]["mem_mb"],
        },
        "time_limit_min": study["resources"]["runtime"],
    }


def profile_targets(config: dict) -> list[tuple[str, str]]:
    """(study, point label) of every point a study asked to profile."""
    targets = []
    for name, study in config["studies"].items():
        profile = study.get("profile", {})
        if "workload" in study and profile.get("enabled"):
            # the first series' point: profiling is about the code, not the series
            series = series_names(study)[0]
            points = series_study(study, series)["scaling"]["points"]
            n = profile.get("point", base_n(study, points))
            targets.append((name, point_for(name, study, n, series).label))
    return targets


def normalise_config(config: dict, workdir: Path) -> dict:
    """Copy a schema-validated config, validate every study's workload params against
    that workload's own schema (filling in its defaults), and check it. The validator
    inserts the very same default object into every study, and deepcopy would keep that
    sharing: a JSON round trip gives each study its own."""
    config = json.loads(json.dumps(config))
    known = workloads_of(workdir)
    for name, study in config["studies"].items():
        if "workload" in study:
            complete_params(name, study, known)
    if config.get("only"):
        unknown = sorted(set(config["only"]) - set(config["studies"]))
        if unknown:
            raise ConfigError(f"only: no study named {', '.join(unknown)}")
        config["studies"] = {k: v for k, v in config["studies"].items() if k in config["only"]}
    for name, study in config["studies"].items():
        check_study(name, study, workdir, config.get("partition_limits"), known)
    return config


def points_table(config: dict) -> pd.DataFrame:
    """One row per (study, point) of every study that runs jobs."""
    rows = []
    for name, study in config["studies"].items():
        if "workload" not in study:
            continue
        for series in series_names(study):
            for n in sorted(series_study(study, series)["scaling"]["points"]):
                point = point_for(name, study, n, series)
                rows.append(point.as_dict() | {"workload": study["workload"]})
    columns = list(Point.__dataclass_fields__) + ["cores", "gpus", "world_size", "workload"]
    return pd.DataFrame(rows, columns=columns).rename(columns={"label": "point"})


def runs_table(config: dict) -> pd.DataFrame:
    """One row per job: (study, point, repeat)."""
    points = points_table(config)
    repeats = {name: s["repeats"] for name, s in config["studies"].items()}
    rows = [
        {"study": p.study, "point": p.point, "repeat": k}
        for p in points.itertuples()
        for k in range(1, repeats[p.study] + 1)
    ]
    return pd.DataFrame(rows, columns=["study", "point", "repeat"])


def describe_validation_error(error: BaseException) -> str:
    """Turn jsonschema's error into one line that names the bad key's path."""
    try:
        from jsonschema.exceptions import ValidationError, best_match
    except ImportError:  # pragma: no cover - jsonschema ships with snakemake
        return str(error)
    # snakemake.utils.validate raises WorkflowError from inside `except ValidationError`
    err = error
    while err is not None and not isinstance(err, ValidationError):
        err = err.__cause__ or err.__context__
    if err is None:
        return str(error)
    if err.context:
        err = best_match(err.context)
    path = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    return f"config key {path}: {err.message}"
