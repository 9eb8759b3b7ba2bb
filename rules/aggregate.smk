rule aggregate_study:
    input:
        records=get_study_records,
    output:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
    params:
        study=get_study_config,
    log:
        "logs/{study}/aggregate.log",
    localrule: True
    script:
        "../scripts/aggregate.py"
