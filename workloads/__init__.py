"""Timed programs. One module per workload, each with one function:

    run(params: dict, ctx: scalestudy.harness.Context) -> None

It does the work inside `ctx.phase(name, kind=...)` blocks and reports
figures with `ctx.metric(name, value)`. `ctx.device`, `ctx.rank`,
`ctx.world_size` and `ctx.data_dir` say where and how to run. Workloads never
write records, read Slurm variables or set thread counts: the harness does.
Parameters arrive validated, with defaults, from config/schema/config.schema.yaml.
"""
