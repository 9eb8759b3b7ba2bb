"""The study from a validated config: points and their layouts, the bridge to the
workloads, validation, Slurm resources, the run spec, range and grid expansion, tables,
and error wording; one module a topic."""
