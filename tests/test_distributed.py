"""Data-parallel workloads for real: several processes, gloo, one record from rank 0."""

import pytest

from scalestudy.compute.harness import allocation_mismatches
from scalestudy.compute.launch import launch
from scalestudy.study.run_spec import run_spec
from tests.test_data import fashion_root  # noqa: F401  (session fixture)
from tests.test_studies import model

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures


def spec(workload: str, processes: int, data_dir: str = "data", **params) -> dict:
    study = {
        "workload": workload,
        "params": params,
        "scaling": {"axis": "devices", "points": [processes]},
    }
    spec = run_spec(model({"studies": {"s": study}}), processes, 1)
    spec["data_dir"] = data_dir
    return spec


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def test_spiral_mlp_on_two_processes(tmp_path):
    record = launch(spec("spiral_mlp", 2, epochs=2, samples=2000), tmp_path / "rep1.json")
    assert record["status"] == "ok", record["reason"]
    received = record["resources"]["received"]
    assert received["world_size"] == 2 and record["resources"]["mismatch"] is False
    metrics = record["metrics"]
    assert metrics["world_size"] == 2
    assert metrics["rank_train_s_max"] >= metrics["rank_train_s_min"] > 0
    assert 0 < metrics["val_accuracy"] <= 1 and metrics["val_loss_epoch_2"] > 0
    epochs = [p for p in record["phases"] if p["kind"] == "epoch"]
    assert len(epochs) == 2 and epochs[0]["samples"] > 0
    # the process group's set-up (rendezvous, DDP's wrap) and teardown are timed phases
    names = [p["name"] for p in record["phases"]]
    assert names[:3] == ["startup", "process group set-up", "generate data"]
    assert names[-1] == "process group teardown"


def test_spiral_data_is_the_same_for_every_run():
    from workloads.spiral_mlp import spiral

    a, b = spiral(1000, 3, 0.2, seed=7), spiral(1000, 3, 0.2, seed=7)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert sorted(a[1].unique().tolist()) == [0, 1, 2]


def test_lightning_autoencoder_on_two_processes(fashion_root, tmp_path):  # noqa: F811
    record = launch(
        spec(
            "lightning_autoencoder", 2, str(fashion_root.parent), max_batches=20, max_val_batches=5
        ),
        tmp_path / "rep1.json",
    )
    assert record["status"] == "ok", record["reason"]
    assert record["resources"]["received"]["world_size"] == 2
    assert record["metrics"]["world_size"] == 2
    assert record["metrics"]["val_loss"] > 0 and record["metrics"]["time_to_first_step_s"] > 0
    epoch = next(p for p in record["phases"] if p["kind"] == "epoch")
    assert epoch["samples"] == 20 * 2  # batch 1, 20 steps on each of 2 processes


def test_a_silent_fall_back_to_one_process_is_flagged():
    requested = {"threads": 1, "tasks_per_node": 2, "nodes": 1, "gpus_per_node": 0}
    received = {"threads_given": 1, "cpus_usable": 2, "world_size": 1}
    assert allocation_mismatches(requested, received) == [
        "processes: asked for 2, world size was 1"
    ]
