"""Energy to result: what analysis.json holds under "energy" (its produce.py)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class EnergyPoint:
    """One point's energy per result (one run): median over its runs from one source,
    with its 95 % interval, and its ratio to the base case (None: not measured, or not
    from the base case's source)."""

    series: str
    point: str
    n: int
    runs: int  # the runs the median is over
    energy_j: float | None
    energy_ci_lo: float | None
    energy_ci_hi: float | None
    source: str | None  # rapl+nvml | rapl | slurm | nvml
    source_words: str | None
    not_measured: str | None  # why there is no figure
    time_s: float | None
    comparable: bool  # measured from the base case's source
    relative_energy: float | None
    relative_ci_lo: float | None
    relative_ci_hi: float | None
    pareto: bool  # on the front of time against energy
    least: bool  # the series' least energy per result


@dataclass(frozen=True)
class EnergyAnswer:
    """What a series' recommended point costs in energy against its base case."""

    series: str
    point: str | None
    speedup: float | None
    relative_energy: float | None
    not_measured: str | None
    base_point: str | None
    least_point: str | None
    least_relative_energy: float | None


@dataclass(frozen=True)
class Energy:
    measured: bool  # any point has a figure: the section and its figure are shown
    not_measured: str | None  # why none was, where none was
    points: list[EnergyPoint]
    answers: list[EnergyAnswer]
    window: str  # what a run's energy per result covers: the phases its time covers
    weight_su_per_kwh: float  # cost.energy_weight (0: energy is not charged)


# None: times measured elsewhere, no records
DATA = Energy | None
