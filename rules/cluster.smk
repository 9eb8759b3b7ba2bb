from scalestudy.slurm import ClusterFacts


# What Slurm says of a study, gathered apart from its aggregation so that aggregation is
# a function of its files: sacct's accounting of the study's jobs (their ids are in the
# records), sbatch --test-only for each distinct request and sacct's past waits, each
# with a timeout; locally "local" and nothing asked. A checkpoint: once it has run,
# Snakemake judges aggregate_study again, by the file's checksum, so the same facts
# (a switch of profile that changes nothing) do not aggregate again.
checkpoint cluster_facts:
    input:
        records=get_study_records,
        code=script_code("cluster"),
        # a cluster.json of another version, or broken, is made again
        refused=sm.remade_when_refused(
            workflow, "results/{study}/cluster.json", ClusterFacts.load, logger.warning
        ),
    output:
        "results/{study}/cluster.json",
    log:
        "logs/{study}/cluster.log",
    localrule: True
    params:
        study=get_study_config,
        queue=get_plan_queue,
        history_days=CONFIG["queue_history_days"],
    script:
        "../scripts/cluster.py"
