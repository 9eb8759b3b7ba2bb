"""The Snakemake internals the rules read (scalestudy/snakemake_internals.py) against
the installed Snakemake: a tiny workflow reads each one in `onstart:` as the start-up
checks do, and registers a group as get_pack_group does. An upgrade
that removes or renames one fails here."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

# two points of one study, t1 done already in each test: t2 is the one job to run
RULES = """
rule all:
    input:
        expand("out/{study}/{point}.txt", study=["s"], point=["t1", "t2"]),


rule run_point:
    output:
        "out/{study}/{point}.txt",
    resources:
        slurm_partition="short",
        timed_runs=1,
    shell:
        "touch {output}"
"""

SNAKEFILE = """
import inspect
import json
from scalestudy import snakemake_internals as sm


onstart:
    jobs = sm.jobs_to_run(workflow, ("run_point",))
    # locally Snakemake asks for no group (get_pack_group gives none): register one
    sm.register_group(workflow, "pack-s-t2", "pack")
    seen = {
        "needed": sorted(sm.needed_pairs(workflow, ("run_point",))),
        "partitions": sorted({sm.job_partition(job) for job in jobs}),
        "local_exec": sm.local_exec(workflow),
        "remote_exec": sm.remote_exec(workflow),
        "cores": sm.cores(workflow),
        "components": sm.group_components(workflow, "pack"),
        "other_components": sm.group_components(workflow, "other"),
        "timed_runs": sm.global_resource(workflow, "timed_runs"),
        "missing": sm.global_resource(workflow, "no_such"),
        "parents": dict(workflow.parent_groupids),
    }
    with open("seen.json", "w") as f:
        json.dump(seen, f)

"""


def test_the_internals_the_rules_read_exist_and_behave_as_used(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE + RULES)
    Path(tmp_path / "out" / "s").mkdir(parents=True)
    (tmp_path / "out" / "s" / "t1.txt").write_text("")  # done: not a job to run
    env = os.environ | {"PYTHONPATH": str(REPO)}
    snakemake = Path(sys.executable).parent / "snakemake"
    proc = subprocess.run(
        [str(snakemake), "--cores", "2", "--group-components", "pack=3",
         "--resources", "timed_runs=1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["needed"] == [["s", "t2"]]
    assert seen["partitions"] == ["short"]
    assert seen["local_exec"] is True and seen["remote_exec"] is False
    assert seen["cores"] == 2
    assert seen["components"] == 3 and seen["other_components"] == 1
    assert seen["timed_runs"] == 1 and seen["missing"] is None
    assert seen["parents"] == {"pack-s-t2": "pack"}


def test_snakemake_counts_a_registered_group_under_its_parent():
    """register_group writes where Snakemake looks a group's --group-components up."""
    import snakemake.api  # noqa: F401 (snakemake.dag alone is a circular import)
    from snakemake.dag import DAG

    source = inspect.getsource(DAG._update_group_components)
    assert "self.workflow.parent_groupids.get(groupid, groupid)" in source
    assert "self.workflow.group_settings.group_components.get(" in source


DAG_BUILT = """
import json
import sys
from scalestudy import snakemake_internals as sm


def check():
    seen = {"dry": sm.dry_run(workflow), "elsewhere": sm.submits_elsewhere(workflow),
            "needed": sorted(sm.needed_pairs(workflow, ("run_point",)))}
    with open("seen.jsonl", "a") as f:
        f.write(json.dumps(seen) + "\\n")
    if config.get("refuse"):
        sys.exit(1)


sm.on_dag_built(check)

"""


def test_a_check_runs_once_when_the_dag_is_built_in_a_dry_run_too(tmp_path):
    """on_dag_built calls the start-up checks in dry runs (Snakemake calls no onstart:
    there), once, with the jobs to run known; submits_elsewhere sees the executor that
    a dry run stands in for; a check that exits stops the run before any job."""
    (tmp_path / "Snakefile").write_text(DAG_BUILT + RULES)
    (tmp_path / "out" / "s").mkdir(parents=True)
    (tmp_path / "out" / "s" / "t1.txt").write_text("")
    env = os.environ | {"PYTHONPATH": str(REPO)}
    snakemake = Path(sys.executable).parent / "snakemake"

    def run(*args):
        log = tmp_path / "seen.jsonl"
        log.unlink(missing_ok=True)
        proc = subprocess.run([str(snakemake), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        return proc, [json.loads(line) for line in log.read_text().splitlines()]

    needed = [["s", "t2"]]
    proc, seen = run("-n", "--cores", "2")
    assert seen == [{"dry": True, "elsewhere": False, "needed": needed}], proc.stderr
    proc, seen = run("-n", "--executor", "slurm", "--jobs", "1")
    assert seen == [{"dry": True, "elsewhere": True, "needed": needed}], proc.stderr
    proc, seen = run("--cores", "1", "--config", "refuse=1")
    assert proc.returncode == 1 and seen == [{"dry": False, "elsewhere": False, "needed": needed}]
    assert not (tmp_path / "out" / "s" / "t2.txt").exists()
    proc, seen = run("-n", "--cores", "1", "--config", "refuse=1")
    assert proc.returncode == 1
    proc, seen = run("--cores", "1")
    assert proc.returncode == 0 and len(seen) == 1
    assert (tmp_path / "out" / "s" / "t2.txt").exists()


REMAKE = """
from scalestudy import snakemake_internals as sm


def refused(wildcards):
    if wildcards.point == "t1":  # its contract refuses it: made again
        sm.remake(workflow, f"out/{wildcards.point}.txt")
    return []


rule all:
    input:
        "out/t2.txt",
        "done.txt",


checkpoint made:
    input:
        refused,
    output:
        "out/{point}.txt",
    shell:
        "echo again > {output}"


rule done:
    input:
        lambda wildcards: checkpoints.made.get(point="t1").output[0],
    output:
        "done.txt",
    shell:
        "cat {input} > {output}"
"""


def test_a_refused_output_is_made_again_without_becoming_a_target(tmp_path):
    """sm.remake forces a file from its job's input function: that checkpoint runs again
    (not taken as made), what reads it after it, and nothing else is made or targeted."""
    (tmp_path / "Snakefile").write_text(REMAKE)
    (tmp_path / "out").mkdir()
    for name in ("out/t1.txt", "out/t2.txt", "done.txt"):
        (tmp_path / name).write_text("first\n")
    snakemake = Path(sys.executable).parent / "snakemake"
    proc = subprocess.run(
        [str(snakemake), "--cores", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "t1.txt").read_text() == "again\n"
    assert (tmp_path / "done.txt").read_text() == "again\n"
    assert (tmp_path / "out" / "t2.txt").read_text() == "first\n"
