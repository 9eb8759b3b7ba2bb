"""CPU-vs-GPU and data-loading studies end to end through the workflow (CPU here;
the GPU series fail honestly and the verdict says why), and the verdict logic on
a summary with CPU and GPU series."""

import json

import pandas as pd
import pytest

from scalestudy.analysis.decisions.verdict import gpu_verdict_of
from tests.conftest import NOT_JUDGED_ON_SHARED_CPUS, study_model


def tiny_studies() -> dict:
    cpu = {"axis": "threads", "points": [1, 2]}
    studies = {
        "solve": {
            "workload": "linear_solve",
            "params": {"systems": 16, "size": 32},
            "scaling": cpu,
            "series": {"m32": {}, "m64": {"params": {"size": 64}},
                       "gpu": {"params": {"backend": "torch"},
                               "scaling": {"points": [1], "device": "gpu"}}},
            "verdict": {"size_param": "size"},
            "repeats": 1,
            "time": "train",
            # no GPU here: its GPU series would be refused before any job
            "oversubscribe": True,
        },
        "regression": {
            "workload": "gd_regression",
            "params": {"samples": 2000, "variables": 8, "iterations": 20, "torch_compile": False},
            "scaling": cpu,
            "repeats": 1,
        },
        "cnn": {
            "workload": "cifar_cnn",
            "params": {"dataset": "synthetic", "synthetic_samples": 512, "batch_size": 64,
                       "max_batches": 4},
            "scaling": {"axis": "threads", "points": [2]},
            "series": {"loader": {"params": {"num_workers": 1}},
                       "memory": {"params": {"placement": "host_memory"}}},
            "repeats": 1,
        },
        "formats": {
            "workload": "data_formats",
            "params": {"images": 300, "image_bytes": 256, "shards": 2, "batch_size": 32},
            "scaling": {"axis": "threads", "points": [1]},
            "series": {"folder": {"params": {"format": "folder", "cache": "cold"}},
                       "tar": {"params": {"format": "tar"}},
                       "shards": {"params": {"format": "shards", "parallel_stagers": 2}}},
            "repeats": 1,
        },
    }  # fmt: skip
    return {name: study | NOT_JUDGED_ON_SHARED_CPUS for name, study in studies.items()}


@pytest.mark.slow
def test_gpu_worth_and_data_loading_studies_end_to_end(workflow):
    workflow.write_config({"studies": tiny_studies()})
    workflow.snakemake("--profile", "profiles/local", "--cores", "2")
    results = workflow.root / "results"
    solve = pd.read_csv(results / "solve" / "summary.csv").set_index("point")
    assert solve.loc["m32-t1", "status"] == "ok" and solve.loc["m64-t2", "speedup"] > 0
    assert solve.loc["gpu-t1", "status"].startswith("failed: RuntimeError: the point asks")
    analysis = json.loads((results / "solve" / "analysis.json").read_text())
    assert analysis["gpu_verdict"]["verdict"].startswith("no verdict")
    regression = pd.read_csv(results / "regression" / "runs.csv")
    assert set(regression["status"]) == {"ok"}
    cnn = pd.read_csv(results / "cnn" / "runs.csv").set_index("series")
    assert set(cnn["status"]) == {"ok"} and 0 <= cnn.loc["loader", "wait_fraction"] <= 1
    formats = pd.read_csv(results / "formats" / "summary.csv").set_index("series")
    assert list(formats.index) == ["folder", "tar", "shards"]
    assert (formats["samples_per_s"] > 0).all()
    comparisons = json.loads((results / "formats" / "analysis.json").read_text())["comparisons"]
    assert [c["b"] for c in comparisons] == ["tar", "shards"]
    report = (results / "report.html").read_text()
    assert "Is the GPU worth it?" in report and "time waiting for data" in report
    runs = pd.read_csv(results / "formats" / "runs.csv").set_index("series")
    assert runs.loc["shards", "stagers"] == 2 and runs.loc["folder", "stage_s"] > 0
    assert (runs["time_to_first_batch_s"] > 0).all()
    assert "copies at once" in report
    # shards staged 2 copies at once, the others 1: the growth with k is reported
    assert "From 1 to 2 copies at once, the slowest copy takes" in report
    cold = json.loads((results / "formats" / "runs" / "folder-t1" / "rep1.json").read_text())
    assert cold["metrics"]["cold_read"] == 1 and cold["metrics"]["evicted_mb"] > 0
    assert "evict page cache" in [p["name"] for p in cold["phases"]]


def verdict_summary(gpu_times: dict[int, float]) -> pd.DataFrame:
    rows = []
    for size, cpu in {64: [4.0, 2.2], 256: [40.0, 21.0], 1024: [400.0, 210.0]}.items():
        for threads, t in zip([1, 2], cpu, strict=True):
            rows.append({"series": f"m{size}", "n": threads, "time_s": t, "cores": threads,
                         "gpus": 0})  # fmt: skip
        rows.append({"series": f"gpu{size}", "n": 1, "time_s": gpu_times[size], "cores": 1,
                     "gpus": 1})  # fmt: skip
    return pd.DataFrame(rows)


def test_verdict_finds_the_crossover_size_and_prices_it():
    study = study_model(
        {
            "series": {
                f"{p}{s}": {"params": {"size": s}} for s in (64, 256, 1024) for p in ("m", "gpu")
            },
            "verdict": {"size_param": "size"},
            "cost": {"core_weight": 1, "gpu_weight": 2},
        }
    )
    result = gpu_verdict_of(verdict_summary({64: 5.0, 256: 4.0, 1024: 20.0}), study)
    assert result.crossover_size == 256 and result.worth_it_size == 256
    row = {r.size: r for r in result.sizes}[256]
    # GPU: (1 core + 2 x 1 GPU) x 4 s; cheapest CPU: 1 thread x 40 s (2 x 21 s costs more)
    assert row.gpu_su == pytest.approx(3 * 4 / 3600)
    assert row.best_cpu_su == pytest.approx(40 / 3600)
    assert row.break_even_speedup == pytest.approx(21 / (40 / 3))
    assert result.verdict.startswith("GPU worth it at size 256")
    slow = gpu_verdict_of(verdict_summary({64: 5.0, 256: 30.0, 1024: 300.0}), study)
    assert not slow.worth_it and "not worth it" in slow.verdict
