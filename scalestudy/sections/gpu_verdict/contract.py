"""Is the GPU worth it: what analysis.json holds under "gpu_verdict" (its produce.py)."""

from dataclasses import dataclass
from typing import Any

# a size's verdict: the GPU worth it, not, either answer right (both ratios within the
# indifference zone), or not decided by these runs
WORTH, NOT_WORTH, EVEN, OPEN = "worth", "not worth", "even", "open"


@dataclass(frozen=True)
class Weighed:
    """A point the verdict weighs: its median time (the study's `time`), SU per result."""

    point: str
    series: str | None
    threads: int
    time_s: float
    su: float


@dataclass(frozen=True)
class Ratio:
    """A ratio of medians with its 95 % interval (None: fewer than 2 runs a side)."""

    value: float
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class GpuSize:
    """The GPU point (the fastest at the size) against the fastest CPU point (the time to
    beat) and the cheapest (the SU per result to beat) at one problem size."""

    size: Any
    gpu: Weighed
    fastest_cpu: Weighed
    best_cpu: Weighed
    speedup: Ratio  # the fastest CPU point's time over the GPU's
    su_ratio: Ratio  # the GPU's SU per result over the cheapest CPU point's
    verdict: str  # WORTH, NOT_WORTH, EVEN or OPEN
    more_runs: dict[str, int]  # OPEN: point -> the runs to add that would likely decide it
    at_least: bool  # more_runs only give intervals (a point has fewer than 2 runs)

    @property
    def break_even_speedup(self) -> float:
        """The speedup at which the GPU's SU per result would equal the cheapest CPU
        point's, its SU per result shrinking with its time."""
        return self.speedup.value * self.gpu.su / self.best_cpu.su


@dataclass(frozen=True)
class GpuVerdict:
    sizes: list[GpuSize]
    size_param: str | None  # what sets the problem size (None: the study has one)
    indifference: float  # verdict.indifference: the zone around break-even
    needs: str | None = None  # no verdict: what it needs
    worth_it_size: Any = None  # the smallest size worth it (decided), and every larger one
    crossover_size: Any = None  # the smallest size the GPU is faster at, and every larger one


# None: the study weighs no GPU against CPU points
DATA = GpuVerdict | None
