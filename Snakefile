from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/run.smk"
include: "rules/profile.smk"
include: "rules/aggregate.smk"
include: "rules/plot.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        get_final_outputs(),
