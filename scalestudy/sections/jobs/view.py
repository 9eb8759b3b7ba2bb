"""The study's Slurm jobs in the report, beside its cost."""

from scalestudy.sections.formatting import shallow, table
from scalestudy.sections.jobs.contract import Jobs

# where the report shows it: with the cost and scheduling
PLACE = "cost"
# the table's formatted columns
COLUMNS = {"queue_wait": "queue_wait_s", "run": "run_s", "submitted": "submitted"}


def view(jobs: Jobs) -> dict:
    formatted = table([shallow(j) for j in jobs.runs], COLUMNS.values())
    runs = [
        shallow(j) | {k: f[c] for k, c in COLUMNS.items()}
        for j, f in zip(jobs.runs, formatted, strict=True)
    ]
    return {"allocations": jobs.allocations, "runs": runs}
