"""From a validated config to studies, points and repeats.

This is the only module that knows how a scaling point becomes resources;
rules/common.smk calls it, and so do the tests.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd

import workloads as registry
from scalestudy.compute import data
from scalestudy.compute.commandline import command_params_problems
from scalestudy.model import AXIS_TOTALS, Study

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
DATASETS = tuple(data.DATASETS)  # the prepared data sets: scalestudy.compute.data


class ConfigError(ValueError):
    """Config values that the schema refuses, or accepts but the workflow cannot use.
    `problems` lists every one found, each naming its key; str() gives one a line."""

    def __init__(self, *problems: str):
        self.problems = list(dict.fromkeys(problems))
        super().__init__("\n".join(self.problems))


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


# The letter a point's label starts with, per axis ("p" / "g" by device for devices).
LABEL_PREFIX = {"threads": "t", "nodes": "n", "processes": "p", "gpus": "g", "cores": "c"}
TOTAL_AXES = ("processes", "gpus", "cores")


@dataclass(frozen=True)
class Layout:
    """Where a point's processes run: nodes x processes per node, each with threads
    and GPUs."""

    nodes: int
    tasks_per_node: int
    threads: int
    gpus_per_task: int


def gpus_per_process(axis: str, device: str) -> int:
    """GPUs of a process where the point does not say: one on the gpus axis or a gpu
    device (one process per GPU), else none."""
    return int(axis == "gpus" or device == "gpu")


def layout_of(scaling, point) -> Layout:
    """The layout of one entry of scaling.points: a layout as given, or a number N on
    the axis, the rest from the scaling's own keys. A total (processes, gpus, cores) is
    placed `per_node` at most on each node, or one per node (`placement: spread`), or
    all on one node. A total that does not fill its nodes evenly is refused by
    scaling_problems before this is asked."""
    gpus = gpus_per_process(scaling.axis, scaling.device)
    if isinstance(point, dict):
        return Layout(point["nodes"], point["processes_per_node"], point["threads"],
                      point["gpus_per_process"])  # fmt: skip
    n, axis = point, scaling.axis
    if axis == "threads":
        return Layout(scaling.nodes, scaling.devices, n, gpus)
    if axis == "devices":
        return Layout(scaling.nodes, n, scaling.threads, gpus)
    if axis == "nodes":
        return Layout(n, scaling.devices, scaling.threads, gpus)
    unit = scaling.threads if axis == "cores" else 1  # what one process holds of N
    tasks = max(1, n // unit)
    if scaling.placement == "spread":
        per_node = 1
    elif scaling.per_node is not None:
        per_node = max(1, min(tasks, scaling.per_node // unit))
    else:
        per_node = tasks  # all on one node
    return Layout(tasks // per_node, per_node, scaling.threads, gpus)


def point_label(scaling, point, n: int, layout: Layout) -> str:
    """A label that says what the point is: t4, p2, g8-n2, n2, c8-2x4 (a layout given as
    such: processes per node x threads)."""
    prefix = LABEL_PREFIX.get(scaling.axis, "g" if scaling.device == "gpu" else "p")
    label = f"{prefix}{n}"
    if scaling.axis != "nodes" and layout.nodes > 1:
        label += f"-n{layout.nodes}"
    if isinstance(point, dict):
        label += f"-{layout.tasks_per_node}x{layout.threads}"
        if layout.gpus_per_task > 1:
            label += f"g{layout.gpus_per_task}"
    return label


def series_of_points(study: Study) -> dict[str, str]:
    """Point label -> series, for every point of the study."""
    return {
        point_for(study, n, series).label: series
        for series in study.series_names
        for n in study.for_series(series).scaling.ns()
    }


def point_for(study: Study, n: int, series: str = "", per_node: int | None = None) -> Point:
    """The point of N (a number on the axis, or a layout's total) of a study's series;
    `per_node` places a total that a measured row gives its own placement."""
    scaling = study.for_series(series).scaling
    if per_node is not None and scaling.axis in TOTAL_AXES:
        scaling = replace(scaling, per_node=per_node, placement="pack")
    given = dict(zip(scaling.ns(), scaling.points or (), strict=True)).get(n, n)
    layout = layout_of(scaling, given)
    label = point_label(scaling, given, n, layout)
    return Point(
        study=study.name,
        label=f"{series}-{label}" if series else label,
        n=n,
        series=series,
        threads=layout.threads,
        tasks_per_node=layout.tasks_per_node,
        nodes=layout.nodes,
        gpus_per_node=layout.tasks_per_node * layout.gpus_per_task,
    )


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


def find_workload(name: str, workload: str, known: dict) -> registry.Workload:
    if workload not in known:
        raise ConfigError(f"studies.{name}.workload: {registry.unknown_message(workload, known)}")
    return known[workload]


def params_problems(name: str, study: dict, known: dict) -> list[str]:
    """Validate the study's params against its workload's schema and fill in the
    defaults; each series' params overrides are validated merged into them. Every
    problem found, each naming its key."""
    try:
        workload = find_workload(name, study["workload"], known)
    except ConfigError as e:
        return e.problems
    try:
        study["params"] = workload.complete(study["params"])
    except registry.ParamsError as e:
        return [f"studies.{name}.{line}" for line in e.lines]
    problems = []
    for series, overrides in study.get("series", {}).items():
        if "params" not in overrides:
            continue
        try:
            workload.complete(study["params"] | overrides["params"])
        except registry.ParamsError as e:
            problems += [f"studies.{name}.series.{series}.{line}" for line in e.lines]
    return problems


def complete_params(name: str, study: dict, known: dict) -> None:
    """params_problems, raising ConfigError with them."""
    problems = params_problems(name, study, known)
    if problems:
        raise ConfigError(*problems)


def study_problems(
    study: Study,
    workdir: Path,
    limits: dict | None = None,
    known: dict | None = None,
    params_ok: bool = True,
) -> list[str]:
    """Every problem the schema cannot see, each naming its key. `known`: the workloads
    (default: those of the workflow in workdir); `params_ok`: False when the study's
    params failed their schema (their own checks are then skipped)."""
    if study.adaptive is not None:
        found = adaptive_problems(study)
        if found:
            return found
    if study.measured is not None:
        path = workdir / study.measured
        return [] if path.is_file() else [f"studies.{study.name}.measured: no such file: {path}"]
    try:
        known = workloads_of(workdir) if known is None else known
        workload = find_workload(study.name, study.workload, known)
    except ConfigError as e:
        return e.problems
    problems = []
    for series in study.series_names:
        problems += series_problems(study, limits, series, workload, workdir, params_ok)
    return list(dict.fromkeys(problems))


def adaptive_problems(study: Study) -> list[str]:
    """An `adaptive` setting the workflow cannot run in rounds, naming the key."""
    where, adaptive = f"studies.{study.name}.adaptive", study.adaptive
    if study.measured is not None:
        return [
            f"{where}: a study of times measured elsewhere runs no jobs, so it has no "
            "rounds; its report already names the measurements that would decide it"
        ]
    problems = []
    if study.budget_su is None:
        problems.append(f"studies.{study.name}.budget_su: an adaptive study needs a budget "
                        "(the most SU its rounds may cost)")  # fmt: skip
    if study.series:
        problems.append(f"{where}: an adaptive study has one series of candidates; this one "
                        f"has {len(study.series)} (series, or the lines of a grid)")  # fmt: skip
    if len(study.scaling.ns()) < 2:
        problems.append(f"{where}: needs at least two candidate points in scaling.points")
    if adaptive.first_repeats > adaptive.max_repeats:
        problems.append(f"{where}.first_repeats: {adaptive.first_repeats} is more than "
                        f"max_repeats ({adaptive.max_repeats})")  # fmt: skip
    return problems


def series_problems(
    whole: Study,
    limits: dict | None,
    series: str,
    workload: registry.Workload,
    workdir: Path | None = None,
    params_ok: bool = True,
) -> list[str]:
    study = whole.for_series(series)
    name, scaling, points = study.name, study.scaling, study.scaling.ns()
    problems = scaling_problems(name, scaling, series)
    if problems:
        return problems
    if study.workload == "command" and params_ok:
        problems += [f"studies.{name}.{p}" for p in command_params_problems(study.params, workdir)]
    if scaling.device not in workload.devices:
        problems.append(
            f"studies.{name}.scaling.device: workload {workload.name} runs on "
            f"{' or '.join(workload.devices)} only, not {scaling.device}"
        )
    layouts = [layout_of(scaling, p) for p in scaling.points]
    several = any(lay.nodes * lay.tasks_per_node > 1 for lay in layouts)
    if not workload.distributed and (scaling.axis != "threads" or several):
        problems.append(
            f"studies.{name}.scaling: workload {study.workload} runs one process; "
            "scale it over threads (axis: threads, devices: 1, nodes: 1)"
        )
    problems += limit_problems(name, [point_for(whole, n, series) for n in points], limits)
    problems += runtime_problems(
        whole,
        [point_for(whole, n, series) for n in points],
        (limits or {}).get("runtime"),
        "partition_limits.runtime",
    )
    profile = study.profile
    if profile.enabled:
        if not workload.steps:
            problems.append(
                f"studies.{name}.profile: workload {study.workload} has no training steps "
                "the PyTorch profiler can see; profile your program with its own tools"
            )
        elif profile.point is not None and profile.point not in points:
            problems.append(
                f"studies.{name}.profile.point: {profile.point} is not one of the points "
                f"{sorted(points)}"
            )
    if scaling.base is not None and scaling.base not in points:
        problems.append(
            f"studies.{name}.scaling.base: {scaling.base} is not one of the points {sorted(points)}"
        )
    return problems


def scaling_problems(name: str, scaling, series: str = "") -> list[str]:
    """A scaling whose points cannot be laid out as asked, each problem naming the key
    and the point."""
    where = f"studies.{name}" + (f".series.{series}" if series else "") + ".scaling"
    axis, problems = scaling.axis, []
    ns = scaling.ns()
    twice = sorted({n for n in ns if ns.count(n) > 1})
    if twice:
        problems.append(
            f"{where}.points: two points have N = {twice[0]} on axis {axis}: give each "
            "layout of one total its own series"
        )
    if axis == "gpus" and scaling.device != "gpu":
        problems.append(f"{where}.axis: gpus needs device: gpu")
    if axis not in TOTAL_AXES:
        if scaling.per_node is not None or scaling.placement != "pack":
            key = "per_node" if scaling.per_node is not None else "placement"
            problems.append(
                f"{where}.{key}: placement is for the total axes (processes, gpus, cores); "
                f"axis {axis} places its points with threads, devices and nodes"
            )
        return problems
    if scaling.per_node is not None and scaling.placement == "spread":
        problems.append(f"{where}: per_node packs, placement: spread spreads; give one")
    unit = scaling.threads if axis == "cores" else 1
    if axis == "cores" and scaling.per_node is not None and scaling.per_node % unit:
        problems.append(
            f"{where}.per_node: {scaling.per_node} cores per node is not a whole number of "
            f"processes of {unit} threads"
        )
    for point, n in zip(scaling.points, ns, strict=True):
        if isinstance(point, dict):
            continue
        if n % unit:
            problems.append(
                f"{where}.points: point {n}: {n} cores is not a whole number of processes "
                f"of {unit} threads (scaling.threads)"
            )
        elif scaling.per_node is not None and n > scaling.per_node and n % scaling.per_node:
            problems.append(
                f"{where}.per_node: {scaling.per_node} per node does not divide point {n}: "
                f"its last node would be part-filled"
            )
    return problems


# Slack between the job's time limit and its run's: room to start the step and
# write the record after Slurm stopped a run that was out of time.
TIME_SLACK_MIN = 2
# Memory of the job beyond the run's own: Snakemake's job-step process (about
# 300 MB) and the launcher live in the job too. The run's step gets exactly the
# study's mem_mb, so Slurm stops the run, not the job that records why.
JOB_MEM_OVERHEAD_MB = 512


def slurm_resources(point: Point, study: Study) -> dict:
    """Snakemake resources of a point's job, as the Slurm executor plugin reads them.

    Threads become cpus_per_task (and the rule's threads, which Snakemake exports as
    OMP_NUM_THREADS). A point with several processes is an `mpi` job whose rule runs
    its own srun step; the plugin refuses mpi with one task per node, so such points
    give `tasks` (CPU) or rely on one task per GPU (GPU). A single-process point
    gives mpi="" so the plugin submits it as a plain job but runs the rule in the
    batch step, where the launcher's own srun step gets the cores.
    """
    resources = study.for_series(point.series).resources
    res = {
        "cpus_per_task": point.threads,
        "nodes": point.nodes,
        "mem_mb": resources.mem_mb + JOB_MEM_OVERHEAD_MB,
        "runtime": resources.runtime + TIME_SLACK_MIN,
        "mpi": "srun" if point.world_size > 1 else "",
        "tasks": None,
        "tasks_per_node": None,
        "tasks_per_gpu": None,
        "gpu": None,
        "gpu_model": None,
        "slurm_extra": None,
    }
    if point.gpus:
        res["gpu"] = point.gpus
        res["gpu_model"] = resources.gpu_model
        per_task = point.gpus_per_node // point.tasks_per_node
        if per_task == 1 and point.tasks_per_node == 1:
            res["tasks_per_gpu"] = 1
        else:
            # the plugin has no key for it; sbatch takes it beside --gpus. Not
            # --ntasks-per-gpu: sbatch refuses it beside --ntasks-per-node
            res["slurm_extra"] = f"--gpus-per-task={per_task}"
    if point.world_size > 1:
        if point.tasks_per_node > 1:
            res["tasks_per_node"] = point.tasks_per_node
        else:
            res["tasks"] = point.world_size
    elif not point.gpus:
        res["tasks"] = 1
    if study.submission.exclusive:
        # the plugin has no key for it either; it lets --exclusive through slurm_extra
        res["slurm_extra"] = " ".join(filter(None, [res["slurm_extra"], "--exclusive"]))
    return res


def job_runtime(study: Study, point: Point) -> int:
    """Minutes one Slurm job of the point asks for: one run, or all the point's repeats
    when they are packed into one job (Snakemake sums a group's runtimes over the runs
    it runs one after another)."""
    one = slurm_resources(point, study)["runtime"]
    return one * study.repeats if study.submission.pack_repeats else one


def runtime_problems(
    study: Study, points: list[Point], limit: int | None, source: str
) -> list[str]:
    """The points whose job would ask for more minutes than the partition gives
    (`limit`, as `source` says it: partition_limits.runtime, or Slurm's own), found
    before any job is submitted."""
    if limit is None:
        return []
    problems = []
    for point in points:
        minutes = job_runtime(study, point)
        if minutes <= limit:
            continue
        one = slurm_resources(point, study)["runtime"]
        if study.submission.pack_repeats and one <= limit:
            problems.append(
                f"studies.{study.name}.submission.pack_repeats: point {point.label} packs "
                f"{study.repeats} repeats of {one} minutes into one job of {minutes} minutes, "
                f"the partition allows {limit} ({source}); lower repeats or "
                "resources.runtime, or set pack_repeats: false"
            )
        else:
            problems.append(
                f"studies.{study.name}.resources.runtime: point {point.label} asks for {one} "
                f"minutes (runtime + {TIME_SLACK_MIN}), the partition allows {limit} "
                f"({source})"
            )
    return problems


# What a partition limit bounds: partition_limits key -> (words, a point's need).
LIMITS = {
    "cpus_per_node": ("CPUs per node", lambda p: p.threads * p.tasks_per_node),
    "gpus_per_node": ("GPUs per node", lambda p: p.gpus_per_node),
    "nodes": ("nodes", lambda p: p.nodes),
}


def limit_problems(name: str, points: list[Point], limits: dict | None) -> list[str]:
    """The points the partition cannot hold, found before any job is submitted: for
    each limit, the first point beyond it (and how many more are)."""
    problems = []
    for key, (what, need) in LIMITS.items():
        limit = (limits or {}).get(key)
        beyond = [p for p in points if limit is not None and need(p) > limit]
        if beyond:
            message = (
                f"studies.{name}: point {beyond[0].label} needs {need(beyond[0])} {what}, "
                f"the partition has {limit} (partition_limits.{key})"
            )
            if len(beyond) > 1:
                message += f"; {len(beyond) - 1} more point(s) need more too"
            problems.append(message)
    return problems


def check_limits(name: str, point: Point, limits: dict) -> None:
    """Refuse a point the partition cannot hold, before any job is submitted."""
    problems = limit_problems(name, [point], limits)
    if problems:
        raise ConfigError(*problems)


def dataset_of(study: Study) -> str | None:
    """The prepared data set a study's runs read, if any."""
    dataset = study.params.get("dataset")
    return dataset if dataset in DATASETS else None


def run_spec(study: Study, n: int, repeat: int, series: str = "") -> dict:
    """What the launcher needs to run one job of a point."""
    point = point_for(study, n, series)
    own = study.for_series(series)
    return {
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
    }


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


# A grid line's series name: the key's letter and its value (p2: 2 processes per node).
GRID_SERIES = {"threads": "t", "processes_per_node": "p", "nodes": "n", "gpus_per_process": "g"}


def expand_range(name: str, study: dict) -> list[str]:
    """Turn a study's scaling.range into its points (N from first to last, each factor
    times or step more than the one before). Problems, each naming its key."""
    scaling = study["scaling"]
    span = scaling.pop("range", None)  # optional: no default
    if span is None:
        return []
    where = f"studies.{name}.scaling.range"
    first, last = span["first"], span["last"]
    if ("factor" in span) == ("step" in span):
        return [f"{where}: give one of factor (1, 2, 4, ...) and step (4, 8, 12, ...)"]
    if last < first:
        return [f"{where}.last: {last} is below first ({first})"]
    points, n = [], first
    while n <= last:
        if not points or round(n) != points[-1]:
            points.append(round(n))
        n = n * span["factor"] if "factor" in span else n + span["step"]
    scaling["points"] = points
    return []


def expand_grid(name: str, study: dict) -> list[str]:
    """Turn a study's scaling.grid into series, one per value of its first key (a line
    of the grid), whose points are layouts along the second key; the keys the grid does
    not vary come from the scaling (threads, devices as processes per node, nodes; one
    GPU per process on the gpus axis or a gpu device). Cells above max_total are left
    out. Problems, each naming its key, for a grid that cannot be laid out."""
    scaling = study["scaling"]
    grid = scaling.get("grid")  # optional: no default
    if not grid:
        return []
    where = f"studies.{name}.scaling"
    if study.get("series"):
        return [f"{where}.grid: a grid makes the study's series, one per line: give one of them"]
    if scaling["axis"] not in TOTAL_AXES:
        return [f"{where}.grid: a grid needs a total axis (processes, gpus, cores), not "
                f"{scaling['axis']}"]  # fmt: skip
    (line_key, lines), (along_key, along) = grid.items()
    cells = len(lines) * len(along)
    if cells > scaling["max_cells"]:
        return [f"{where}.grid: {cells} cells, more than max_cells ({scaling['max_cells']}); "
                "raise scaling.max_cells to run them all"]  # fmt: skip
    fixed = {"threads": scaling["threads"], "processes_per_node": scaling["devices"],
             "nodes": scaling["nodes"],
             "gpus_per_process": gpus_per_process(scaling["axis"], scaling["device"])}  # fmt: skip
    total = AXIS_TOTALS[scaling["axis"]]
    cap = scaling.get("max_total")  # optional: no default
    series = {}
    for value in lines:
        layouts = [fixed | {line_key: value, along_key: w} for w in along]
        layouts = [lay for lay in layouts if cap is None or total(lay) <= cap]
        if layouts:
            series[f"{GRID_SERIES[line_key]}{value}"] = {"scaling": {"points": layouts}}
    if not series:
        return [f"{where}.max_total: {cap} leaves no cell of the grid"]
    study["series"] = series
    scaling["points"] = next(iter(series.values()))["scaling"]["points"]
    return []


def study_models(config: dict) -> dict[str, Study]:
    """Every study of a checked config (normalise_config) as the study model."""
    return {name: Study.from_config(name, study) for name, study in config["studies"].items()}


def normalise_config(config: dict, workdir: Path) -> dict:
    """Copy a schema-validated config, validate every study's workload params against
    that workload's own schema (filling in its defaults), and check it: ConfigError
    lists every problem found, each naming its key. The validator
    inserts the very same default object into every study, and deepcopy would keep that
    sharing: a JSON round trip gives each study its own."""
    config = json.loads(json.dumps(config))
    known = workloads_of(workdir)
    problems, unusable = [], set()  # studies whose params are not completed
    for name, study in config["studies"].items():
        if "workload" in study:
            found = params_problems(name, study, known)
            problems += found
            unusable |= {name} if found else set()
    if config.get("only"):
        for unknown in sorted(set(config["only"]) - set(config["studies"])):
            near = registry.suggestion(unknown, config["studies"])
            guess = f"; did you mean `{near}`?" if near else ""
            problems.append(f"only: no study named {unknown}{guess}")
        config["studies"] = {k: v for k, v in config["studies"].items() if k in config["only"]}
    limits = config["partition_limits"]
    for name, study in config["studies"].items():
        if not SAFE_NAME.match(name):
            problems.append(
                f"studies.{name}: study names may only use letters, digits, '-' and '_', "
                "starting with a letter or digit"
            )
            continue
        found = expand_range(name, study) or expand_grid(name, study)
        if found:
            problems += found
            continue
        model = Study.from_config(name, study)
        problems += study_problems(model, workdir, limits, known, name not in unusable)
    if problems:
        raise ConfigError(*problems)
    return config


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


def names_under(path: list[str]) -> str:
    """What the names (keys) under a config path are, for messages."""
    return {"studies": "study names", "series": "series names"}.get(
        path[-1] if path else "", f"names under {'.'.join(path) or 'the top level'}"
    )


def schema_problem(error) -> list[tuple[list[str], str]]:
    """One jsonschema error of the config as (key path, message in words), one per bad
    key; the error's own path is kept (its document position orders the messages)."""
    return registry.describe_error(error, names_of=names_under)


def config_key(path: list[str], message: str) -> str:
    return f"config key {'.'.join(path) or '(top level)'}: {message}"


def describe_validation_error(error: BaseException) -> str:
    """Turn jsonschema's error into lines, one per bad key, each naming its path."""
    try:
        from jsonschema.exceptions import ValidationError
    except ImportError:  # pragma: no cover - jsonschema ships with snakemake
        return str(error)
    # snakemake.utils.validate raises WorkflowError from inside `except ValidationError`
    err = error
    while err is not None and not isinstance(err, ValidationError):
        err = err.__cause__ or err.__context__
    if err is None:
        return str(error)
    return "\n".join(config_key(path, message) for path, message in schema_problem(err))


def document_order(config, path: list[str]) -> list[int]:
    """Where a key path is in the config, to list problems in the order of the file."""
    position, node = [], config
    for part in path:
        keys = list(node) if isinstance(node, dict) else None
        if keys is not None and part in node:
            position.append(keys.index(part))
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            position.append(int(part))
            node = node[int(part)]
        else:
            position.append(len(node) if isinstance(node, dict | list) else 0)
            break
    return position


def schema_problems(config: dict, schema: dict) -> list[tuple[list[str], str]]:
    """Every error of the config against the schema (not only the first, as
    snakemake.utils.validate raises), as (key path, message), in the order of the file."""
    from jsonschema import Draft202012Validator

    found = []
    for error in Draft202012Validator(schema).iter_errors(config):
        found += schema_problem(error)
    found.sort(key=lambda problem: document_order(config, problem[0]))
    return list({config_key(*p): p for p in found}.values())


def without_schema_problems(config: dict, paths: list[list[str]]) -> dict | None:
    """The config less the studies and top-level keys that the schema refused, for the
    checks of normalise_config to look at the rest; None when nothing is left to check."""
    bad_top = {path[0] for path in paths if path and path[0] != "studies"}
    bad_studies = {path[1] for path in paths if len(path) > 1 and path[0] == "studies"}
    if any(not path or path == ["studies"] for path in paths):
        return None
    if not isinstance(config.get("studies"), dict):
        return None
    rest = {k: copy.deepcopy(v) for k, v in config.items() if k not in bad_top}
    rest["studies"] = {k: v for k, v in rest["studies"].items() if k not in bad_studies}
    if "only" in rest:
        if rest["only"] and set(rest["only"]) <= bad_studies:
            return None  # only the refused studies were asked for
        rest["only"] = [name for name in rest["only"] if name not in bad_studies]
    return rest if rest["studies"] else None


def checked_config(config: dict, schema_path: str | Path, workdir: Path) -> dict:
    """The config validated against the schema (which fills in its defaults, in
    `config` itself, as snakemake.utils.validate does) and by normalise_config.
    ConfigError lists every problem found, schema ones first, each as
    `config key PATH: ...`; a study the schema refused is not checked further."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, schema=str(schema_path))
    except WorkflowError as e:
        import yaml

        schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
        found = schema_problems(json.loads(json.dumps(config)), schema)
        if not found:  # pragma: no cover - the two validators disagree
            raise ConfigError(describe_validation_error(e)) from None
        problems = [config_key(*problem) for problem in found]
        rest = without_schema_problems(config, [path for path, _ in found])
        if rest is not None:
            try:
                validate(rest, schema=str(schema_path))
                normalise_config(rest, workdir)
            except ConfigError as more:
                problems += [f"config key {p}" for p in more.problems]
            except WorkflowError:  # pragma: no cover - the rest is valid by construction
                pass
        raise ConfigError(*problems) from None
    try:
        return normalise_config(config, workdir)
    except ConfigError as e:
        raise ConfigError(*(f"config key {p}" for p in e.problems)) from None


def config_error_text(problems: list[str]) -> str:
    """What the workflow prints for a config it refuses: every problem, one a line."""
    count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
    lines = "\n".join(f"  {p}" for p in problems)
    return f"The config has {count}; no job was run:\n{lines}"


def yaml_problem(path: str | Path) -> str | None:
    """Why a config file is no JSON or YAML, as FILE:LINE:COLUMN: what, with the line and
    a caret under the place, or holds no keys; None when it reads (or is absent:
    Snakemake says so). It reads the file as Snakemake does (JSON first, then YAML with
    yaml.FullLoader), whose own message names neither the file nor the place."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: cannot read the config file ({e})"
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    try:
        if data is None:
            data = yaml.load(text, Loader=yaml.FullLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = e.problem or e.context or "syntax error"
        if e.context and e.problem and e.context_mark is not None:
            where = e.context_mark
            what += f" ({e.context} at line {where.line + 1}, column {where.column + 1})"
        if mark is None:  # pragma: no cover - PyYAML marks its syntax errors
            return f"{path}: not valid YAML: {what}"
        lines = text.splitlines()
        shown = lines[mark.line] if mark.line < len(lines) else ""
        return (
            f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {what}\n"
            f"    {shown}\n    {' ' * mark.column}^"
        )
    except yaml.YAMLError as e:  # pragma: no cover - an error without a place
        return f"{path}: not valid YAML: {e}"
    if not isinstance(data, dict):
        what = "nothing" if data is None else f"a {type(data).__name__}"
        return f"{path}: must hold keys and their values (studies: ...), not {what}"
    return None


def stop(message: str) -> None:
    """Print `message` as Snakemake prints errors, and end the run with status 1.

    Raising from a Snakefile would print the message under `WorkflowError in file
    ..., line N:` and over a traceback line (`File ".../common.smk", line N`): Snakemake
    adds both to every exception whose traceback passes through a Snakefile
    (snakemake.exceptions.format_exception_to_string). Config errors are the user's,
    not the code's, so only the message is printed."""
    import sys

    from snakemake.logging import logger

    logger.error(message)
    sys.exit(1)


def stop_on_unreadable_config(*paths: str | Path) -> None:
    """Stop before Snakemake loads a config file that is no JSON or YAML, naming its
    file, line and column (Snakemake's own message names none of them)."""
    problems = [p for p in map(yaml_problem, paths) if p]
    if problems:
        stop("\n".join(problems))
