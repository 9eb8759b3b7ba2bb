"""The GPU paths for real, on a CUDA GPU: skipped where there is none (CI), run on a
GPU node with `pytest -m gpu`. The CPU tests cover the same code with NVML faked;
these check what only a GPU can show (the device really used, NVML's figures,
the host-to-device copy, JAX and CuPy on the GPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from scalestudy.compute.harness import Context
from scalestudy.compute.launch import launch
from scalestudy.study.run_spec import run_spec
from tests.test_studies import model
from workloads import cifar_cnn, data_formats, gd_regression, linear_solve

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
HAS_CUPY = importlib.util.find_spec("cupy") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None


def gpu_ctx(tmp_path: Path, params: dict, threads: int = 2) -> Context:
    ctx = Context(params=params, data_dir=tmp_path, threads=threads)
    ctx.device = torch.device("cuda", 0)
    return ctx


def assert_telemetry(metrics: dict) -> None:
    """NVML sampled the timed phase: utilisation in 0-100, memory above the context's."""
    assert metrics["gpu_samples"] >= 1
    assert 0 <= metrics["gpu_util_mean_pct"] <= metrics["gpu_util_peak_pct"] <= 100
    assert metrics["gpu_mem_peak_mb"] > 0


@pytest.mark.parametrize("backend", ["torch", "cupy"])
def test_linear_solve_on_the_gpu(tmp_path, backend):
    if backend == "cupy" and not HAS_CUPY:
        pytest.skip("CuPy is not installed")
    params = {"backend": backend, "systems": 64, "size": 512, "repeats_inner": 3}
    ctx = gpu_ctx(tmp_path, params)
    linear_solve.run(params, ctx)
    assert ctx.metrics["residual"] < 1e-4
    assert "h2d_copy_s" not in ctx.metrics  # generated on the GPU: no copy
    assert_telemetry(ctx.metrics)


def test_linear_solve_times_the_copy_from_host(tmp_path):
    params = {"backend": "torch", "systems": 64, "size": 512, "data_on_host": True}
    ctx = gpu_ctx(tmp_path, params)
    linear_solve.run(params, ctx)
    copy = next(p for p in ctx.phases if p.name == "host to device")
    assert copy.kind == "data" and copy.seconds > 0
    assert ctx.metrics["h2d_copy_mb"] == pytest.approx(64 * (512 * 512 + 512) * 4 / 1e6)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_gd_regression_on_the_gpu(tmp_path, backend):
    if backend == "jax" and not HAS_JAX:
        pytest.skip("JAX is not installed")
    params = {"samples": 20000, "variables": 64, "iterations": 300, "backend": backend}
    ctx = gpu_ctx(tmp_path, params)
    gd_regression.run(params, ctx)
    m = ctx.metrics
    assert m["backend_jax"] == (1 if backend == "jax" else 0)
    assert m["compiled"] == 1 and m["compile_s"] > 0 and m["run_s"] > 0
    assert m["final_mse"] < 0.02  # converged to the noise (0.1 squared)
    assert_telemetry(m)


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed")
def test_gd_regression_cpu_point_stays_on_the_cpu_of_a_gpu_node(tmp_path):
    # JAX's default backend here is the GPU: a CPU point must still compute on the CPU
    params = {"samples": 20000, "variables": 64, "iterations": 50, "backend": "jax"}
    ctx = Context(params=params, data_dir=tmp_path, threads=1)
    ctx.device = torch.device("cpu")
    gd_regression.run(params, ctx)  # check_ran_on raises if XLA ran it elsewhere
    assert ctx.metrics["backend_jax"] == 1 and "gpu_samples" not in ctx.metrics


@pytest.mark.parametrize("placement", ["loader", "host_memory", "device"])
def test_cifar_cnn_on_the_gpu(tmp_path, placement):
    params = {"dataset": "synthetic", "synthetic_samples": 2048, "batch_size": 128,
              "placement": placement, "num_workers": 2 if placement == "loader" else 0,
              "pin_memory": placement == "loader"}  # fmt: skip
    ctx = gpu_ctx(tmp_path, params, threads=4)
    cifar_cnn.run(params, ctx)
    m = ctx.metrics
    assert m["synthetic_data"] == 1
    assert 0 <= m["wait_fraction"] <= 1 and m["compute_s"] > 0
    assert_telemetry(m)


def test_data_formats_trains_on_the_gpu(tmp_path):
    params = {"format": "shards", "images": 2000, "image_bytes": 3072, "shards": 4,
              "batch_size": 128, "train": True, "scratch": str(tmp_path / "scratch")}  # fmt: skip
    (tmp_path / "scratch").mkdir()
    ctx = gpu_ctx(tmp_path, params)
    data_formats.run(params, ctx)
    assert 0 <= ctx.metrics["wait_fraction"] <= 1 and ctx.metrics["samples_per_s"] > 0


def test_gpu_point_through_the_launcher_records_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    study = {"workload": "spiral_mlp", "params": {"samples": 2000, "epochs": 2},
             "scaling": {"axis": "devices", "points": [1], "device": "gpu"}}  # fmt: skip
    spec = run_spec(model({"studies": {"s": study}}), 1, 1)
    spec["data_dir"] = str(tmp_path)
    record = launch(spec, tmp_path / "rep1.json")
    assert record["status"] == "ok", record["reason"]
    received = record["resources"]["received"]
    assert received["gpus_visible"] >= 1 and record["resources"]["mismatch"] is False
    assert record["environment"]["gpu_models"][0] == torch.cuda.get_device_name(0)
    # the run's GPU energy: from NVML's counter, or not measured with why
    gpu_energy = record["energy"]["gpu"]
    assert gpu_energy["source"] == "nvml" or gpu_energy["not_measured"], gpu_energy


def test_nvml_energy_of_gpu_work_is_read_from_the_counter():
    """NVML's total energy at the start and end of real GPU work: a positive figure with
    its source (Volta or newer), or "no counter" on an older GPU, never a guess."""
    pytest.importorskip("pynvml")
    from scalestudy.compute.energy import RankEnergy, gpus_of

    device = torch.device("cuda", 0)
    with RankEnergy(gpus_of(device, torch), node_reader=False) as meter:
        a = torch.randn(4096, 4096, device=device)
        for _ in range(200):
            a = a @ a
            a = a / a.norm()
        torch.cuda.synchronize(device)
    gpu = meter.result["gpu"]
    if gpu["joules"] is None:
        assert gpu["not_measured"].startswith("no counter"), gpu
        pytest.skip(f"this GPU has no energy counter: {gpu['not_measured']}")
    assert gpu["source"] == "nvml" and gpu["joules"] > 0
    assert len(gpu["devices"]) == 1 and next(iter(gpu["devices"])).startswith(("GPU-", "MIG-"))
