import json
import math
from pathlib import Path

from snakemake.logging import logger

from scalestudy import paths
from scalestudy import snakemake_internals as sm
from scalestudy.compute.launch import probe_failure
from scalestudy.records import RecordError, read_placed_record
from scalestudy.redo import DISCARDED, RefusedRecords
from scalestudy.study.points import point_for
from scalestudy.study.run_spec import previous_paired_run, probe_spec, run_spec
from scalestudy.study.resources import TIME_SLACK_MIN, shared_job, slurm_resources

# The input functions of a run's job (rules/run.smk) and of a profiling run
# (rules/profile.smk): what it runs, what it asks the scheduler for, and when it runs
# again.


def get_run_spec(wildcards):
    """Everything the launcher needs, as one JSON string (shell-quoted by the rule). A
    profiling job (profile_point, no repeat: its times are not used) is one extra run
    of the point, traced."""
    point = get_point(wildcards)
    profiling = "repeat" not in wildcards.keys()
    trace = f"results/{wildcards.study}/profile/{wildcards.point}.trace.json"
    repeat = 1 if profiling else int(wildcards.repeat)
    spec = run_spec(
        STUDIES[wildcards.study],
        int(point["n"]),
        repeat,
        point["series"],
        data_dir=DATA_DIR,
        profile_trace=trace if profiling else None,
        budget_limit_min=(
            None
            if profiling
            else round_time_limit(wildcards.study, wildcards.point, repeat)
        ),
    )
    return spec_param(spec)


def spec_param(spec):
    """A spec as the launcher's param: its JSON with no text a page could run (<, > and
    & as JSON escapes), as Snakemake keeps params (its report shows a job's params raw
    in a <script>); a file or a hash instead would change every run's params and, by
    Snakemake's params trigger, measure every run of an upgraded workflow again."""
    text = json.dumps(spec, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def get_probe_spec(wildcards):
    """A command study's probe (rules/run.smk): one short run at its series' base case."""
    point = get_point(wildcards)
    study = STUDIES[wildcards.study]
    return spec_param(probe_spec(study, int(point["n"]), point["series"], DATA_DIR))


def probe_points(name, series=None):
    """(series, point) of each series' base case a command study probes (rules/run.smk;
    only `series`' where given); none for other workloads or times measured elsewhere,
    nor for an adaptive study, whose first round runs few."""
    study = STUDIES[name]
    if study.adaptive is not None or name not in POINTS.index:
        return []
    points = POINTS.loc[name]
    found = []
    for each in [series] if series is not None else study.series_names:
        own = study.for_series(each)
        ns = points.loc[points["series"] == each, "n"]
        if own.workload == "command" and len(ns):
            found.append((each, point_for(study, own.base_n(list(ns)), each).label))
    return found


def probe_path(study, point):
    return f"results/{study}/probe/{point}.json"


def get_command_probe(wildcards):
    """The probe a command study's run (or profiling run) waits for: its series' base
    case's. An order, not a dependency on its content (ancient): a probe made again
    leaves what was measured as it is."""
    found = probe_points(wildcards.study, get_point(wildcards)["series"])
    return [ancient(probe_path(wildcards.study, point)) for _, point in found]


def get_all_probes(wildcards):
    """Every command study's probe, as plain inputs of the whole run: failed_probes asks
    the checkpoints one at a time, and Snakemake learns of one incomplete checkpoint per
    evaluation, so without these the probes would run one after another (on Slurm a
    status-check cycle each)."""
    return [ancient(probe_path(s, p)) for s in STUDIES for _, p in probe_points(s)]


def failed_probes(study):
    """{series: its probe's record} where a command study's probe says its command
    failed at once (each a checkpoint: until it has run, Snakemake runs it first and
    asks again); the record then stands for the series' runs, which never start."""
    found = {}
    for series, point in probe_points(study):
        if sm.dry_run(workflow) and not Path(probe_path(study, point)).exists():
            continue  # a dry run lists the runs, as if the probe passes
        path = checkpoints.probe_command.get(study=study, point=point).output.record
        try:
            failed = probe_failure(read_placed_record(path))
        except RecordError:
            failed = "unreadable"  # aggregation names the file
        if failed:
            found[series] = path
    return found


def fixed_records(study):
    """A fixed study's records: its runs', but a failed probe's for its series' runs."""
    failed = failed_probes(study)
    runs = RUNS[RUNS["study"] == study]
    return [
        paths.record_path(*run)
        for run in runs.itertuples(index=False)
        if POINT_ROWS[(run.study, run.point)]["series"] not in failed
    ] + list(failed.values())


def records_to_make():
    """The record of every run a full invocation makes (fixed_records; an adaptive
    study's, as its rounds chose them: adaptive_records)."""
    fixed = [
        path for name in STUDIES if name not in ADAPTIVE for path in fixed_records(name)
    ]
    return fixed + [path for name in ADAPTIVE for path in adaptive_records(name)]


def get_probe_token(wildcards):
    """A probe that failed (or cannot be read) runs again on the next invocation, as a
    failed run does (get_rerun_token); one that passed keeps its token."""
    path = Path(probe_path(wildcards.study, wildcards.point))
    if not path.exists():
        return "probe"
    try:
        record = read_placed_record(path)
    except RecordError:
        return f"retry-after-{path.stat().st_mtime}"
    return f"retry-after-{record['finished_at']}" if probe_failure(record) else "probe"


def get_job_resources(wildcards):
    """What the point's job asks the scheduler for (see slurm_resources)."""
    row = get_point(wildcards)
    study = STUDIES[wildcards.study]
    return slurm_resources(point_for(study, int(row["n"]), row["series"]), study)


def job_resource(name):
    """One entry of get_job_resources, for the rule's resources: directive."""

    def get_resource(wildcards):
        return get_job_resources(wildcards)[name]

    return get_resource


def get_run_runtime(wildcards):
    """The run's job's minutes (the rule's runtime resource): the point's, or its
    round's budget limit (rules/adaptive.smk) with the same slack
    (slurm_resources). A profiling job (no repeat) is no round's run."""
    if "repeat" not in wildcards.keys():
        return get_job_resources(wildcards)["runtime"]
    limit = round_time_limit(wildcards.study, wildcards.point, int(wildcards.repeat))
    if limit is None:
        return get_job_resources(wildcards)["runtime"]
    return math.ceil(limit) + TIME_SLACK_MIN


# Snakemake's --group-components counts a group's parts under the group's name. Each
# packed point has a group of its own, registered under this one name (as Snakemake
# registers a group given with wildcards under its pattern), so that the Slurm
# profile's `group-components: [pack=100]` puts all repeats of a point in one job.
PACK_GROUP = "pack"


def get_pack_group(wildcards):
    """The Slurm job a run shares with its point's other repeats when its study packs
    them (submission.pack_repeats), or with both variants' runs of its point in a
    comparison (compare); None, a job of its own, otherwise, locally, and for a
    profiling run (profile_point, no repeat: its times are not used)."""
    if sm.local_exec(workflow) or "repeat" not in wildcards.keys():
        return None
    study, row = STUDIES[wildcards.study], get_point(wildcards)
    shared = shared_job(study, point_for(study, int(row["n"]), row["series"]))
    if shared is None:
        return None
    group = f"{PACK_GROUP}-{shared}"
    sm.register_group(workflow, group, PACK_GROUP)
    return group


def get_previous_paired_run(wildcards):
    """A comparison's run waits for the run before it in its point's drawn order
    (scalestudy.study.run_spec.paired_order), so that a and b run interleaved, each
    pair next to each other; nothing outside a comparison, nor for a profiler run
    (rules/profile.smk: no repeat, its times are not used)."""
    if "repeat" not in wildcards.keys():
        return []
    row = get_point(wildcards)
    before = previous_paired_run(
        STUDIES[wildcards.study], int(row["n"]), row["series"], int(wildcards.repeat)
    )
    if before is None:
        return []
    label = point_for(STUDIES[wildcards.study], int(row["n"]), before[0]).label
    # an order, not a dependency on its content: a run redone later (make redo) leaves
    # the runs after it, and what they measured, as they are
    return [ancient(paths.record_path(wildcards.study, label, before[1]))]


# records refused as their runs' (get_rerun_token): kept in discarded/, never overwritten
REFUSED = RefusedRecords()


def set_refused_records_aside():
    """In a run that runs jobs (not -n), once the start-up checks have passed."""
    if not sm.dry_run(workflow):
        jobs = sm.jobs_to_run(workflow, ("run_point",))
        for moved in REFUSED.set_aside(str(f) for job in jobs for f in job.output):
            logger.warning(moved)


def get_rerun_token(wildcards):
    """A failed run's token differs from the one it ran with, so Snakemake's params
    trigger reruns it on the next invocation; a good run keeps its token. An adaptive
    study's failed run keeps its token too: its rounds judged it (a run killed at its
    limit says the point is too slow), and a later round asks for new runs where it
    needs them, so a stopped study stays stopped; `make redo` retries it on request. A
    record that cannot be read, is not the run its path names (copied or moved by hand),
    or whose figures disagree, gets a token from the file's own change time: new for
    every new fault, however often; it is moved to discarded/ before it is run again."""
    path = Path(paths.record_path(wildcards.study, wildcards.point, wildcards.repeat))
    if not path.exists():
        return REFUSED.moved.get(path, "first")
    try:
        record = read_placed_record(path, get_point(wildcards)["series"])
    except RecordError as e:
        logger.warning(
            f"{e} It is run again, the record kept in "
            f"results/{wildcards.study}/{DISCARDED}/ first."
        )
        return REFUSED.refuse(path, str(e))
    if record["status"] == "ok" or wildcards.study in ADAPTIVE:
        return record["rerun_token"]
    return f"retry-after-{record['finished_at']}"


# once the start-up checks (rules/startup.smk) have passed, records refused as their
# runs' go to discarded/ before those run again
sm.on_dag_built(set_refused_records_aside)
