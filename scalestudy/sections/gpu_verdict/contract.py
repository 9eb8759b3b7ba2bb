"""Is the GPU worth it: what analysis.json holds under "gpu_verdict"
(scalestudy.analysis.decisions.verdict)."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuSize:
    """The GPU against the CPU points at one problem size
    (scalestudy.analysis.decisions.verdict)."""

    size: Any
    gpu_series: str | None
    fastest_cpu_series: str | None
    best_cpu_series: str | None
    gpu_time_s: float
    gpu_su: float
    fastest_cpu_threads: int
    fastest_cpu_time_s: float
    fastest_cpu_su: float
    best_cpu_threads: int
    best_cpu_time_s: float
    best_cpu_su: float
    speedup: float
    break_even_speedup: float
    gpu_faster: bool
    gpu_cheaper: bool


@dataclass(frozen=True)
class GpuVerdict:
    verdict: str
    sizes: list[GpuSize]
    # absent where no verdict could be made (the verdict says why)
    worth_it: bool | None = None
    worth_it_size: Any = None
    crossover_size: Any = None


# None: the study has no GPU and CPU points to weigh
DATA = GpuVerdict | None
