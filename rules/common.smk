import itertools
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

import scalestudy
from scalestudy import snakemake_internals as sm
from scalestudy.study.errors import (
    ConfigError,
    config_error_text,
    not_selected_text,
    startup_problems_text,
    stop,
)
from scalestudy.study.points import POINT_LABEL, point_for
from scalestudy.study.workload_bridge import WorkloadError
from scalestudy.study.run_spec import DATASETS, dataset_of, profile_targets, run_spec
from scalestudy.study.slurm import slurm_resources
from scalestudy.study.startup_checks import (
    local_cpu_problems,
    local_gpu_problems,
    packing_problems,
    partition_time_problems,
    visible_gpus,
)
from scalestudy.study.tables import points_table, runs_table
from scalestudy.study.baseline import archive_inputs, baseline_inputs
from scalestudy.study.validation import (
    checked_config,
    not_selected_problems,
    study_models,
)
from scalestudy import FIGURES, paths
from scalestudy.analysis.adaptive import config_fingerprint
from scalestudy.analysis.budgets import budget_problems, study_plans
from scalestudy.analysis.request import partition_time_limits
from scalestudy.records import RecordError, misplacement, read_record

# Validate first: nothing below may see a config the schema has not accepted. Every
# problem is listed at once, and printed without a traceback (stop).
CONFIG_SCHEMA = Path(workflow.basedir) / "config" / "schema" / "config.schema.yaml"
# Studies that only: leaves out are checked too, and their problems noted after the
# selected studies' ones: they do not stop this run.
try:
    NOT_SELECTED = not_selected_problems(config, CONFIG_SCHEMA, Path.cwd())
    CONFIG = checked_config(config, CONFIG_SCHEMA, Path.cwd())
except ConfigError as e:
    stop(config_error_text(e.problems, NOT_SELECTED))
except WorkloadError as e:  # a workload module's declaration, not the config
    stop(str(e))
if NOT_SELECTED:
    logger.warning(not_selected_text(NOT_SELECTED))


# The study model (scalestudy.model): every study as the validated config gives it.
STUDIES = study_models(CONFIG)
POINTS = points_table(STUDIES).set_index(["study", "point"], drop=False)
RUNS = runs_table(STUDIES)
PROFILES = profile_targets(STUDIES)
DATA_DIR = CONFIG["data_dir"]
PYTHON = sys.executable
# Outputs are recomputed when the code that makes them changes: the analysis package
# (and the record and study model it reads) for aggregation, the report's for the rest;
# analysis.json's contract for each of them (they write or read it).
PACKAGE = Path(scalestudy.__file__).parent
CODE = {
    "analysis": sorted(str(p) for p in (PACKAGE / "analysis").glob("*.py"))
    + [
        str(PACKAGE / "records.py"),
        str(PACKAGE / "model.py"),
        str(PACKAGE / "contract.py"),
        str(PACKAGE / "schemas/record.schema.json"),
    ],
    "plots": [str(PACKAGE / "report" / "plots.py"), str(PACKAGE / "contract.py")],
    "report": [
        str(PACKAGE / "report" / "views.py"),
        str(PACKAGE / "report" / "rendering.py"),
        str(PACKAGE / "report" / "templates" / "report.html.j2"),
        str(PACKAGE / "contract.py"),
    ],
}


wildcard_constraints:
    study="|".join(map(re.escape, STUDIES)),
    point=POINT_LABEL,
    repeat=r"[1-9][0-9]*",
    round=r"[1-9][0-9]*",
    dataset="|".join(DATASETS),


def get_final_outputs(wildcards):
    """The report, every study's summary, and every record: Snakemake does not remake
    a deleted file that only feeds outputs it finds up to date, so a deleted record
    is a target here, and its run and its study's aggregation run again. An adaptive
    study's records are those its rounds chose (adaptive_rounds)."""
    records = [paths.record_path(r.study, r.point, r.repeat) for r in RUNS.itertuples()]
    for name in ADAPTIVE:
        records += adaptive_records(name)
    return (
        ["results/report.html"]
        + expand("results/{study}/summary.csv", study=list(STUDIES))
        + records
    )


# Adaptive studies (rules/adaptive.smk): their runs are chosen round by round.
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
        plan = json.loads(Path(path).read_text())
        rounds.append((path, plan))
        later = Path(paths.ROUND.format(study=study, round=round_no + 1)).exists()
        if (
            plan["stop"]
            and not later
            and plan.get("config_fingerprint", current) == current
        ):
            return rounds


def planned_round(study, round_no):
    """The plan in a round's file, if it holds one (None: not planned yet)."""
    path = Path(paths.ROUND.format(study=study, round=round_no))
    try:
        plan = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return plan if isinstance(plan, dict) else None


def get_round_config(wildcards):
    """The config a round is planned under: today's for a new round; for one that ran,
    the one its file says it was planned under, so that a changed config never plans
    it again (Snakemake would see its params change and rewrite the history)."""
    plan = planned_round(wildcards.study, int(wildcards.round))
    if plan is not None and isinstance(plan.get("config"), dict):
        return plan["config"]
    return CONFIG["studies"][wildcards.study]


def adaptive_records(study):
    """The records an adaptive study's last round judged (every run its rounds made),
    and any later repeat already on disk: runs that plans made before a change of the
    config or the code asked for are never dropped from the answer."""
    totals = dict(adaptive_rounds(study)[-1][1]["totals"])
    for point in POINTS.loc[study, "point"]:
        on_disk = len(list(paths.records_on_disk(study, point)))
        if on_disk > totals.get(point, 0):
            totals[point] = on_disk
    return records_of(study, totals)


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
    plan = json.loads(Path(previous.output.plan).read_text())
    # ancient: a record redone after the round was planned does not plan it again
    return [ancient(path) for path in records_of(wildcards.study, plan["totals"])]


def get_study_rounds(wildcards):
    """An adaptive study's round plans (none for a fixed study)."""
    if wildcards.study not in ADAPTIVE:
        return []
    return [path for path, _ in adaptive_rounds(wildcards.study)]


def get_study_baseline(wildcards):
    """The files of the earlier run the study is compared with (none without `baseline:`)."""
    return baseline_inputs(STUDIES[wildcards.study], Path.cwd())


def get_round_baseline(wildcards):
    """The baseline's files as a round reads them (only where the study settles its
    comparison with it): ancient, like its records (a round that ran is history)."""
    if not STUDIES[wildcards.study].adaptive.settle_baseline:
        return []
    return [ancient(path) for path in get_study_baseline(wildcards)]


def get_study_archives(wildcards):
    """The files of the study's archives (make archive): the report's history."""
    return archive_inputs(wildcards.study, Path.cwd())


# a dict per point: the jobs ask for their point's row thousands of times in a grid
POINT_ROWS = POINTS.to_dict("index")


def get_point(wildcards):
    try:
        return POINT_ROWS[(wildcards.study, wildcards.point)]
    except KeyError:
        raise WorkflowError(
            f"studies.{wildcards.study} has no point {wildcards.point} in the config"
        ) from None


def get_threads(wildcards):
    return int(get_point(wildcards)["threads"])


def get_point_study(wildcards):
    """The study as the point's series sees it (its overrides merged in)."""
    return STUDIES[wildcards.study].for_series(get_point(wildcards)["series"])


def get_job_resources(wildcards):
    """What the point's job asks the scheduler for (see slurm_resources)."""
    row = get_point(wildcards)
    study = STUDIES[wildcards.study]
    return slurm_resources(point_for(study, int(row["n"]), row["series"]), study)


def job_resource(name):
    """One entry of get_job_resources, for the rule's resources: directive."""

    def get_resource(wildcards):
        return get_job_resources(wildcards)[name]

    return get_resource


# Snakemake's --group-components counts a group's parts under the group's name. Each
# packed point has a group of its own, registered under this one name (as Snakemake
# registers a group given with wildcards under its pattern), so that the Slurm
# profile's `group-components: [pack=100]` puts all repeats of a point in one job.
PACK_GROUP = "pack"


def get_pack_group(wildcards):
    """The Slurm job a run shares with its point's other repeats when its study packs
    them (submission.pack_repeats); None, a job of its own, otherwise, locally, and for
    a profiling run (profile_point, no repeat: its times are not used)."""
    packs = STUDIES[wildcards.study].submission.pack_repeats
    if not packs or sm.local_exec(workflow) or "repeat" not in wildcards.keys():
        return None
    group = f"{PACK_GROUP}-{wildcards.study}-{wildcards.point}"
    sm.register_group(workflow, group, PACK_GROUP)
    return group


def get_run_data(wildcards):
    dataset = dataset_of(get_point_study(wildcards))
    return [f"{DATA_DIR}/{dataset}/ready.json"] if dataset else []


def get_run_spec(wildcards):
    """Everything the launcher needs, as one JSON string (shell-quoted by the rule)."""
    point = get_point(wildcards)
    repeat = int(getattr(wildcards, "repeat", 1))  # a profiling job has no repeats
    spec = run_spec(
        STUDIES[wildcards.study],
        int(point["n"]),
        repeat,
        point["series"],
        data_dir=DATA_DIR,
    )
    return json.dumps(spec, sort_keys=True)


def get_profile_spec(wildcards):
    """The run spec of a profiling job: one extra run of the point, traced."""
    point = get_point(wildcards)
    spec = run_spec(
        STUDIES[wildcards.study],
        int(point["n"]),
        1,
        point["series"],
        data_dir=DATA_DIR,
        profile_trace=f"results/{wildcards.study}/profile/{wildcards.point}.trace.json",
    )
    return json.dumps(spec, sort_keys=True)


def get_rerun_token(wildcards):
    """A failed run's token differs from the one it ran with, so Snakemake's params
    trigger reruns it on the next invocation; a good run keeps its token. An adaptive
    study's failed run keeps its token too: its rounds judged it (a run killed at its
    limit says the point is too slow), and a later round asks for new runs where it
    needs them, so a stopped study stays stopped; `make redo` retries it on request. A
    record that cannot be read, is not the run its path names (copied or moved by hand),
    or whose figures disagree, gets a token from the file's own change time: new for
    every new fault, however often."""
    path = Path(paths.record_path(wildcards.study, wildcards.point, wildcards.repeat))
    if not path.exists():
        return "first"
    try:
        record = read_record(path)
        problem = misplacement(record, path, get_point(wildcards)["series"])
    except RecordError as e:
        problem = str(e)
    if problem:
        logger.warning(f"{problem} It is run again.")
        return f"invalid-{path.stat().st_mtime_ns}"
    if record["status"] == "ok" or wildcards.study in ADAPTIVE:
        return record["rerun_token"]
    return f"retry-after-{record['finished_at']}"


def get_study_records(wildcards):
    study = STUDIES[wildcards.study]
    if study.measured is not None:
        return [study.measured]
    if study.adaptive is not None:
        return adaptive_records(wildcards.study)
    runs = RUNS[RUNS["study"] == wildcards.study]
    return [paths.record_path(r.study, r.point, r.repeat) for r in runs.itertuples()]


def get_study_config(wildcards):
    """The study's validated config; the script builds the study model from it."""
    return CONFIG["studies"][wildcards.study]


def get_data_sources(wildcards):
    return CONFIG["data_sources"][wildcards.dataset]


def get_dataset_root(wildcards):
    return f"{DATA_DIR}/{wildcards.dataset}"


def get_scaling_axis(wildcards):
    return STUDIES[wildcards.study].scaling.axis


def get_figures_dir(wildcards):
    return f"results/{wildcards.study}/figures"


def get_report_inputs():
    return {
        "summaries": expand("results/{study}/summary.csv", study=list(STUDIES)),
        "analyses": expand("results/{study}/analysis.json", study=list(STUDIES)),
        "figures": expand(
            "results/{study}/figures/{figure}.svg", study=list(STUDIES), figure=FIGURES
        ),
        "profiles": [
            f"results/{study}/profile/{point}.json" for study, point in PROFILES
        ],
    }


# Start-up checks (run.smk): what this invocation runs, read from Snakemake once its DAG
# is built, in a dry run too (scalestudy.snakemake_internals), judged by package
# functions; all problems at once.
RUN_RULES = ("run_point", "profile_point")


def get_plans(wildcards):
    return study_plans(STUDIES, POINTS, STUDIES, logger.warning)


def get_plan_queue(wildcards):
    """Where the plan's jobs would queue: "slurm" under an executor that submits
    them elsewhere (the Slurm plugin's), "local" when they run on this machine."""
    return "slurm" if sm.submits_elsewhere(workflow) else "local"


def studies_in_rounds():
    """Adaptive studies with a round still to plan in this invocation."""
    return {
        job.wildcards.study for job in sm.jobs_to_run(workflow, ("adaptive_round",))
    }


def points_to_run():
    """(study, point) of every run this invocation may make: its run jobs, any
    candidate of an adaptive study with a round to plan and, when it makes the plan
    (make plan), every point whose records are not all there yet: the plan prices the
    runs a `make report` would make, so the same checks apply."""
    needed = sm.needed_pairs(workflow, RUN_RULES)
    needed |= {
        (study, point)
        for study in studies_in_rounds()
        for point in POINTS.loc[study, "point"]
    }
    if sm.jobs_to_run(workflow, ("plan",)):
        needed |= {
            (run.study, run.point)
            for run in RUNS.itertuples()
            if not Path(paths.record_path(run.study, run.point, run.repeat)).exists()
        }
        needed |= {
            (study, point)
            for study, model in STUDIES.items()
            if model.adaptive is not None
            for point in POINTS.loc[study, "point"]
        }
    return needed


def local_problems_now():
    """Locally: the points this invocation may run against the CPUs and GPUs here; and
    against --cores when it runs them (a dry run or the plan alone is judged against
    the machine: Snakemake gives a dry run --cores 1 when none is given)."""
    if sm.submits_elsewhere(workflow) or sm.remote_exec(workflow):
        return []
    needed = points_to_run()
    usable = len(os.sched_getaffinity(0))
    runs_here = sm.jobs_to_run(workflow, RUN_RULES + ("adaptive_round",))
    cores = sm.cores(workflow) if runs_here and not sm.dry_run(workflow) else None
    return local_cpu_problems(
        STUDIES, POINTS, needed, usable, cores
    ) + local_gpu_problems(STUDIES, POINTS, needed, visible_gpus())


def budget_problems_now():
    """Anywhere: the plans of the studies with jobs to come against their budget_su."""
    running = {study for study, _ in sm.needed_pairs(workflow, RUN_RULES)}
    return budget_problems(
        STUDIES, POINTS, running | studies_in_rounds(), logger.warning
    )


def packing_problems_now():
    """On Slurm: packed studies against --group-components and timed_runs."""
    if not sm.submits_elsewhere(workflow) or sm.remote_exec(workflow):
        return []
    running = {study for study, _ in sm.needed_pairs(workflow, ("run_point",))}
    return packing_problems(
        STUDIES,
        running,
        sm.group_components(workflow, PACK_GROUP),
        sm.global_resource(workflow, "timed_runs"),
        PACK_GROUP,
    )


def partition_time_problems_now():
    """On Slurm: each job's time against its partition's limit (sinfo)."""
    if not sm.submits_elsewhere(workflow) or sm.remote_exec(workflow):
        return []
    jobs = sm.jobs_to_run(workflow, ("run_point",))
    if not jobs:
        return []
    needed = {}
    for job in jobs:
        key = (job.wildcards.study, sm.job_partition(job))
        needed.setdefault(key, set()).add(job.wildcards.point)
    return partition_time_problems(STUDIES, POINTS, needed, partition_time_limits())


def check_before_any_job():
    """Stop, before any job runs (and in a dry run), on every problem of the start-up
    checks, listed together: a local point bigger than the machine, a budget, packing,
    a partition's time limit."""
    found = [
        problem
        for problems in (
            local_problems_now,
            budget_problems_now,
            packing_problems_now,
            partition_time_problems_now,
        )
        for problem in problems()
    ]
    if found:
        stop(startup_problems_text(found))
