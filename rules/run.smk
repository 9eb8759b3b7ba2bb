# One job per (study, point, repeat). The launcher starts the workload
# process(es), times them and always writes a record, also for a failed run.
rule run_point:
    input:
        data=get_run_data,
    output:
        record="results/{study}/runs/{point}/rep{repeat}.json",
    log:
        "logs/{study}/runs/{point}/rep{repeat}.log",
    threads: get_threads
    resources:
        mem_mb=get_mem_mb,
        runtime=get_runtime,
        # profiles/local allows one at a time, so timed runs do not share cores
        timed_runs=1,
    params:
        spec=get_run_spec,
        rerun_token=get_rerun_token,
        # the interpreter Snakemake runs on, so jobs see the same environment
        python=PYTHON,
    shell:
        "{params.python:q} -m scalestudy.launch --spec {params.spec:q} "
        "--record {output.record:q} --rerun-token {params.rerun_token:q} > {log:q} 2>&1"
