# timed_runs bounds each submission, not the whole workflow: under Slurm the profile's
# `resources: [timed_runs=1]` then stacks a packed point's repeats one after another in
# its job (Snakemake sums their runtimes, and takes the largest of the rest), without
# holding back the other jobs; locally it still allows one timed run at a time.
resource_scopes:
    timed_runs="local",


# One job per (study, point, repeat). The launcher starts the workload
# process(es), times them and always writes a record, also for a failed run.
rule run_point:
    input:
        data=get_run_data,
        # a comparison's runs one after another, in their drawn order
        previous=get_previous_paired_run,
    output:
        record=paths.RECORD,
    log:
        "logs/{study}/runs/{point}/rep{repeat}.log",
    # the point's repeats in one Slurm job, when its study packs them
    group:
        get_pack_group
    threads: get_threads
    resources:
        # the point's geometry for Slurm; cluster settings (partition, account)
        # come from the profile
        cpus_per_task=job_resource("cpus_per_task"),
        nodes=job_resource("nodes"),
        tasks=job_resource("tasks"),
        tasks_per_node=job_resource("tasks_per_node"),
        tasks_per_gpu=job_resource("tasks_per_gpu"),
        mpi=job_resource("mpi"),
        gpu=job_resource("gpu"),
        gpu_model=job_resource("gpu_model"),
        slurm_extra=job_resource("slurm_extra"),
        mem_mb=job_resource("mem_mb"),
        runtime=get_run_runtime,
        # every slot there is (profiles/local: 2; Slurm's: 1), so timed runs share
        # their cores with no other job
        timed_runs=lambda wildcards: sm.global_resource(workflow, "timed_runs") or 1,
        # a resource, not a param: changing the log's cap must not rerun what was measured
        log_limit_mb=CONFIG["log_limit_mb"],
    params:
        spec=get_run_spec,
        rerun_token=get_rerun_token,
        # the interpreter Snakemake runs on, so jobs see the same environment
        python=PYTHON,
    # The launcher writes the run's output to the log itself (capped); its own errors
    # (a full disk, a second launcher of the run) reach Snakemake's output too.
    shell:
        "{params.python:q} -m scalestudy.compute.launch --spec {params.spec:q} "
        "--record {output.record:q} --rerun-token {params.rerun_token:q} "
        "--log {log:q} --log-limit-mb {resources.log_limit_mb}"
