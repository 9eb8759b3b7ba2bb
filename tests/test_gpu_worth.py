"""Workloads of the "is the GPU worth it" study, GPU telemetry and the verdict, on the CPU.

Each workload's run() is called directly at a tiny size with a real Context;
NVML is replaced by a fake that mimics pynvml's functions.
"""

from __future__ import annotations

import importlib.util
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from scalestudy.compute import telemetry
from scalestudy.compute.harness import Context
from workloads import cifar_cnn, gd_regression, linear_solve

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures

HAS_CUPY = importlib.util.find_spec("cupy") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None


def make_ctx(tmp_path: Path, params: dict, threads: int = 1) -> Context:
    ctx = Context(params=params, data_dir=tmp_path, threads=threads)
    ctx.device = torch.device("cpu")
    return ctx


def phases(ctx) -> dict[str, object]:
    return {p.name: p for p in ctx.phases}


# --- linear_solve ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_linear_solve_phases_and_metrics(tmp_path, backend):
    params = {"backend": backend, "systems": 16, "size": 48, "repeats_inner": 3, "seed": 2}
    ctx = make_ctx(tmp_path, params)
    linear_solve.run(params, ctx)
    by_name = phases(ctx)
    assert by_name["generate systems"].kind == "data"
    assert by_name["warm-up"].kind == "other"
    assert by_name["check"].kind == "eval"
    solves = [p for p in ctx.phases if p.kind == "epoch"]
    assert [p.name for p in solves] == ["solve 1", "solve 2", "solve 3"]
    assert all(p.samples == 16 for p in solves)
    m = ctx.metrics
    assert m["solve_s"] == pytest.approx(statistics.median(p.seconds for p in solves))
    assert m["solves_per_s"] == pytest.approx(16 / m["solve_s"])
    assert 0 <= m["residual"] < 1e-5
    assert (m["size"], m["systems"]) == (48, 16)
    assert "h2d_copy_s" not in m  # nothing is copied on the CPU
    assert "host to device" not in by_name


def test_linear_solve_copies_from_host_only_when_asked_and_on_a_gpu(tmp_path, monkeypatch):
    # pretend the torch backend solves on a GPU: the copy path runs (to the CPU here)
    monkeypatch.setattr(linear_solve, "solves_on_gpu", lambda backend: True)
    params = {"backend": "torch", "systems": 8, "size": 16, "data_on_host": True}
    ctx = make_ctx(tmp_path, params)
    linear_solve.run(params, ctx)
    copy = phases(ctx)["host to device"]
    assert copy.kind == "data"
    assert ctx.metrics["h2d_copy_s"] == copy.seconds
    assert ctx.metrics["residual"] < 1e-5

    params["data_on_host"] = False
    ctx = make_ctx(tmp_path, params)
    linear_solve.run(params, ctx)
    assert "host to device" not in phases(ctx) and "h2d_copy_s" not in ctx.metrics


def test_linear_solve_refuses_a_wrong_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(linear_solve.NumpyBackend, "solve", lambda self, a, b: np.zeros_like(b))
    params = {"backend": "numpy", "systems": 4, "size": 8}
    with pytest.raises(RuntimeError, match="residual"):
        linear_solve.run(params, make_ctx(tmp_path, params))


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed")
def test_linear_solve_cupy_missing_is_a_clear_error(tmp_path):
    params = {"backend": "cupy", "systems": 4, "size": 8}
    with pytest.raises(RuntimeError, match="CuPy, which is not installed"):
        linear_solve.run(params, make_ctx(tmp_path, params))


def test_numpy_blas_pool_follows_omp_num_threads():
    """What the launcher relies on: OMP_NUM_THREADS sizes numpy's OpenBLAS pool."""
    if linear_solve.blas_threads() is None:
        pytest.skip("numpy's OpenBLAS library not found")
    code = "from workloads.linear_solve import blas_threads; print(blas_threads())"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("OPENBLAS_NUM_THREADS", None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert out.stdout.strip() == "1"


# --- gd_regression ---------------------------------------------------------------------

GD = {"samples": 2000, "variables": 8, "iterations": 60, "lr": 0.1, "seed": 3}


def check_gd(ctx, compiled: int) -> None:
    by_name = phases(ctx)
    assert by_name["generate data"].kind == "data"
    assert by_name["compile"].kind == "other"
    assert by_name["run"].kind == "epoch"
    assert by_name["run"].samples == GD["samples"] * GD["iterations"]
    m = ctx.metrics
    assert m["compiled"] == compiled
    assert m["compile_s"] == by_name["compile"].seconds
    assert m["run_s"] == by_name["run"].seconds
    # converged to the noise level (0.1 ** 2), far below the start (about variables + 0.01)
    assert m["final_mse"] < 0.02
    assert (m["samples"], m["variables"]) == (2000, 8)


def test_gd_regression_torch_compile(tmp_path):
    params = GD | {"backend": "torch"}
    ctx = make_ctx(tmp_path, params)
    gd_regression.run(params, ctx)
    check_gd(ctx, compiled=1)
    # compilation is reported apart, and is what dominates at this size
    assert ctx.metrics["compile_s"] > ctx.metrics["run_s"]


def test_gd_regression_eager_when_asked_or_when_compile_fails(tmp_path, monkeypatch):
    params = GD | {"backend": "torch", "torch_compile": False}
    ctx = make_ctx(tmp_path, params)
    gd_regression.run(params, ctx)
    check_gd(ctx, compiled=0)
    eager_mse = ctx.metrics["final_mse"]

    def broken_compile(fn, **kwargs):
        def fails(*args):
            raise RuntimeError("no compiler here")

        return fails

    monkeypatch.setattr(torch, "compile", broken_compile)
    params = GD | {"backend": "torch"}
    ctx = make_ctx(tmp_path, params)
    gd_regression.run(params, ctx)
    check_gd(ctx, compiled=0)
    assert ctx.metrics["final_mse"] == pytest.approx(eager_mse)


def test_gd_regression_refuses_a_result_computed_on_another_device():
    on = SimpleNamespace(devices=lambda: {"cuda:0"})
    gd_regression.check_ran_on(on, "cuda:0")
    with pytest.raises(RuntimeError, match=r"JAX ran on \['cuda:0'\], not on cpu"):
        gd_regression.check_ran_on(on, "cpu")


@pytest.mark.skipif(HAS_JAX, reason="JAX is installed")
def test_gd_regression_without_jax(tmp_path):
    with pytest.raises(RuntimeError, match="JAX is not installed"):
        gd_regression.run(GD | {"backend": "jax"}, make_ctx(tmp_path, GD))
    assert gd_regression.choose_backend("auto", torch.device("cpu")) == ("torch", None)


# --- cifar_cnn -------------------------------------------------------------------------

CIFAR = {
    "dataset": "cifar10",
    "synthetic_samples": 512,
    "batch_size": 32,
    "max_batches": 6,
    "epochs": 2,
    "seed": 1,
}


@pytest.mark.parametrize("placement", ["loader", "host_memory", "device"])
def test_cifar_cnn_synthetic_when_cifar_absent(tmp_path, placement):
    params = CIFAR | {"placement": placement}
    ctx = make_ctx(tmp_path, params)
    cifar_cnn.run(params, ctx)
    assert ctx.metrics["synthetic_data"] == 1
    by_name = phases(ctx)
    assert by_name["load data"].kind == "data"
    assert by_name["warm-up"].kind == "other"
    epochs = [p for p in ctx.phases if p.kind == "epoch"]
    assert [p.samples for p in epochs] == [6 * 32, 6 * 32]
    m = ctx.metrics
    epoch_s = statistics.fmean(p.seconds for p in epochs)
    # wait + compute is the epoch, apart from the final next() and the loop's end
    assert m["wait_s"] + m["compute_s"] == pytest.approx(epoch_s, rel=0.1, abs=0.02)
    assert m["wait_s"] > 0 and m["compute_s"] > 0
    assert m["wait_fraction"] == pytest.approx(m["wait_s"] / (m["wait_s"] + m["compute_s"]))
    assert 0 < m["time_to_first_batch_s"] <= m["wait_s"]
    assert m["samples_per_s"] == pytest.approx(2 * 6 * 32 / sum(p.seconds for p in epochs))
    assert math.isfinite(m["final_loss"]) and 1.0 < m["final_loss"] < 4.0


def test_cifar_cnn_loader_workers_within_the_allocation(tmp_path):
    before = torch.get_num_threads()
    params = CIFAR | {"placement": "loader", "num_workers": 1, "epochs": 1, "max_batches": 3}
    ctx = make_ctx(tmp_path, params, threads=2)
    cifar_cnn.run(params, ctx)
    assert ctx.metrics["num_workers"] == 1 and ctx.metrics["torch_threads"] == 1
    assert torch.get_num_threads() == before  # restored: the record shows the allocation


def test_cifar_cnn_damaged_cifar_is_not_replaced_by_synthetic(tmp_path):
    (tmp_path / "cifar10" / "cifar-10-batches-py").mkdir(parents=True)
    params = CIFAR | {"placement": "host_memory"}
    with pytest.raises(RuntimeError, match="corrupted"):
        cifar_cnn.run(params, make_ctx(tmp_path, params))


def test_synthetic_cifar_is_deterministic_and_cifar_shaped():
    a, labels_a = cifar_cnn.synthetic_cifar(100)
    b, labels_b = cifar_cnn.synthetic_cifar(100)
    assert a.shape == (100, 32, 32, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b) and labels_a == labels_b
    assert set(labels_a) <= set(range(10))


def test_oversubscription_guard():
    cifar_cnn.check_oversubscription(4, 3, 1)
    cifar_cnn.check_oversubscription(1, 1, 0)
    with pytest.raises(ValueError, match="oversubscribed"):
        cifar_cnn.check_oversubscription(4, 4, 1)
    with pytest.raises(ValueError, match="num_workers=2"):
        cifar_cnn.check_oversubscription(2, 1, 2)
    with pytest.raises(ValueError, match="num_workers=1"):
        cifar_cnn.check_oversubscription(1, 1, 1)
    with pytest.raises(ValueError):
        cifar_cnn.check_oversubscription(2, 0, 0)
    assert cifar_cnn.torch_threads(8, 3) == 5
    assert cifar_cnn.torch_threads(2, 2) == 1


def test_cifar_cnn_refuses_oversubscribed_run_before_loading(tmp_path):
    params = CIFAR | {"placement": "loader", "num_workers": 1}
    ctx = make_ctx(tmp_path, params, threads=1)
    with pytest.raises(ValueError, match="num_workers=1"):
        cifar_cnn.run(params, ctx)
    assert ctx.phases == []


# --- telemetry -------------------------------------------------------------------------


class FakeNvml:
    """pynvml's functions that GpuSampler uses, with scripted readings."""

    def __init__(self, utils=(10, 50, 90), used_mb=(100, 200, 300), fail_init=False, fail_at=None):
        self.utils, self.used_mb = utils, used_mb
        self.fail_init, self.fail_at = fail_init, fail_at
        self.calls = 0
        self.indices = []
        self.shutdown = 0

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetHandleByIndex(self, index):
        self.indices.append(index)
        return ("handle", index)

    def nvmlDeviceGetUtilizationRates(self, handle):
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise RuntimeError("GPU is lost")
        value = self.utils[self.calls % len(self.utils)]
        return SimpleNamespace(gpu=value, memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle):
        value = self.used_mb[self.calls % len(self.used_mb)]
        self.calls += 1
        return SimpleNamespace(used=value * 2**20, total=80 * 2**30, free=0)

    def nvmlShutdown(self):
        self.shutdown += 1


def test_sampler_mean_and_peak_from_fake_nvml():
    fake = FakeNvml()
    with telemetry.GpuSampler(0, interval_s=0.002, nvml=fake) as s:
        time.sleep(0.1)
    summary = s.summary()
    n = summary["gpu_samples"]
    assert n == fake.calls >= 3
    utils = [fake.utils[i % 3] for i in range(n)]
    mems = [fake.used_mb[i % 3] for i in range(n)]
    assert summary["gpu_util_peak_pct"] == 90
    assert summary["gpu_util_mean_pct"] == pytest.approx(statistics.fmean(utils))
    assert summary["gpu_mem_peak_mb"] == 300
    assert summary["gpu_mem_mean_mb"] == pytest.approx(statistics.fmean(mems))
    assert fake.shutdown == 1 and s.unavailable_reason is None


def test_sampler_without_nvml_records_nothing_and_says_why(monkeypatch):
    def no_pynvml():
        raise ModuleNotFoundError("No module named 'pynvml'")

    monkeypatch.setattr(telemetry, "_import_pynvml", no_pynvml)
    with telemetry.GpuSampler(0) as s:
        pass
    assert s.summary() == {}
    assert "pynvml" in s.unavailable_reason

    fake = FakeNvml(fail_init=True)
    with telemetry.GpuSampler(0, nvml=fake) as s:
        pass
    assert s.summary() == {} and "NVML Shared Library" in s.unavailable_reason

    fake = FakeNvml(fail_at=0)  # starts, but the device cannot be read
    with telemetry.GpuSampler(0, nvml=fake) as s:
        pass
    assert s.summary() == {} and "GPU is lost" in s.unavailable_reason
    assert fake.shutdown == 1


def test_sampler_keeps_samples_when_reading_fails_later():
    fake = FakeNvml(fail_at=3)
    with telemetry.GpuSampler(0, interval_s=0.002, nvml=fake) as s:
        time.sleep(0.05)
    assert s.summary()["gpu_samples"] == 3
    assert "GPU is lost" in s.warning


def test_nvml_index_follows_cuda_visible_devices():
    fake = FakeNvml()
    telemetry.nvml_handle(fake, 1, environ={"CUDA_VISIBLE_DEVICES": "3,5"})
    telemetry.nvml_handle(fake, 0, environ={})
    assert fake.indices == [5, 0]


def test_gpu_telemetry_merges_metrics_on_cuda_only(tmp_path):
    ctx = make_ctx(tmp_path, {})
    with telemetry.gpu_telemetry(ctx, nvml=FakeNvml()) as s:
        pass
    assert s is None and ctx.metrics == {}
    ctx.device = SimpleNamespace(type="cuda", index=0)  # a GPU as far as the helper can tell
    with telemetry.gpu_telemetry(ctx, interval_s=0.002, nvml=FakeNvml()):
        time.sleep(0.02)
    assert ctx.metrics["gpu_util_peak_pct"] == 90 and ctx.metrics["gpu_samples"] >= 2


# --- staging ----------------------------------------------------------------------------


def test_staging_view_shows_growth_with_copies_at_once():
    from scalestudy.sections.staging.produce import staging
    from scalestudy.sections.staging.view import view as staging_view

    runs = pd.DataFrame(
        [
            {"status": "ok", "stagers": k, "stage_s": t, "stage_s_median": m, "dataset_mb": 60.0}
            for k, t, m in [(1, 1.0, 1.0), (1, 1.2, 1.2), (4, 2.0, 1.5), (4, 2.4, 1.7)]
        ]
        + [{"status": "failed", "stagers": 8, "stage_s": None}]
    )
    found = staging(runs)
    assert [r.k for r in found.rows] == [1, 4]  # the failed run is no point
    assert found.rows[1].growth == pytest.approx(2.0)  # median 2.2 s against 1.1 s
    view = staging_view(found)
    assert view["rows"][1]["growth"] == "2.00x"
    assert view["rows"][1]["rate"] == f"{4 * 60 / 2.2:.0f} MB/s"
    # the sentence ("From 1 to 4 copies at once, ...") is the template's:
    # test_gpu_worth_workflow checks it in the report
    assert staging(runs[runs["stagers"] == 1]) is None  # one k: nothing to compare
