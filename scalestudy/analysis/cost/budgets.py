"""A study's plan from what an earlier invocation left on disk, and the check before
any job runs of the plans against their studies' budget_su."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from scalestudy import paths
from scalestudy.analysis.cost.plan import budget_problem, study_plan
from scalestudy.contract import earlier_analysis
from scalestudy.model import Study
from scalestudy.records import RecordError, read_record

log = logging.getLogger(__name__)


def earlier_results(study, warn=log.warning):
    """A study's runs table and analysis from an earlier invocation (None for each
    that does not exist yet): what scalestudy.analysis.cost.plan prices its jobs from."""
    runs_path = Path(paths.RUNS_TABLE.format(study=study))
    analysis_path = Path(paths.ANALYSIS.format(study=study))
    try:
        runs = pd.read_csv(runs_path) if runs_path.exists() else None
        analysis = earlier_analysis(analysis_path) if analysis_path.exists() else None
    except (OSError, ValueError) as e:
        warn(f"{e}: the plan of study {study} ignores its earlier results.")
        return None, None
    return runs, analysis


def finished_runs(study, points) -> set[tuple[str, int]]:
    """(point, repeat) of a study's runs whose records say ok: they will not run again.
    `points`: the study's point labels."""
    finished = set()
    for point in points:
        for repeat, path in paths.records_on_disk(study, point):
            try:
                if read_record(path)["status"] == "ok":
                    finished.add((point, repeat))
            except RecordError:
                pass
    return finished


def study_plans(studies: dict[str, Study], points: pd.DataFrame, names, warn=log.warning):
    """The plan (scalestudy.analysis.cost.plan) of each named study that runs jobs.
    `points`: points_table indexed by (study, point)."""
    return [
        study_plan(
            studies[name],
            *earlier_results(name, warn),
            finished_runs(name, points.loc[name, "point"]),
        )
        for name in names
        if studies[name].workload is not None
    ]


def budget_problems(
    studies: dict[str, Study], points: pd.DataFrame, running: set[str], warn=log.warning
) -> list[str]:
    """Refuse a study whose jobs are about to run while its plan (an adaptive study's:
    its round 1) is estimated above its budget_su. `running`: the studies with runs,
    or a round, to come in this invocation."""
    budgeted = [name for name in sorted(running) if studies[name].budget_su is not None]
    problems = [budget_problem(p) for p in study_plans(studies, points, budgeted, warn)]
    return [p for p in problems if p]
