"""Validation: from a schema-validated config to a checked one, with every problem named."""

import copy
import itertools
import json
from pathlib import Path

import workloads as registry
from scalestudy.compute.commandline import command_params_problems
from scalestudy.model import CONFIG_FILE, Study
from scalestudy.records import RecordError
from scalestudy.study.archives import archive_problems, baseline_problems, expect_problems
from scalestudy.study.config_tables import read_measured
from scalestudy.study.errors import (
    ConfigError,
    config_key,
    describe_validation_error,
    names_under,
    yaml_problem,
)
from scalestudy.study.expansion import expand_grid, expand_range
from scalestudy.study.points import TOTAL_AXES, layout_of, point_for
from scalestudy.study.resources import limit_problems, runtime_problems
from scalestudy.study.workload_bridge import find_workload, params_problems, workloads_of


def study_problems(
    study: Study, workdir: Path, limits: dict, known: dict, params_ok: bool
) -> list[str]:
    """Every problem the schema cannot see, each naming its key. `known`: the workflow's
    workloads; `params_ok`: False when the study's params failed their schema (their own
    checks are then skipped)."""
    # the baseline and references are checked whatever else is wrong: each names its key
    compared = baseline_problems(study, workdir) + archive_problems(study, workdir)
    compared += expect_problems(study)
    if study.compare is not None:
        found = compare_problems(study, workdir)
        if found:
            return found + compared
    if study.adaptive is not None:
        found = adaptive_problems(study)
        if found:
            return found + compared
    # the series with their own times measured elsewhere
    measured = [s for s, own in (study.series or {}).items() if own.get("measured")]
    if study.measured is not None:
        path = workdir / study.measured
        missing = [] if path.is_file() else [f"studies.{study.name}.measured: no such file: {path}"]
        key = f"studies.{study.name}.series.{measured[0]}.measured" if measured else None
        twice = [f"{key}: the study's `measured` holds its times; give them once"] if key else []
        return missing + twice + compared
    if measured or study.workload is None:
        found = measured_problems(study, measured, workdir)
        if found or study.workload is None:
            return found + compared
    try:
        workload = find_workload(study.name, study.workload, known)
    except ConfigError as e:
        return e.problems + compared
    problems = compared
    for series in study.series_names:
        if series not in measured:
            problems += series_problems(study, limits, series, workload, workdir, params_ok)
    return problems  # ConfigError drops a problem said twice


def measured_problems(study: Study, measured: list[str], workdir: Path) -> list[str]:
    """Series of times measured elsewhere (series.<name>.measured) the workflow cannot
    study, each naming its key, and a CSV's file and line."""
    where = f"studies.{study.name}"
    bare = [s for s in study.series_names if s not in measured]
    if study.workload is None and bare:
        return [
            f"{where}.series.{bare[0]}: give it `measured` (a CSV of its times), or give the "
            "study a `workload` to run it"
        ]
    problems = []
    if study.time == "steady":  # what the runs and the CSVs time must be one thing
        problems.append(
            f"{where}.time: times measured elsewhere have no epochs to take the steady one "
            "of: use wall or train"
        )
    for series in measured:
        own, key = study.for_series(series), f"{where}.series.{series}.measured"
        try:
            table = read_measured(workdir / own.measured)
        except RecordError as e:
            problems.append(f"{key}: {e}")
            continue
        ns, held = own.scaling.ns(), table["N"].astype(int)
        stray, lacking = table.index[~held.isin(ns)], sorted(set(ns) - set(held))
        if len(stray):
            problems.append(
                f"{key}: {own.measured}: line {stray[0] + 2}: N = {held[stray[0]]} is no point "
                f"of the series (its scaling.points: {', '.join(map(str, ns)) or 'none'})"
            )
        elif lacking:
            problems.append(
                f"{key}: {own.measured}: no row has N = {lacking[0]}, a point of its scaling."
                f"points (its rows, lines 2-{len(table) + 1}, hold N = "
                f"{', '.join(map(str, held.unique()))})"
            )
    return problems


def compare_problems(study: Study, workdir: Path) -> list[str]:
    """A paired comparison the workflow cannot run, naming the key."""
    where = f"studies.{study.name}.compare"
    problems = []
    if study.measured is not None:
        problems.append(f"{where}: a study of times measured elsewhere runs nothing to pair")
    if study.series:
        problems.append(
            f"{where}: its variants a and b are the study's series; give "
            "`series` or `compare`, not both"
        )
    if study.adaptive is not None:
        problems.append(
            f"{where}: runs every pair at every point; give `adaptive` or `compare`, not both"
        )
    if study.repeats < 2:
        problems.append(
            f"{where}: needs repeats of at least 2 (pairs) for an interval of "
            f"the ratio; studies.{study.name}.repeats is {study.repeats}"
        )
    for side, key in itertools.product("ab", ("python", "container")):
        path = study.compare.variant(side).get(key)
        # an image apptainer fetches (docker://, library://) is no file here
        if path is not None and "://" not in path and not (workdir / path).is_file():
            problems.append(f"{where}.{side}.{key}: no such file: {path}")
    return problems


def same_variants(studies: dict[str, Study]) -> list[str]:
    """Paired comparisons whose variants a and b run the same: said before any job."""
    said = []
    for name, study in studies.items():
        ways = ("python", "container")
        sides = "ab" if study.compare else ""
        runs = [
            (study.for_series(s).params, *map(study.compare.variant(s).get, ways)) for s in sides
        ]
        if runs and runs[0] == runs[1]:
            said.append(
                f"studies.{name}.compare: variants a and b run the same params, interpreter "
                "and container: the comparison measures only the noise between runs (A/A)"
            )
    return said


def adaptive_problems(study: Study) -> list[str]:
    """An `adaptive` setting the workflow cannot run in rounds, naming the key."""
    where, adaptive = f"studies.{study.name}.adaptive", study.adaptive
    if study.measured is not None or study.series and study.elsewhere:
        return [
            f"{where}: a study of times measured elsewhere runs no jobs, so it has no "
            "rounds; its report already names the measurements that would decide it"
        ]
    problems = []
    if study.budget_su is None:
        problems.append(
            f"studies.{study.name}.budget_su: an adaptive study needs a budget "
            "(the most SU its rounds may cost)"
        )
    # several series: on CPU threads and on a GPU, its rounds settle the GPU verdict
    devices = {study.for_series(s).scaling.device for s in study.series or ()}
    if study.series and (devices != {"cpu", "gpu"} or study.scaling.grid):
        lacks = "on CPU threads" if "gpu" in devices else "on a GPU"
        problems.append(
            f"{where}: an adaptive study has one series of candidates, or series on CPU "
            "threads and on a GPU (its rounds settle the GPU verdict); this one has "
            f"{len(study.series)} (series, or the lines of a grid), none {lacks}"
        )
    elif study.series and adaptive.settle_baseline:
        problems.append(
            f"{where}.settle_baseline: the rounds of a study of CPU and GPU series "
            "settle its GPU verdict alone"
        )
    elif not study.series and len(study.scaling.ns()) < 2:
        problems.append(f"{where}: needs at least two candidate points in scaling.points")
    if adaptive.first_repeats > adaptive.max_repeats:
        problems.append(
            f"{where}.first_repeats: {adaptive.first_repeats} is more than "
            f"max_repeats ({adaptive.max_repeats})"
        )
    return problems


def series_problems(
    whole: Study,
    limits: dict,
    series: str,
    workload: registry.Workload,
    workdir: Path,
    params_ok: bool,
) -> list[str]:
    study = whole.for_series(series)
    name, scaling, points = study.name, study.scaling, study.scaling.ns()
    problems = scaling_problems(name, scaling, series)
    if problems:
        return problems
    if study.workload == "command" and params_ok:
        found = command_params_problems(study.params, study.time, workdir)
        problems += [f"studies.{name}.{p}" for p in found]
    if scaling.device not in workload.devices:
        problems.append(
            f"studies.{name}.scaling.device: workload {workload.name} runs on "
            f"{' or '.join(workload.devices)} only, not {scaling.device}"
        )
    layouts = [layout_of(scaling, p) for p in scaling.points]
    several = any(lay.nodes * lay.tasks_per_node > 1 for lay in layouts)
    if not workload.distributed and (scaling.axis != "threads" or several):
        problems.append(
            f"studies.{name}.scaling: workload {study.workload} runs one process; "
            "scale it over threads (axis: threads, devices: 1, nodes: 1)"
        )
    chosen = [point_for(whole, n, series) for n in points]
    problems += limit_problems(name, chosen, limits)
    runtime = limits.get("runtime")
    problems += runtime_problems(whole, chosen, runtime, "partition_limits.runtime")
    profile, where = study.profile, f"studies.{name}"
    if profile.enabled and not workload.steps:
        problems.append(
            f"{where}.profile: workload {study.workload} has no training steps "
            "the PyTorch profiler can see; profile your program with its own tools"
        )
    elif profile.enabled and profile.point is not None and profile.point not in points:
        problems.append(
            f"{where}.profile.point: {profile.point} is not one of the points {sorted(points)}"
        )
    if scaling.base is not None and scaling.base not in points:
        problems.append(
            f"{where}.scaling.base: {scaling.base} is not one of the points {sorted(points)}"
        )
    return problems


def scaling_problems(name: str, scaling, series: str = "") -> list[str]:
    """A scaling whose points cannot be laid out as asked, each problem naming the key
    and the point."""
    where = f"studies.{name}" + (f".series.{series}" if series else "") + ".scaling"
    axis, problems = scaling.axis, []
    ns = scaling.ns()
    twice = sorted({n for n in ns if ns.count(n) > 1})
    if twice:
        problems.append(
            f"{where}.points: two points have N = {twice[0]} on axis {axis}: give "
            "each layout of one total its own series"
        )
    if axis == "gpus" and scaling.device != "gpu":
        problems.append(f"{where}.axis: gpus needs device: gpu")
    if axis not in TOTAL_AXES:
        if scaling.per_node is not None or scaling.placement != "pack":
            key = "per_node" if scaling.per_node is not None else "placement"
            problems.append(
                f"{where}.{key}: placement is for the total axes (processes, gpus, cores); "
                f"axis {axis} places its points with threads, devices and nodes"
            )
        return problems
    if scaling.per_node is not None and scaling.placement == "spread":
        problems.append(f"{where}: per_node packs, placement: spread spreads; give one")
    unit = scaling.threads if axis == "cores" else 1
    if axis == "cores" and scaling.per_node is not None and scaling.per_node % unit:
        problems.append(
            f"{where}.per_node: {scaling.per_node} cores per node is not a whole "
            f"number of processes of {unit} threads"
        )
    for point, n in zip(scaling.points, ns, strict=True):
        if isinstance(point, dict):
            continue
        if n % unit:
            problems.append(
                f"{where}.points: point {n}: {n} cores is not a whole number of "
                f"processes of {unit} threads (scaling.threads)"
            )
        elif scaling.per_node is not None and n > scaling.per_node and n % scaling.per_node:
            problems.append(
                f"{where}.per_node: {scaling.per_node} per node does not divide "
                f"point {n}: its last node would be part-filled"
            )
    return problems


def study_models(config: dict) -> dict[str, Study]:
    """Every study of a checked config (normalise_config) as the study model."""
    return {name: Study.from_config(name, study) for name, study in config["studies"].items()}


def normalise_config(config: dict, workdir: Path) -> dict:
    """Copy a schema-validated config, validate every study's workload params against
    that workload's own schema (filling in its defaults), and check it: ConfigError
    lists every problem found, each naming its key. The validator
    inserts the very same default object into every study, and deepcopy would keep that
    sharing: a JSON round trip gives each study its own."""
    config = json.loads(json.dumps(config))
    known = workloads_of(workdir)
    problems, unusable = [], set()  # studies whose params are not completed
    for name, study in config["studies"].items():
        if "workload" in study:
            found = params_problems(name, study, known)
            problems += found
            unusable |= {name} if found else set()
    limits = config["partition_limits"]
    for name, study in config["studies"].items():
        # the schema refuses names other than letters, digits, '_' and '-' (propertyNames)
        if repeated := periodic_name_problem(name):
            problems.append(repeated)
            continue
        found = expand_range(name, study) or expand_grid(name, study)
        if found:
            problems += found
            continue
        model = Study.from_config(name, study)
        problems += study_problems(model, workdir, limits, known, name not in unusable)
    if problems:
        raise ConfigError(*problems)
    return config


def periodic_name_problem(name: str) -> str | None:
    """Why Snakemake cannot use a study name, or None: it stops a job whose wildcard
    value ends in one part repeated many times (PeriodicWildcardError, taking it for a
    rule that feeds itself), and a study's name is its jobs' `study` wildcard. Asked
    of Snakemake's own detector, so that the two never disagree."""
    from snakemake.io import PeriodicityDetector

    detector = PeriodicityDetector()
    part = detector.is_periodic(name)
    if part is None:
        return None
    # said by its shortest unit: 'a' 64 times, not the detector's 'aa' 32 times
    part = next(part[:k] for k in range(1, len(part) + 1) if part[:k] * (len(part) // k) == part)
    times = 1
    while name.endswith(part * (times + 1)):
        times += 1
    return (
        f"studies.{name}: Snakemake cannot use this name: it ends in {part!r} repeated "
        f"{times} times, and Snakemake stops any job whose name ends in one part repeated "
        f"{detector.min_repeat} times or more (PeriodicWildcardError); choose another name"
    )


def config_as_written(workdir: Path) -> dict:
    """The workflow's config file as written (no defaults, not checked), for the
    commands that act on its studies by name; SystemExit says why it cannot be read."""
    import yaml

    path = workdir / CONFIG_FILE
    if not path.is_file():
        raise SystemExit(f"{path}: no such file (the study names are taken from it)")
    problem = yaml_problem(path)
    if problem:
        raise SystemExit(problem)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(config.get("studies"), dict):
        raise SystemExit(f"{path}: names no studies (studies: ...)")
    return config


def study_named(name: str, config: dict, command: str) -> str:
    """`name` when the config names such a study; SystemExit otherwise, suggesting the
    nearest name (a command takes study names, never paths)."""
    if name in config["studies"]:
        return name
    guess, known = did_you_mean(name, config["studies"]), ", ".join(config["studies"])
    raise SystemExit(
        f"{command}: no study named {name!r} in {CONFIG_FILE}{guess} (its studies: {known}; "
        "give a study's name, not a folder)"
    )


def did_you_mean(name: str, names) -> str:
    """The nearest of `names` as "; did you mean `X`?", or "" when none is near."""
    near = registry.suggestion(name, names)
    return f"; did you mean `{near}`?" if near else ""


def document_order(config, path: list[str]) -> list[int]:
    """Where a key path is in the config, to list problems in the order of the file."""
    position, node = [], config
    for part in path:
        keys = list(node) if isinstance(node, dict) else None
        if keys is not None and part in node:
            position.append(keys.index(part))
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            position.append(int(part))
            node = node[int(part)]
        else:
            position.append(len(node) if isinstance(node, dict | list) else 0)
            break
    return position


def schema_problems(config: dict, schema: dict) -> list[tuple[list[str], str]]:
    """Every error of the config against the schema (not only the first, as
    snakemake.utils.validate raises), as (key path, message), in the order of the file."""
    from jsonschema import Draft202012Validator

    found = []
    for error in Draft202012Validator(schema).iter_errors(config):
        found += registry.describe_error(error, names_under)
    found.sort(key=lambda problem: document_order(config, problem[0]))
    return list({config_key(*p): p for p in found}.values())


def without_schema_problems(config: dict, paths: list[list[str]]) -> dict | None:
    """The config less the studies and top-level keys that the schema refused, for the
    checks of normalise_config to look at the rest; None when nothing is left to check."""
    bad_top = {path[0] for path in paths if path and path[0] != "studies"}
    bad_studies = {path[1] for path in paths if len(path) > 1 and path[0] == "studies"}
    if any(not path or path == ["studies"] for path in paths):
        return None
    if not isinstance(config.get("studies"), dict):
        return None
    rest = {k: copy.deepcopy(v) for k, v in config.items() if k not in bad_top}
    rest["studies"] = {k: v for k, v in rest["studies"].items() if k not in bad_studies}
    if "only" in rest:
        if rest["only"] and set(rest["only"]) <= bad_studies:
            return None  # only the refused studies were asked for
        rest["only"] = [name for name in rest["only"] if name not in bad_studies]
    return rest if rest["studies"] else None


def selection(config: dict) -> list[str] | None:
    """The study names `only:` selects, when it is a list and `studies` a mapping (else
    the schema says what is wrong); None when it selects all."""
    only, studies = config.get("only"), config.get("studies")
    if not only or not isinstance(only, list) or not isinstance(studies, dict):
        return None
    return [name for name in only if isinstance(name, str)]


def selected(config: dict) -> tuple[dict, list[str]]:
    """The config with only the studies `only:` selects (the same study mappings, so
    the schema's defaults land in them), and a problem for each name it does not know."""
    names = selection(config)
    if names is None:
        return config, []
    unknown = [
        f"config key only: no study named {name}{did_you_mean(name, config['studies'])}"
        for name in names
        if name not in config["studies"]
    ]
    return config | {"studies": {k: v for k, v in config["studies"].items() if k in names}}, unknown


def not_selected_problems(config: dict, schema_path: str | Path, workdir: Path) -> list[str]:
    """The problems of the studies that `only:` leaves out, checked as checked_config
    would check them: the workflow notes them without stopping, as they do not run."""
    names = selection(config)
    if names is None:
        return []
    others = {k: v for k, v in config["studies"].items() if k not in names}
    if not others:
        return []
    rest = {k: v for k, v in config.items() if k != "only"} | {"studies": others}
    try:
        checked_config(json.loads(json.dumps(rest)), schema_path, workdir)
    except ConfigError as e:  # keep their own problems, not the top level's again
        keys = tuple(f"config key studies.{name}" for name in others)
        return [p for p in e.problems if p.startswith(keys)]
    return []


def checked_config(config: dict, schema_path: str | Path, workdir: Path) -> dict:
    """The config validated against the schema (which fills in its defaults, in
    `config` itself, as snakemake.utils.validate does) and by normalise_config, for
    the studies `only:` selects (not_selected_problems checks the others).
    ConfigError lists every problem found, schema ones first, each as
    `config key PATH: ...`; a study the schema refused is not checked further."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    config, unknown = selected(config)
    if unknown and not config["studies"]:
        raise ConfigError(*unknown)
    try:
        validate(config, schema=str(schema_path))
    except WorkflowError as e:
        import yaml

        schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
        found = schema_problems(json.loads(json.dumps(config)), schema)
        if not found:  # pragma: no cover - the two validators disagree
            raise ConfigError(describe_validation_error(e), *unknown) from None
        problems = [config_key(*problem) for problem in found]
        rest = without_schema_problems(config, [path for path, _ in found])
        if rest is not None:
            try:
                validate(rest, schema=str(schema_path))
                normalise_config(rest, workdir)
            except ConfigError as more:
                problems += [f"config key {p}" for p in more.problems]
            except WorkflowError:  # pragma: no cover - the rest is valid by construction
                pass
        raise ConfigError(*problems, *unknown) from None
    try:
        checked = normalise_config(config, workdir)
    except ConfigError as e:
        raise ConfigError(*(f"config key {p}" for p in e.problems), *unknown) from None
    if unknown:
        raise ConfigError(*unknown)
    return checked
