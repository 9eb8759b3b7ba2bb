"""The study model: one study of a validated config as frozen dataclasses.

The config schema (config/schema/config.schema.yaml) is the only place a default is written:
snakemake.utils.validate fills them in, and the workloads' own schemas fill in their params
(scalestudy.study.validation.checked_config does both). `Study.from_config` then reads every
key as given. A field that the schema gives a default is read with `data[key]` (a missing key
means the config was not validated, an error); a field typed `... | None` has no default in
the schema and None means "not set". Nothing after this point re-applies a default:
tests/test_study_model.py fails if a default of the schema is written again as a fallback.

Code that reads a study takes a `Study` (or one series' view of it, `for_series`).
Shared by the head node (analysis, report) and rules/common.smk; standard library only.
"""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import cached_property
from typing import Any

SCHEMA_FILE = "config/schema/config.schema.yaml"  # relative to the workflow's folder
# the config the commands that act on a study by name read (make check, make redo)
CONFIG_FILE = "config/config.yaml"


class StudyModelError(KeyError):
    """A study dict that lacks a key its schema would have filled in: it was not
    validated (scalestudy.study.validation.checked_config)."""

    def __str__(self) -> str:
        return self.args[0]


def _build(cls, data: dict, where: str):
    """An instance of dataclass `cls` from `data`, field by field, recursively."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in fields(cls):
        if not f.init:
            continue
        hint = hints[f.name]
        args = typing.get_args(hint)
        optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
        inner = next((a for a in args if a is not type(None)), hint)
        if f.name not in data:
            if not optional:
                raise StudyModelError(
                    f"{where}.{f.name} is missing: build studies from a validated config "
                    "(scalestudy.study.validation.checked_config fills in the schema's defaults)"
                )
            values[f.name] = None
            continue
        value = data[f.name]
        if is_dataclass(inner) and isinstance(value, dict):
            value = _build(inner, value, f"{where}.{f.name}")
        elif isinstance(value, list):
            value = tuple(value)
        values[f.name] = copy.deepcopy(value)
    return cls(**values)


# What N counts on each axis, for a point given as a layout (scaling.points may list
# {nodes, processes_per_node, threads, gpus_per_process} instead of numbers).
AXIS_TOTALS = {
    "threads": lambda lay: lay["threads"],
    "devices": lambda lay: lay["processes_per_node"],
    "nodes": lambda lay: lay["nodes"],
    "processes": lambda lay: lay["nodes"] * lay["processes_per_node"],
    "gpus": lambda lay: lay["nodes"] * lay["processes_per_node"] * lay["gpus_per_process"],
    "cores": lambda lay: lay["nodes"] * lay["processes_per_node"] * lay["threads"],
}


@dataclass(frozen=True)
class Scaling:
    # what varies across points: threads of one process, processes per node (devices),
    # nodes, or a total over the job (processes, gpus, cores) placed on nodes
    axis: str
    points: tuple[int | dict, ...] | None  # N, or layouts; None for published times
    base: int | None  # None: the smallest N
    kind: str  # strong | weak
    threads: int
    devices: int
    nodes: int
    device: str  # cpu | gpu
    per_node: int | None  # a total axis: at most this many per node (None: one node)
    placement: str  # pack | spread (one per node)
    grid: dict[str, list] | None  # two layout keys -> values (expanded into series)
    max_total: int | None  # a grid's cells above this total are left out
    max_cells: int  # a grid with more cells is refused

    def ns(self) -> list[int]:
        """The N of every point, in the config's order (a layout's from the axis)."""
        return [p if isinstance(p, int) else AXIS_TOTALS[self.axis](p) for p in self.points or ()]

    def given(self, n: int) -> int | dict:
        """The entry of scaling.points whose N is n: its layout, or n itself."""
        return self._given_by_n.get(n, n)

    @cached_property
    def _given_by_n(self) -> dict[int, int | dict]:
        # once per scaling: a grid's point is looked up for each of its thousands of jobs
        return dict(zip(self.ns(), self.points or (), strict=True))


@dataclass(frozen=True)
class Resources:
    mem_mb: int
    runtime: int  # minutes
    gpu_model: str | None


@dataclass(frozen=True)
class Convergence:
    metric: str | None  # None: the first quality metric the runs report
    tolerance: float


@dataclass(frozen=True)
class Recommend:
    min_marginal_speedup: float
    indifference: float  # the zone around the threshold, a share of it
    deadline_s: float | None
    budget_su: float | None


@dataclass(frozen=True)
class Adaptive:
    target_ci: float  # relative half-width of the recommended point's speedup CI
    max_repeats: int
    max_rounds: int  # the first round included
    first_repeats: int
    first_points: int
    settle_baseline: bool  # measure more where the comparison with a baseline is undecided


@dataclass(frozen=True)
class Compare:
    """A paired comparison: variants a and b (each: params, python, container) run
    interleaved at each point, as the study's series "a" and "b"."""

    a: dict[str, Any]
    b: dict[str, Any]
    order_seed: int  # draws the order of each pair's two runs
    tolerance: float  # a change is called only beyond 1 +- this

    def variant(self, name: str) -> dict[str, Any]:
        return {"a": self.a, "b": self.b}[name]


@dataclass(frozen=True)
class Request:
    mem_margin: float  # --mem = measured peak per node x (1 + this)
    time_margin: float  # --time = slowest whole-job time x (1 + this)


@dataclass(frozen=True)
class Verdict:
    size_param: str | None
    indifference: float  # the GPU and the CPU this close in time or SU: either is right


@dataclass(frozen=True)
class Submission:
    pack_repeats: bool  # the repeats of a point share one Slurm job
    exclusive: bool  # whole nodes (sbatch --exclusive)


@dataclass(frozen=True)
class Profile:
    enabled: bool
    point: int | None  # None: the base case
    steps: int


@dataclass(frozen=True)
class Study:
    """One study, every key as the validated config gives it."""

    name: str
    description: str
    workload: str | None  # None for a study of published times (`measured`)
    measured: str | None
    params: dict[str, Any]
    scaling: Scaling
    repeats: int
    time: str  # wall | train | steady
    convergence: Convergence
    include_mismatched: bool
    series: dict[str, dict] | None  # name -> overrides, as configured
    compare: Compare | None  # None: no paired comparison (its variants are series a, b)
    provenance: str  # refuse | split
    include_unstable: bool
    shared_tolerance: float
    include_shared: bool
    oversubscribe: bool
    submission: Submission
    budget_su: float | None  # most SU the whole study may cost
    baseline: str | None  # an earlier run's results folder, or "last" (archive)
    baseline_tolerance: float  # a change is called only beyond 1 +- this
    baseline_across: bool  # another workload, params or study name on purpose
    expect: dict[str, dict] | None  # references: value -> N -> [lower, upper]
    adaptive: Adaptive | None  # None: every point and repeat runs (a fixed study)
    request: Request
    recommend: Recommend
    verdict: Verdict
    profile: Profile
    resources: Resources
    cost: dict[str, Any]  # weights and partitions: priced by scalestudy.analysis.cost.cost.Cost

    @classmethod
    def from_config(cls, name: str, data: dict) -> Study:
        """The study `name` from its validated config dict."""
        return _build(cls, {"name": name} | data, f"studies.{name}")

    @property
    def series_names(self) -> list[str]:
        """The study's series ("" when it has none)."""
        return list(self._series_overrides) or [""]

    @property
    def _series_overrides(self) -> dict[str, dict]:
        """Series name -> its overrides: the configured series, or a comparison's variants."""
        if self.compare is not None:
            return {"a": self.compare.a, "b": self.compare.b}
        return self.series or {}

    def for_series(self, series: str) -> Study:
        """The study as one of its series sees it: the series' params, scaling,
        resources and cost override the study's, key by key. A series split by
        provenance ("a [GPU model=x]") sees its configured series'."""
        name = base_series(series)
        overrides = self._series_overrides.get(name)
        if not overrides:
            return self
        # built once per series: the workflow asks for a point's view about 30 times a
        # job, and copying a big grid's layouts each time cost minutes of a dry run
        if name not in self._series_views:
            self._series_views[name] = self._series_view(overrides)
        return self._series_views[name]

    @cached_property
    def _series_views(self) -> dict[str, Study]:
        """The views for_series built (not a field: no part of the study's value)."""
        return {}

    def _series_view(self, overrides: dict) -> Study:
        changes: dict[str, Any] = {"series": None, "compare": None}
        if "measured" in overrides:  # times measured elsewhere: the series runs no jobs
            changes |= {"measured": overrides["measured"], "workload": None}
        if "params" in overrides:
            changes["params"] = self.params | overrides["params"]
        if "cost" in overrides:
            changes["cost"] = self.cost | overrides["cost"]
        for key in ("scaling", "resources"):
            if key in overrides:
                own = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides[key].items()}
                changes[key] = replace(getattr(self, key), **own)
        return replace(self, **copy.deepcopy(changes))

    @property
    def elsewhere(self) -> bool:
        """Whether its times were all measured elsewhere (its CSV, or each series' own)."""
        return all(self.for_series(s).measured for s in self.series_names)

    def base_n(self, ns) -> int:
        """The base case N: the configured one, else the smallest N."""
        return self.scaling.base if self.scaling.base is not None else min(ns)


def base_series(name: str) -> str:
    """The configured series of a series that was split by provenance ("a [GPU=x]")."""
    return name.split("[", 1)[0].strip()
