import json
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from scalestudy import studies as st
from scalestudy import FIGURES
from scalestudy.records import RecordError, read_record

# Validate first: nothing below may see a config the schema has not accepted.
try:
    validate(config, schema="../config/schema/config.schema.yaml")
    CONFIG = st.normalise_config(config, Path.cwd())
except WorkflowError as e:
    raise WorkflowError(st.describe_validation_error(e)) from None
except st.ConfigError as e:
    raise WorkflowError(f"config key {e}") from None


STUDIES = CONFIG["studies"]
POINTS = st.points_table(CONFIG).set_index(["study", "point"], drop=False)
RUNS = st.runs_table(CONFIG)
PROFILES = st.profile_targets(CONFIG)
DATA_DIR = CONFIG["data_dir"]
PYTHON = sys.executable
# Outputs are recomputed when the code that makes them changes.
PACKAGE = Path(st.__file__).parent
CODE = {
    "analysis": [
        str(PACKAGE / "analysis.py"),
        str(PACKAGE / "predictions.py"),
        str(PACKAGE / "stats.py"),
        str(PACKAGE / "schemas/record.schema.json"),
    ],
    "plots": [str(PACKAGE / "plots.py")],
    "report": [str(PACKAGE / "report.py"), str(PACKAGE / "templates/report.html.j2")],
}


wildcard_constraints:
    study="|".join(map(re.escape, STUDIES)),
    point="|".join(map(re.escape, sorted(set(POINTS["point"])))) or "(?!)",
    repeat=r"[1-9][0-9]*",
    dataset="|".join(st.DATASETS),


def get_final_outputs():
    return ["results/report.html"] + expand(
        "results/{study}/summary.csv", study=list(STUDIES)
    )


def get_point(wildcards):
    return POINTS.loc[(wildcards.study, wildcards.point)]


def get_threads(wildcards):
    return int(get_point(wildcards)["threads"])


def get_point_study(wildcards):
    """The study as the point's series sees it (its overrides merged in)."""
    return st.series_study(STUDIES[wildcards.study], get_point(wildcards)["series"])


def get_job_resources(wildcards):
    """What the point's job asks the scheduler for (see st.slurm_resources)."""
    row = get_point(wildcards)
    study = STUDIES[wildcards.study]
    point = st.point_for(wildcards.study, study, int(row["n"]), row["series"])
    return st.slurm_resources(point, get_point_study(wildcards))


def job_resource(name):
    """One entry of get_job_resources, for the rule's resources: directive."""

    def get_resource(wildcards):
        return get_job_resources(wildcards)[name]

    return get_resource


def get_run_data(wildcards):
    dataset = st.dataset_of(get_point_study(wildcards))
    return [f"{DATA_DIR}/{dataset}/ready.json"] if dataset else []


def get_run_spec(wildcards):
    """Everything the launcher needs, as one JSON string (shell-quoted by the rule)."""
    study = STUDIES[wildcards.study]
    point = get_point(wildcards)
    repeat = int(getattr(wildcards, "repeat", 1))  # a profiling job has no repeats
    spec = st.run_spec(wildcards.study, study, int(point["n"]), repeat, point["series"])
    spec["data_dir"] = DATA_DIR
    return json.dumps(spec, sort_keys=True)


def get_profile_spec(wildcards):
    """The run spec of a profiling job: one extra run of the point, traced."""
    spec = json.loads(get_run_spec(wildcards))
    spec["profile"] = {
        "steps": STUDIES[wildcards.study]["profile"]["steps"],
        "trace": f"results/{wildcards.study}/profile/{wildcards.point}.trace.json",
    }
    return json.dumps(spec, sort_keys=True)


def get_rerun_token(wildcards):
    """A failed run's token differs from the one it ran with, so Snakemake's params
    trigger reruns it on the next invocation; a good run keeps its token."""
    path = Path(
        f"results/{wildcards.study}/runs/{wildcards.point}/rep{wildcards.repeat}.json"
    )
    if not path.exists():
        return "first"
    try:
        record = read_record(path)
    except RecordError:
        return "unreadable"
    if record["status"] == "ok":
        return record["rerun_token"]
    return f"retry-after-{record['finished_at']}"


def get_study_records(wildcards):
    study = STUDIES[wildcards.study]
    if "measured" in study:
        return [study["measured"]]
    runs = RUNS[RUNS["study"] == wildcards.study]
    return [
        f"results/{r.study}/runs/{r.point}/rep{r.repeat}.json"
        for r in runs.itertuples()
    ]


def get_study_config(wildcards):
    return STUDIES[wildcards.study]


def get_data_sources(wildcards):
    return CONFIG["data_sources"][wildcards.dataset]


def get_dataset_root(wildcards):
    return f"{DATA_DIR}/{wildcards.dataset}"


def get_scaling_axis(wildcards):
    return STUDIES[wildcards.study]["scaling"]["axis"]


def get_figures_dir(wildcards):
    return f"results/{wildcards.study}/figures"


def get_report_inputs():
    return {
        "summaries": expand("results/{study}/summary.csv", study=list(STUDIES)),
        "runs": expand("results/{study}/runs.csv", study=list(STUDIES)),
        "analyses": expand("results/{study}/analysis.json", study=list(STUDIES)),
        "figures": expand(
            "results/{study}/figures/{figure}.svg", study=list(STUDIES), figure=FIGURES
        ),
        "profiles": [
            f"results/{study}/profile/{point}.json" for study, point in PROFILES
        ],
    }
