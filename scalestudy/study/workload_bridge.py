"""The bridge to the workloads: which a workflow can run, and their params checked."""

from pathlib import Path

import workloads as registry
from scalestudy.study.errors import ConfigError

WorkloadError = registry.WorkloadError  # a workload module without a valid declaration


def workloads_of(workdir: Path) -> dict[str, registry.Workload]:
    """The workloads a workflow in `workdir` can run, read from their modules'
    declarations without importing them (see workloads/__init__.py)."""
    return registry.discover(registry.folder_for(workdir))


def workload_capabilities(name: str | None, workdir: Path | None = None) -> dict:
    """What workload `name` can do ({} for none, or one this workflow does not have):
    distributed, steps, devices; from the registry's own folder, or the workflow's in
    `workdir` (never the working directory unasked: aggregation is a function of its
    inputs)."""
    if name is None:
        return {}
    known = registry.discover(registry.folder_for(workdir))
    return known[name].capabilities if name in known else {}


def find_workload(name: str, workload: str, known: dict) -> registry.Workload:
    if workload not in known:
        raise ConfigError(f"studies.{name}.workload: {registry.unknown_message(workload, known)}")
    return known[workload]


def params_problems(name: str, study: dict, known: dict) -> list[str]:
    """Validate the study's params against its workload's schema and fill in the
    defaults; each series' params overrides are validated merged into them. Every
    problem found, each naming its key."""
    try:
        workload = find_workload(name, study["workload"], known)
    except ConfigError as e:
        return e.problems
    try:
        study["params"] = workload.complete(study["params"])
    except registry.ParamsError as e:
        return [f"studies.{name}.{line}" for line in e.lines]
    problems = []
    # a comparison's variants override the params as series do
    for key in ("series", "compare"):
        for series, overrides in study.get(key, {}).items():
            if not isinstance(overrides, dict) or "params" not in overrides:
                continue
            try:
                workload.complete(study["params"] | overrides["params"])
            except registry.ParamsError as e:
                problems += [f"studies.{name}.{key}.{series}.{line}" for line in e.lines]
    return problems
