from snakemake.utils import min_version

from scalestudy.study.errors import stop_on_unreadable_config

min_version("9.0")
# Snakemake's own message for a broken config file names neither the file nor the line.
stop_on_unreadable_config("config/config.yaml")


configfile: "config/config.yaml"


# snakemake --report: the workflow's description (report/*.rst: the captions)
report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/startup.smk"
include: "rules/run_inputs.smk"
include: "rules/data.smk"
include: "rules/run.smk"
include: "rules/adaptive.smk"
include: "rules/profile.smk"
include: "rules/cluster.smk"
include: "rules/aggregate.smk"
include: "rules/plot.smk"
include: "rules/report.smk"
include: "rules/plan.smk"


rule all:
    default_target: True
    input:
        get_final_outputs,
        get_all_probes,
