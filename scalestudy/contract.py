"""What analysis.json holds: the typed contract between the analysis, which writes it
(scalestudy.pipeline.analyse), and the report, which reads it (scalestudy.rendering)
by attribute and decides nothing: the findings, and what several sections read; each
section's own data is its contract's (scalestudy/sections/<name>/contract.py), and the
whole file, the findings with every section's data, is scalestudy.sections.Analysis.

Every part the report reads a field of is a frozen dataclass here; parts it passes on
whole, or never reads (a model's parameters, the recommendation's working), stay plain
JSON. `to_json` writes `dataclasses.asdict` as JSON, so the file keeps the shape other
readers know (scalestudy.analysis.cost.plan reads series[i].curve). Loading is strict: a key
the contract does not name, or one it names that is missing, is refused with the key's
path and the file, so an analysis.json older or newer than the report is said, not
half-read. Who writes and reads it: docs/architecture.md.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import MISSING, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from scalestudy.model import Request, Scaling
from scalestudy.records import RecordError

# analysis.json's version: each file says its own ("version"; none: 1, made before versions)
VERSION = 2
SCHEMAS = Path(__file__).with_name("schemas")


class ContractError(RecordError):
    """A file of the workflow's own (analysis.json, a round's plan, the cluster facts) does
    not hold what its contract says: the message names the file and the key."""


# --- the parts -------------------------------------------------------------------------


@dataclass(frozen=True)
class TestAtN:
    """Two series' times at one N: ratio of medians with its interval, and the test."""

    n: int
    n_a: int
    n_b: int
    ratio: float | None
    lo: float | None
    hi: float | None
    p_value: float | None
    method: str
    note: str


@dataclass(frozen=True)
class Comparison:
    """A series against the first (scalestudy.analysis.stats.comparison.compare_series)."""

    a: str | None
    b: str
    per_n: list[TestAtN]
    common_n: list[int]
    p_value: float | None
    significant: bool
    mean_log_ratio: float | None
    method: str
    note: str
    tested: bool  # whether an overall test was made (there was a common N to test)


@dataclass(frozen=True)
class Placement:
    """Where a point runs (study.points.Layout as the report says it: GPUs per node)."""

    nodes: int
    tasks_per_node: int
    threads: int
    gpus_per_node: int


@dataclass(frozen=True)
class StudyFacts:
    """The study as configured, in what the report states of it."""

    name: str
    description: str | None
    workload: str | None
    measured: str | None
    kind: str  # measured | command | training | distributed
    params: dict[str, Any]
    scaling: Scaling  # the study model's own parts, as configured
    unit: str  # what N counts: several, and one
    unit_one: str
    time: str
    tolerance: float
    distributed: bool
    include_shared: bool
    include_unstable: bool
    profile_steps: int | None
    deadline_s: float | None
    budget_su: float | None
    request: Request
    # the global batch is kept fixed over the processes (strong scaling of the batch)
    global_batch_fixed: bool


@dataclass(frozen=True)
class CostRate:
    where: str
    rate: str


@dataclass(frozen=True)
class CostModel:
    rate: str
    others: list[CostRate]
    basis: str
    energy: str | None = None  # what measured energy is charged (None: not charged)


@dataclass(frozen=True)
class Charges:
    core_hours: float
    gpu_hours: float
    su: float


@dataclass(frozen=True)
class BaseCase:
    point: str
    n: int
    time_s: float | None


@dataclass(frozen=True)
class RunNote:
    """One run and what is wrong with it."""

    point: str
    repeat: int


@dataclass(frozen=True)
class Failure(RunNote):
    reason: str | None


@dataclass(frozen=True)
class Mismatch(RunNote):
    what: Any


@dataclass(frozen=True)
class StoppedAt:
    from_n: int
    to_n: int
    marginal: float


@dataclass(frozen=True)
class MoreRuns:
    n: int
    more: int
    at_least: bool


@dataclass(frozen=True)
class NextMeasurements:
    repeats: list[MoreRuns]
    su: float | None


@dataclass(frozen=True)
class Step:
    """A step of N and the speedup per added unit it gains, with its 95 % interval."""

    from_n: int
    to_n: int
    gain: float
    lo: float
    hi: float
    # decided inside the indifference zone, across the threshold: both ends are right
    within_zone: bool = False


@dataclass(frozen=True)
class DecisionSteps:
    """The two steps an answer stands on: into the recommended N, and the one after it."""

    to: Step | None
    after: Step | None


@dataclass(frozen=True)
class Answer:
    """One series' recommendation (scalestudy.analysis.findings.answer)."""

    series: str | None
    worth_n: int | None
    base_n: int | None
    threshold: float
    stopped_at: StoppedAt | None
    cheapest_meeting_deadline: int | None
    deadline_note: str | None
    fastest_within_budget: int | None
    budget_note: str | None
    peak: Peak | None
    selected: str | None
    decided: bool | None  # whether the runs' spread settles the answer (None: not judged)
    next_measurements: NextMeasurements | None
    step_intervals: list[list[Any]]
    steps: DecisionSteps
    fitted: bool
    provenance_note: str | None
    unstable: list[str]
    usable_points: int | None
    # the recommended point (absent where there is none)
    point: str | None = None
    speedup: float | None = None
    speedup_ci_lo: float | None = None
    speedup_ci_hi: float | None = None
    efficiency: float | None = None
    efficiency_ci_lo: float | None = None
    efficiency_ci_hi: float | None = None
    relative_su: float | None = None
    layout: Placement | None = None
    # whether the headline says the recommended point's layout
    says_layout: bool = False
    adaptive: bool = False
    # the indifference zone's half-width around the threshold (recommend.indifference)
    zone: float = 0.0


@dataclass(frozen=True)
class Round:
    round: int
    added: dict[str, int]
    why: dict[str, str]
    su: float


@dataclass(frozen=True)
class AdaptiveStop:
    reason: str
    text: str


@dataclass(frozen=True)
class RefusedRound:
    added: dict[str, int]
    why: dict[str, str]
    round_su: float


@dataclass(frozen=True)
class ToDecide:
    """The one change of an undecided adaptive study's config after which the workflow
    plans a round again, and that round (scalestudy.analysis.decisions.adaptive.to_decide)."""

    key: str  # as config/README.md names it: budget_su, adaptive.max_repeats, ...
    value: float
    added: dict[str, int]  # point label -> runs the round adds
    round_su: float
    runs_decide: bool  # False: the looser rule decides on the runs that exist


@dataclass(frozen=True)
class TimedRun:
    n: int
    time_s: float
    round: int
    series: str | None


@dataclass(frozen=True)
class ConfigChange:
    """From this round on, the rounds were planned under this config (its fingerprint,
    scalestudy.analysis.decisions.adaptive.config_fingerprint; None in plans made before them)."""

    round: int
    config: str | None


@dataclass(frozen=True)
class Rounds:
    """An adaptive study's rounds (scalestudy.analysis.decisions.adaptive.rounds_summary)."""

    rounds: list[Round]
    stop: AdaptiveStop
    decided: bool
    points: dict[str, int]  # every candidate's label -> N, measured or not
    refused: RefusedRound | None
    budget_su: float
    spent_su: float
    grid_repeats: int
    grid_su: float
    grid_su_estimated: bool
    grid_su_bound: bool
    relative_to_grid: float | None
    runs: list[TimedRun]
    later_runs: int
    budget_needed: float | None
    # an undecided study: the config change that would plan a round again (None: none)
    to_decide: ToDecide | None = None
    # point label -> its good runs left out because other programs used their CPUs: more
    # runs decide nothing while those programs run
    shared: dict[str, int] = dataclasses.field(default_factory=dict)
    # where the config changed between rounds (none: one config throughout)
    configs: list[ConfigChange] = dataclasses.field(default_factory=list)
    # the first table's question its rounds settle (a study of CPU and GPU series: its
    # GPU verdict's; its series' answers are then judged on their runs alone)
    question: str = "how many"


@dataclass(frozen=True)
class DdpPoint:
    series: str
    point: str
    world_size: float
    processes_per_node: int
    band: str | None


@dataclass(frozen=True)
class FrameworkShare:
    lightning_ms: float
    plain_ms: float
    share: float


# --- what the answers are made from: made before the findings, each shown by its section
# (scalestudy.sections: series, requests, time_to_result) -------------------------------


# each series' scaling models (scalestudy.analysis.stats.predictions), which the answers,
# the results table, the speedup figure, the plan's model times and a baseline's model
# changes read too
@dataclass(frozen=True)
class Fit:
    """One scaling model fitted to a series (scalestudy.analysis.stats.predictions.fit_summary)."""

    name: str
    formula: str
    ok: bool
    note: str
    params: dict[str, Any]
    param_ci: dict[str, Any]
    r2: float | None
    aicc: float | None
    rmse: float | None
    k: int | None
    n_points: int | None
    weight: float | None


@dataclass(frozen=True)
class Curve:
    """The selected model's predicted speedup over N, with its 95 % prediction band."""

    n: list[float]
    speedup: list[float | None]
    band_lo: list[float | None]
    band_hi: list[float | None]
    measured_max_n: float
    base_time_s: float | None
    base_source: str


@dataclass(frozen=True)
class Peak:
    n: float
    speedup: float
    beyond_measured: bool
    base_source: str


@dataclass(frozen=True)
class SeriesFit:
    """One series' validity gates, fits, prediction and recommendation."""

    series: str | None
    base_n: int | None
    excluded: dict[str, str]  # point -> why it stays out of the fits
    mixed_provenance: dict[str, Any]
    fits: list[Fit]
    selected: str | None
    peak: Peak | None
    curve: Curve | None
    recommendation: dict[str, Any]  # the working the answer (Answer) was made from
    fit_note: str | None = None
    fit_basis: str | None = None
    prediction_base: dict[str, Any] | None = None
    bound: float | None = None  # Amdahl's bound on the speedup

    @property
    def one_point(self) -> bool:
        """Whether the series has one good point (no step between good points)."""
        return not self.recommendation.get("steps")

    @property
    def usable_points(self) -> int | None:
        """How many points a fit could use, where no model fitted (None: one did)."""
        if not self.fits or any(f.ok for f in self.fits):
            return None
        return max(f.n_points for f in self.fits)


# what to ask the scheduler for, per point (scalestudy.analysis.decisions.request)
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


# time to result, the queue wait beside the run time (scalestudy.analysis.cluster.result_time)
@dataclass(frozen=True)
class PointResult:
    """One point's expected time from submission to result: wait + full-length run time."""

    point: str
    series: str
    n: int
    run_s: float | None  # median full-length run time, its 95 % interval
    run_lo_s: float | None
    run_hi_s: float | None
    runs: int
    run_scaled: bool
    wait_s: float | None  # the wait added, and the interval's top wait
    wait_hi_s: float | None
    basis: str  # local | now | typical | unknown wait
    wait_now_s: float | None  # what sbatch --test-only said
    history_wait_median_s: float | None
    history_wait_p90_s: float | None
    history_jobs: int
    queue_note: str | None
    result_s: float | None
    result_lo_s: float | None
    result_hi_s: float | None
    # the 95 % upper bound on the p90 of past waits (None: under 29 jobs), the
    # largest wait seen, the bound's backtest, --test-only's corrected wait
    history_wait_bound_s: float | None = None
    history_wait_max_s: float | None = None
    history_bound_covered: int = 0
    history_bound_tested: int = 0
    wait_now_corrected_s: float | None = None


@dataclass(frozen=True)
class EarliestResult:
    series: str
    point: str
    n: int
    result_s: float


@dataclass(frozen=True)
class ResultTimes:
    """Every point's time to result, and how the waits were asked."""

    queue: str  # slurm | local
    asked_at: str | None
    calls: int
    note: str | None  # Slurm could not be asked
    history_note: str | None
    history_days: int | None
    min_jobs: int | None
    waits_known: bool
    points: list[PointResult]
    earliest: list[EarliestResult]
    # --test-only's correction: median run time / time limit of ended past jobs, and
    # how many (None: uncorrected)
    run_to_limit: dict[str, float] | None = None


# the change called where none is (a point's against the baseline, an archive's step)
NO_CHANGE = "none"


# the regression check of a curve of times now against one before (baseline, history)
@dataclass(frozen=True)
class PointChange:
    """One point now against the baseline: time ratio now / baseline with its 95 %
    interval, the change called (slower, faster or none) and the verdict
    (scalestudy.analysis.stats.verdicts)."""

    series: str
    n: int
    ratio: float | None
    lo: float | None
    hi: float | None
    p_value: float | None  # the one-sided t-test, the change's way, on the pooled variance
    alpha: float | None  # the p a change needs here (its Holm step, that way)
    change: str
    verdict: str  # slower, faster, same or undecided
    power: float | None  # of calling a slowdown of twice the tolerance (same, undecided)
    more_runs: int | None  # undecided: the runs now that would decide it
    text: str  # the verdict in words
    runs_now: int
    runs_baseline: int
    time_now_s: float
    time_baseline_s: float


@dataclass(frozen=True)
class CurveVerdict:
    """A series' whole curve now against the baseline (verdicts.verdicts): the mean
    time ratio over its points with its 95 % interval, the slope of the log ratio
    against log N, the joint test's p and the verdict."""

    series: str
    ratio: float | None
    lo: float | None
    hi: float | None
    slope: float | None
    p_value: float | None
    changed: bool  # the curve's test rejected "no change"
    verdict: str  # slower, faster, slower and faster, same or undecided
    power: float | None
    more_runs: int | None  # undecided: the runs now at every point that would decide it
    text: str


@dataclass(frozen=True)
class FingerprintDiff:
    key: str
    baseline: str
    now: str


# --- the findings -----------------------------------------------------------------------


@dataclass(frozen=True)
class Findings:
    """Every number the report shows beyond summary.csv and the predictions."""

    study: StudyFacts
    repeats: list[int]  # the fewest and the most runs of a point
    quality_metric: str | None
    cost: CostModel
    charges: Charges
    base: BaseCase | None
    unstable: int
    overlapped: int
    shared_machines: list[str]
    failures: list[Failure]
    mismatches: list[Mismatch]
    disturbed: list[Mismatch]
    answers: list[Answer]
    adaptive: Rounds | None
    metrics: list[str]
    ddp: list[DdpPoint] | None
    framework: FrameworkShare | None
    # where and with what it ran, and the workload
    # (scalestudy.analysis.findings.fingerprint)
    fingerprint: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def base_failure(self) -> str | None:
        """Why the study has no answer when every run of its base case failed, in one
        line (None: one did not): the workflow then ends non-zero, after the report."""
        base = self.base
        if base is None or base.time_s is not None:
            return None
        failed = [f for f in self.failures if f.point == base.point]
        if not failed or any(m.point == base.point for m in self.mismatches + self.disturbed):
            return None
        return f"every run of the base case {base.point} failed: {failed[-1].reason}"


@dataclass(frozen=True)
class EarlierStudy:
    name: str | None
    workload: str | None
    params: dict[str, Any] | None
    time: str | None


@dataclass(frozen=True)
class EarlierAnswer:
    series: str | None
    worth_n: int | None
    decided: bool | None


@dataclass(frozen=True)
class EarlierFit:
    name: str | None
    ok: bool | None
    params: dict[str, Any]
    param_ci: dict[str, Any]


@dataclass(frozen=True)
class EarlierSeries:
    series: str | None
    curve: dict[str, Any] | None  # the fit's curve as the file holds it (plan.model_time)
    fits: list[EarlierFit]


@dataclass(frozen=True)
class EarlierAnalysis:
    """What a later study reads of an earlier analysis.json: a baseline's, an archive's,
    the plan's last results (None or empty: a file older than that part)."""

    version: int
    study: EarlierStudy | None
    fingerprint: dict[str, str] | None
    answers: list[EarlierAnswer]
    series: list[EarlierSeries]


def earlier_analysis(path: str | Path) -> EarlierAnalysis:
    """An earlier analysis.json, of any version this code reads (1, made before versions,
    and VERSION, the parts read checked whole), as what a later study reads of it.
    ContractError names the file, the line and column of one cut short, or a version it
    cannot read."""
    data = read_json(path)
    version = versioned(data, str(path), VERSION, {1: dict})
    for key, hint in (("findings", Findings), ("series", list[SeriesFit])):
        if version == VERSION:  # today's: the parts read here, checked whole
            if key not in data:
                raise ContractError(f"{path}: missing key 'Analysis.{key}'")
            parse(hint, data[key], str(path), path=f"Analysis.{key}")
    try:
        findings = data.get("findings") or {}
        facts = findings.get("study")
        series = [
            EarlierSeries(
                s.get("series"), s.get("curve"), [earlier_fit(f) for f in s.get("fits") or []]
            )
            for s in data.get("series") or []
        ]
        answers = findings.get("answers") or []
        return EarlierAnalysis(
            version,
            facts and EarlierStudy(*map(facts.get, ("name", "workload", "params", "time"))),
            findings.get("fingerprint"),
            [EarlierAnswer(*map(a.get, ("series", "worth_n", "decided"))) for a in answers],
            series,
        )
    except (AttributeError, TypeError) as e:  # a part of another shape: no analysis
        raise ContractError(f"{path}: holds no analysis ({e})") from None


def earlier_fit(fit: dict) -> EarlierFit:
    return EarlierFit(
        fit.get("name"), fit.get("ok"), fit.get("params") or {}, fit.get("param_ci") or {}
    )


def read_json(path: str | Path):
    """A file's JSON values; ContractError names the file, and the line and column of one
    cut short."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ContractError(f"{path}: cannot read ({e})") from None
    except json.JSONDecodeError as e:
        raise ContractError(
            f"{path}: line {e.lineno}, column {e.colno}: not JSON ({e.msg}): the file is "
            "cut short or was edited"
        ) from None


def versioned(data, source: str, version: int, upgrades: dict) -> int:
    """The version of a file's JSON values (`version`; none: 1, a file made before
    versions), turned in place into `version`, today's, by `upgrades` (an older version ->
    what turns its values into the next one's); ContractError names a version none can."""
    if not isinstance(data, dict):
        raise ContractError(f"{source}: holds a {type(data).__name__}, not an object")
    found = read = data.get("version", 1)
    while found != version:
        if found not in upgrades:
            raise ContractError(
                f"{source}: of contract version {found!r}, which this code cannot read (it "
                f"reads {', '.join(map(str, [*upgrades, version]))})"
            )
        data.update(upgrades[found](data) | {"version": found + 1})
        found += 1
    return read


def checked(data, schema: str, source: str):
    """`data` if the package's JSON Schema `schema` (scalestudy/schemas/) takes it;
    ContractError names the first bad key."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(json.loads((SCHEMAS / schema).read_text()))
    error = min(validator.iter_errors(data), key=lambda e: list(map(str, e.path)), default=None)
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "(the top level)"
        raise ContractError(f"{source}: key {where}: {error.message}")
    return data


# --- loading ---------------------------------------------------------------------------


def parse(hint, data, source: str, strict: bool = True, path: str | None = None):
    """JSON values as `hint` (a dataclass, or a type of them: `list[Fit]`, `Energy | None`),
    strictly (but a field with a default, where not `strict`): ContractError names the
    key (from `path`, by default the dataclass's name) and `source`."""
    return _convert(hint, data, _Where(source, path or hint.__name__, strict))


@dataclass(frozen=True)
class _Where:
    source: str
    path: str
    strict: bool  # False: a field with a default may be absent (a round's plan older than it)

    def at(self, key) -> _Where:
        return _Where(self.source, f"{self.path}.{key}", self.strict)


@cache
def _hints(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _dataclasses_in(hint) -> list[type]:
    if dataclasses.is_dataclass(hint):
        return [hint]
    return [c for arg in typing.get_args(hint) for c in _dataclasses_in(arg)]


def _convert(hint, value, where: _Where):
    if value is None or hint is Any:
        return value
    if dataclasses.is_dataclass(hint):
        return _record(hint, value, where)
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(inner[0], value, where) if len(inner) == 1 else value
    if origin is list and isinstance(value, list | tuple):
        (item,) = typing.get_args(hint)
        if not _dataclasses_in(item):
            return list(value)
        return [_convert(item, v, where.at(i)) for i, v in enumerate(value)]
    if origin is dict and isinstance(value, dict):
        _, item = typing.get_args(hint)
        if not _dataclasses_in(item):
            return value
        return {k: _convert(item, v, where.at(k)) for k, v in value.items()}
    return value


def _record(cls, value, where: _Where):
    if not isinstance(value, dict):
        raise ContractError(f"{where.source}: {where.path} is not an object")
    hints = _hints(cls)
    unknown = [k for k in value if k not in hints]
    if unknown:
        raise ContractError(
            f"{where.source}: unknown key {where.at(unknown[0]).path!r}, which the contract "
            f"({cls.__module__}.{cls.__name__}) does not name"
        )
    fields = () if where.strict else dataclasses.fields(cls)
    optional = {f.name for f in fields if (f.default, f.default_factory) != (MISSING, MISSING)}
    missing = [k for k in hints if k not in value and k not in optional]
    if missing:
        raise ContractError(
            f"{where.source}: missing key {where.at(missing[0]).path!r} "
            f"({cls.__module__}.{cls.__name__})"
        )
    return cls(**{k: _convert(hints[k], v, where.at(k)) for k, v in value.items()})
