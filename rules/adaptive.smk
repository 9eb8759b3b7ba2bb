import itertools
from pathlib import Path

from scalestudy import paths
from scalestudy.analysis.decisions.adaptive import (
    RoundPlan,
    config_fingerprint,
    round_of_run,
)

# Adaptive studies: their runs are chosen round by round.
ADAPTIVE = [name for name, study in STUDIES.items() if study.adaptive is not None]


def records_of(study, totals):
    """The records of a round's totals (point label -> runs once the round is done)."""
    return [
        paths.record_path(study, point, k)
        for point, total in totals.items()
        for k in range(1, total + 1)
    ]


def adaptive_rounds(study):
    """The plans of an adaptive study's rounds, up to the one that stops it: (path,
    plan) each. Each plan is a checkpoint: until it exists Snakemake builds it (and the
    runs before it) first, then evaluates this again. Rounds are history: a round that
    stopped the study is followed by the rounds planned after it (under a later config),
    and if the last stopped it under another config than today's, the next round is
    planned under today's, from the runs that exist."""
    rounds = []
    current = config_fingerprint(CONFIG["studies"][study])
    for round_no in itertools.count(1):
        path = checkpoints.adaptive_round.get(study=study, round=round_no).output.plan
        plan = RoundPlan.load(path)
        rounds.append((path, plan))
        later = Path(paths.ROUND.format(study=study, round=round_no + 1)).exists()
        if plan.stop and not later and (plan.config_fingerprint or current) == current:
            return rounds


def planned_round(study, round_no):
    """The plan in a round's file, if it holds one (None: not planned yet)."""
    path = Path(paths.ROUND.format(study=study, round=round_no))
    try:
        return RoundPlan.load(path)
    except (OSError, ValueError):
        return None


def get_round_config(wildcards):
    """The config a round is planned under: today's for a new round; for one that ran,
    the one its file says it was planned under, so that a changed config never plans
    it again (Snakemake would see its params change and rewrite the history)."""
    plan = planned_round(wildcards.study, int(wildcards.round))
    if plan is not None and plan.config is not None:
        return records.values_file(plan.config)
    return get_study_config(wildcards)


def adaptive_records(study):
    """The records an adaptive study's last round judged (every run its rounds made),
    and any later repeat already on disk: runs that plans made before a change of the
    config or the code asked for are never dropped from the answer."""
    totals = dict(adaptive_rounds(study)[-1][1].totals)
    for point in POINTS.loc[study, "point"]:
        on_disk = len(list(paths.records_on_disk(study, point)))
        if on_disk > totals.get(point, 0):
            totals[point] = on_disk
    return records_of(study, totals)


def round_time_limit(study, point, repeat):
    """The time limit in minutes that the round which added a run gives it where the
    budget sets one (RoundPlan.time_limits_min); None: the study's resources.runtime.
    Read from the round files: a run's job exists only once its round is planned."""
    if study not in ADAPTIVE:
        return None
    plans = []
    while (plan := planned_round(study, len(plans) + 1)) is not None:
        plans.append(plan)
    round_no = round_of_run(plans, point, repeat)
    return round_no and plans[round_no - 1].time_limits_min.get(point)


def get_previous_round(wildcards):
    round_no = int(wildcards.round)
    if round_no == 1:
        return []
    return [ancient(paths.ROUND.format(study=wildcards.study, round=round_no - 1))]


def get_round_records(wildcards):
    """The records of every run up to the round before this one."""
    round_no = int(wildcards.round)
    if round_no == 1:
        return []
    previous = checkpoints.adaptive_round.get(study=wildcards.study, round=round_no - 1)
    plan = RoundPlan.load(previous.output.plan)
    # ancient: a record redone after the round was planned does not plan it again
    return [ancient(path) for path in records_of(wildcards.study, plan.totals)]


def get_study_rounds(wildcards):
    """An adaptive study's round plans (none for a fixed study)."""
    if wildcards.study not in ADAPTIVE:
        return []
    return [path for path, _ in adaptive_rounds(wildcards.study)]


def get_round_baseline(wildcards):
    """The baseline's files as a round reads them (only where the study settles its
    comparison with it): ancient, like its records (a round that ran is history)."""
    if not STUDIES[wildcards.study].adaptive.settle_baseline:
        return []
    return [ancient(path) for path in get_study_baseline(wildcards)]


# An adaptive study runs in rounds. The plan of round R (a checkpoint) reads the
# records of the rounds before it and says how many runs each point should have once
# round R is done, or why the study stops. Its runs are then ordinary run_point jobs,
# and the plan of round R+1 waits for them (get_round_records). Plans only add runs:
# a rerun, a raised budget or a tighter target continue from what exists. A round that
# ran is history: its file is kept as it is (its inputs are ancient, its params the
# config it was planned under: get_round_config), whatever changes after it (the
# config, the analysis code, a record redone); a changed config plans new rounds from
# the runs that exist (adaptive_rounds).
checkpoint adaptive_round:
    input:
        previous=get_previous_round,
        records=get_round_records,
        baseline=get_round_baseline,
        code=script_code("adaptive_round", ancient),
        # a plan no version's reader reads, or broken, is made again (from its copy)
        refused=sm.remade_when_refused(
            workflow, paths.ROUND, RoundPlan.load, logger.warning
        ),
    output:
        plan=paths.ROUND,
    log:
        "logs/{study}/rounds/round{round}.log",
    localrule: True
    params:
        study=get_round_config,
    script:
        "../scripts/adaptive_round.py"
