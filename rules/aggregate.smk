rule aggregate_study:
    input:
        records=get_study_records,
        rounds=get_study_rounds,
        baseline=get_study_baseline,
        archives=get_study_archives,
        code=CODE["analysis"],
    output:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
        analysis="results/{study}/analysis.json",
        baseline="results/{study}/baseline.json",
    log:
        "logs/{study}/aggregate.log",
    localrule: True
    params:
        study=get_study_config,
    script:
        "../scripts/aggregate.py"
