"""Each run's energy, as the runs table's columns: what its record's counters read
(record_columns) and Slurm's ConsumedEnergy (with_energy). Only counters count, never an
estimate; a run's energy comes from one source (RAPL + NVML, else Slurm's ConsumedEnergy,
else NVML alone): docs/measuring.md, "Energy". Each point's energy to result is the
energy section's (scalestudy/sections/energy/produce.py).
"""

from __future__ import annotations

import math
import statistics

import pandas as pd

from scalestudy.analysis.decisions.request import run_accounting_keys
from scalestudy.compute.harness import TRAINING
from scalestudy.records import finite

# the runs table's energy columns from a record (record_columns): per counter, the
# run's whole figure and the figure of the phases each `time` basis uses, or why none
BASES = {"wall": "", "train": "_train", "steady": "_steady"}
RECORD_COLUMNS = tuple(
    f"energy_{part}{basis}_{what}"
    for part in ("gpu", "node")
    for basis in BASES.values()
    for what in ("j", "why")
)
NO_RECORD_ENERGY = "no counter: the record holds no energy reading"
NO_PHASE_ENERGY = "no energy per phase in the record (it was made before phases were read)"
# what each basis's energy covers, as the report says it
WINDOWS = {
    "wall": "the workload's whole run after start-up (no counter reads the start-up, "
    "which the time includes)",
    "train": "the training epochs, as the times",
    "steady": "the median epoch after the first, as the times",
}
# A window read at its 2k ends (k phases) from a counter that moves every u seconds is
# off by up to 2ku seconds of its power: a figure that may be off by more than this
# share of itself is not given (NVML's counter, seen moving every 0.1 s, needs about 2 s
# for one phase). RAPL's counters move about every millisecond: not judged.
MAX_COUNTER_ERROR = 0.1


def too_coarse(seconds: list[float], update_s: float | None) -> str | None:
    """Why phases of `seconds` are too short for a counter moving every `update_s`."""
    if not update_s or not seconds:
        return None
    total = sum(seconds)
    bound = 2 * len(seconds) * update_s / total if total > 0 else math.inf
    if bound <= MAX_COUNTER_ERROR:
        return None
    phases = "a phase" if len(seconds) == 1 else f"{len(seconds)} phases"
    return (
        f"too short for the counter: {phases} of {total:.3g} s from a counter that moves "
        f"every {update_s:.2g} s (up to {min(bound, 9.99):.0%} off)"
    )


def record_columns(record: dict) -> dict:
    """A record's energy as runs-table columns (RECORD_COLUMNS): per counter, joules or
    why not measured, for the whole run and for the phases of each time basis (tables'
    train_s: every epoch; steady_epoch_s: the median epoch after the first)."""
    energy = record.get("energy") or {}
    phases = record.get("phases", [])
    epochs = [p for p in phases if p["kind"] in TRAINING]
    epoch_s = [p["seconds"] for p in epochs]
    # the whole run's window: the workload's run after start-up
    startup_s = sum(p["seconds"] for p in phases if p["kind"] == "startup")
    run_s = (record.get("wall_s") or 0) - startup_s
    columns = {}
    for name in ("gpu", "node"):
        part = energy.get(name) or {}
        whole = part.get("joules")
        why = part.get("not_measured") if part else NO_RECORD_ENERGY
        per_epoch = [(p.get("energy") or {}).get(f"{name}_j") for p in epochs]
        train = steady = None
        phase_why = steady_why = why
        if whole is not None:
            if not epochs:
                phase_why = steady_why = "no training epoch timed"
            elif any(j is None for j in per_epoch):
                phase_why = steady_why = NO_PHASE_ENERGY
            else:
                train, phase_why = sum(per_epoch), None
                if len(per_epoch) > 1:
                    steady, steady_why = statistics.median(per_epoch[1:]), None
                else:
                    steady_why = "one epoch: no steady epoch"
        update_s = part.get("update_s")
        for basis, joules, reason, seconds in (
            ("", whole, why, [run_s]),
            ("_train", train, phase_why, epoch_s),
            ("_steady", steady, steady_why, [statistics.median(epoch_s[1:] or [0.0])]),
        ):
            coarse = too_coarse(seconds, update_s) if joules is not None else None
            if coarse:
                joules, reason = None, coarse
            columns[f"energy_{name}{basis}_j"] = joules
            columns[f"energy_{name}{basis}_why"] = None if joules is not None else reason
    return columns


def slurm_part(job: dict | None, exclusive) -> tuple[float | None, str | None]:
    """(joules, why not) of a run from its sacct entry (request.consumed_energy)."""
    if job is None:
        return None, "no counter: Slurm accounting has no entry for this run"
    part = job.get("energy") or {}
    if part.get("joules") is None:
        return None, part.get("not_measured") or "no counter: Slurm accounting gathered no energy"
    if exclusive != "NO":
        return None, "shared node: Slurm's node energy counts others' jobs too"
    return part["joules"], None


def chosen(gpu, node, slurm) -> tuple[float | None, str | None]:
    """(joules, source): RAPL (+ NVML, disjoint parts of the node), else Slurm's figure
    (its scope unknown: NVML is not added, which could count the GPUs twice), else NVML."""
    if node is not None:
        return node + (gpu or 0.0), "rapl+nvml" if gpu is not None else "rapl"
    if slurm is not None:
        return slurm, "slurm"
    if gpu is not None:
        return gpu, "nvml"
    return None, None


def _taken(row, basis: str, s_j, s_why) -> tuple[float | None, str | None, str | None]:
    """(joules, source, why none) of a run over one window: the counters' parts of
    `basis` (BASES) and Slurm's figure, by the order of `chosen`."""
    gpu = finite(getattr(row, f"energy_gpu{basis}_j"))
    node = finite(getattr(row, f"energy_node{basis}_j"))
    joules, src = chosen(gpu, node, s_j) if row.status == "ok" else (None, None)
    if joules is not None:
        return joules, src, None
    if row.status != "ok":
        return None, None, "the run failed"
    # a run that asked for no GPU: its GPU counter is no reason worth saying
    no_gpu = getattr(row, "gpus", None) == 0
    said = (
        ("GPU", None if no_gpu else getattr(row, f"energy_gpu{basis}_why")),
        ("node", getattr(row, f"energy_node{basis}_why")),
        ("Slurm", s_why),
    )
    reasons = [f"{what}: {text}" for what, text in said if isinstance(text, str) and text]
    return None, None, "; ".join(reasons) or "no counter: no energy reading"


def with_energy(runs: pd.DataFrame, jobs: dict[str, dict], time: str) -> pd.DataFrame:
    """The runs table with each run's energy: Slurm's figure (energy_slurm_j); the run's
    energy taken (energy_j), its source (energy_source) and, where none, why
    (energy_why); and likewise its energy per result over the phases of the study's
    `time` (energy_result_j, energy_result_source, energy_result_why).
    `jobs`: accounting's answer (request.accounting), {} where sacct was not asked."""
    runs = runs.copy()
    for column in RECORD_COLUMNS:
        if column not in runs:
            runs[column] = None
    keys = run_accounting_keys(runs) if len(runs) else []
    exclusive = runs.get("slurm_oversubscribe", pd.Series(None, index=runs.index, dtype=object))
    # Slurm's figure is the whole job's or step's: no window but the whole run's
    slurm_covers = time == "wall"
    found = []
    for row, key, shared in zip(runs.itertuples(), keys, exclusive, strict=True):
        s_j, s_why = (None, None) if key is None else slurm_part(jobs.get(key), shared)
        whole = _taken(row, "", s_j, s_why)
        if slurm_covers:
            result = whole
        else:
            whole_job = f"its figure is the whole job's, not {WINDOWS[time].split(',')[0]}"
            result = _taken(row, BASES[time], None, whole_job if s_j is not None else s_why)
        found.append((s_j, s_why, *whole, *result))
    columns = ["energy_slurm_j", "energy_slurm_why", "energy_j", "energy_source", "energy_why"]
    columns += ["energy_result_j", "energy_result_source", "energy_result_why"]
    energy = pd.DataFrame(found, index=runs.index, columns=columns)
    joules = [c for c in energy if c.endswith("_j")]
    return runs.assign(**energy.astype(dict.fromkeys(joules, float)))
