"""Service units (SU): what an allocation is charged, priced in one place.

    SU = (core_weight x cores + gpu_weight x GPUs) x hours of whole-job (wall) time
         + energy_weight x kWh of measured energy  (energy_weight 0 by default: off)

The weights are a study's `cost`, a series' own overriding it key by key, a listed
partition's for runs there (config/README.md; the defaults live in the config schema
only). Every SU figure prices whole-job time, whatever time the speedups use: Cost
chooses it (whole_job_seconds), its callers pass runs or points. Energy is charged
only as measured: the plan, which runs nothing, prices none. What runs cost is one
function, `charges` (every run, failed and killed ones too, at its elapsed time);
whether a price is within a budget is one function, `within_budget`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from scalestudy.contract import Charges, CostModel, CostRate
from scalestudy.model import Study

SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6
WEIGHTS = ("core_weight", "gpu_weight")
# the one time basis of every SU figure, in the report's words
BASIS = "hours of whole-job (wall) time"
# where a table holds it: a run's elapsed_s (failed and killed runs have it too), else
# the wall_s of a run or a point (a summary)
WHOLE_JOB = ("elapsed_s", "wall_s")


def whole_job_seconds(table: pd.DataFrame, time: str | None = None) -> pd.Series:
    """Each row's whole-job time (NaN: none): the first WHOLE_JOB column the table has,
    else its time_s where that is the whole job's (`time`: the study's time, "wall";
    None: not known, so time_s is not taken)."""
    for column in WHOLE_JOB:
        if column in table:
            return pd.to_numeric(table[column], errors="coerce")
    if time == "wall" and "time_s" in table:
        return pd.to_numeric(table["time_s"], errors="coerce")
    raise ValueError("no whole-job time to price SU (elapsed_s, wall_s)")


# A price is a sum of float products whose rounding is relative (0.05 + 0.1 =
# 0.15000000000000002), so a budget written equal to a price must be within it. A
# relative tolerance rather than rounding to decimal places: SU are tiny in tests and
# large on real machines alike; 1e-9 is far above float error and far below any
# difference in money anyone writes.
SU_RELATIVE_PRECISION = 1e-9


def within_budget(su, budget):
    """Whether `su` (a number or an array) is at most `budget`, at SU's precision
    (SU_RELATIVE_PRECISION); NaN is not within any budget."""
    return np.asarray(su) <= budget + SU_RELATIVE_PRECISION * abs(budget)


@dataclass(frozen=True)
class Rate:
    """SU per core-hour and per GPU-hour."""

    core_weight: float
    gpu_weight: float

    def per_hour(self, cores, gpus):
        """SU per hour of a job holding `cores` cores and `gpus` GPUs (numbers or arrays)."""
        return self.core_weight * cores + self.gpu_weight * gpus

    def text(self) -> str:
        return f"{self.core_weight:g} × cores + {self.gpu_weight:g} × GPUs"


@dataclass(frozen=True)
class Cost:
    """How a study (or one of its series) is charged: its weights and its partitions'."""

    rate: Rate
    partitions: tuple[tuple[str, Rate], ...] = ()
    energy_weight: float = 0.0  # SU per kWh of measured energy

    @classmethod
    def from_config(cls, cost: Mapping) -> Cost:
        """From a study's validated `cost` (Study.cost: both weights, and partitions;
        energy_weight, whose schema default is 0: a cost built by hand without it
        charges no energy)."""
        rate, partitions = Rate(*(float(cost[k]) for k in WEIGHTS)), cost["partitions"].items()
        # a partition's weights (the schema, $defs/cost, has checked them: known keys,
        # numbers >= 0) replace the study's key by key
        rates = tuple(
            (str(name), replace(rate, **{k: float(v) for k, v in (own or {}).items()}))
            for name, own in partitions
        )
        return cls(rate, rates, float(cost.get("energy_weight", 0.0)))

    @classmethod
    def of(cls, study: Study, series: str = "") -> Cost:
        """The cost of a study's series ("" = the study itself), its override applied; a
        series split by provenance ("a [GPU model=x]") is priced as its series."""
        return cls.from_config(study.for_series(series or "").cost)

    def rate_on(self, partition=None) -> Rate:
        """The weights of a run on `partition` (None, NaN or an unlisted name: the study's)."""
        if isinstance(partition, str):
            for name, rate in self.partitions:
                if name == partition:
                    return rate
        return self.rate

    def per_hour(self, cores, gpus, partition=None):
        """SU per hour of whole-job time for (cores, gpus) on `partition`."""
        return self.rate_on(partition).per_hour(cores, gpus)

    def su(self, cores, gpus, seconds, partition=None, energy_j=None):
        """SU of a job of `seconds` whole-job (wall) time; NaN seconds give NaN. With an
        energy weight, plus its measured `energy_j` (None or NaN: not measured, no charge)."""
        su = self.per_hour(cores, gpus, partition) * seconds / SECONDS_PER_HOUR
        if self.energy_weight and energy_j is not None and np.isfinite(energy_j):
            su = su + self.energy_weight * energy_j / JOULES_PER_KWH
        return su

    def su_of(self, table: pd.DataFrame, time: str | None = None) -> np.ndarray:
        """SU of each row of a table of runs or points: its cores and GPUs over its
        whole-job time (whole_job_seconds; `time`: the study's), on its partition and
        with its measured energy_j where the table has them."""
        seconds = whole_job_seconds(table, time).to_numpy(dtype=float)
        nothing = pd.Series(None, index=table.index, dtype=object)
        partitions = table.get("partition", nothing)
        # NaN or None: not measured, no charge (Cost.su)
        energies = pd.to_numeric(table.get("energy_j", nothing), errors="coerce")
        rows = zip(table["cores"], table["gpus"], seconds, partitions, energies, strict=True)
        return np.array([self.su(*row) for row in rows], dtype=float)

    def describe(self) -> list[tuple[str, str]]:
        """(where, weights in words): the cost's own, then each partition's."""
        rows = [("", self.rate.text())]
        return rows + [(f"partition {name}", rate.text()) for name, rate in self.partitions]


def run_su(runs: pd.DataFrame, study: Study) -> np.ndarray:
    """SU of each run of a runs table (Cost.su_of: its whole-job time) priced with its
    series' cost on its partition. A run without a time costs 0: nothing says what it
    held."""
    runs = runs.assign(elapsed_s=whole_job_seconds(runs).fillna(0.0))
    names = runs.get("series", pd.Series("", index=runs.index)).astype(object).fillna("")
    su = pd.Series(np.nan, index=runs.index, dtype=float)
    for name, part in runs.groupby(names.astype(str), sort=False):
        su[part.index] = Cost.of(study, name).su_of(part)
    return su.to_numpy(dtype=float)


def charges(runs: pd.DataFrame, study: Study) -> Charges:
    """What a study's runs were charged: core-hours, GPU-hours and SU (run_su) of
    every run, failed and killed ones too."""
    seconds = pd.to_numeric(runs["elapsed_s"], errors="coerce").fillna(0.0).to_numpy()
    cores = runs["cores"].to_numpy(dtype=float)
    gpus = runs["gpus"].to_numpy(dtype=float)
    return Charges(
        core_hours=float((cores * seconds).sum() / SECONDS_PER_HOUR),
        gpu_hours=float((gpus * seconds).sum() / SECONDS_PER_HOUR),
        su=float(run_su(runs, study).sum()),
    )


def cost_view(study: Study) -> CostModel:
    """The weights a study's SU use, for the report: the study's, each partition's, and
    each series' whose cost differs from the study's (with its partitions')."""
    own = Cost.of(study)
    rows = own.describe()
    for name in study.series or {}:
        theirs = Cost.of(study, name)
        if theirs != own:
            for where, text in theirs.describe():
                rows.append((f"series {name}, {where}" if where else f"series {name}", text))
    others = [CostRate(where, text) for where, text in rows[1:]]
    # the energy charge in words; None where energy is not charged
    weight = own.energy_weight
    energy = f"{weight:g} SU per kWh of measured energy" if weight else None
    return CostModel(rows[0][1], others, BASIS, energy)
