"""Layouts and point labels: how a scaling point becomes a layout and its label."""

from dataclasses import asdict, dataclass, replace

from scalestudy.model import Study


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


# What a point's label is made of (its series' name and "-", then point_label's): the
# workflow's constraint on {point}. A list of every label instead made each path
# Snakemake fills in scan them all: minutes of a dry run for a grid of thousands.
POINT_LABEL = r"[A-Za-z0-9][A-Za-z0-9_-]*"
# The letter a point's label starts with, per axis ("p" / "g" by device for devices).
LABEL_PREFIX = {"threads": "t", "nodes": "n", "processes": "p", "gpus": "g", "cores": "c"}
TOTAL_AXES = ("processes", "gpus", "cores")


@dataclass(frozen=True)
class Layout:
    """Where a point's processes run: nodes x processes per node, each with threads and GPUs."""

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
        return Layout(
            point["nodes"], point["processes_per_node"], point["threads"], point["gpus_per_process"]
        )
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
    given = scaling.given(n)
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
