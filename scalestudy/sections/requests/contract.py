"""What to ask the scheduler for, per point: what analysis.json holds under "requests"
(scalestudy.analysis.decisions.request)."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PointRequest:
    """What to ask for at one point (scalestudy.analysis.decisions.request.point_request)."""

    point: str
    series: str
    n: int
    nodes: int
    tasks_per_node: int
    threads: int
    gpus_per_node: int
    cores: int
    gpus: int
    world_size: int
    runs: int
    asked_mem_mb: int | None
    peak_mem_mb: float | None
    memory_used: float | None
    cpu_busy: float | None
    gpu_util_pct: float | None
    mem_mb: int | None
    mem_from: str | None  # measured (the runs' own peak), sacct (Slurm's higher count), unmeasured
    time_min: int | None
    slowest_s: float | None
    resources: dict[str, Any] | None
    time_scaled: bool
    sbatch: list[str]
    waste: list[str]
    sacct_cpu_busy: float | None
    sacct_peak_mem_mb: float | None
    # --mem and the memory asked for in the words of the #SBATCH line (request.mem_text)
    mem_text: str | None
    asked_mem_text: str | None


@dataclass(frozen=True)
class Requests:
    points: list[PointRequest]
    accounting_note: str | None


DATA = Requests
