"""Slurm resources and limits: what a point asks the scheduler for, and the partition limits."""

from scalestudy.model import Study
from scalestudy.study.points import Point

# Slack between the job's time limit and its run's: room to start the step and
# write the record after Slurm stopped a run that was out of time.
TIME_SLACK_MIN = 2
# Memory of the job beyond the run's own: Snakemake's job-step process (about
# 300 MB) and the launcher live in the job too. The run's step gets exactly the
# study's mem_mb, so Slurm stops the run, not the job that records why.
JOB_MEM_OVERHEAD_MB = 512


def slurm_resources(point: Point, study: Study) -> dict:
    """Snakemake resources of a point's job, as the Slurm executor plugin reads them.

    Threads become cpus_per_task (and the rule's threads, which Snakemake exports as
    OMP_NUM_THREADS). A point with several processes is an `mpi` job whose rule runs
    its own srun step; the plugin refuses mpi with one task per node, so such points
    give `tasks` (CPU) or rely on one task per GPU (GPU). A single-process point
    gives mpi="" so the plugin submits it as a plain job but runs the rule in the
    batch step, where the launcher's own srun step gets the cores.
    """
    resources = study.for_series(point.series).resources
    res = {
        "cpus_per_task": point.threads,
        "nodes": point.nodes,
        "mem_mb": resources.mem_mb + JOB_MEM_OVERHEAD_MB,
        "runtime": resources.runtime + TIME_SLACK_MIN,
        "mpi": "srun" if point.world_size > 1 else "",
        "tasks": None,
        "tasks_per_node": None,
        "tasks_per_gpu": None,
        "gpu": None,
        "gpu_model": None,
        "slurm_extra": None,
    }
    if point.gpus:
        res["gpu"] = point.gpus
        res["gpu_model"] = resources.gpu_model
        per_task = point.gpus_per_node // point.tasks_per_node
        if per_task == 1 and point.tasks_per_node == 1:
            res["tasks_per_gpu"] = 1
        else:
            # the plugin has no key for it; sbatch takes it beside --gpus. Not
            # --ntasks-per-gpu: sbatch refuses it beside --ntasks-per-node
            res["slurm_extra"] = f"--gpus-per-task={per_task}"
    if point.world_size > 1:
        if point.tasks_per_node > 1:
            res["tasks_per_node"] = point.tasks_per_node
        else:
            res["tasks"] = point.world_size
    elif not point.gpus:
        res["tasks"] = 1
    if study.submission.exclusive:
        # the plugin has no key for it either; it lets --exclusive through slurm_extra
        res["slurm_extra"] = " ".join(filter(None, [res["slurm_extra"], "--exclusive"]))
    return res


def shared_job(study: Study, point: Point) -> str | None:
    """The Slurm job a run of the point shares with other runs, by name (None: a job of
    its own): in a comparison both variants' runs of its N (compare), else its point's
    repeats where the study packs them (submission.pack_repeats). The one rule of the
    workflow's packing groups and of the plan's Slurm jobs."""
    if study.compare is not None:
        return f"{study.name}-n{point.n}"
    if study.submission.pack_repeats:
        return f"{study.name}-{point.label}"
    return None


def job_runtime(study: Study, point: Point) -> int:
    """Minutes one Slurm job of the point asks for: one run, or all the point's repeats
    when they are packed into one job (Snakemake sums a group's runtimes over the runs
    it runs one after another); a comparison's job runs both variants' repeats."""
    one = slurm_resources(point, study)["runtime"]
    if study.compare is not None:
        return one * study.repeats * 2
    return one * study.repeats if study.submission.pack_repeats else one


def runtime_problems(
    study: Study, points: list[Point], limit: int | None, source: str
) -> list[str]:
    """The points whose job would ask for more minutes than the partition gives
    (`limit`, as `source` says it: partition_limits.runtime, or Slurm's own), found
    before any job is submitted."""
    if limit is None:
        return []
    problems, allows = [], f"the partition allows {limit} ({source})"
    for point in points:
        minutes = job_runtime(study, point)
        if minutes <= limit:
            continue
        key, one = f"studies.{study.name}", slurm_resources(point, study)["runtime"]
        repeats = f"{study.repeats} repeats of {one} minutes"
        if study.compare is not None and one <= limit:
            problems.append(
                f"{key}.compare: point {point.label} runs a's and b's {repeats} in one "
                f"job of {minutes} minutes, {allows}; lower repeats or "
                "resources.runtime"
            )
        elif study.submission.pack_repeats and one <= limit:
            problems.append(
                f"{key}.submission.pack_repeats: point {point.label} packs {repeats} "
                f"into one job of {minutes} minutes, {allows}; lower repeats or "
                "resources.runtime, or set pack_repeats: false"
            )
        else:
            problems.append(
                f"{key}.resources.runtime: point {point.label} asks for {one} minutes "
                f"(runtime + {TIME_SLACK_MIN}), {allows}"
            )
    return problems


# What a partition limit bounds: partition_limits key -> (words, a point's need).
LIMITS = {
    "cpus_per_node": ("CPUs per node", lambda p: p.threads * p.tasks_per_node),
    "gpus_per_node": ("GPUs per node", lambda p: p.gpus_per_node),
    "nodes": ("nodes", lambda p: p.nodes),
}


def limit_problems(name: str, points: list[Point], limits: dict) -> list[str]:
    """The points the partition cannot hold, found before any job is submitted: for
    each limit, the first point beyond it (and how many more are)."""
    problems = []
    for key, (what, need) in LIMITS.items():
        limit = limits.get(key)
        beyond = [p for p in points if limit is not None and need(p) > limit]
        if beyond:
            message = (
                f"studies.{name}: point {beyond[0].label} needs {need(beyond[0])} {what}, "
                f"the partition has {limit} (partition_limits.{key})"
            )
            if len(beyond) > 1:
                message += f"; {len(beyond) - 1} more point(s) need more too"
            problems.append(message)
    return problems
