# timed_runs bounds each submission, not the whole workflow: under Slurm the profile's
# `resources: [timed_runs=1]` then stacks a packed point's repeats one after another in
# its job (Snakemake sums their runtimes, and takes the largest of the rest), without
# holding back the other jobs; locally it still allows one timed run at a time.
resource_scopes:
    timed_runs="local",


# What a run's job asks for: the point's geometry for Slurm (cluster settings, the
# partition and account, come from the profile), its minutes, every timed-run slot
# there is (profiles/local: 2; Slurm's: 1), so that timed runs share their cores with
# no other job, and the log's cap: a resource, not a param, so that changing it
# reruns nothing measured.
RUN_RESOURCES = {
    name: job_resource(name)
    for name in (
        "cpus_per_task",
        "nodes",
        "tasks",
        "tasks_per_node",
        "tasks_per_gpu",
        "mpi",
        "gpu",
        "gpu_model",
        "slurm_extra",
        "mem_mb",
    )
} | {
    "runtime": get_run_runtime,
    "timed_runs": lambda wildcards: sm.global_resource(workflow, "timed_runs") or 1,
    "log_limit_mb": CONFIG["log_limit_mb"],
}
# The launcher writes the run's output to the log itself (capped); its own errors (a
# full disk, a second launcher of the run) reach Snakemake's output too.
RUN_SHELL = (
    "{params.python:q} -m scalestudy.compute.launch --spec {params.spec:q} "
    "--record {output.record:q} --rerun-token {params.rerun_token:q} "
    "--log {log:q} --log-limit-mb {resources.log_limit_mb}"
)


# One job per (study, point, repeat). The launcher starts the workload
# process(es), times them and always writes a record, also for a failed run.
rule run_point:
    input:
        data=get_run_data,
        # a comparison's runs one after another, in their drawn order
        previous=get_previous_paired_run,
        probe=get_command_probe,
    output:
        record=paths.RECORD,
    log:
        "logs/{study}/runs/{point}/rep{repeat}.log",
    # the point's repeats in one Slurm job, when its study packs them
    group:
        get_pack_group
    threads: get_threads
    resources:
        **RUN_RESOURCES,
    params:
        spec=get_run_spec,
        rerun_token=get_rerun_token,
        # the interpreter Snakemake runs on, so jobs see the same environment
        python=PYTHON,
    shell:
        RUN_SHELL


# A command study's runs wait for one short run of its command at each series' base
# case (at most PROBE_MIN, scalestudy/study/run_spec.py; locally, or as a job like a
# run). A command that is not found, or fails at once, is named there: a checkpoint, so
# that its failed record then stands for the study's runs (get_study_records), which
# never start, and the report says why in the study's first row.
checkpoint probe_command:
    input:
        data=get_run_data,
    output:
        record="results/{study}/probe/{point}.json",
    log:
        "logs/{study}/probe/{point}.log",
    threads: get_threads
    resources:
        **RUN_RESOURCES,
    params:
        spec=get_probe_spec,
        rerun_token=get_probe_token,
        python=PYTHON,
    shell:
        RUN_SHELL
