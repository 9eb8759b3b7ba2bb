# The price of every study before it runs: `snakemake results/plan.html`. No job
# runs for it: the plans are computed from the config and the studies' earlier
# results (if any), by the rule's script. The rule asks Slurm when each
# job would start (sbatch --test-only, once per shape of job; locally: no queue) and
# how long past jobs of its shape waited (one sacct call), and writes the plans as a
# page and as JSON.
rule plan:
    input:
        code=script_code("plan"),
    output:
        html=report(paths.PLAN_HTML, caption="../report/plan.rst", category="Plan"),
        json=paths.PLAN_JSON,
    log:
        "logs/plan.log",
    localrule: True
    params:
        # the validated config, as a file: the script prices every study of it
        config=records.values_file(CONFIG),
        priced=get_plans_digest,
        queue=get_plan_queue,
        history_days=CONFIG["queue_history_days"],
    script:
        "../scripts/plan.py"
