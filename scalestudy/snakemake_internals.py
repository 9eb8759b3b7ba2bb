"""The Snakemake internals the rules read, in one place: none is Snakemake's documented
API, so tests/test_snakemake_internals.py checks each against the installed Snakemake
and fails when an upgrade removes or renames one. Most take a Snakefile's `workflow`."""

import contextlib
import os
import signal
from pathlib import Path


def jobs_to_run(workflow, rules) -> list:
    """The jobs of the named rules that this invocation will run. The start-up checks
    judge exactly these (workflow.dag.needrun_jobs(): the DAG's jobs not yet done; the
    DAG exists once the workflow is built, in `onstart:` and in input functions)."""
    return [job for job in workflow.dag.needrun_jobs() if job.rule.name in rules]


def needed_pairs(workflow, rules) -> set[tuple[str, str]]:
    """(study, point) of the jobs of the named rules that this invocation will run."""
    return {(job.wildcards.study, job.wildcards.point) for job in jobs_to_run(workflow, rules)}


def job_partition(job) -> str:
    """The Slurm partition a job asks for ("" for the default): its evaluated
    slurm_partition resource (Job.resources), as the Slurm executor reads it."""
    return job.resources.get("slurm_partition") or ""


def local_exec(workflow) -> bool:
    """Whether jobs run on this machine (workflow.local_exec: no executor plugin that
    submits them elsewhere, such as Slurm's)."""
    return workflow.local_exec


def submits_elsewhere(workflow) -> bool:
    """Whether this invocation's jobs run elsewhere (an executor plugin that submits
    them, such as Slurm's), in a dry run too. A dry run runs Snakemake's "dryrun"
    pseudo-executor, whose local_exec is always True, after validating the settings
    against the executor the user named; only a non-local one sets
    execution_settings.use_threads and needs --jobs (resource_settings.nodes)
    (snakemake.api.DAGApi.execute_workflow). A local dry run given both
    --force-use-threads and --jobs reads as remote: its local checks are skipped,
    never wrongly made."""
    if not workflow.local_exec:
        return True
    return bool(
        workflow.dryrun
        and workflow.execution_settings.use_threads
        and workflow.resource_settings.nodes is not None
    )


def dry_run(workflow) -> bool:
    """Whether this is a dry run (-n): Snakemake then calls no onstart: handler."""
    return workflow.dryrun


def on_dag_built(check) -> None:
    """Call `check()` once, when the DAG is built and before any job runs, in a dry
    run (-n) too, where Snakemake calls no onstart: handler. Snakemake logs the job
    counts (the event LogEvent.RUN_INFO of its logger-plugin interface) at that moment
    in both; a check that ends the run (SystemExit) ends it there, before any job.
    Snakemake runs in this process only (a job's own Snakemake logs no job counts)."""
    import logging

    from snakemake.logging import logger
    from snakemake_interface_logger_plugins.common import LogEvent

    class OnDagBuilt(logging.Handler):
        done = False

        def emit(self, record):
            # a dry run logs the counts again at its end: check once
            if getattr(record, "event", None) == LogEvent.RUN_INFO and not self.done:
                self.done = True
                check()

    logger.addHandler(OnDagBuilt())


def remake(workflow, path: str) -> None:
    """Make `path` again in this invocation, as if it were missing, without making it a
    target (as --forcerun would): it joins the DAG's forced files (DAG.forcefiles), from
    an input function of the job that makes it, before Snakemake decides what runs. A
    checkpoint's output forced so is not taken as made (DAG.update_checkpoint_outputs)."""
    workflow.dag.forcefiles.add(path)


def remade_when_refused(workflow, pattern: str, load, warn):
    """An input function, adding no input, of the rule that makes `pattern`: where its
    file is there and `load` refuses it (ValueError: another version, cut short, edited),
    `warn` names why, once, and the file is made again in this invocation (remake)."""
    checked = set()

    def check(wildcards):
        path = pattern.format(**dict(wildcards.items()))
        if path not in checked and Path(path).exists():
            checked.add(path)
            try:
                load(path)
            except ValueError as e:  # the contract's: the file, its line or key, its version
                warn(f"{e}: made again")
                remake(workflow, path)
        return []

    return check


def remote_exec(workflow) -> bool:
    """Whether this Snakemake runs inside a submitted job (workflow.remote_exec): the
    checks were made by the Snakemake that submitted it."""
    return workflow.remote_exec


def cores(workflow):
    """Snakemake's --cores (workflow.resource_settings.cores): an int, or None/'all'."""
    return workflow.resource_settings.cores


def group_components(workflow, group: str) -> int:
    """How many of a group's parts Snakemake puts in one job (--group-components,
    workflow.group_settings.group_components; 1 when not given)."""
    return workflow.group_settings.group_components.get(group, 1)


def global_resource(workflow, name: str):
    """A global resource's value (--resources, workflow.global_resources), None when not given."""
    resource = workflow.global_resources.get(name)
    return None if resource is None else resource.value


def register_group(workflow, group: str, parent: str) -> None:
    """Count a group's parts under `parent` for --group-components, as Snakemake counts
    a group given with wildcards under its pattern (workflow.parent_groupids)."""
    workflow.parent_groupids[group] = parent


# Where a running Snakemake lists the files it holds: its persistence folder's locks,
# <n>.input.lock and <n>.output.lock, one path a line as the rules name it
# (snakemake/persistence/file.py, FilePersistence._write_locks), removed when it ends
LOCKS = ".snakemake/locks"


def held_files(workdir: Path) -> list[tuple[Path, Path]]:
    """(lock file, file) of every file a Snakemake workflow in workdir holds (as its
    input or output) while it runs, paths resolved; a workflow killed leaves its
    locks behind until `snakemake --unlock`."""
    found = []
    for lock in sorted((workdir / LOCKS).glob("*.lock")):
        try:
            lines = lock.read_text().splitlines()
        except OSError:  # removed as the workflow ended
            continue
        found += [(lock, (workdir / line.strip()).resolve()) for line in lines if line.strip()]
    return found


def processes_in(workdir: Path) -> list[tuple[int, list[str]]]:
    """(pid, argv) of this host's processes whose working folder is `workdir` (/proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(entry / "cwd")) == workdir.resolve():
                argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
                found.append((int(entry.name), [a.decode(errors="replace") for a in argv]))
        except OSError:  # ended, or not ours to read
            continue
    return found


def after_a_kill(workdir: Path, me: int) -> str | None:
    """What a Snakemake of this folder left here when it ended without cleaning up (kill
    -9), said in one line with how to go on; None where it left nothing, or where another
    Snakemake of this folder runs here. Its locks stay for `snakemake --unlock`; the runs
    and scripts it started that still run are killed, so that no run is measured twice at
    once: a run killed so writes no record, and runs again."""
    here = [(pid, argv) for pid, argv in processes_in(workdir) if pid != me]
    if any(Path(a).name == "snakemake" for _, argv in here for a in argv[:3]):  # -m snakemake
        return None
    jobs = ("scalestudy.compute.launch", ".snakemake/scripts/")
    left = [(pid, argv) for pid, argv in here if any(j in a for a in argv for j in jobs)]
    locks = sorted((workdir / LOCKS).glob("*.lock"))
    if not left and not locks:
        return None
    said = [f"its locks ({LOCKS})"] if locks else []
    if left:
        records = {a for _, argv in left for a in argv if a.endswith(".json") and "/runs/" in a}
        runs = sorted(r.removeprefix("results/").replace("/runs/", "/")[:-5] for r in records)
        for pid, _ in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        said.append(f"its jobs still running ({', '.join(runs) or 'scripts'}: now stopped)")
    unlock = "run `snakemake --unlock`, then run again" if locks else "run again"
    return (
        "A Snakemake of this folder ended without cleaning up (killed?) and left "
        f"{' and '.join(said)}: {unlock}; what was measured is kept"
    )
