"""CPU-vs-GPU and data-loading studies end to end through the workflow (CPU here;
the GPU series fail honestly and the verdict says why)."""

import json
import re

import pandas as pd
import pytest

from tests.conftest import NOT_JUDGED_ON_SHARED_CPUS
from tests.test_report_questions import first_row, lines


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
    assert analysis["gpu_verdict"]["needs"].startswith("a problem size measured on both")
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
    assert "from 1 to 2 copies at once, the slowest copy takes" in report
    # the first table: the verdict says what it lacks; staging and data loading answer
    assert lines(report, "solve")[0] == ("CPU or GPU", "no")
    assert "CPU or GPU : No verdict. Not decided: it needs a problem size measured on" in (
        first_row(report, "solve")
    )
    # which format loads fastest comes first: one run each gives no interval yet
    assert [q for q, _ in lines(report, "formats")] == ["data format", "staging"]
    assert re.search(
        r"data format : Fastest so far: (folder|tar|shards) \((folder, cold cache|tar|shards, 2 "
        r"copies at once)\): [0-9.]+ s to stage and read; \w+ \([^)]*\), the next best, takes "
        r"[0-9.]+x as long\. Not decided: 1 more run at (\w+-t1, ){1,2}\w+-t1: raise repeats by 1",
        first_row(report, "formats"),
    ), first_row(report, "formats")
    cold = json.loads((results / "formats" / "runs" / "folder-t1" / "rep1.json").read_text())
    assert cold["metrics"]["cold_read"] == 1 and cold["metrics"]["evicted_mb"] > 0
    assert "evict page cache" in [p["name"] for p in cold["phases"]]
