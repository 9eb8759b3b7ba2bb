"""Points -> Slurm: the sbatch lines built by the Slurm executor plugin's own code."""

import pytest
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

from scalestudy import studies as st
from scalestudy.analysis.request import PluginJob
from tests.test_studies import model, validated

# What the plugin reads of a Snakemake job (its resources, unset ones absent, and
# threads): the same stand-in the request's #SBATCH lines are built with.
Job = PluginJob


def sbatch_line(scaling: dict, n: int, **resources) -> str:
    study = {"workload": "spiral_mlp", "scaling": scaling, "resources": resources}
    study = model({"studies": {"s": study}})
    job = Job(st.slurm_resources(st.point_for(study, n), study))
    params = {
        "run_uuid": "job",
        "slurm_logfile": "log",
        "comment_str": "c",
        "account": "",
        "partition": "",
        "workdir": ".",
    }
    return get_submit_command(job, params) + set_gres_string(job)


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
        "--ntasks-per-gpu=1",
        "--ntasks-per-node=4",
        "--cpus-per-task=4",
    } <= flags(line)


def test_two_nodes_of_four_gpus():
    line = sbatch_line(
        {"axis": "nodes", "device": "gpu", "devices": 4, "points": [2], "threads": 2}, 2
    )
    assert {
        "--nodes=2",
        "--gpus=8",
        "--ntasks-per-gpu=1",
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
        st.ConfigError, match="studies.s: " + message.replace("(", r"\(").replace(")", r"\)")
    ):
        validated(config)
