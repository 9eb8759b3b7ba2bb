import os
import shutil
import sys
from pathlib import Path

from snakemake.logging import logger

from scalestudy import paths
from scalestudy import snakemake_internals as sm
from scalestudy.analysis.cost.budgets import budget_problems
from scalestudy.slurm import partition_time_limits
from scalestudy.study.errors import startup_problems_text, stop
from scalestudy.study.startup_checks import (
    kept_from_elsewhere,
    local_container_problems,
    local_cpu_problems,
    local_gpu_problems,
    packing_problems,
    partition_time_problems,
    still_to_run,
    visible_gpus,
)

# Before any job runs, and in a dry run (-n) too: locally, a point bigger than the
# machine is refused; anywhere a study whose estimated cost is above its budget_su; on
# Slurm, packing without the profile's settings for it, Slurm out of reach (sinfo), and
# a job longer than its partition allows. What this invocation runs is read from
# Snakemake once its DAG is built (scalestudy.snakemake_internals) and judged by package
# functions (scalestudy.study.startup_checks); all problems at once.
RUN_RULES = ("run_point", "profile_point", "probe_command")


def studies_behind_checkpoints():
    """Studies whose runs Snakemake plans only after a checkpoint of this invocation:
    an adaptive study with a round still to plan, a command study with its probe
    still to run."""
    gates = ("adaptive_round", "probe_command")
    return {job.wildcards.study for job in sm.jobs_to_run(workflow, gates)}


def points_to_run():
    """(study, point) of every run this invocation may make: its run jobs, any
    candidate of an adaptive study with a round to plan and, when it makes the plan
    (make plan), every point whose records are not all there yet: the plan prices the
    runs a `make report` would make, so the same checks apply; and so while an
    adaptive round is still to plan (Snakemake plans nothing past it until it has run,
    so the DAG hides every other selected study's runs)."""
    needed = sm.needed_pairs(workflow, RUN_RULES)
    needed |= {
        (study, point)
        for study in studies_behind_checkpoints()
        for point in POINTS.loc[study, "point"]
    }
    if sm.jobs_to_run(workflow, ("plan",)) or studies_behind_checkpoints():
        needed |= still_to_run(STUDIES, POINTS, RUNS)
    return needed


def local_problems_now():
    """Locally: the points this invocation may run against the CPUs, GPUs and apptainer
    here; and against --cores when it runs them (a dry run or the plan alone is judged
    against the machine: Snakemake gives a dry run --cores 1 when none is given)."""
    if sm.submits_elsewhere(workflow) or sm.remote_exec(workflow):
        return []
    needed = points_to_run()
    usable = len(os.sched_getaffinity(0))
    runs_here = sm.jobs_to_run(workflow, RUN_RULES + ("adaptive_round",))
    cores = sm.cores(workflow) if runs_here and not sm.dry_run(workflow) else None
    return (
        local_cpu_problems(STUDIES, POINTS, needed, usable, cores)
        + local_gpu_problems(STUDIES, POINTS, needed, visible_gpus())
        + local_container_problems(STUDIES, needed, shutil.which("apptainer"))
    )


def budget_problems_now():
    """Anywhere: the plans of the studies with jobs to come against their budget_su."""
    running = {study for study, _ in sm.needed_pairs(workflow, RUN_RULES)}
    if studies_behind_checkpoints():  # the DAG stops there: still_to_run says the rest
        running |= {study for study, _ in still_to_run(STUDIES, POINTS, RUNS)}
    return budget_problems(
        STUDIES, POINTS, running | studies_behind_checkpoints(), logger.warning
    )


def packing_problems_now():
    """On Slurm: packed studies against --group-components and timed_runs."""
    if not sm.submits_elsewhere(workflow) or sm.remote_exec(workflow):
        return []
    running = {study for study, _ in sm.needed_pairs(workflow, ("run_point",))}
    running |= studies_behind_checkpoints()
    return packing_problems(
        STUDIES,
        running,
        sm.group_components(workflow, PACK_GROUP),
        sm.global_resource(workflow, "timed_runs"),
        PACK_GROUP,
    )


def slurm_problems_now():
    """On Slurm: whether Slurm answers at all (sinfo), and each job's time against its
    partition's limit. Where it does not, a run that would submit jobs stops here (the
    plugin would fail at each submission); a dry run, or one that submits nothing (the
    plan alone), is warned."""
    if not sm.submits_elsewhere(workflow) or sm.remote_exec(workflow):
        return []
    limits, unreachable = partition_time_limits()
    submits = sm.jobs_to_run(workflow, RUN_RULES + ("adaptive_round",))
    if unreachable:
        said = (
            f"Slurm could not be asked: {unreachable}. Run on a machine that reaches "
            "the Slurm controller (a login node), or here with --profile profiles/local."
        )
        if submits and not sm.dry_run(workflow):
            return [said]
        logger.warning(
            f"{said} No job's time was checked against its partition's limit"
            + (
                "; a real run stops here, before submitting any job."
                if submits
                else "."
            )
        )
        return []
    needed = {}
    for job in sm.jobs_to_run(workflow, ("run_point",)):
        key = (job.wildcards.study, sm.job_partition(job))
        needed.setdefault(key, set()).add(job.wildcards.point)
    return partition_time_problems(STUDIES, POINTS, needed, limits)


def check_before_any_job():
    """Stop, before any job runs (and in a dry run), on every problem of the start-up
    checks, listed together: a local point bigger than the machine, a budget, packing,
    Slurm out of reach, a partition's time limit."""
    found = [
        problem
        for problems in (
            local_problems_now,
            budget_problems_now,
            packing_problems_now,
            slurm_problems_now,
        )
        for problem in problems()
    ]
    if found:
        stop(startup_problems_text(found))
    if not sm.remote_exec(workflow):
        for line in kept_from_elsewhere(POINTS, sm.submits_elsewhere(workflow)):
            logger.warning(line)


sm.on_dag_built(check_before_any_job)

# A Snakemake of this folder killed (kill -9) left its locks, and its runs running: said
# in one line before Snakemake refuses the locked folder, the runs stopped (none is
# measured twice at once: each runs again); `--unlock` itself is not told
if not sm.remote_exec(workflow) and "--unlock" not in sys.argv:
    found = sm.after_a_kill(Path.cwd(), os.getpid())
    if found:
        logger.warning(found)
