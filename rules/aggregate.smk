from scalestudy.sections import Analysis


rule aggregate_study:
    input:
        records=get_study_records,
        rounds=get_study_rounds,
        baseline=get_study_baseline,
        archives=get_study_archives,
        # what Slurm said of the study (rules/cluster.smk): data, never asked here
        cluster=get_cluster_facts,
        code=script_code("aggregate"),
        # an analysis.json of another version, or broken, is made again
        refused=sm.remade_when_refused(
            workflow, paths.ANALYSIS, Analysis.load, logger.warning
        ),
    output:
        summary=report(
            "results/{study}/summary.csv",
            caption="../report/summary.rst",
            category="{study}",
            subcategory="Tables",
        ),
        runs=report(
            "results/{study}/runs.csv",
            caption="../report/runs.rst",
            category="{study}",
            subcategory="Tables",
        ),
        analysis="results/{study}/analysis.json",
        baseline="results/{study}/baseline.json",
    log:
        "logs/{study}/aggregate.log",
    localrule: True
    params:
        study=get_study_config,
        history_min_jobs=CONFIG["queue_history_min_jobs"],
    script:
        "../scripts/aggregate.py"
