# The price of every study before it runs: `snakemake results/plan.html`. No job
# runs for it: the plans are computed from the config and the studies' earlier
# results (if any) when the DAG is built (get_plans), and the rule renders them.
rule plan:
    output:
        html="results/plan.html",
    log:
        "logs/plan.log",
    localrule: True
    params:
        plans=get_plans,
        title=f"{CONFIG['report']['title']}: the plan",
    script:
        "../scripts/plan.py"
