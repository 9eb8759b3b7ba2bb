"""The launcher and worker for real: processes, records, failures, allocation checks."""

import threading
import time

import psutil
import pytest

from scalestudy.compute.launch import launch, local_cpu_sets
from scalestudy.records import read_record
from scalestudy.study.run_spec import run_spec
from tests.conftest import tiny_mnist_study
from tests.test_data import fashion_root  # noqa: F401  (session fixture)
from tests.test_studies import model

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures


def spec_for(data_dir, n=1, **params):
    study = tiny_mnist_study()
    study["params"] |= params
    spec = run_spec(model({"studies": {"s": study}}), n, 1)
    spec["data_dir"] = str(data_dir)
    return spec


@pytest.fixture
def threads_env(monkeypatch):
    def set_threads(n):
        monkeypatch.setenv("OMP_NUM_THREADS", str(n))

    return set_threads


def test_successful_run_writes_a_full_record(fashion_root, tmp_path, threads_env):  # noqa: F811
    threads_env(1)
    path = tmp_path / "rep1.json"
    record = launch(spec_for(fashion_root.parent), path, "first")
    assert record["status"] == "ok", record["reason"]
    assert read_record(path) == record
    kinds = [p["kind"] for p in record["phases"]]
    assert kinds == ["startup", "data", "epoch", "eval"]
    assert record["phases"][2]["samples"] == 3 * 32
    assert record["wall_s"] >= sum(p["seconds"] for p in record["phases"]) * 0.99
    assert record["metrics"]["samples_per_s"] > 0 and 0 <= record["metrics"]["test_accuracy"] <= 1
    assert record["metrics"]["peak_rss_mb"] > 50
    received = record["resources"]["received"]
    assert received["threads_given"] == 1 and received["torch_threads"] == 1
    # a local run is pinned to the point's CPUs, as Slurm's cgroup would pin it
    assert received["cpus_usable"] == 1
    assert record["resources"]["mismatch"] is False
    env = record["environment"]
    assert env["torch"].startswith("2.") and env["python"] and env["host"]
    assert "workflow_commit" in env
    # no GPU, and (here) no powercap: energy is "not measured" with why, never a guess
    assert record["energy"]["gpu"]["not_measured"] == "no counter: the run used no GPU"
    assert record["energy"]["node"]["joules"] is None and record["energy"]["node"]["not_measured"]
    assert list(tmp_path.iterdir()) == [path]  # the work folder is cleaned up


def test_a_prepared_data_set_loads_in_a_fraction_of_a_second(fashion_root, tmp_path, threads_env):  # noqa: F811
    """The run maps the prepared tensor files: its data phase is no parse of IDX files
    (1.8 s here before). launch_to_training_s covers every second before training."""
    threads_env(1)
    record = launch(spec_for(fashion_root.parent), tmp_path / "rep1.json")
    assert record["status"] == "ok", record["reason"]
    (data_s,) = [p["seconds"] for p in record["phases"] if p["kind"] == "data"]
    assert data_s < 0.5
    before_training = sum(p["seconds"] for p in record["phases"][:2])  # startup, data
    assert before_training <= record["metrics"]["launch_to_training_s"] < record["wall_s"]


def test_allocation_mismatch_is_flagged(fashion_root, tmp_path, threads_env):  # noqa: F811
    threads_env(1)  # the job was given 1 thread, the point asks for 2
    record = launch(spec_for(fashion_root.parent, n=2), tmp_path / "rep1.json")
    assert record["status"] == "ok"
    assert record["resources"]["mismatch"] is True
    assert "threads: asked for 2, the job was given 1" in record["resources"]["mismatches"]


def test_failing_workload_leaves_a_failed_record(tmp_path, threads_env):
    threads_env(1)
    record = launch(spec_for(tmp_path / "empty"), tmp_path / "rep1.json")
    assert record["status"] == "failed"
    assert record["reason"].startswith("DataError") and "train.pt is missing" in record["reason"]
    assert record["exit_code"] == 1
    assert read_record(tmp_path / "rep1.json")["status"] == "failed"


def test_gpu_point_without_gpu_fails_with_reason(fashion_root, tmp_path, threads_env):  # noqa: F811
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    threads_env(1)
    spec = spec_for(fashion_root.parent)
    spec["requested"]["gpus_per_node"] = 1
    record = launch(spec, tmp_path / "rep1.json")
    assert record["status"] == "failed"
    assert "asks for a GPU but CUDA sees none" in record["reason"]


def test_killed_worker_is_reported(fashion_root, tmp_path, threads_env):  # noqa: F811
    threads_env(1)
    spec = spec_for(fashion_root.parent, max_batches=0, epochs=5)  # long enough to kill
    result = {}
    t = threading.Thread(target=lambda: result.update(r=launch(spec, tmp_path / "rep1.json")))
    t.start()
    deadline = time.time() + 60
    me = psutil.Process()
    while time.time() < deadline:
        children = [
            c
            for c in me.children(recursive=True)
            if "scalestudy.compute.worker" in " ".join(c.cmdline())
        ]
        if children:
            time.sleep(1.0)
            children[0].kill()
            break
        time.sleep(0.05)
    t.join(120)
    record = result["r"]
    assert record["status"] == "failed"
    assert record["reason"].startswith("workload killed by SIGKILL")
    assert record["exit_code"] == -9


def test_local_ranks_get_disjoint_cpus_or_none_when_too_few():
    assert local_cpu_sets(2, 2, [0, 1, 4, 5, 6]) == [[0, 1], [4, 5]]
    assert local_cpu_sets(1, 1, [3]) == [[3]]
    # more than the machine has: not pinned, and the record reports the shortfall
    assert local_cpu_sets(4, 1, [0, 1]) is None


def test_a_command_counts_the_gpus_slurm_left_it_visible():
    """Without torch in the process (a command study), the GPUs a run received are the
    devices CUDA_VISIBLE_DEVICES names; unset, the count is unknown (None), and a GPU
    point is flagged as before (it was flagged always: '0 visible')."""
    from scalestudy.compute.harness import allocation_mismatches, received_resources

    requested = {"threads": 1, "tasks_per_node": 1, "nodes": 1, "gpus_per_node": 2}
    environ = {"CUDA_VISIBLE_DEVICES": "2,3", "SLURM_CPUS_PER_TASK": "1"}
    received = received_resources(environ=environ)
    assert received["gpus_visible"] == 2
    assert not [m for m in allocation_mismatches(requested, received) if m.startswith("gpus")]
    received = received_resources(environ={"SLURM_CPUS_PER_TASK": "1"})
    assert "gpus_visible" not in received
    assert "gpus: asked for 2 per process, 0 visible" in allocation_mismatches(requested, received)


def test_the_environment_is_read_without_a_child_process(monkeypatch):
    """A worker reads its environment at the end of its run, at its peak memory. A child
    process then (platform.platform() runs `uname -p`) shares that memory, and Slurm's
    jobacct_gather/linux summed both: a 1.3-GB worker was killed at 2.66 GB > --mem."""
    import platform
    import subprocess

    from scalestudy.compute.harness import environment

    def no_child(*args, **kwargs):
        raise AssertionError(f"a child process: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_child)
    monkeypatch.setattr(platform, "_uname_cache", None)  # as in a fresh worker
    env = environment()
    assert env["platform"].startswith(f"{platform.system()}-") and env["cpu_model"]
