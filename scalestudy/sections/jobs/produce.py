"""Each Slurm run of the study, and how its runs shared allocations."""

import pandas as pd

from scalestudy.analysis.stats.predictions import jsonable
from scalestudy.records import finite
from scalestudy.sections.jobs.contract import DATA, Allocations, Jobs, SlurmRun


def produce(given) -> DATA:
    runs = scheduler(given.runs)
    return Jobs(runs, allocations(runs)) if runs else None


def scheduler(runs: pd.DataFrame) -> list[SlurmRun]:
    """Each Slurm run of the study: its job, queue wait and run time, the other runs
    that shared its job (packed repeats, one after another) and whether the job had
    its nodes to itself."""
    if "slurm_job_id" not in runs:
        return []
    slurm = runs[runs["slurm_job_id"].notna()].to_dict("records")
    by_job: dict[str, list[dict]] = {}
    for r in slurm:
        by_job.setdefault(str(r["slurm_job_id"]), []).append(r)
    return [
        SlurmRun(
            point=r["point"],
            repeat=int(r["repeat"]),
            job=jsonable(r["slurm_job_id"]),
            nodes=r.get("slurm_nodelist") if isinstance(r.get("slurm_nodelist"), str) else "",
            submitted=jsonable(r.get("slurm_submit_time")),
            queue_wait_s=finite(r["queue_wait_s"]),
            run_s=finite(r["elapsed_s"]),
            status=r["status"],
            shared_with=[
                [o["point"], int(o["repeat"])] for o in by_job[str(r["slurm_job_id"])] if o is not r
            ],
            # its nodes to itself: OverSubscribe=NO, what sbatch --exclusive gives
            exclusive=r["slurm_oversubscribe"] == "NO"
            if isinstance(r.get("slurm_oversubscribe"), str)
            else None,
        )
        for r in slurm
    ]


def allocations(jobs: list[SlurmRun]) -> Allocations | None:
    """How the study's Slurm runs shared allocations: runs, jobs, jobs that ran several
    runs, and whether every job, none or only some had its nodes to itself."""
    if not jobs:
        return None
    ids = {str(j.job) for j in jobs}
    shared = {str(j.job) for j in jobs if j.shared_with}
    known = [j.exclusive for j in jobs if j.exclusive is not None]
    exclusive = None if not known else "all" if all(known) else "none" if not any(known) else "some"
    return Allocations(runs=len(jobs), jobs=len(ids), shared_jobs=len(shared), exclusive=exclusive)
