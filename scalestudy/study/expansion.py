"""Range and grid expansion: a study's scaling.range and scaling.grid into points."""

from scalestudy.model import AXIS_TOTALS
from scalestudy.study.points import TOTAL_AXES, gpus_per_process

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
        return [
            f"{where}.grid: a grid needs a total axis (processes, gpus, cores), not "
            f"{scaling['axis']}"
        ]
    (line_key, lines), (along_key, along) = grid.items()
    cells = len(lines) * len(along)
    if cells > scaling["max_cells"]:
        return [
            f"{where}.grid: {cells} cells, more than max_cells ({scaling['max_cells']}); "
            "raise scaling.max_cells to run them all"
        ]
    fixed = {
        "threads": scaling["threads"],
        "processes_per_node": scaling["devices"],
        "nodes": scaling["nodes"],
        "gpus_per_process": gpus_per_process(scaling["axis"], scaling["device"]),
    }
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
