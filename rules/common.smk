import hashlib
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from scalestudy import paths, records
from scalestudy import snakemake_internals as sm
from scalestudy.analysis.cost.budgets import study_plans
from scalestudy.code_inputs import code_inputs
from scalestudy.sections import FIGURES
from scalestudy.study.archives import archive_inputs, baseline_inputs
from scalestudy.study.errors import (
    ConfigError,
    config_error_text,
    not_in_config_text,
    not_selected_text,
    stop,
)
from scalestudy.compute.data import PREPARED_FILES
from scalestudy.study.points import POINT_LABEL
from scalestudy.study.run_spec import DATASETS, dataset_of, profile_targets
from scalestudy.study.config_tables import points_table, runs_table
from scalestudy.study.validation import (
    checked_config,
    not_selected_problems,
    same_variants,
    study_models,
)
from scalestudy.study.workload_bridge import WorkloadError

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
# the results of studies the config no longer names (renamed or removed): kept, not read
NOT_IN_CONFIG = paths.study_folders_not_in(config["studies"])
if NOT_IN_CONFIG and not sm.remote_exec(workflow):
    logger.warning(not_in_config_text(NOT_IN_CONFIG))
for said in [] if sm.remote_exec(workflow) else same_variants(STUDIES):
    logger.warning(said)
POINTS = points_table(STUDIES).set_index(["study", "point"], drop=False)
RUNS = runs_table(STUDIES)
PROFILES = profile_targets(STUDIES)
DATA_DIR = CONFIG["data_dir"]
PYTHON = sys.executable


# A rule's code inputs: the package's modules and data files its script imports
# (scalestudy/code_inputs.py); a changed one re-makes what the script makes, no more.
# An input function: worked out only for the jobs in the DAG (a Slurm job parses the
# workflow again for its one run, which declares no code).
def script_code(name, each=str):
    script = Path(workflow.basedir) / "scripts" / f"{name}.py"
    return lambda wildcards: [each(path) for path in code_inputs(script)]


wildcard_constraints:
    study="|".join(map(re.escape, STUDIES)),
    point=POINT_LABEL,
    repeat=r"[1-9][0-9]*",
    round=r"[1-9][0-9]*",
    dataset="|".join(DATASETS),


def get_final_outputs(wildcards):
    """The report, every study's summary, and every record (records_to_make):
    Snakemake does not remake a deleted file that only feeds outputs it finds up to
    date, so a deleted record is a target here, and its run and its study's
    aggregation run again."""
    return (
        ["results/report.html", "results/answered.txt"]
        + expand("results/{study}/summary.csv", study=list(STUDIES))
        + records_to_make()
    )


def get_study_baseline(wildcards):
    """The files of the earlier run the study is compared with (none without `baseline:`)."""
    return baseline_inputs(STUDIES[wildcards.study], Path.cwd())


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


def get_run_data(wildcards):
    # the tensor files too: a data set prepared before them is prepared again; ancient:
    # a run is never measured again because its data were prepared again (a fresh clone)
    names = ["ready.json", *PREPARED_FILES.values()]
    dataset = dataset_of(get_point_study(wildcards))
    return (
        [ancient(f"{DATA_DIR}/{dataset}/{name}") for name in names] if dataset else []
    )


def get_study_records(wildcards):
    """Its records, and its times measured elsewhere (the study's CSV, or series' own)."""
    study = STUDIES[wildcards.study]
    found = sorted({study.for_series(s).measured for s in study.series_names} - {None})
    if study.adaptive is not None:
        return found + adaptive_records(wildcards.study)
    return found + fixed_records(wildcards.study)


def get_study_config(wildcards):
    """The study's validated config, as a file (records.values_file): the script builds
    the study model from it."""
    return records.values_file(CONFIG["studies"][wildcards.study])


def get_data_sources(wildcards):
    return records.values_file(CONFIG["data_sources"][wildcards.dataset])


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


def get_plans_digest(wildcards):
    """A hash of every study's plan as this invocation prices it: the plan is made
    again where a price changes (its script prices them itself, from the config)."""
    plans = study_plans(STUDIES, POINTS, STUDIES, logger.warning)
    return hashlib.sha256(repr(plans).encode()).hexdigest()[:20]


def get_plan_queue(wildcards):
    """Where the plan's jobs would queue: "slurm" under an executor that submits
    them elsewhere (the Slurm plugin's), "local" when they run on this machine."""
    return "slurm" if sm.submits_elsewhere(workflow) else "local"


def get_cluster_facts(wildcards):
    """What Slurm said of the study (the checkpoint of rules/cluster.smk)."""
    return checkpoints.cluster_facts.get(study=wildcards.study).output[0]
