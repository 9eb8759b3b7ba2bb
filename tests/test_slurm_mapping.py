"""Points -> Slurm: the sbatch lines built by the Slurm executor plugin's own code."""

import inspect
from importlib.metadata import version

import pytest
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

import scalestudy.slurm
from scalestudy.slurm import ADAPTED_TO, PluginJob, probe_command
from scalestudy.study.errors import ConfigError
from scalestudy.study.points import point_for
from scalestudy.study.resources import job_runtime, slurm_resources
from tests.test_studies import model, validated

# What the plugin reads of a Snakemake job (its resources, unset ones absent, and
# threads): the same stand-in the request's #SBATCH lines are built with.
Job = PluginJob


def sbatch_line(scaling: dict, n: int, **resources) -> str:
    study = {"workload": "spiral_mlp", "scaling": scaling, "resources": resources}
    study = model({"studies": {"s": study}})
    return sbatch_line_of(Job(slurm_resources(point_for(study, n), study)))


def sbatch_line_of(job) -> str:
    params = {
        "run_uuid": "job",
        "slurm_logfile": "log",
        "comment_str": "c",
        "account": "",
        "partition": "",
        "workdir": ".",
    }
    # the plugin adds slurm_extra to the line itself, after these
    return " ".join(
        [
            get_submit_command(job, params) + set_gres_string(job),
            job.resources.get("slurm_extra") or "",
        ]
    )


def flags(line: str) -> set[str]:
    return set(line.split())


def test_four_threads_on_one_node():
    line = sbatch_line({"axis": "threads", "points": [4]}, 4, mem_mb=2000, runtime=10)
    assert {"--nodes=1", "--ntasks=1", "--cpus-per-task=4"} <= flags(line)
    # room for Snakemake's own process, and 2 minutes to record a run that ran out of time
    assert "--mem 2512" in line and "-t 12" in line
    assert "gpu" not in line


def test_one_gpu():
    line = sbatch_line({"axis": "devices", "device": "gpu", "points": [1], "threads": 8}, 1)
    assert {"--nodes=1", "--gpus=1", "--ntasks-per-gpu=1", "--cpus-per-task=8"} <= flags(line)
    assert "--ntasks=" not in line


def test_four_gpus_on_one_node_with_a_fixed_model():
    line = sbatch_line(
        {"axis": "devices", "device": "gpu", "points": [4], "threads": 4}, 4, gpu_model="a100"
    )
    assert {
        "--nodes=1",
        "--gpus=a100:4",
        "--gpus-per-task=1",
        "--ntasks-per-node=4",
        "--cpus-per-task=4",
    } <= flags(line)
    # sbatch refuses --ntasks-per-gpu beside --ntasks-per-node
    assert "--ntasks-per-gpu" not in line


def test_two_nodes_of_four_gpus():
    line = sbatch_line(
        {"axis": "nodes", "device": "gpu", "devices": 4, "points": [2], "threads": 2}, 2
    )
    assert {
        "--nodes=2",
        "--gpus=8",
        "--gpus-per-task=1",
        "--ntasks-per-node=4",
        "--cpus-per-task=2",
    } <= flags(line)


def test_two_cpu_nodes_one_process_each():
    line = sbatch_line({"axis": "nodes", "points": [2], "threads": 2}, 2)
    assert {"--nodes=2", "--ntasks=2", "--cpus-per-task=2"} <= flags(line)
    assert "--ntasks-per-node" not in line


@pytest.mark.parametrize(
    ("scaling", "limits", "message"),
    [
        (
            {"axis": "threads", "points": [1, 4]},
            {"cpus_per_node": 2},
            "point t4 needs 4 CPUs per node, the partition has 2 (partition_limits.cpus_per_node)",
        ),
        (
            {"axis": "devices", "device": "gpu", "points": [1, 8]},
            {"gpus_per_node": 4},
            "point g8 needs 8 GPUs per node, the partition has 4",
        ),
        (
            {"axis": "nodes", "points": [1, 2, 3]},
            {"nodes": 2},
            "point n3 needs 3 nodes, the partition has 2",
        ),
    ],
)
def test_points_beyond_the_partition_are_refused(scaling, limits, message):
    config = {
        "partition_limits": limits,
        "studies": {"s": {"workload": "spiral_mlp", "scaling": scaling}},
    }
    with pytest.raises(
        ConfigError, match="studies.s: " + message.replace("(", r"\(").replace(")", r"\)")
    ):
        validated(config)


def packed_study(**submission) -> dict:
    return {
        "workload": "spiral_mlp",
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 3,
        "resources": {"mem_mb": 1500, "runtime": 10},
        "submission": submission,
    }


def test_exclusive_nodes_reach_sbatch_through_the_plugin():
    study = model({"studies": {"s": packed_study(exclusive=True)}})
    assert "--exclusive" in flags(sbatch_line_of(Job(slurm_resources(point_for(study, 2), study))))
    plain = model({"studies": {"s": packed_study()}})
    assert slurm_resources(point_for(plain, 2), plain)["slurm_extra"] is None
    # beside the GPUs per task a point's slurm_extra may already hold
    layout = {"processes_per_node": 1, "gpus_per_process": 2}
    gpus = {
        "workload": "spiral_mlp",
        "scaling": {"axis": "gpus", "device": "gpu", "points": [layout]},
        "submission": {"exclusive": True},
    }
    study = model({"studies": {"s": gpus}})
    res = slurm_resources(point_for(study, 2), study)
    assert res["slurm_extra"] == "--gpus-per-task=2 --exclusive"
    assert {"--exclusive", "--gpus-per-task=2"} <= flags(sbatch_line_of(Job(res)))


def test_a_packed_point_asks_for_one_runs_cpus_and_memory_and_all_runtimes():
    """Snakemake's own group arithmetic (GroupResources, as a group job's resources are
    made) with the Slurm profile's timed_runs=1: the three repeats stack one after
    another, so the job asks for one run's CPUs and memory and three runtimes."""
    from types import SimpleNamespace

    from snakemake.resources import GroupResources, Resources

    study = model({"studies": {"s": packed_study(pack_repeats=True)}})
    one = slurm_resources(point_for(study, 2), study)
    member = {k: v for k, v in one.items() if v is not None} | {"timed_runs": 1}
    members = [SimpleNamespace(resources=dict(member), pipe_group=None) for _ in range(3)]
    grouped = GroupResources.basic_layered(
        [members], Resources.from_mapping({"timed_runs": 1}), run_local=False
    )
    assert grouped["runtime"] == 3 * one["runtime"] == job_runtime(study, point_for(study, 2))
    line = sbatch_line_of(Job(grouped))
    assert {"--cpus-per-task=2", "--ntasks=1", "--nodes=1"} <= flags(line)
    assert f"--mem {one['mem_mb']}" in line and f"-t {3 * one['runtime']}" in line
    # without it Snakemake would ask for the repeats side by side: three times the CPUs
    side_by_side = GroupResources.basic_layered(
        [members], Resources.from_mapping({}), run_local=False
    )
    assert side_by_side["cpus_per_task"] == 6 and side_by_side["runtime"] == one["runtime"]


def test_packed_repeats_beyond_the_partitions_time_are_refused_naming_key_and_minutes():
    config = {
        "partition_limits": {"runtime": 30},
        "studies": {"s": packed_study(pack_repeats=True)},
    }
    with pytest.raises(ConfigError) as info:
        validated(config)
    assert info.value.problems[0] == (
        "studies.s.submission.pack_repeats: point t1 packs 3 repeats of 12 minutes into one "
        "job of 36 minutes, the partition allows 30 (partition_limits.runtime); lower repeats "
        "or resources.runtime, or set pack_repeats: false"
    )
    assert len(info.value.problems) == 2  # t2 too
    # unpacked, each job fits; a single run beyond the limit is refused as such
    validated(config | {"studies": {"s": packed_study(pack_repeats=False)}})
    config["partition_limits"]["runtime"] = 11
    with pytest.raises(ConfigError, match=r"studies.s.resources.runtime: point t1 asks for 12"):
        validated(config)


# a 2-node DDP point of 2 GPUs, one process per GPU, as slurm_resources gives it
DDP_POINT = {"cpus_per_task": 3, "nodes": 2, "mem_mb": 2048, "runtime": 12, "mpi": "srun",
             "tasks": None, "tasks_per_node": 2, "tasks_per_gpu": 1, "gpu": 2,
             "gpu_model": "a100", "slurm_extra": None}  # fmt: skip


def test_the_one_adapter_fits_the_installed_slurm_plugin(monkeypatch):
    """scalestudy.slurm adapts the plugin's private API (get_submit_command,
    set_gres_string: no stable interface) for the plan's and aggregation's sbatch lines.
    Checked against ADAPTED_TO: another version fails here until it is checked again
    (what the plugin reads of a job, and the line of a known job, as below)."""
    assert version("snakemake-executor-plugin-slurm") == ADAPTED_TO, "check scalestudy/resources.py"
    assert list(inspect.signature(get_submit_command).parameters)[:2] == ["job", "params"]
    assert list(inspect.signature(set_gres_string).parameters) == ["job"]
    read = set()

    class Recording(PluginJob):
        def __getattribute__(self, name):
            read.add(name)
            return super().__getattribute__(name)

    monkeypatch.setattr(scalestudy.slurm, "PluginJob", Recording)
    command = probe_command(DDP_POINT, {"slurm_partition": "debug", "slurm_account": "proj"})
    # what the plugin reads of a job is what the stand-in gives
    assert read <= {"resources", "threads", "is_group", "name"}, read
    assert command == [
        "sbatch", "--parsable", "--job-name", "scalestudy-plan", "--output", "/dev/null",
        "--export=ALL", "--comment", "rule_run_point", "-A", "proj", "-p", "debug", "-t", "12",
        "--mem", "2048", "--nodes=2", "--ntasks-per-gpu=1", "--ntasks-per-node=2",
        "--cpus-per-task=3", "--gpus=a100:2", "--test-only", "--wrap=true",
    ]  # fmt: skip
