"""The study's Slurm jobs: analysis.json's "jobs"."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SlurmRun:
    point: str
    repeat: int
    job: Any
    nodes: str
    submitted: Any
    queue_wait_s: float | None
    run_s: float | None
    status: str
    shared_with: list[list[Any]]
    exclusive: bool | None


@dataclass(frozen=True)
class Allocations:
    runs: int
    jobs: int
    shared_jobs: int
    exclusive: str | None  # all | some | none (None: not known)


@dataclass(frozen=True)
class Jobs:
    runs: list[SlurmRun]
    allocations: Allocations


# None: no run had a Slurm job
DATA = Jobs | None
