"""Checks before any job runs of what an invocation is about to run against where it
runs: a local point bigger than the machine, packing under settings that would not
pack, a job longer than its partition allows. Each takes plain inputs (rules/startup.smk
reads them from Snakemake, scalestudy.snakemake_internals) and returns its problems,
one string each, an empty list when there is none."""

import itertools
import os
from pathlib import Path

import pandas as pd

from scalestudy import paths
from scalestudy.model import Study
from scalestudy.records import RecordError, read_record
from scalestudy.study.points import point_for
from scalestudy.study.resources import runtime_problems


def needed_rows(points: pd.DataFrame, needed: set[tuple[str, str]]) -> pd.DataFrame:
    """The rows of the (study, point) pairs in `needed`, in table order: selected at
    once (a lookup per pair cost seconds in a grid of thousands of points)."""
    return points[points.index.isin(list(needed))]


def listed(items: list[str], keep: int = 8) -> str:
    """Items joined by "; ", the middle of a long list left out (a grid of 1,000
    points would print 1,000 of them)."""
    if len(items) <= keep:
        return "; ".join(items)
    return "; ".join(items[: keep - 2] + [f"... {len(items) - keep + 1} more"] + items[-1:])


def plural(count, what: str) -> str:
    return f"{count} {what}" if count == 1 else f"{count} {what}s"


def still_to_run(
    studies: dict[str, Study], points: pd.DataFrame, runs: pd.DataFrame
) -> set[tuple[str, str]]:
    """(study, point) of every run a full invocation may still make: each fixed study's
    point with a record missing (`runs`: runs_table) and every candidate of an adaptive
    study. What the checks judge where Snakemake's DAG cannot say: the plan prices
    these runs, and a DAG cut at an adaptive round's checkpoint hides the rest."""
    missing = {
        (run.study, run.point)
        for run in runs.itertuples()
        if not Path(paths.record_path(run.study, run.point, run.repeat)).exists()
    }
    return missing | {
        (study, point)
        for study, model in studies.items()
        if model.adaptive is not None
        for point in points.loc[study, "point"]
    }


def kept_from_elsewhere(points: pd.DataFrame, on_slurm: bool) -> list[str]:
    """One line per study whose points already have records made under the other
    executor (on Slurm when this invocation runs locally, or the reverse), said before
    any job: they are kept, not run again, and a dry run would otherwise list no run of
    them without a word of why. Each point's first record says where its runs ran."""
    found: dict[str, list[str]] = {}
    for study, point in points[["study", "point"]].itertuples(index=False):
        first = next(paths.records_on_disk(study, point), None)
        try:
            slurm = "slurm_job_id" in read_record(first[1])["environment"]
        except (TypeError, RecordError):
            continue  # no record, or one aggregation will name
        if slurm != on_slurm:
            found.setdefault(study, []).append(point)
    there, here = ("locally", "on Slurm") if on_slurm else ("on Slurm", "here")
    return [
        f"Study {study}: {plural(len(kept), 'point')} ({listed(kept)}) already "
        f"{'has' if len(kept) == 1 else 'have'} records made {there}: they are kept, not run "
        f"again {here} (make redo STUDY={study} moves them aside to run them {here})"
        for study, kept in found.items()
    ]


def local_cpu_problems(
    studies: dict[str, Study],
    points: pd.DataFrame,
    needed: set[tuple[str, str]],
    usable: int,
    cores,
) -> list[str]:
    """Locally, refuse a point that needs more CPUs than this machine lets the workflow
    use: Snakemake would cut its threads to --cores, and every run of it would measure
    another point; and a point on several nodes, which only a Slurm allocation has.
    `points`: points_table indexed by (study, point); `needed`: the (study, point) pairs
    this invocation may run; `usable`: the CPUs this process may use; `cores`: --cores
    (None in a dry run, where Snakemake sets it to 1 when not given)."""
    limit = min(usable, cores) if isinstance(cores, int) else usable
    wanted = needed_rows(points, needed)
    big = wanted[wanted["cores"] > limit]
    too_big = list(big.index)
    refused = [
        f"studies.{p.study}: point {p.point} needs {p.cores} CPUs"
        for p in big.itertuples()
        if not studies[p.study].oversubscribe
    ]

    def wastes(
        s: Study,
    ) -> bool:  # an adaptive study asks again and again for runs that never count
        return s.oversubscribe and s.adaptive is not None and not s.include_mismatched

    wasted = sorted({study for study, _ in too_big if wastes(studies[study])})
    several_nodes = sorted(
        f"studies.{p.study}: point {p.point} runs on {p.nodes} nodes"
        for p in wanted[wanted["nodes"] > 1].itertuples()
    )
    problems = []
    if several_nodes:
        problems.append(
            "; ".join(several_nodes)
            + ". A point on several nodes needs a Slurm allocation: run it with the "
            "Slurm profile (--profile profiles/slurm), or remove it from this run."
        )
    if refused:
        problems.append(
            listed(refused)
            + f", and this machine lets the workflow use {limit} (usable CPUs {usable}"
            + (f", --cores {cores}" if isinstance(cores, int) else "")
            + "). Run such points on Slurm (--profile profiles/slurm), "
            "remove them, or set oversubscribe: true in the study to run them anyway, "
            "flagged as allocation mismatches (Snakemake then gives such a job "
            f"{limit} threads, not its N) and left out of speedups unless "
            "include_mismatched: true."
        )
    if wasted:
        problems.append(
            "; ".join(
                f"studies.{study}: points "
                + ", ".join(p for s, p in too_big if s == study)
                + " of this adaptive study need more CPUs than this machine lets the "
                f"workflow use ({limit})"
                for study in wasted
            )
            + ". Their runs would all be allocation mismatches, left out of the answer, "
            "and each round would ask for them again. Remove them from the candidates, "
            "run the study on Slurm, or set include_mismatched: true to let their runs "
            "count (they then measure the CPUs they were given)."
        )
    return problems


def visible_gpus(environ=os.environ, driver=Path("/proc/driver/nvidia/gpus")) -> int:
    """How many GPUs a local run here can use: those CUDA_VISIBLE_DEVICES names when it
    is set (an empty value hides them all), else one per GPU the NVIDIA driver lists
    (a folder each under /proc/driver/nvidia/gpus; none without the driver). Read
    without CUDA or NVML, which the head node need not have."""
    present = len(list(driver.iterdir())) if driver.is_dir() else 0
    named = environ.get("CUDA_VISIBLE_DEVICES")
    if named is None:
        return present
    # CUDA stops at the first entry that names no device ("-1" hides them all)
    entries = list(
        itertools.takewhile(
            lambda v: v and not v.startswith("-"), (v.strip() for v in named.split(","))
        )
    )
    return min(present, len(entries))


def local_gpu_problems(
    studies: dict[str, Study], points: pd.DataFrame, needed: set[tuple[str, str]], gpus: int
) -> list[str]:
    """Locally, refuse a point that needs more GPUs than this machine has (visible_gpus):
    its runs would measure something else and only be flagged as allocation
    mismatches afterwards. oversubscribe: true runs it anyway, flagged."""
    wanted = needed_rows(points, needed)
    refused = [
        f"studies.{p.study}: point {p.point} needs {plural(p.gpus, 'GPU')}"
        for p in wanted[wanted["gpus"] > gpus].itertuples()
        if not studies[p.study].oversubscribe
    ]
    if not refused:
        return []
    has = plural(gpus, "GPU") if gpus else "no GPU"
    return [
        listed(refused) + f", and this machine has {has} (the NVIDIA driver's list, within "
        "CUDA_VISIBLE_DEVICES). Run such points on a GPU node or on Slurm (--profile "
        "profiles/slurm), remove them, or set oversubscribe: true in the study to run "
        "them anyway, flagged as allocation mismatches."
    ]


def local_container_problems(
    studies: dict[str, Study], needed: set[tuple[str, str]], apptainer: str | None
) -> list[str]:
    """Locally, refuse a comparison's variant that runs in a container where this machine
    has no apptainer (`apptainer`: its path): each of its runs would fail."""
    names = sorted({name for name, _ in needed if studies[name].compare is not None})
    return [
        f"studies.{name}.compare.{side}.container: its runs need apptainer, which is not "
        "installed here; install it, or run the study on Slurm (--profile profiles/slurm)"
        for name in names
        for side in "ab"
        if studies[name].compare.variant(side).get("container") and not apptainer
    ]


def packing_problems(
    studies: dict[str, Study], running: set[str], components: int, timed_runs, group: str
) -> list[str]:
    """Refuse to pack a study's runs (its repeats, or a comparison's pairs) under
    settings that would not do it as asked: Snakemake then submits them in several
    jobs (fewer group-components than runs), or asks for them side by side, with
    their CPUs summed and one runtime, and would time them at once (timed_runs not
    1). `running`: the studies with runs to submit; `components`: --group-components
    of `group`; `timed_runs`: --resources."""
    # the runs of one job, and the key that asks for it (a comparison's job holds both
    # variants' repeats: study.slurm.shared_job)
    packed = {
        name: (2 * studies[name].repeats, "compare")
        if studies[name].compare
        else (studies[name].repeats, "submission.pack_repeats")
        for name in sorted(running)
        if studies[name].compare or studies[name].submission.pack_repeats
    }
    if not packed:
        return []
    problems = [
        f"studies.{name}.{key} packs {runs} runs in one job, and Snakemake puts "
        f"{components} in one job (--group-components {group}={components}; the Slurm "
        f"profile gives {group}=100)"
        for name, (runs, key) in packed.items()
        if runs > components
    ]
    if timed_runs != 1:
        name, (_, key) = next(iter(packed.items()))
        problems.append(
            f"studies.{name}.{key} needs one timed run at a time in a job (--resources "
            f"timed_runs=1, as the Slurm profile gives), not {timed_runs}"
        )
    return problems


def partition_time_problems(
    studies: dict[str, Study],
    points: pd.DataFrame,
    needed: dict[tuple[str, str], set[str]],
    limits: dict[str, int | None],
) -> list[str]:
    """On Slurm, refuse a point whose job asks for more time than its partition's limit
    as Slurm itself says it (sinfo; a packed point's job asks for all its repeats'
    time): sbatch would refuse each such job only at its submission. `needed`: (study,
    partition, "" the default) -> the point labels to run there; `limits`: each
    partition's time limit (scalestudy.slurm.partition_time_limits)."""
    problems = []
    for (study, part), labels in sorted(needed.items()):
        rows = [points.loc[(study, label)] for label in sorted(labels)]
        chosen = [point_for(studies[study], int(r["n"]), r["series"]) for r in rows]
        where = f"partition {part}" if part else "the default partition"
        source = f"{where}'s MaxTime, from sinfo"
        problems += runtime_problems(studies[study], chosen, limits.get(part), source)
    return problems
